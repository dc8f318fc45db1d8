package actors

import (
	"context"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
)

// TestAnInterruptedBurstSendsOneListChanged makes the scheduler's worst
// case happen on purpose: the registry is held up between two changes of
// one burst until the SDK has sent (and the gate held back) a
// notification for the first part, or, in the last case, after the SDK
// took its last change but before the call returned.
func TestAnInterruptedBurstSendsOneListChanged(t *testing.T) {
	t.Parallel()
	tool := func(name string) (*mcp.Tool, mcp.ToolHandler) {
		return &mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			}
	}
	tests := []struct {
		name  string
		burst func(t *testing.T, h *registryHarness, held func())
		want  []string
	}{
		{
			name: "held up between two additions",
			burst: func(t *testing.T, h *registryHarness, held func()) {
				g := h.reg.gate
				g.open(2)
				g.call(func() { h.server.AddTool(tool("one")) })
				g.call(func() { held(); h.server.AddTool(tool("two")) })
				g.close()
			},
			want: []string{"fake_log", "fake_status", "one", "two"},
		},
		{
			name: "held up between a removal and an addition",
			burst: func(t *testing.T, h *registryHarness, held func()) {
				g := h.reg.gate
				g.open(2)
				g.call(func() { h.server.RemoveTools("fake_log") })
				g.call(func() { held(); h.server.AddTool(tool("one")) })
				g.close()
			},
			want: []string{"fake_status", "one"},
		},
		{
			name: "held up after the last change was taken",
			burst: func(t *testing.T, h *registryHarness, held func()) {
				g := h.reg.gate
				g.open(2)
				g.call(func() { h.server.RemoveTools("fake_log") })
				g.call(func() { h.server.AddTool(tool("one")); held() })
				g.close()
			},
			want: []string{"fake_status", "one"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newRegistry(t, newPolicy(t, baseRules()))
			held := func() { h.sink.waitFor(t, "list_changed held back") }
			tt.burst(t, h, held)
			if got := h.countNotes(); got != 1 {
				t.Errorf("list_changed notifications = %d, want 1", got)
			}
			tools := h.tools(t)
			delete(tools, policy.RequestTool)
			if got := names(tools); !slices.Equal(got, tt.want) {
				t.Errorf("tools = %q, want %q", got, tt.want)
			}
		})
	}
}
