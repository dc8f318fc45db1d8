package integration

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// Sizes and bounds of TestUpstreamReport.
const (
	upstreamManyClients = 16
	// upstreamCallsOne is how many calls the lone client makes;
	// upstreamCallsMany how many each of upstreamManyClients makes.
	upstreamCallsOne  = 300
	upstreamCallsMany = 100
	// upstreamWarmup is how many unmeasured calls each client makes first.
	upstreamWarmup = 20
	// upstreamRowTimeout bounds one row's warm-up and measured phase; calls
	// not made by then count as errors.
	upstreamRowTimeout = time.Minute
	// upstreamCallTimeout bounds one tool call.
	upstreamCallTimeout = 30 * time.Second
	// upstreamConnectTimeout bounds opening one client session.
	upstreamConnectTimeout = 30 * time.Second
	// upstreamToolWait bounds how long a path may take to list the echo
	// tool: wraptool exposes an upstream's tools once it has initialized it.
	upstreamToolWait = 30 * time.Second
	// upstreamCloseTimeout bounds closing one client session.
	upstreamCloseTimeout = 10 * time.Second
	// peerStartTimeout bounds a peer bridge's start, up to its open port;
	// peerStopTimeout how long it has to exit after SIGTERM.
	peerStartTimeout = time.Minute
	peerStopTimeout  = 10 * time.Second
)

// TestUpstreamReport measures what wraptool's upstream bridge costs: the
// median latency and throughput of an echo tool call with 1 and 16
// concurrent clients, reaching the same stdio MCP server directly (one
// go-sdk session over stdio, shared by all clients), through wraptool, and,
// for the Node.js reference server, through two other stdio-to-HTTP bridges
// (mcp-proxy and supergateway). Every call sends a unique message, so a
// reply meant for another call shows up as crossed. Like TestLatencyReport
// it only reports speed; it fails only when wraptool errs or crosses a reply
// with 16 clients. Run it with `just bench`, or WRAPTOOL_BENCH=1 go test
// ./integration -run '^TestUpstreamReport$' -v.
func TestUpstreamReport(t *testing.T) {
	if os.Getenv("WRAPTOOL_BENCH") == "" {
		t.Skip("set WRAPTOOL_BENCH=1 (or run `just bench`) to measure the upstream bridge")
	}
	// A row that hangs is cut off by upstreamRowTimeout; this ends the
	// whole report before go test's default 10-minute timeout would panic.
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()

	// Our own fixture first: it needs no node, so its table prints even
	// where the server-everything part skips.
	fake := []string{fakeupstream}
	dir := t.TempDir()
	s := startServerIn(t, dir, upstreamConfig(t, dir, "fake", fake, "echo"), "WRAPTOOL_LOG_LEVEL=info")
	exact := upstreamEcho{
		args: func(msg string) map[string]any { return map[string]any{"text": msg} },
		want: func(msg string) string { return msg },
	}
	reportUpstream(ctx, t, "fakeupstream echo", exact, []benchPath{
		stdioPath(t, "direct stdio (go-sdk)", "echo", fake),
		httpPath(t, "wraptool", "fake_echo", s.URL+"/mcp", s.Token),
	})
	s.stop(t)

	everything := everythingCommand(t)
	nodeDir, err := filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	s = startServerIn(t, dir, upstreamConfig(t, dir, "everything", everything, "echo"), "WRAPTOOL_LOG_LEVEL=info")
	echo := upstreamEcho{
		args: func(msg string) map[string]any { return map[string]any{"message": msg} },
		want: func(msg string) string { return "Echo: " + msg },
	}
	paths := []benchPath{
		stdioPath(t, "direct stdio (go-sdk)", "echo", everything),
		httpPath(t, "wraptool", "everything_echo", s.URL+"/mcp", s.Token),
	}
	paths = append(paths, peerPaths(ctx, t, nodeDir, everything)...)
	reportUpstream(ctx, t, "server-everything echo", echo, paths)
}

