package policy

import "slices"

// Change is what a policy change did to the exposed tools, as the audit
// log's policy line records it: the tools added and removed, and per tool
// in both, the flags added and removed (the seeded help flags included).
// Slices are sorted and maps never nil, so a line encodes [] and {}.
type Change struct {
	ToolsAdded, ToolsRemoved []string
	FlagsAdded, FlagsRemoved map[string][]string
}

// Diff compares the tools old and cur expose.
func Diff(old, cur *Policy) Change {
	c := Change{ToolsAdded: []string{}, ToolsRemoved: []string{},
		FlagsAdded: map[string][]string{}, FlagsRemoved: map[string][]string{}}
	flags := func(r *Rule) []string {
		var out []string
		for _, f := range r.Flags() {
			out = append(out, f.Flag)
		}
		return out
	}
	for _, r := range cur.Rules() {
		before, ok := old.Rule(r.Name())
		if !ok {
			c.ToolsAdded = append(c.ToolsAdded, r.Name())
			continue
		}
		was, now := flags(before), flags(r)
		if plus := minus(now, was); len(plus) > 0 {
			c.FlagsAdded[r.Name()] = plus
		}
		if gone := minus(was, now); len(gone) > 0 {
			c.FlagsRemoved[r.Name()] = gone
		}
	}
	for _, r := range old.Rules() {
		if _, ok := cur.Rule(r.Name()); !ok {
			c.ToolsRemoved = append(c.ToolsRemoved, r.Name())
		}
	}
	return c
}

// minus is a without b's elements, sorted.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}
