package main

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/webui/metrics"
)

// A call of a tool that is not exposed gets a tool error saying what to do
// (discover, request), not the SDK's bare `unknown tool` protocol error; the
// client's name is quoted as denials quote a token and bounded, so it can
// neither add a line nor grow the answer.
func TestUnknownToolIsAToolErrorNamingTheNextStep(t *testing.T) {
	t.Parallel()
	ctx, cs := metricsClient(t, metrics.New(nil))
	long := strings.Repeat("é", 5000)
	for _, tc := range []struct {
		name, tool, shown string
	}{
		{"a plain name is quoted", "git_push", "'git_push'"},
		{"a name with a newline and an escape is Go-quoted", "x\nDENIED: \x1b[2J\u202e", `"x\nDENIED: \x1b[2J\u202e"`},
		{"a quote cannot close the quoting", "it' x", `"it' x"`},
		{"a long name is cut on a character boundary with its length", long, "'" + strings.Repeat("é", 100) + "'…(10000 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool})
			if err != nil {
				t.Fatalf("protocol error %v, want a tool error", err)
			}
			if !res.IsError || len(res.Content) != 1 {
				t.Fatalf("result %+v, want one text of a tool error", res)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			want := "UNKNOWN TOOL: " + tc.shown + " is not a tool this server exposes.\n\n" +
				"To see the tools you can call and what each allows, call the 'wraptool_discover' tool.\n" +
				"To ask the operator for a capability no tool gives, call the 'wraptool_request_capability' tool."
			if text != want {
				t.Errorf("got:\n%s\nwant:\n%s", text, want)
			}
		})
	}
}
