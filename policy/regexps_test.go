package policy

import "testing"

// Rules that repeat a pattern share one compiled regexp (a large config
// once compiled each copy, most of a load's time), and each still decides
// by its own rule: the shared regexp holds no per-rule or per-match state.
func TestRulesShareCompiledPatterns(t *testing.T) {
	allow := func(sub, argPat string) *AllowRule {
		r := &AllowRule{
			Subcommand:      []string{sub},
			Flags:           []string{"--ref"},
			FlagConstraints: map[string]*Constraint{"--ref": {Pattern: "[a-z]+"}},
			ArgConstraints:  ArgConstraints{Pattern: argPat},
		}
		SeedHelpFlags(r)
		return r
	}
	p, err := New([]Tool{
		{Name: "a", Binary: "/bin/a", Allow: []*AllowRule{allow("x", "[0-9]+"), allow("y", "[a-z]+")}},
		{Name: "b", Binary: "/bin/b", Allow: []*AllowRule{allow("x", "[0-9]+")}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ax, _ := p.Rule("a_x")
	ay, _ := p.Rule("a_y")
	bx, _ := p.Rule("b_x")
	ref := func(r *Rule) *Flag { return &r.flags[r.byProp["ref"]] }
	if ref(ax).re == nil || ref(ax).re != ref(ay).re || ref(ax).re != ref(bx).re {
		t.Error("the three rules' --ref patterns are not one compiled regexp")
	}
	if ax.argPatterns[0].re != bx.argPatterns[0].re {
		t.Error("a_x and b_x do not share their positional regexp")
	}
	if ay.argPatterns[0].re != ref(ax).re {
		t.Error("a flag pattern and a positional pattern written alike are compiled twice")
	}
	if ax.argPatterns[0].re == ay.argPatterns[0].re {
		t.Error("different patterns share a regexp")
	}
	for _, tc := range []struct {
		tool, sub, arg string
		allowed        bool
	}{
		{"a", "x", "42", true}, {"a", "x", "abc", false},
		{"a", "y", "abc", true}, {"a", "y", "42", false},
		{"b", "x", "42", true}, {"b", "x", "abc", false},
	} {
		d := p.Evaluate(Call{Tool: tc.tool, Subcommand: []string{tc.sub}, Params: map[string]any{ArgsProperty: []any{tc.arg}, "ref": "main"}})
		if d.Allowed() != tc.allowed {
			t.Errorf("%s %s %s: allowed = %v, want %v (%v)", tc.tool, tc.sub, tc.arg, d.Allowed(), tc.allowed, d.Refusal)
		}
	}
	// A second policy compiles its own: the cache lives only for one New.
	q, err := New([]Tool{{Name: "a", Binary: "/bin/a", Allow: []*AllowRule{allow("x", "[0-9]+")}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	qx, _ := q.Rule("a_x")
	if qx.argPatterns[0].re == ax.argPatterns[0].re {
		t.Error("two policies share a compiled regexp: the cache outlived New")
	}
}
