// Package toolset turns a policy into what MCP clients see and what the
// machine runs: the child-process runner (environment, working directory,
// process group, timeout, output caps) lives here, beside the MCP tool
// definitions built from the policy's rules.
//
// Run, Execute, Environ and Workdir keep nothing between calls and are safe
// for concurrent use; each call owns the process it starts and the
// working-directory handle it opened. Two server-wide objects are shared by
// every call, and are safe for concurrent use too: Slots, which bounds the
// wrapped-tool children running at once (a call waits its turn, first come,
// first served, within its own timeout), and Reaper, which tracks every child
// a call starts and, in a process that is a child subreaper, kills and reaps
// whatever outlived its call. A Reaper's sweeps run in its own Run goroutine;
// the handler only rings its doorbell, which never blocks.
package toolset
