package toolset

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
)

// largePolicy is the large config's 500 tools × 10 rules, compiled: each rule has
// typed, bounded and patterned flags and positional patterns.
func largePolicy(tb testing.TB) *policy.Policy {
	tb.Helper()
	lo, hi := int64(1), int64(100)
	pmax := 3
	tools := make([]policy.Tool, 500)
	for i := range tools {
		tools[i] = policy.Tool{Name: fmt.Sprintf("tool%03d", i), Binary: "/usr/bin/true", Deny: []*policy.DenyRule{{Subcommand: []string{"config"}}}}
		for j := range 10 {
			name := fmt.Sprintf("--name%d", j)
			r := &policy.AllowRule{
				Subcommand: []string{fmt.Sprintf("sub%02d", j), "leaf"},
				Flags:      []string{"--depth", "--ref", "--force", "-v", name},
				DenyFlags:  []string{"--exec"},
				FlagConstraints: map[string]*policy.Constraint{
					"--depth": {Type: "integer", Min: &lo, Max: &hi},
					"--ref":   {Pattern: "[A-Za-z0-9._/-]+"},
					"--force": {Type: "boolean"},
					name:      {Pattern: fmt.Sprintf("name-%d-[a-z]+", j), Required: true},
				},
				ArgConstraints: policy.ArgConstraints{PositionalMax: &pmax, Patterns: []string{"origin", "[A-Za-z0-9][A-Za-z0-9._/-]*"}},
			}
			policy.SeedHelpFlags(r)
			tools[i].Allow = append(tools[i].Allow, r)
		}
	}
	p, err := policy.New(tools, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if n := len(p.Rules()); n != 5000 {
		tb.Fatalf("exposed rules = %d, want 5000", n)
	}
	return p
}

// BenchmarkDefinitions5000 is what the registry does for every rule on each
// snapshot: build its definition and encode it (the change key).
func BenchmarkDefinitions5000(b *testing.B) {
	p := largePolicy(b)
	b.ReportAllocs()
	for b.Loop() {
		d := NewDefiner()
		for _, r := range p.Rules() {
			if _, err := json.Marshal(d.Definition(r)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkAddTools5000 adds every definition to an MCP server, as serve's
// first snapshot does: the SDK resolves each input and output schema.
func BenchmarkAddTools5000(b *testing.B) {
	p := largePolicy(b)
	h := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil }
	b.ReportAllocs()
	for b.Loop() {
		s := mcp.NewServer(&mcp.Implementation{Name: "bench"}, nil)
		d := NewDefiner()
		for _, r := range p.Rules() {
			s.AddTool(d.Definition(r), h)
		}
	}
}
