package main

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/wraptool/wraptool/policy/config/configtest"
)

// `config validate` (and every command that loads the config) prints what a
// message quotes from the config with escapes: before, a bad regular
// expression (in Go's regexp error) and a missing path reached the terminal
// raw, an OSC title, a screen clear and U+202E included.
func TestHostileConfigPathsAndPatternsAreQuotedInValidateErrors(t *testing.T) {
	t.Parallel()
	const head = "mcp:\n  listen: 127.0.0.1:8717\n  request_log: $DIR/requests.jsonl\n"
	p := "\x1b]0;pwned\x07\x1b[2J\u202e"
	q := strconv.Quote
	tests := []struct{ name, config string }{
		{"a flag pattern", head + "tools:\n  git:\n    binary: $DIR/bin/git\n    allow:\n      - subcommand: [push]\n        flags: [--x]\n" +
			"        flag_constraints:\n          --x: {pattern: " + q(p+"(") + "}\n"},
		{"a positional pattern", head + "tools:\n  git:\n    binary: $DIR/bin/git\n    allow:\n      - subcommand: [push]\n" +
			"        arg_constraints: {pattern: " + q(p+"(") + "}\n"},
		{"a binary path", head + "tools:\n  git:\n    binary: " + q("$DIR/bin/"+p) + "\n"},
		{"an env file", head + "tools:\n  git:\n    binary: $DIR/bin/git\n    env_files: [" + q("$DIR/"+p) + "]\n"},
		{"a hook command", "mcp:\n  listen: 127.0.0.1:8717\n  request_log: $DIR/requests.jsonl\n  on_request: [" + q("$DIR/"+p) + "]\ntools: {}\n"},
		{"an allowed cwd root", "mcp:\n  listen: 127.0.0.1:8717\n  request_log: $DIR/requests.jsonl\n  allowed_cwd_roots: [" + q("$DIR/"+p) + "]\ntools: {}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is quoted in the error", func(t *testing.T) {
			t.Parallel()
			dir := configtest.NewFixture(t, map[string]string{"config.yaml": tt.config})
			_, stderr, code := run(t, map[string]string{"HOME": filepath.Join(dir, "home")}, "config", "validate", filepath.Join(dir, "config.yaml"))
			if code != 1 {
				t.Fatalf("exit %d, want 1; stderr %q", code, stderr)
			}
			expectNoRawControl(t, "config validate stderr", stderr)
		})
	}
}
