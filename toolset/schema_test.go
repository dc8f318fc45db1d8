package toolset

import (
	"reflect"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy"
)

// The schema says what the policy will check, so an assistant can get a call
// right the first time: positional patterns, unproven short flags and help
// flags that run alone are described (never enforced by the schema itself).
func TestDefinitionDescribesPositionalRules(t *testing.T) {
	t.Parallel()
	p := newPolicy(t, policy.Tool{Name: "git", Binary: "/usr/bin/git", Allow: []*policy.AllowRule{
		{Subcommand: []string{"pull"}, ArgConstraints: policy.ArgConstraints{Patterns: []string{"origin", "[a-z]+"}}},
		{Subcommand: []string{"tag"}, Flags: []string{"-P"}, ArgConstraints: policy.ArgConstraints{Pattern: "v[0-9]+"}},
	}})
	describe := func(rule, prop string) string {
		r, ok := p.Rule(rule)
		if !ok {
			t.Fatalf("rule %s not exposed", rule)
		}
		props := Definition(r).InputSchema.(map[string]any)["properties"].(map[string]any)
		return props[prop].(map[string]any)["description"].(string)
	}
	for _, tc := range []struct{ rule, prop, want string }{
		{"git_pull", "args", "In order: argument 1 must match ^(?:origin)$; argument 2 must match ^(?:[a-z]+)$; any later one must match the last."},
		{"git_tag", "args", "Each must match ^(?:v[0-9]+)$."},
		{"git_tag", "P", "its value counts as a positional argument (before args)"},
		{"git_tag", "help", "runs alone: give no other flags or arguments"},
	} {
		if got := describe(tc.rule, tc.prop); !strings.Contains(got, tc.want) {
			t.Errorf("%s.%s description = %q, want it to contain %q", tc.rule, tc.prop, got, tc.want)
		}
	}
}

// Every rule's definition shares one output schema (issue 18: thousands of
// rules), and sharing it changes nothing a client sees.
func TestDefinitionsShareOutputSchema(t *testing.T) {
	t.Parallel()
	p := newPolicy(t, policy.Tool{Name: "git", Binary: "/usr/bin/git", Allow: []*policy.AllowRule{
		{Subcommand: []string{"pull"}}, {Subcommand: []string{"push"}},
	}})
	a, _ := p.Rule("git_pull")
	b, _ := p.Rule("git_push")
	da, db := Definition(a).OutputSchema.(map[string]any), Definition(b).OutputSchema.(map[string]any)
	if reflect.ValueOf(da).UnsafePointer() != reflect.ValueOf(db).UnsafePointer() {
		t.Error("two rules' definitions hold separate output schemas")
	}
	if !reflect.DeepEqual(da, runOutputSchema()) {
		t.Error("the shared output schema differs from runOutputSchema's")
	}
}
