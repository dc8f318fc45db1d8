// Package toolset turns a policy into what MCP clients see and what a call
// runs: the MCP tool definitions and input schemas built from the policy's
// rules, their handlers, and the built-in tools. A wrapped tool's call is
// evaluated by the policy, then Execute checks what needs the filesystem
// (the working directory, the paths wraptool protects), waits for a slot
// and runs the child through toolset/runner, which does the process work.
//
// Execute and the handlers keep nothing between calls and are safe for
// concurrent use; each call owns the process it starts and the
// working-directory handle it opened. Two server-wide objects are shared by
// every call, and are safe for concurrent use too: Slots, which bounds the
// wrapped-tool children running at once (a call waits its turn, first come,
// first served, within its own timeout), and the runner.Reaper in State,
// which the handler rings after each call; the ring never blocks.
package toolset
