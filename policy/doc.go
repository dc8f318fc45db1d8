// Package policy decides what an assistant may run.
//
// New compiles the operator's allow and deny rules into an immutable *Policy;
// Evaluate turns one call (a tool, a subcommand, the named parameters of an MCP
// tool call) into a Decision: either the exact argv to run or a refusal whose
// text tells the assistant what was refused and how to ask for it. The naming
// rules here (MCP tool names, schema properties, valid flags and tokens) are
// shared by config validation, the tool registry and evaluation, so all three
// agree on one answer.
//
// The package does no I/O and starts no goroutines: a *Policy is safe for
// concurrent use, and every function is a pure function of its inputs. The
// one check that needs the filesystem, the working directory, is the runner's;
// it reports a refusal through Decision.Refuse with the same text.
package policy
