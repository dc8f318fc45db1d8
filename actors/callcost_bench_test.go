package actors

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/toolset"
	"github.com/wraptool/wraptool/toolset/toolsettest"
	"github.com/wraptool/wraptool/webui/httpguard"
)

// benchToken is the bearer token the benchmark's server requires.
const benchToken = "bench-token"

// BenchmarkCallPath measures one tools/call over Streamable HTTP, end to
// end and in one process: the go-sdk client, net/http over loopback, the
// request guard, the SDK's JSON-RPC and schema handling, and the handler.
// Client and server share the process, so ns/op and allocs/op
// include the client; a CPU profile separates the two.
//
//   - denied: wraptool's handler refuses the call (a flag the rule does not
//     allow); no child runs.
//   - allowed: the rule wraps /bin/true, which runs once per call.
//   - sdkfloor: a bare go-sdk server whose handler returns a fixed result,
//     behind the same HTTP stack; denied minus sdkfloor is wraptool's own
//     handler cost.
func BenchmarkCallPath(b *testing.B) {
	b.Run("denied", func(b *testing.B) {
		cs := benchSession(b, wraptoolBenchServer(b))
		benchCalls(b, cs, &mcp.CallToolParams{Name: "fake_status", Arguments: map[string]any{"force": true}}, true)
	})
	b.Run("allowed", func(b *testing.B) {
		cs := benchSession(b, wraptoolBenchServer(b))
		benchCalls(b, cs, &mcp.CallToolParams{Name: "fake_status", Arguments: map[string]any{}}, false)
	})
	b.Run("sdkfloor", func(b *testing.B) {
		s := mcp.NewServer(&mcp.Implementation{Name: "floor", Version: "v0"}, &mcp.ServerOptions{Logger: benchLogger()})
		// The same definition the wrapped tool has, so the SDK's schema
		// work is the same.
		s.AddTool(toolset.Definition(benchPolicy(b).Rules()[0]), func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "DENIED: fixed"}}}, nil
		})
		cs := benchSession(b, s)
		benchCalls(b, cs, &mcp.CallToolParams{Name: "fake_status", Arguments: map[string]any{"force": true}}, true)
	})
}

// benchLogger writes text records at info level to nowhere: what a call
// logs is formatted, as it is in service.
func benchLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// benchPolicy is one tool, "fake", wrapping /bin/true with one rule:
// "fake status [--short]".
func benchPolicy(b testing.TB) *policy.Policy {
	b.Helper()
	r := &policy.AllowRule{Subcommand: []string{"status"}, Flags: []string{"--short"}}
	policy.SeedHelpFlags(r)
	p, err := policy.New([]policy.Tool{{Name: "fake", Binary: "/bin/true", Allow: []*policy.AllowRule{r}}}, nil)
	if err != nil {
		b.Fatalf("policy.New: %v", err)
	}
	return p
}

// wraptoolBenchServer is an MCP server whose wrapped tools the Registry
// registers from benchPolicy, with toolset.NewHandler as in service.
func wraptoolBenchServer(b *testing.B) *mcp.Server {
	b.Helper()
	log := benchLogger()
	s := mcp.NewServer(&mcp.Implementation{Name: "wraptool-bench", Version: "v0"}, &mcp.ServerOptions{Logger: log})
	snap := &Snapshot{State: toolset.State{Policy: benchPolicy(b), Runtimes: map[string]toolset.Runtime{"fake": {}}},
		Config: &config.Config{}}
	NewRegistry(RegistryOptions{Server: s, Snapshots: newTestSnapshots(snap), Log: log}).Prime()
	return s
}

// benchSession serves s as the hub does (the guard, then the SDK's
// Streamable HTTP handler, stateful) on a loopback httptest server, and
// connects a go-sdk client to it.
func benchSession(b *testing.B, s *mcp.Server) *mcp.ClientSession {
	b.Helper()
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{SessionTimeout: SessionTimeout, MaxRequestBodyBytes: MaxBodyBytes})
	ts := httptest.NewUnstartedServer(nil)
	guard := httpguard.New(&httpguard.Options{
		Hosts:        httpguard.LoopbackHosts(ts.Listener.Addr()),
		Token:        func() string { return benchToken },
		MaxBodyBytes: MaxBodyBytes,
	})
	ts.Config.Handler = guard.WrapMethods(streamableMethods, streamable)
	ts.Start()
	b.Cleanup(ts.Close)
	hc := &http.Client{Transport: toolsettest.Bearer{Token: benchToken, Base: ts.Client().Transport}}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0"}, nil)
	cs, err := client.Connect(b.Context(), &mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		b.Fatalf("Connect: %v", err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// benchCalls calls the tool b.N times, after one checked warm-up call.
func benchCalls(b *testing.B, cs *mcp.ClientSession, params *mcp.CallToolParams, wantError bool) {
	ctx := b.Context()
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		b.Fatalf("CallTool: %v", err)
	}
	if res.IsError != wantError {
		b.Fatalf("IsError = %v, want %v: %s", res.IsError, wantError, toolsettest.ResultText(b, res))
	}
	if wantError && !strings.HasPrefix(toolsettest.ResultText(b, res), "DENIED") {
		b.Fatalf("not a denial: %s", toolsettest.ResultText(b, res))
	}
	if testing.Verbose() {
		b.Logf("result: %s", toolsettest.ResultText(b, res))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := cs.CallTool(ctx, params); err != nil {
			b.Fatalf("CallTool: %v", err)
		}
	}
}
