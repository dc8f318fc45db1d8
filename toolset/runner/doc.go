// Package runner starts child processes the way wraptool must (docs/security.md: What a wrapped call runs in),
// for whoever needs one: wrapped-tool calls (toolset), introspection's help
// runs and upstream MCP servers. It knows nothing of policies or MCP, so
// each of those can share one careful implementation of the environment
// (Environ), the working directory and its containment in the roots
// (Workdir, OpenWorkdir), the process group, timeout and output caps (Run),
// and the cleanup of whatever a child leaves behind (Reaper).
//
// Concurrency: Environ, Workdir, OpenWorkdir and Run keep nothing between
// calls and are safe to call concurrently. Each Run owns the process it
// starts, its process group and the Command's DirFile, which it closes; a
// handle OpenWorkdir returns belongs to its caller until handed to Run.
//
// A Reaper is shared by every caller in the process, and its Start, Sweep
// and Run are safe for concurrent use; a nil *Reaper tracks and sweeps
// nothing. Its locks protect the set of tracked children: one is held shared
// by each Start across fork, exec and tracking, and exclusively by a sweep
// while it lists, decides about, kills and reaps strays, so a sweep never
// takes a child that is forked but not yet tracked for a stray, and no new
// child can take a pid the sweep is still reaping; another guards the count
// of running Starts per pid. Sweeps happen only in the goroutine running
// Reaper.Run; Sweep merely rings its doorbell and never blocks.
//
// Every start is confined by the Command's (or Reaper.Start's) Sandbox:
// Landlock rules that keep the child and all it starts away from
// wraptool's own files, applied to the one OS thread the child is forked
// from, never to wraptool (docs/security.md: Confinement). A Sandbox is safe for
// concurrent use: its kept rules are shared by reference count, rebuilt by
// one start at a time when what they were built from changed. A Confiner
// hands out one Sandbox per protected set for a server's life.
//
// Where /proc/self/fd does not exist (macOS), or a Support says Launcher
// (Linux tests of that path), a start goes through wraptool's launcher
// (package launch): wraptool re-executes itself, the launcher enters the
// checked directory by the handle it inherits, applies the confinement it
// inherits and execs the program in place, and the start returns once the
// exec happened or fails as a direct start does. There the confinement is
// Seatbelt's (package seatbelt, sandbox-exec as the command's prefix), and,
// with no subreaper, Run sweeps each call's leftovers by the process table
// (package proctree) as the call ends; a Reaper's byTable runs that sweep
// in the Linux tests.
package runner
