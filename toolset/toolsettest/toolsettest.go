// Package toolsettest holds what toolset's, the actors' and the integration
// tests share: the fake CLI fixture, built once per test binary, and small
// MCP client helpers.
package toolsettest

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BuildFakeCLI compiles toolset/testdata/fakecli into dir and returns the
// binary's path. Call it once from TestMain: a build takes a second or two.
func BuildFakeCLI(dir string) (string, error) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("build fakecli: cannot locate the toolsettest source")
	}
	src := filepath.Join(filepath.Dir(self), "..", "testdata", "fakecli")
	out := filepath.Join(dir, "fakecli")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
	cmd.Dir = src
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build fakecli: %v\n%s", err, b)
	}
	return out, nil
}

// Bearer is an http.RoundTripper that adds "Authorization: Bearer Token" to
// every request, for MCP clients in tests.
type Bearer struct {
	Token string
	Base  http.RoundTripper
}

// RoundTrip sends r with the token on a copy of its headers.
func (b Bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.Token)
	return b.Base.RoundTrip(r)
}

// ResultText is the text of a tool result's only content item; anything
// else fails the test.
func ResultText(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("result has %d content items, want 1: %+v", len(res.Content), res.Content)
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("result content is %T, want *mcp.TextContent", res.Content[0])
	}
	return text.Text
}
