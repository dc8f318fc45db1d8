package integration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// TestLatencyReport measures, side by side in one run, the median latency of
// a tool call through wraptool against spawning the same fixture directly,
// and the median time from a config write to the client's list_changed. It
// only reports (timings on shared machines are too noisy to assert): run it
// with `just bench`, or WRAPTOOL_BENCH=1 go test ./integration -run
// TestLatencyReport -v.
func TestLatencyReport(t *testing.T) {
	if os.Getenv("WRAPTOOL_BENCH") == "" {
		t.Skip("set WRAPTOOL_BENCH=1 (or run `just bench`) to measure latencies")
	}
	const calls, reloads = 200, 15
	dir := t.TempDir()
	rule := "  fake:\n    binary: $FAKECLI\n    allow:\n      - subcommand: [pull]\n"
	cfg := serverConfig(t, dir, rule)
	s := startServerIn(t, dir, cfg, "WRAPTOOL_LOG_LEVEL=info")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	changed := make(chan time.Time, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- time.Now() },
	})
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   s.URL + "/mcp",
		HTTPClient: &http.Client{Transport: toolsettest.Bearer{Token: s.Token, Base: http.DefaultTransport}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()

	// Warm both paths, then alternate them so both see the same machine.
	var direct, wrapped, denied []time.Duration
	for i := range calls + 10 {
		start := time.Now()
		if out, err := exec.CommandContext(ctx, fakecli, "pull", "origin").Output(); err != nil || len(out) == 0 {
			t.Fatalf("direct run: %v", err)
		}
		d := time.Since(start)
		start = time.Now()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "fake_pull", Arguments: map[string]any{"args": []string{"origin"}}})
		if err != nil || res.IsError {
			t.Fatalf("call through wraptool: %v %+v", err, res)
		}
		w := time.Since(start)
		start = time.Now()
		res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "fake_pull", Arguments: map[string]any{"force": true}})
		if err != nil || !res.IsError {
			t.Fatalf("denied call: %v %+v", err, res)
		}
		n := time.Since(start)
		if i >= 10 {
			direct, wrapped, denied = append(direct, d), append(wrapped, w), append(denied, n)
		}
	}

	var reload []time.Duration
	for i := range reloads {
		sub := fmt.Sprintf("pull%d", i)
		next := serverConfig(t, dir, rule+"      - subcommand: ["+sub+"]\n")
		// Keep the listener: serverConfig drew a new port, restore the old one.
		next = replaceListen(next, s.URL)
		start := time.Now()
		if err := os.WriteFile(s.ConfigPath, []byte(next), 0o600); err != nil {
			t.Fatal(err)
		}
		select {
		case at := <-changed:
			reload = append(reload, at.Sub(start))
		case <-ctx.Done():
			t.Fatal("no list_changed after a config write")
		}
	}

	md, mw := median(direct), median(wrapped)
	paired := make([]time.Duration, len(direct))
	for i := range direct {
		paired[i] = wrapped[i] - direct[i]
	}
	fmt.Printf("\nwraptool latency (%d calls each, alternated; %d reloads)\n", calls, reloads)
	fmt.Printf("  direct spawn of the fixture   median %8.3f ms\n", ms(md))
	fmt.Printf("  MCP call through wraptool     median %8.3f ms\n", ms(mw))
	fmt.Printf("  overhead per call             median %8.3f ms   ratio %.2fx\n", ms(mw-md), float64(mw)/float64(md))
	fmt.Printf("  overhead, paired differences  median %8.3f ms\n", ms(median(paired)))
	fmt.Printf("  MCP round trip, no process    median %8.3f ms   (a denied call)\n", ms(median(denied)))
	fmt.Printf("  config write → list_changed   median %8.3f ms   (200 ms debounce included)\n\n", ms(median(reload)))
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// replaceListen points a generated config at the running server's address.
func replaceListen(cfg, url string) string {
	start := len("mcp:\n  listen: ")
	end := start
	for end < len(cfg) && cfg[end] != '\n' {
		end++
	}
	return cfg[:start] + url[len("http://"):] + cfg[end:]
}

// TestIntrospectionReport measures start-up with 50 wrapped tools whose help
// must be learned (a cold introspection cache) and again with the cache warm,
// and the reload latency with a warm cache. Like TestLatencyReport it only
// reports: run it with `just bench`.
func TestIntrospectionReport(t *testing.T) {
	if os.Getenv("WRAPTOOL_BENCH") == "" {
		t.Skip("set WRAPTOOL_BENCH=1 (or run `just bench`) to measure start-up with introspection")
	}
	const tools, reloads = 50, 10
	dir := t.TempDir()
	rules := func(extra string) string {
		var b strings.Builder
		for i := range tools {
			fmt.Fprintf(&b, "  t%02d:\n    binary: %s\n    allow:\n      - subcommand: [commit]\n        flags: [\"-m\", \"--depth\"%s]\n      - subcommand: [pull]\n", i, helpcli, extra)
		}
		return b.String()
	}
	cfg := serverConfig(t, dir, rules(""))
	start := time.Now()
	s := startServerIn(t, dir, cfg, "WRAPTOOL_LOG_LEVEL=info")
	cold := time.Since(start)
	s.stop(t)
	start = time.Now()
	s = startServerIn(t, dir, "", "WRAPTOOL_LOG_LEVEL=info")
	warm := time.Since(start)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	changed := make(chan time.Time, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- time.Now() },
	})
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   s.URL + "/mcp",
		HTTPClient: &http.Client{Transport: toolsettest.Bearer{Token: s.Token, Base: http.DefaultTransport}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	var reload []time.Duration
	for i := range reloads {
		extra := ""
		if i%2 == 0 {
			extra = `, "-q"`
		}
		written := time.Now()
		writeInPlace(t, s.ConfigPath, withTools(cfg, rules(extra)))
		select {
		case at := <-changed:
			reload = append(reload, at.Sub(written))
		case <-ctx.Done():
			t.Fatal("no list_changed")
		}
	}
	slices.Sort(reload)
	fmt.Printf("wraptool introspection (%d tools, %d rules each, their help learned from helpcli)\n", tools, 2)
	fmt.Printf("  start to /healthz, cold cache      %9.1f ms\n", float64(cold.Microseconds())/1000)
	fmt.Printf("  start to /healthz, warm cache      %9.1f ms\n", float64(warm.Microseconds())/1000)
	fmt.Printf("  reload, warm cache: write → list_changed median %7.1f ms (200 ms debounce included)\n", float64(reload[len(reload)/2].Microseconds())/1000)
}