// upstreamConfig returns a served config (serverConfig's mcp: section, no
// CLI tools) with one mcp_servers entry that starts argv and allows only
// tool, so wraptool exposes exactly <name>_<tool>.
func upstreamConfig(t *testing.T, dir, name string, argv []string, tool string) string {
	t.Helper()
	// JSON strings are YAML strings, quoted whatever the path holds.
	quote := func(s string) string {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var b strings.Builder
	b.WriteString(serverConfig(t, dir, ""))
	fmt.Fprintf(&b, "mcp_servers:\n  %s:\n    command: %s\n", name, quote(argv[0]))
	if len(argv) > 1 {
		args := make([]string, 0, len(argv)-1)
		for _, a := range argv[1:] {
			args = append(args, quote(a))
		}
		fmt.Fprintf(&b, "    args: [%s]\n", strings.Join(args, ", "))
	}
	fmt.Fprintf(&b, "    allow:\n      - tool: %s\n", tool)
	return b.String()
}

// upstreamEcho says how to call one upstream's echo tool and what it must
// answer, so one driver measures upstreams whose echo differs.
type upstreamEcho struct {
	// args builds the call's arguments carrying msg.
	args func(msg string) map[string]any
	// want is the only reply text that is the echo of msg.
	want func(msg string) string
}

// benchPath is one way for clients to reach an upstream's echo tool: a row
// of the report for each client count.
type benchPath struct {
	name string // the row's label
	tool string // the echo tool's name on this path
	// shared says one session serves every client: a stdio pipe has one
	// client, which direct callers share. Otherwise each client connects.
	shared bool
	// connect opens one client session and returns it with the function
	// that ends it and anything started for it, bounded.
	connect func(ctx context.Context) (*mcp.ClientSession, func(), error)
	// unavailable, when set, is why the path has no figures.
	unavailable string
}

// unavailablePath is a row that reports why it could not be measured, so a
// missing peer shows in the table instead of vanishing.
func unavailablePath(name, why string) benchPath {
	return benchPath{name: name, unavailable: why}
}

// stdioPath reaches the upstream the way a direct caller does: one go-sdk
// session over the stdio of a process started from argv, in its own
// process group so that closing kills whatever it left behind.
func stdioPath(t *testing.T, name, tool string, argv []string) benchPath {
	client := mcp.NewClient(&mcp.Implementation{Name: "wraptool-bench", Version: "1"}, nil)
	connect := func(ctx context.Context) (*mcp.ClientSession, func(), error) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Stderr = io.Discard
		// Close ends stdin and waits this long before SIGTERM.
		transport := &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
		session, stop, err := connectBounded(ctx, client, transport)
		killGroup := func() {
			if cmd.Process != nil {
				// The group is gone after a clean exit (ESRCH).
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
		}
		if err != nil {
			killGroup()
			return nil, nil, err
		}
		return session, func() { closeBounded(t, name, session); stop(); killGroup() }, nil
	}
	return benchPath{name: name, tool: tool, shared: true, connect: connect}
}

// httpPath reaches a Streamable HTTP endpoint, each client with its own
// connection pool as separate MCP clients would have, sending token as a
// bearer token when it is not empty.
func httpPath(t *testing.T, name, tool, endpoint, token string) benchPath {
	client := mcp.NewClient(&mcp.Implementation{Name: "wraptool-bench", Version: "1"}, nil)
	connect := func(ctx context.Context) (*mcp.ClientSession, func(), error) {
		pool := http.DefaultTransport.(*http.Transport).Clone()
		var rt http.RoundTripper = pool
		if token != "" {
			rt = toolsettest.Bearer{Token: token, Base: pool}
		}
		transport := &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: rt}}
		session, stop, err := connectBounded(ctx, client, transport)
		if err != nil {
			pool.CloseIdleConnections()
			return nil, nil, err
		}
		return session, func() { closeBounded(t, name, session); stop(); pool.CloseIdleConnections() }, nil
	}
	return benchPath{name: name, tool: tool, connect: connect}
}

