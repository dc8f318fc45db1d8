package policy

import (
	"strconv"
	"testing"
)

// benchTools is a large, realistic policy: 50 tools of 10 allow rules each,
// every rule with 4 to 6 flags of mixed types (a pattern, an integer range, a
// short valued flag, heuristic booleans) plus the seeded help flags,
// positional_max 2, and two deny rules per tool.
func benchTools() []Tool {
	tools := make([]Tool, 0, 50)
	for ti := range 50 {
		name := "tool" + strconv.Itoa(ti)
		t := Tool{
			Name:   name,
			Binary: "/usr/bin/" + name,
			Deny: []*DenyRule{
				{Subcommand: []string{"auth"}},
				{Subcommand: []string{"config", "set"}},
			},
		}
		for ri := range 10 {
			flags := []string{"--format", "--limit", "--verbose", "-o"}
			if ri%2 == 0 {
				flags = append(flags, "--project")
			}
			if ri%3 == 0 {
				flags = append(flags, "--dry-run")
			}
			t.Allow = append(t.Allow, &AllowRule{
				Subcommand: []string{"group" + strconv.Itoa(ri/5), "cmd" + strconv.Itoa(ri)},
				Flags:      own(flags...),
				DenyFlags:  []string{"--quiet"},
				FlagConstraints: map[string]*Constraint{
					"--format":  {Pattern: "json|yaml|table|text"},
					"--limit":   {Min: ptr[int64](1), Max: ptr[int64](1000)},
					"--project": {Pattern: "[a-z][a-z0-9-]{0,29}"},
				},
				ArgConstraints: ArgConstraints{PositionalMax: ptr(2)},
			})
		}
		tools = append(tools, t)
	}
	return tools
}

// benchCall is a call as the MCP server hands it over: decoded JSON, with
// numbers as float64 and arrays as []any.
func benchCall(params map[string]any) Call {
	return Call{Tool: "tool37", Subcommand: []string{"group1", "cmd7"}, Params: params}
}

func BenchmarkEvaluate(b *testing.B) {
	p := newPolicy(b, benchTools(), nil)
	c := benchCall(map[string]any{
		"format":  "json",
		"limit":   float64(20),
		"verbose": true,
		"args":    []any{"instance-1", "us-central1-a"},
	})
	if d := p.Evaluate(c); !d.Allowed() {
		b.Fatalf("benchmark call refused:\n%s", d.Refusal.Text)
	}
	b.ReportAllocs()
	for b.Loop() {
		p.Evaluate(c)
	}
}

func BenchmarkEvaluateDenied(b *testing.B) {
	p := newPolicy(b, benchTools(), nil)
	c := benchCall(map[string]any{
		"format": "json",
		"force":  true,
		"args":   []any{"instance-1"},
	})
	if d := p.Evaluate(c); d.Allowed() || d.Refusal.Kind != KindFlagNotAllowed {
		b.Fatalf("benchmark call not refused as not in the allowlist: %+v", d)
	}
	b.ReportAllocs()
	for b.Loop() {
		p.Evaluate(c)
	}
}
