package configtest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy"
)

// The helpers below are shared by the tests of the request merge and the
// grant overlay (policy/config) and of the file editor that writes the merge
// (policy/config/edit): one fixture, so the overlay is checked against the
// very files the editor writes.

// ApplyFixture makes a private folder with an executable stand-in for every
// tool the apply configs wrap; the configs name it $DIR.
func ApplyFixture(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"git", "gh", "kubectl", "fj", "npm", "docker", "yq", "rg"} {
		if err := os.WriteFile(filepath.Join(dir, "bin", name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// WriteConfig writes yaml ($DIR replaced by dir) as dir/name with mode.
func WriteConfig(t testing.TB, dir, name, yaml string, mode os.FileMode) string {
	t.Helper()
	return WriteFile(t, filepath.Join(dir, name), strings.ReplaceAll(yaml, "$DIR", dir), mode)
}

// RefusalConfig is the config the apply refusal cases run against: a rule
// with a flag whose property is one letter, a rule that denies flags, and
// deny rules (one by prefix).
const RefusalConfig = `mcp:
  listen: 127.0.0.1:8717
tools:
  git:
    binary: $DIR/bin/git
    allow:
      - subcommand: [commit]
        flags: [--m]          # a long flag whose property is "m"
      - subcommand: [push]
        deny_flags: [--force]
        flag_constraints:
          "--mirror": {deny: true}
    deny:
      - subcommand: [config]
      - subcommand: [remote, add]
`

// RulesOf summarises a policy's rules for comparison: name, flags, and the
// positional limit.
func RulesOf(p *policy.Policy) []string {
	var out []string
	for _, tool := range p.Tools() {
		for _, r := range p.ToolRules(tool) {
			var flags []string
			for _, f := range r.Flags() {
				flags = append(flags, fmt.Sprintf("%s:%v", f.Flag, f.Type))
			}
			max, ok := r.PositionalMax()
			out = append(out, fmt.Sprintf("%s exposed=%v flags=%v max=%d,%v", r.Name(), r.Exposed(), flags, max, ok))
		}
	}
	slices.Sort(out)
	return out
}