// connectBounded connects client over transport within
// upstreamConnectTimeout. The context given to Connect lives until the
// returned stop, because a transport may tie its streams to it.
func connectBounded(ctx context.Context, client *mcp.Client, transport mcp.Transport) (*mcp.ClientSession, func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(upstreamConnectTimeout, cancel)
	session, err := client.Connect(ctx, transport, nil)
	if !timer.Stop() {
		cancel()
		return nil, nil, fmt.Errorf("not connected within %v (%v)", upstreamConnectTimeout, err)
	}
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return session, cancel, nil
}

// closeBounded closes a session, waiting at most upstreamCloseTimeout:
// closing sends a DELETE or waits for a process, either of which can hang
// on a broken peer, and the report must still end.
func closeBounded(t *testing.T, name string, session *mcp.ClientSession) {
	done := make(chan struct{})
	go func() {
		session.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(upstreamCloseTimeout):
		t.Logf("%s: a session did not close within %v", name, upstreamCloseTimeout)
	}
}

// benchRow is one path's figures for one client count.
type benchRow struct {
	path    string
	clients int
	calls   int           // calls meant to be measured
	good    int           // replies that were exactly the echo of their call
	median  time.Duration // over the good replies
	rate    float64       // good replies per second of the measured phase
	errors  int           // failed calls, error results, and calls not made in time
	crossed int           // replies that were not the echo of their own call
	// firstError and firstCrossed describe the first of each, for the notes.
	firstError, firstCrossed string
	unavailable              string
}

// reportUpstream measures every path with one client and with
// upstreamManyClients, prints the table, and fails when wraptool erred or
// crossed a reply with many clients.
func reportUpstream(ctx context.Context, t *testing.T, upstream string, echo upstreamEcho, paths []benchPath) {
	t.Helper()
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
	printUpstreamTable(upstream, rows)
	for _, r := range rows {
		if r.path != "wraptool" || r.clients != upstreamManyClients {
			continue
		}
		switch {
		case r.unavailable != "":
			t.Errorf("%s through wraptool with %d clients: not measured: %s", upstream, r.clients, r.unavailable)
		case r.errors > 0 || r.crossed > 0:
			t.Errorf("%s through wraptool with %d clients: %d errors (first: %s), %d crossed replies (first: %s), want none",
				upstream, r.clients, r.errors, r.firstError, r.crossed, r.firstCrossed)
		}
	}
}

