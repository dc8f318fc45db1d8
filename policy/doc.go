// Package policy decides what an assistant may run. It holds the naming rules
// that turn a wrapped tool and its subcommand into an MCP tool name and a flag
// into a schema property, so that the config validator, the tool registry and
// the evaluator agree on one answer.
//
// The package does no I/O and starts no goroutines: everything in it is a pure
// function of its inputs and safe for concurrent use.
package policy
