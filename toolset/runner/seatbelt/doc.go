// Package seatbelt generates the macOS Seatbelt profile that confines every
// process wraptool starts, and the sandbox-exec command line that applies it.
//
// Why Seatbelt: macOS has no Landlock. Its kernel sandbox (Seatbelt, driven
// by /usr/bin/sandbox-exec with a profile in Apple's Sandbox Profile
// Language) is what Codex CLI and Claude Code's sandbox use on macOS for the
// same job: the kernel, not a path check in wraptool, decides what a child
// and everything it starts may touch, and children inherit the sandbox.
//
// What the profile promises, for the Rules it is given:
//   - everything is allowed by default, so a confined tool reaches the
//     operator's own files and credentials exactly as before;
//   - Hidden paths (and everything below a Hidden folder) cannot be read,
//     written, created, removed, renamed, linked, mapped executable or
//     executed, and a unix socket at a Hidden path cannot be connected to;
//   - ReadOnly paths (executables) stay readable and executable, even inside
//     a Hidden folder, but cannot be written, truncated, renamed, removed,
//     linked or have their mode or extended attributes changed;
//   - Above folders cannot themselves be removed, renamed or replaced, while
//     every other entry in them stays fully usable;
//   - no signals and no process information reach processes outside the
//     sandbox, and nothing can be mounted or unmounted.
//
// What it cannot promise: Seatbelt matches paths, not files, so a hard link
// to a protected file made before confinement (or by an unconfined process)
// reaches the file by its other name. The caller must pass resolved paths
// (see Resolve): on macOS /var, /tmp and /etc are symlinks into /private,
// and the kernel checks the real path, so a rule for /var/… matches nothing.
//
// Security core: no path ever enters the profile text. Each path travels as
// a sandbox-exec "-D NAME=value" parameter and the profile refers to it as
// (param "NAME"), the way Codex CLI passes its writable roots, so no byte of
// a path (a quote, a backslash, a parenthesis, a newline, a "#|") can end the
// profile's string syntax or add a rule. The profile's text depends only on
// how many paths of each kind there are.
//
// Everything here is a pure function: safe for concurrent use, and testable
// on any OS. Nothing here has been run on a Mac.
package seatbelt