// waitTool connects once and polls (bounded by upstreamToolWait) until the
// path lists its echo tool: there is no event for an upstream's tools
// appearing on a path that has no session yet.
func waitTool(ctx context.Context, p benchPath) error {
	session, closeSession, err := p.connect(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer closeSession()
	return waittest.Poll{Every: 100 * time.Millisecond, Context: ctx}.Within(upstreamToolWait, func() error {
		var names []string
		var listErr error
		listCtx, cancel := context.WithTimeout(ctx, upstreamCallTimeout)
		for tool, err := range session.Tools(listCtx, nil) {
			if err != nil {
				listErr = err
				break
			}
			names = append(names, tool.Name)
		}
		cancel()
		if slices.Contains(names, p.tool) {
			return nil
		}
		if listErr != nil {
			return fmt.Errorf("tools/list: %w", listErr)
		}
		return fmt.Errorf("%s not listed (tools: %s)", p.tool, strings.Join(names, ", "))
	})
}

// measure runs one row: it connects the sessions, lets every client make
// upstreamWarmup unmeasured calls, then perClient measured ones, all
// clients at once, and closes the sessions.
func measure(ctx context.Context, p benchPath, echo upstreamEcho, clients, perClient int) benchRow {
	row := benchRow{path: p.name, clients: clients, calls: clients * perClient, unavailable: p.unavailable}
	if row.unavailable != "" {
		return row
	}
	n := clients
	if p.shared {
		n = 1
	}
	sessions := make([]*mcp.ClientSession, 0, n)
	for range n {
		session, closeSession, err := p.connect(ctx)
		if err != nil {
			row.unavailable = "connect: " + err.Error()
			break
		}
		defer closeSession()
		sessions = append(sessions, session)
	}
	if row.unavailable != "" {
		return row
	}
	ctx, cancel := context.WithTimeout(ctx, upstreamRowTimeout)
	defer cancel()
	drive(ctx, sessions, p.tool, echo, clients, upstreamWarmup, "w")
	start := time.Now()
	outcomes := drive(ctx, sessions, p.tool, echo, clients, perClient, "c")
	elapsed := time.Since(start)

	var latencies []time.Duration
	for _, o := range outcomes {
		switch {
		case o.err != "":
			row.errors++
			if row.firstError == "" {
				row.firstError = o.err
			}
		case o.crossed != "":
			row.crossed++
			if row.firstCrossed == "" {
				row.firstCrossed = o.crossed
			}
		default:
			latencies = append(latencies, o.latency)
		}
	}
	row.good = len(latencies)
	if row.good > 0 {
		row.median = median(latencies)
		row.rate = float64(row.good) / elapsed.Seconds()
	}
	return row
}

// callOutcome is one call: its latency, or why it failed (err) or what it
// got instead of its own echo (crossed).
type callOutcome struct {
	latency      time.Duration
	err, crossed string
}

// drive has clients goroutines make perClient calls each, client c on
// sessions[c%len(sessions)], and returns every call's outcome. Each call
// sends a message unique to it (phase, client, index and a random part),
// so a reply routed to the wrong call cannot pass as right. Calls not made
// before ctx ends are errors.
func drive(ctx context.Context, sessions []*mcp.ClientSession, tool string, echo upstreamEcho, clients, perClient int, phase string) []callOutcome {
	outcomes := make([]callOutcome, clients*perClient)
	var wg sync.WaitGroup
	for c := range clients {
		session := sessions[c%len(sessions)]
		mine := outcomes[c*perClient : (c+1)*perClient]
		wg.Go(func() {
			for i := range mine {
				if ctx.Err() != nil {
					mine[i].err = "not made: " + ctx.Err().Error()
					continue
				}
				mine[i] = call(ctx, session, tool, echo, fmt.Sprintf("%s%d-i%d-%s", phase, c, i, rand.Text()[:12]))
			}
		})
	}
	wg.Wait()
	return outcomes
}

// call makes one echo call with msg, bounded by upstreamCallTimeout, and
// checks that the reply is a single text item exactly equal to the echo
// of msg.
func call(ctx context.Context, session *mcp.ClientSession, tool string, echo upstreamEcho, msg string) callOutcome {
	ctx, cancel := context.WithTimeout(ctx, upstreamCallTimeout)
	defer cancel()
	start := time.Now()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: echo.args(msg)})
	latency := time.Since(start)
	if err != nil {
		return callOutcome{err: err.Error()}
	}
	got := ""
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			got += tc.Text
		}
	}
	if res.IsError {
		return callOutcome{err: "error result: " + got}
	}
	if want := echo.want(msg); len(res.Content) != 1 || got != want {
		return callOutcome{crossed: fmt.Sprintf("sent %q, got %d content items with text %q", msg, len(res.Content), got)}
	}
	return callOutcome{latency: latency}
}

// printUpstreamTable prints the rows by client count, each with the ratio
// of wraptool's throughput to its own at the same count, then notes on
// what went wrong.
func printUpstreamTable(upstream string, rows []benchRow) {
	printBenchTable(fmt.Sprintf("wraptool upstream bridge (%s; %d calls for 1 client, %d per client for %d; %d warm-up calls per client first)",
		upstream, upstreamCallsOne, upstreamCallsMany, upstreamManyClients, upstreamWarmup), "wraptool", rows)
}

