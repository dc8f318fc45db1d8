package config

import (
	"slices"
	"testing"

	"github.com/wraptool/wraptool/policy"
)

// A loaded config compiles into the policy it describes: help flags seeded,
// constraints applied, deny rules in force.
func TestConfigPolicy(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	c := mustParse(t, dir, base+`tools:
  git:
    binary: $T/bin/tool
    allow:
      - subcommand: [pull]
        flags: ["--ff-only", "--depth"]
        flag_constraints:
          "--ff-only": { type: boolean }
          "--depth": { min: 1, max: 50 }
        arg_constraints: { positional_max: 2 }
      - subcommand: [config]
    deny:
      - subcommand: [config]
`)
	p, err := c.Policy(nil)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, r := range p.Rules() {
		names = append(names, r.Name())
	}
	if !slices.Equal(names, []string{"git_pull"}) {
		t.Errorf("exposed %q, want only git_pull (git config is denied)", names)
	}
	d := p.Evaluate(policy.Call{Tool: "git", Subcommand: []string{"pull"}, Params: map[string]any{
		"ff-only": true, "depth": float64(3), "help": false, "args": []any{"origin", "main"},
	}})
	want := []string{dir + "/bin/tool", "pull", "--ff-only", "--depth=3", "origin", "main"}
	if !d.Allowed() || !slices.Equal(d.Argv, want) {
		t.Errorf("argv %q (refusal %v), want %q", d.Argv, d.Refusal, want)
	}
	d = p.Evaluate(policy.Call{Tool: "git", Subcommand: []string{"pull"}, Params: map[string]any{"h": true}})
	if !d.Allowed() || d.Argv[len(d.Argv)-1] != "-h" {
		t.Errorf("the seeded -h is not callable: %q %v", d.Argv, d.Refusal)
	}
}
