package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConnectReport measures what `wraptool connect` costs a stdio client,
// side by side in one run: the same echo call (an upstream tool, so no
// process starts per call) straight to /mcp, through `wraptool connect`,
// and through the two npm stdio bridges clients use today, mcp-remote and
// supergateway --streamableHttp. Each path is one MCP session shared by
// its clients (a stdio client has one pipe), with 1 and 16 clients making
// calls at once. It only reports; it fails only when connect errs or
// crosses a reply. Run it with `just bench`, or WRAPTOOL_BENCH=1 go test
// ./integration -run '^TestConnectReport$' -v.
func TestConnectReport(t *testing.T) {
	if os.Getenv("WRAPTOOL_BENCH") == "" {
		t.Skip("set WRAPTOOL_BENCH=1 (or run `just bench`) to measure wraptool connect")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	dir := t.TempDir()
	s := startServerIn(t, dir, upstreamConfig(t, dir, "fake", []string{fakeupstream}, "echo"), "WRAPTOOL_LOG_LEVEL=info")
	echo := upstreamEcho{
		args: func(msg string) map[string]any { return map[string]any{"text": msg} },
		want: func(msg string) string { return msg },
	}
	direct := httpPath(t, "direct /mcp", "fake_echo", s.URL+"/mcp", s.Token)
	direct.shared = true
	connect := stdioPath(t, "wraptool connect", "fake_echo", []string{wraptoolBin, "--config", s.ConfigPath, "--log-level", "warn", "connect"})
	paths := []benchPath{direct, connect}
	paths = append(paths, stdioBridgePaths(ctx, t, s)...)
	for i := range paths {
		if paths[i].unavailable == "" {
			if err := waitTool(ctx, paths[i]); err != nil {
				paths[i].unavailable = err.Error()
			}
		}
	}
	var rows []benchRow
	for _, load := range []struct{ clients, calls int }{{1, upstreamCallsOne}, {upstreamManyClients, upstreamCallsMany}} {
		for _, p := range paths {
			rows = append(rows, measure(ctx, p, echo, load.clients, load.calls))
		}
	}
	printBenchTable(fmt.Sprintf("wraptool connect (an upstream echo; one session per path shared by its clients; %d calls for 1 client, %d per client for %d; %d warm-up calls per client first)",
		upstreamCallsOne, upstreamCallsMany, upstreamManyClients, upstreamWarmup), "wraptool connect", rows)
	for _, r := range rows {
		if r.path != "wraptool connect" {
			continue
		}
		switch {
		case r.unavailable != "":
			t.Errorf("wraptool connect with %d clients: not measured: %s", r.clients, r.unavailable)
		case r.errors > 0 || r.crossed > 0:
			t.Errorf("wraptool connect with %d clients: %d errors (first: %s), %d crossed (first: %s), want none",
				r.clients, r.errors, r.firstError, r.crossed, r.firstCrossed)
		}
	}
}

// stdioBridgePaths are the npm bridges from stdio to wraptool's /mcp,
// installed from integration/node's devDependencies when missing; a bridge
// that cannot be installed is a row that says why.
func stdioBridgePaths(ctx context.Context, t *testing.T, s *server) []benchPath {
	const remoteName, gatewayName = "mcp-remote", "supergateway --streamableHttp"
	nodeDir, err := filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	if missing := nodeMissing(nodeDir, "mcp-remote", "supergateway"); len(missing) > 0 {
		t.Logf("installing integration/node's devDependencies for %s (npm ci)", strings.Join(missing, ", "))
		if err := npmCI(ctx, nodeDir); err != nil {
			why := "npm ci failed: " + err.Error()
			return []benchPath{unavailablePath(remoteName, why), unavailablePath(gatewayName, why)}
		}
	}
	node := everythingCommand(t)[0]
	// mcp-remote keeps OAuth state under its config folder: a private one.
	t.Setenv("MCP_REMOTE_CONFIG_DIR", t.TempDir())
	var paths []benchPath
	if bin, err := packageBin(nodeDir, "mcp-remote", "mcp-remote"); err != nil {
		paths = append(paths, unavailablePath(remoteName, err.Error()))
	} else {
		paths = append(paths, stdioPath(t, remoteName, "fake_echo", []string{node, bin, s.URL + "/mcp",
			"--transport", "http-only", "--allow-http", "--header", "Authorization:Bearer " + s.Token, "--silent"}))
	}
	if bin, err := packageBin(nodeDir, "supergateway", "supergateway"); err != nil {
		paths = append(paths, unavailablePath(gatewayName, err.Error()))
	} else {
		paths = append(paths, stdioPath(t, gatewayName, "fake_echo", []string{node, bin, "--streamableHttp", s.URL + "/mcp",
			"--oauth2Bearer", s.Token, "--logLevel", "none"}))
	}
	return paths
}