// printBenchTable prints rows under title with each path's throughput
// relative to the baseline path's with as many clients ("base/this > 1"
// means the baseline is faster), and the first error or crossed reply of
// each row below.
func printBenchTable(title, baseline string, rows []benchRow) {
	base := map[int]benchRow{}
	width := len("path")
	for _, r := range rows {
		if r.path == baseline && r.unavailable == "" {
			base[r.clients] = r
		}
		width = max(width, len(r.path))
	}
	fmt.Printf("\n%s\n", title)
	fmt.Printf("  %-*s %7s %10s %9s %7s %8s  %s\n", width, "path", "clients", "median_ms", "calls/s", "errors", "crossed", baseline+"/this (calls/s)")
	var notes []string
	for _, r := range rows {
		if r.unavailable != "" {
			why, _, _ := strings.Cut(r.unavailable, "\n")
			fmt.Printf("  %-*s %7d  not measured: %s\n", width, r.path, r.clients, why)
			continue
		}
		ratio := "-"
		if b, ok := base[r.clients]; ok && r.rate > 0 {
			ratio = fmt.Sprintf("%.2fx", b.rate/r.rate)
		}
		fmt.Printf("  %-*s %7d %10.3f %9.0f %7d %8d  %s\n", width, r.path, r.clients, ms(r.median), r.rate, r.errors, r.crossed, ratio)
		if r.firstError != "" {
			notes = append(notes, fmt.Sprintf("%s, %d clients, first error: %s", r.path, r.clients, r.firstError))
		}
		if r.firstCrossed != "" {
			notes = append(notes, fmt.Sprintf("%s, %d clients, first crossed: %s", r.path, r.clients, r.firstCrossed))
		}
	}
	fmt.Printf("  calls/s counts exact echoes over the measured phase; %s/this > 1 means %s is faster\n", baseline, baseline)
	for _, n := range notes {
		fmt.Println("  note:", n)
	}
	fmt.Println()
}

