// Package edit is every writer of wraptool's config file: applying an
// approved capability request (ApplyRequest, with PlanApply and PreviewApply
// to show it first), adding a tool (AddTool, for `config add`) and writing
// the starter config where none exists (Scaffold).
//
// The editors live apart from package config so that loading never writes:
// config reads, validates and plans edits as bytes in and bytes out, and
// this package alone puts bytes in the operator's file. Each writer here
// keeps the same promises: the new text is validated as any config is (and
// parsed back to exactly the intended change) before anything is written;
// every byte outside the edit stays as written (comments, order, quoting,
// line endings); an existing file is replaced atomically (a temporary file
// in its folder, fsynced, renamed over it, the folder fsynced) keeping its
// mode; a new one is linked into place and never replaces a file. A refused
// or failed edit leaves the file as it was.
//
// Editors in any number of processes are serialized by an exclusive flock on
// the config file itself; an editor that takes no lock (a person saving the
// file meanwhile) makes the edit refuse rather than be overwritten. The
// package keeps no state between calls and is safe for concurrent use.
package edit
