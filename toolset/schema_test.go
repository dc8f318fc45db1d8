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

// Every rule's definition shares one output schema (a config may have
// thousands of rules), and sharing it changes nothing a client sees.
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

// A Definer shares a flag's schema only between flags whose schemas are
// equal: changing any field of a flag that flagSchema reads must give a
// schema of its own. The test walks policy.Flag by reflection, so a field
// flagSchema starts to read without joining flagKey fails it.
func TestDefinerSharesOnlyEqualFlagSchemas(t *testing.T) {
	t.Parallel()
	lo, hi := int64(1), int64(9)
	base := policy.Flag{Flag: "--depth", Property: "depth", Type: policy.TypeInteger, Min: &lo, Max: &hi, Description: "how deep"}
	other := func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			v.SetString(v.String() + "x")
		case reflect.Bool:
			v.SetBool(!v.Bool())
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			v.SetInt(v.Int() + 1)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			v.SetUint(v.Uint() + 1)
		case reflect.Pointer: // *int64
			n := v.Elem().Int() + 1
			v.Set(reflect.ValueOf(&n))
		default:
			t.Fatalf("policy.Flag has a %s field: teach this test to change it", v.Kind())
		}
	}
	ft := reflect.TypeOf(base)
	for i := range ft.NumField() {
		f := ft.Field(i)
		if !f.IsExported() {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			changed := base
			other(reflect.ValueOf(&changed).Elem().Field(i))
			d := NewDefiner()
			first, second := d.flagSchema(base), d.flagSchema(changed)
			if !reflect.DeepEqual(second, flagSchema(changed)) {
				t.Errorf("with %s changed the Definer gave %v, want %v", f.Name, second, flagSchema(changed))
			}
			if !reflect.DeepEqual(first, flagSchema(base)) {
				t.Errorf("the first schema was changed by the second lookup: %v", first)
			}
		})
	}
	d := NewDefiner()
	if a, b := d.flagSchema(base), d.flagSchema(base); reflect.ValueOf(a).UnsafePointer() != reflect.ValueOf(b).UnsafePointer() {
		t.Error("two equal flags got separate schema maps")
	}
}
