// Package config reads and checks wraptool's YAML configuration.
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
// Nothing here writes the config file (loading creates only a missing token
// file). Edits are planned here, bytes in and bytes out: MergeRequest is the
// one merge of a capability request, which the served config's temporary
// grants (Loaded.Overlay) also parse in memory, and PlanAddTool, built on
// the same text splicing, plans `config add`. Package edit, below this
// one, is every writer of the file.
package config
