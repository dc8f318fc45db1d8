// Package toolset turns a policy into what MCP clients see and what the
// machine runs: the child-process runner (environment, working directory,
// process group, timeout, output caps) lives here, beside the MCP tool
// definitions built from the policy's rules.
//
// Nothing here keeps state between calls: Run, Environ and Workdir are safe
// for concurrent use, and each call owns the process it starts.
package toolset