// peerPaths starts the two peer bridges in front of argv (the upstream's
// stdio command), each on its own loopback port, and returns their paths;
// a peer that cannot be installed or started is a row that says why. Their
// packages are devDependencies, so they are installed here when missing.
func peerPaths(ctx context.Context, t *testing.T, nodeDir string, argv []string) []benchPath {
	const proxyName, gatewayName = "mcp-proxy", "supergateway --stateful"
	if missing := nodeMissing(nodeDir, "mcp-proxy", "supergateway"); len(missing) > 0 {
		t.Logf("installing integration/node's devDependencies for %s (npm ci)", strings.Join(missing, ", "))
		if err := npmCI(ctx, nodeDir); err != nil {
			why := "npm ci failed: " + err.Error()
			return []benchPath{unavailablePath(proxyName, why), unavailablePath(gatewayName, why)}
		}
	}
	node := argv[0]
	var paths []benchPath
	// mcp-proxy: one upstream process shared by all sessions; stateful
	// Streamable HTTP sessions at /mcp by default; --server stream turns off
	// its /sse endpoint, --host keeps it on loopback (its default is ::).
	if bin, err := packageBin(nodeDir, "mcp-proxy", "mcp-proxy"); err != nil {
		paths = append(paths, unavailablePath(proxyName, err.Error()))
	} else if url, err := startPeer(ctx, t, proxyName, func(port int) []string {
		return append([]string{node, bin, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--server", "stream", "--streamEndpoint", "/mcp", "--"}, argv...)
	}); err != nil {
		paths = append(paths, unavailablePath(proxyName, err.Error()))
	} else {
		paths = append(paths, httpPath(t, proxyName, "echo", url+"/mcp", ""))
	}
	// supergateway: --stateful starts one upstream process per session; its
	// --stdio command goes through a shell. It has no host flag and listens
	// on every interface.
	if bin, err := packageBin(nodeDir, "supergateway", "supergateway"); err != nil {
		paths = append(paths, unavailablePath(gatewayName, err.Error()))
	} else if url, err := startPeer(ctx, t, gatewayName, func(port int) []string {
		return []string{node, bin, "--stdio", shellJoin(argv), "--outputTransport", "streamableHttp", "--stateful",
			"--port", strconv.Itoa(port), "--streamableHttpPath", "/mcp", "--logLevel", "none"}
	}); err != nil {
		paths = append(paths, unavailablePath(gatewayName, err.Error()))
	} else {
		paths = append(paths, httpPath(t, gatewayName, "echo", url+"/mcp", ""))
	}
	return paths
}

// shellJoin quotes argv for sh, for a peer that takes its upstream as one
// command line.
func shellJoin(argv []string) string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}

// startPeer starts the command argv(port) in its own process group on a
// free loopback port and waits (bounded) until the port accepts a
// connection, returning http://127.0.0.1:PORT. The peer is stopped, with
// its whole process group, when the test ends. freePort can race another
// process for the port, so a peer that exits before listening is tried
// again on another.
func startPeer(ctx context.Context, t *testing.T, name string, argv func(port int) []string) (string, error) {
	var err error
	for range 3 {
		port := freePort(t)
		p := &peer{name: name, log: &logBuffer{}, exited: make(chan struct{})}
		args := argv(port)
		p.cmd = exec.Command(args[0], args[1:]...)
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
		if err := p.cmd.Start(); err != nil {
			return "", fmt.Errorf("start %s: %w", name, err)
		}
		go func() { p.exitErr = p.cmd.Wait(); close(p.exited) }()
		t.Cleanup(func() { p.stop(t) })
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err = p.waitListening(ctx, addr); err == nil {
			return "http://" + addr, nil
		}
		if !p.hasExited() {
			break // it runs but does not listen: another port will not help
		}
	}
	return "", err
}

// peer is a third-party bridge started by startPeer.
type peer struct {
	name    string
	cmd     *exec.Cmd
	log     *logBuffer // its stdout and stderr
	exited  chan struct{}
	exitErr error // set before exited is closed
}

// hasExited reports whether the peer's process has ended.
func (p *peer) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// waitListening polls (bounded by peerStartTimeout) until addr accepts a
// TCP connection: a peer says it is ready only in log lines that differ
// between peers and versions.
func (p *peer) waitListening(ctx context.Context, addr string) error {
	var exited error
	err := waittest.Poll{Context: ctx}.Within(peerStartTimeout, func() error {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		if p.hasExited() {
			exited = fmt.Errorf("%s exited before listening (%v):\n%s", p.name, p.exitErr, p.log.String())
			return nil
		}
		return fmt.Errorf("%s did not listen on %s:\n%s", p.name, addr, p.log.String())
	})
	if exited != nil {
		return exited
	}
	return err
}

// stop ends the peer and everything it started: SIGTERM to its process
// group so it can stop its upstreams, then, after peerStopTimeout, SIGKILL
// to that group and to the groups of its descendants, which supergateway
// puts in process groups of their own.
func (p *peer) stop(t *testing.T) {
	pgid := p.cmd.Process.Pid
	groups := descendantGroups(pgid)
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(peerStopTimeout):
		t.Logf("%s did not exit within %v of SIGTERM; killing it", p.name, peerStopTimeout)
	}
	// Whatever is left, whether or not the leader exited (ESRCH: none).
	for _, g := range append(groups, pgid) {
		_ = syscall.Kill(-g, syscall.SIGKILL)
	}
	select {
	case <-p.exited:
	case <-time.After(peerStopTimeout):
		t.Errorf("%s did not exit within %v of SIGKILL", p.name, peerStopTimeout)
	}
}

// descendantGroups returns the process groups, other than pid's own, of
// pid's descendants, read from /proc: they must be found before pid dies,
// since its orphans are then reparented away from it.
func descendantGroups(pid int) []int {
	type proc struct{ ppid, pgrp int }
	procs := map[int]proc{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		id, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so cut at
		// the last ')'.
		i := strings.LastIndexByte(string(stat), ')')
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 3 {
			continue
		}
		ppid, err1 := strconv.Atoi(fields[1])
		pgrp, err2 := strconv.Atoi(fields[2])
		if err := errors.Join(err1, err2); err == nil {
			procs[id] = proc{ppid, pgrp}
		}
	}
	var groups []int
	queue := []int{pid}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		for id, p := range procs {
			if p.ppid != parent {
				continue
			}
			queue = append(queue, id)
			if p.pgrp != pid && !slices.Contains(groups, p.pgrp) {
				groups = append(groups, p.pgrp)
			}
		}
	}
	return groups
}
