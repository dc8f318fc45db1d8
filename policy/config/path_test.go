package config

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestIsPlainKey holds the hand-written check to the pattern it replaced.
func TestIsPlainKey(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*$`)
	for _, k := range []string{"", "a", "_", "-", "-a", "a-", "git", "flag_constraints", "--depth", "a.b", "a b", "é", "A9_-z", "0", "a\n", "[x]"} {
		if got, want := isPlainKey(k), re.MatchString(k); got != want {
			t.Errorf("isPlainKey(%q) = %v, want %v", k, got, want)
		}
	}
}

// The validator compiles each distinct pattern once per validation, yet
// reports every place a bad one is written, not only the first.
func TestRepeatedBadPatternReportedEachTime(t *testing.T) {
	dir := fixture(t)
	c := mustParse(t, dir, base+"tools:\n  git:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: [a]\n      - subcommand: [b]\n")
	for _, r := range c.Tools["git"].Allow {
		r.ArgConstraints.Pattern = "("
	}
	var paths []string
	for _, e := range c.problems() {
		if strings.Contains(e.Msg, "invalid regular expression") {
			paths = append(paths, e.Path)
		}
	}
	want := []string{"tools.git.allow[0].arg_constraints.pattern", "tools.git.allow[1].arg_constraints.pattern"}
	if !slices.Equal(paths, want) {
		t.Errorf("pattern problems at %q, want %q", paths, want)
	}
}
