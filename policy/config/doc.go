// Package config reads, checks and scaffolds wraptool's YAML configuration.
//
// Loading is strict everywhere it happens (start-up, `config validate`,
// reload): unknown keys, a wrong kind of value, aliases and a second YAML
// document are errors. Every error is an *Error naming the file as given, the
// line and the field path, so an operator can go straight to the problem:
//
//	config.yaml:14: tools.git.allow[1].flag_constraints["--depth"]: min 5 is greater than max 2
//
// Load decodes, applies defaults, expands "~", resolves relative paths against
// the config file's folder, reads env_files, seeds the help flags and
// validates, in that order; a *Config it returns is complete and valid. The
// package keeps no state between calls and is safe for concurrent use.
//
// ApplyRequest is the one function that writes an existing config: it
// splices an approved capability request into the file's own text, so
// comments and layout survive, and replaces the file atomically. Appliers in
// any number of processes are serialized by an exclusive flock on the config
// file; an editor that saves meanwhile makes the apply refuse rather than be
// overwritten.
package config
