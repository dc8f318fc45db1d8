package policy

import (
	"fmt"
	"testing"
)

// Diff reports tools added and removed, and per tool kept, the
// flags it gained and lost.
func TestDiff(t *testing.T) {
	t.Parallel()
	build := func(rules map[string][]string) *Policy {
		tool := Tool{Name: "git", Binary: "/usr/bin/git"}
		for sub, flags := range rules {
			tool.Allow = append(tool.Allow, &AllowRule{Subcommand: []string{sub}, Flags: flags})
		}
		p, err := New([]Tool{tool}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name                     string
		old, cur                 map[string][]string
		added, removed           []string
		flagsAdded, flagsRemoved map[string][]string
	}{
		{"nothing changed", map[string][]string{"pull": {"--x"}}, map[string][]string{"pull": {"--x"}},
			[]string{}, []string{}, map[string][]string{}, map[string][]string{}},
		{"a tool added and one removed", map[string][]string{"pull": nil}, map[string][]string{"push": nil},
			[]string{"git_push"}, []string{"git_pull"}, map[string][]string{}, map[string][]string{}},
		{"flags gained and lost", map[string][]string{"log": {"--a", "--b"}}, map[string][]string{"log": {"--b", "--c", "--d"}},
			[]string{}, []string{}, map[string][]string{"git_log": {"--c", "--d"}}, map[string][]string{"git_log": {"--a"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := Diff(build(tc.old), build(tc.cur))
			added, removed, fa, fr := c.ToolsAdded, c.ToolsRemoved, c.FlagsAdded, c.FlagsRemoved
			if fmt.Sprint(added, removed, fa, fr) != fmt.Sprint(tc.added, tc.removed, tc.flagsAdded, tc.flagsRemoved) {
				t.Errorf("got %v %v %v %v, want %v %v %v %v", added, removed, fa, fr, tc.added, tc.removed, tc.flagsAdded, tc.flagsRemoved)
			}
		})
	}
}
