package integration

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// TestServeSmoke is the shortest end-to-end path: list the tools and run one
// over Streamable HTTP.
func TestServeSmoke(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, "  fake:\n    binary: $FAKECLI\n    allow:\n      - subcommand: [pull]\n"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "smoke", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   s.URL + "/mcp",
		HTTPClient: &http.Client{Transport: toolsettest.Bearer{Token: s.Token, Base: http.DefaultTransport}},
	}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, s.Log())
	}
	defer session.Close()
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = true
	}
	if !names["fake_pull"] || !names["wraptool_request_capability"] {
		t.Fatalf("tools %v, want fake_pull and wraptool_request_capability", names)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "fake_pull", Arguments: map[string]any{"args": []string{"origin"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("call failed: %+v", res.Content[0])
	}
}
