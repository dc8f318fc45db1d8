package main

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/webui/metrics"
)

// Calls to tools that do not exist are counted under one label: before,
// each made-up name added a counter and a whole histogram (5,000 names
// made /metrics 24 MB and grew the server by 21 MB), and the name's control
// characters reached the scrape raw. A real tool keeps its own label.
func TestHostileToolNamesDoNotGrowTheMetrics(t *testing.T) {
	t.Parallel()
	m := metrics.New(nil)
	ctx, cs := metricsClient(t, m)
	const n = 200
	for i := range n {
		cs.CallTool(ctx, &mcp.CallToolParams{Name: fmt.Sprintf("made_up_%d\x1b]0;pwned\x07", i)}) // an error: no such tool
	}
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(w.Body)
	series := 0
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "wraptool_call") {
			series++
		}
	}
	if series > 40 {
		t.Errorf("%d calls to made-up tools made %d wraptool_call* series (%d bytes of /metrics); want them counted under one label", n, series, len(body))
	}
	if strings.Contains(string(body), "\x1b") {
		t.Errorf("the scrape carries a client's escape sequence raw")
	}
	if want := `wraptool_calls_total{decision="error",tool="(unknown)"} 200`; !strings.Contains(string(body), want) {
		t.Errorf("the scrape has no %s:\n%s", want, body)
	}
}

// metricsClient connects an in-memory client to an MCP server with no tools
// and wraptool's call middleware counting into m, as serve installs it; the
// context bounds the test's calls.
func metricsClient(t *testing.T, m *metrics.Metrics) (context.Context, *mcp.ClientSession) {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "wraptool-test", Version: "0"}, nil)
	server.AddReceivingMiddleware(callMetrics(m))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return ctx, cs
}
