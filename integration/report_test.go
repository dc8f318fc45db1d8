package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/policy/config/configtest"
)

// Sizes of TestBenchReport.
const (
	reportCalls       = 400 // sequential calls per path for p50/p99
	reportCPUCalls    = 3000
	reportClients     = 16
	reportPerClient   = 100
	reportReloads     = 20
	reportSessions    = 1000
	reportLargeTools  = 500
	reportLargeRules  = 10
	reportBenchTime   = "2s"
	reportPhaseBudget = 3 * time.Minute
)

// TestBenchReport is `just bench`: every figure of docs/performance.md, measured
// side by side in one run on this machine and printed as one report. It
// asserts nothing about speed (shared machines are too noisy); it fails
// only when a path it measures errs. Run it with `just bench`, or
// WRAPTOOL_BENCH=1 go test ./integration -run '^TestBenchReport$' -v.
func TestBenchReport(t *testing.T) {
	if os.Getenv("WRAPTOOL_BENCH") == "" {
		t.Skip("set WRAPTOOL_BENCH=1 (or run `just bench`) to measure the report")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	r := &report{}
	r.linef("wraptool bench report — %s, %d CPUs, %s, %s/%s", time.Now().UTC().Format("2006-01-02 15:04Z"), runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH)

	// In-process Go benchmarks, run as `go test -bench` so they are the
	// same code `go test -bench` measures.
	r.section("in-process (go test -bench, benchtime " + reportBenchTime + ")")
	for _, b := range []struct{ pkg, pattern, label string }{
		{"../policy", "^BenchmarkEvaluate$", "policy evaluation, allowed call"},
		{"../policy", "^BenchmarkEvaluateDenied$", "policy evaluation, denied call"},
		{"../policy/config", "^BenchmarkLoad500x10$", "config load + validate, 500 tools × 10 rules"},
		{"../policy/config", "^BenchmarkYAMLFloor500x10$", "  of which yaml.v3 parsing alone (the floor)"},
		{"../actors", "^BenchmarkCallPath$", "one call in one process (client + server)"},
		{"../toolset/runner", "^BenchmarkStart$", "start /bin/true"},
	} {
		for _, res := range goBench(ctx, t, b.pkg, b.pattern) {
			label := b.label
			if _, sub, ok := strings.Cut(res.name, "/"); ok {
				label += ", " + sub
			}
			r.linef("  %-56s %12s/op %10s/op %7d allocs/op", label, fmtNs(res.nsPerOp), fmtBytes(res.bytesPerOp), res.allocsPerOp)
		}
	}

	// The servers: wraptool wrapping /bin/echo, and the bare go-sdk
	// server running the same command.
	dir := t.TempDir()
	adminAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	admin := fmt.Sprintf("admin:\n  listen: %s\n  auth_token_file: %s\n", adminAddr, filepath.Join(dir, "admin-token"))
	rule := "  echo:\n    binary: /bin/echo\n    allow:\n      - {}\n"
	cfg := serverConfig(t, dir, rule) + admin
	start := time.Now()
	// Info, the default level: a denial's log line is part of its cost.
	s := startServerIn(t, dir, cfg, "WRAPTOOL_LOG_LEVEL=info")
	started := time.Since(start)
	idleRSS := rssOf(t, s.PID())
	adminToken := strings.TrimSpace(string(configtest.ReadFile(t, filepath.Join(dir, "admin-token"))))
	wraptoolAlloc := func() uint64 { return uint64(scrapeSample(t, adminAddr, adminToken, "go_memstats_alloc_bytes_total")) }
	bare := startBare(ctx, t)

	wt := reportSession(ctx, t, s.URL+"/mcp", s.Token)
	bs := reportSession(ctx, t, bare.url, "")
	echoArgs := map[string]any{"args": []string{"hello"}}
	callWraptool := func(ctx context.Context, cs *mcp.ClientSession) error {
		return expectText(cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: echoArgs}))
	}
	callBare := func(ctx context.Context, cs *mcp.ClientSession) error {
		return expectText(cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: echoArgs}))
	}
	direct := func(ctx context.Context) error {
		out, err := exec.CommandContext(ctx, "/bin/echo", "hello").Output()
		if err == nil && string(out) != "hello\n" {
			err = fmt.Errorf("direct echo printed %q", out)
		}
		return err
	}

	// Server cost per call, taken from outside: CPU from /proc, bytes from
	// the Go runtime's allocation counter. A denied call runs no child.
	r.section(fmt.Sprintf("server cost per call (%d calls each, one client, measured in the server process)", reportCPUCalls))
	denyW := func(ctx context.Context) error {
		return expectDenied(wt.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"force": true}}))
	}
	denyB := func(ctx context.Context) error {
		return expectDenied(bs.CallTool(ctx, &mcp.CallToolParams{Name: "refuse", Arguments: echoArgs}))
	}
	costs := []struct {
		label string
		pid   int
		alloc func() uint64
		call  func(context.Context) error
	}{
		{"wraptool, denied call (no child)", s.PID(), wraptoolAlloc, denyW},
		{"bare go-sdk, refused call (no child)", bare.pid, bare.alloc, denyB},
		{"wraptool, allowed /bin/echo (child excluded)", s.PID(), wraptoolAlloc, func(ctx context.Context) error { return callWraptool(ctx, wt) }},
		{"bare go-sdk, /bin/echo (child excluded)", bare.pid, bare.alloc, func(ctx context.Context) error { return callBare(ctx, bs) }},
	}
	var cpuPer, bytesPer [4]float64
	for i, c := range costs {
		for range 50 { // warm-up
			must(t, c.call(ctx))
		}
		cpu0, a0 := cpuOf(t, c.pid), c.alloc()
		for range reportCPUCalls {
			must(t, c.call(ctx))
		}
		cpu1, a1 := cpuOf(t, c.pid), c.alloc()
		cpuPer[i] = float64(cpu1-cpu0) / float64(reportCPUCalls)
		bytesPer[i] = float64(a1-a0) / float64(reportCPUCalls)
		r.linef("  %-48s CPU %9s/call   allocated %9s/call", c.label, fmtNs(cpuPer[i]), fmtBytes(bytesPer[i]))
	}
	r.linef("  wraptool/bare: denied CPU %.2fx, bytes %.2fx; allowed CPU %.2fx, bytes %.2fx",
		cpuPer[0]/cpuPer[1], bytesPer[0]/bytesPer[1], cpuPer[2]/cpuPer[3], bytesPer[2]/bytesPer[3])

	// Latency, the three paths alternated call by call.
	r.section(fmt.Sprintf("latency of /bin/echo hello (%d calls per path, alternated, one client)", reportCalls))
	var dLat, bLat, wLat []time.Duration
	for i := range reportCalls + 20 {
		d, b, w := timed(t, ctx, direct), timed(t, ctx, func(ctx context.Context) error { return callBare(ctx, bs) }),
			timed(t, ctx, func(ctx context.Context) error { return callWraptool(ctx, wt) })
		if i >= 20 {
			dLat, bLat, wLat = append(dLat, d), append(bLat, b), append(wLat, w)
		}
	}
	d50, d99 := percentiles(dLat)
	b50, b99 := percentiles(bLat)
	w50, w99 := percentiles(wLat)
	r.linef("  %-24s p50 %8.3f ms   p99 %8.3f ms", "direct exec (os/exec)", ms(d50), ms(d99))
	r.linef("  %-24s p50 %8.3f ms   p99 %8.3f ms", "bare go-sdk server", ms(b50), ms(b99))
	r.linef("  %-24s p50 %8.3f ms   p99 %8.3f ms", "wraptool", ms(w50), ms(w99))
	r.linef("  wraptool/direct p50 %.2fx p99 %.2fx;  wraptool/bare p50 %.2fx p99 %.2fx",
		ratio(w50, d50), ratio(w99, d99), ratio(w50, b50), ratio(w99, b99))

	// Throughput with 16 clients, each with its own session.
	r.section(fmt.Sprintf("throughput, %d clients × %d calls (each client its own session)", reportClients, reportPerClient))
	dRate := throughput(ctx, t, reportClients, func(int) func(context.Context) error { return direct })
	bRate := throughput(ctx, t, reportClients, func(int) func(context.Context) error {
		cs := reportSession(ctx, t, bare.url, "")
		return func(ctx context.Context) error { return callBare(ctx, cs) }
	})
	wRate := throughput(ctx, t, reportClients, func(int) func(context.Context) error {
		cs := reportSession(ctx, t, s.URL+"/mcp", s.Token)
		return func(ctx context.Context) error { return callWraptool(ctx, cs) }
	})
	r.linef("  direct exec %7.0f calls/s   bare go-sdk %7.0f calls/s   wraptool %7.0f calls/s", dRate, bRate, wRate)
	r.linef("  wraptool/direct %.0f%%   wraptool/bare %.0f%%", 100*wRate/dRate, 100*wRate/bRate)

	// Reload: config write to list_changed.
	r.section(fmt.Sprintf("reload (%d config writes, each to the client's tools/list_changed; 200 ms debounce included)", reportReloads))
	watcher := s.Connect(t, "/mcp")
	var reloads []time.Duration
	for i := range reportReloads {
		next := strings.Replace(cfg, rule, rule+fmt.Sprintf("      - subcommand: [v%d]\n", i), 1)
		written := time.Now()
		writeInPlace(t, s.ConfigPath, next)
		select {
		case <-watcher.ListChanged:
			reloads = append(reloads, time.Since(written))
		case <-time.After(30 * time.Second):
			t.Fatalf("no list_changed within 30 s of config write %d:\n%s", i, s.Log())
		}
	}
	r50, r99 := percentiles(reloads)
	r.linef("  p50 %7.1f ms   p99 %7.1f ms", ms(r50), ms(r99))

	// Confinement: the same allowed call on the confined server and on one
	// whose config turns confinement off, alternated call by call, with
	// each server's CPU per call and its start-up time.
	r.section(fmt.Sprintf("confinement (allowed /bin/echo, %d calls per server, alternated, one client)", reportCalls))
	odir := t.TempDir()
	ocfg := strings.Replace(serverConfig(t, odir, rule), "mcp:\n", "mcp:\n  confinement: off\n", 1)
	start = time.Now()
	off := startServerIn(t, odir, ocfg, "WRAPTOOL_LOG_LEVEL=info")
	offStarted := time.Since(start)
	ws := reportSession(ctx, t, off.URL+"/mcp", off.Token)
	callOff := func(ctx context.Context) error { return callWraptool(ctx, ws) }
	callOn := func(ctx context.Context) error { return callWraptool(ctx, wt) }
	var onLat, offLat []time.Duration
	for i := range reportCalls + 20 {
		on, o := timed(t, ctx, callOn), timed(t, ctx, callOff)
		if i >= 20 {
			onLat, offLat = append(onLat, on), append(offLat, o)
		}
	}
	// CPU from /proc counts in 10 ms ticks: read around a run of calls.
	cpuPerCall := func(pid int, call func(context.Context) error) float64 {
		c0 := cpuOf(t, pid)
		for range reportCPUCalls {
			must(t, call(ctx))
		}
		return float64(cpuOf(t, pid)-c0) / float64(reportCPUCalls)
	}
	onCPU, offCPU := cpuPerCall(s.PID(), callOn), cpuPerCall(off.PID(), callOff)
	on50, on99 := percentiles(onLat)
	off50, off99 := percentiles(offLat)
	r.linef("  %-24s p50 %8.3f ms   p99 %8.3f ms   server CPU %9s/call   start %6.0f ms", "confined (landlock)", ms(on50), ms(on99), fmtNs(onCPU), ms(started))
	r.linef("  %-24s p50 %8.3f ms   p99 %8.3f ms   server CPU %9s/call   start %6.0f ms", "confinement off", ms(off50), ms(off99), fmtNs(offCPU), ms(offStarted))
	r.linef("  confined/off p50 %.2fx p99 %.2fx, server CPU %.2fx, start %.2fx", ratio(on50, off50), ratio(on99, off99), onCPU/offCPU, ratio(started, offStarted))

	// Upstream bridge and connect, against the same stdio upstream.
	r.section(fmt.Sprintf("upstream bridge and connect (fakeupstream's echo tool; %d calls, one client, %d warm-up)", upstreamCallsOne, upstreamWarmup))
	udir := t.TempDir()
	us := startServerIn(t, udir, upstreamConfig(t, udir, "fake", []string{fakeupstream}, "echo"), "WRAPTOOL_LOG_LEVEL=info")
	echo := upstreamEcho{
		args: func(msg string) map[string]any { return map[string]any{"text": msg} },
		want: func(msg string) string { return msg },
	}
	paths := []benchPath{
		stdioPath(t, "direct stdio to the upstream", "echo", []string{fakeupstream}),
		httpPath(t, "wraptool /mcp (bridge)", "fake_echo", us.URL+"/mcp", us.Token),
		stdioPath(t, "wraptool connect → /mcp", "fake_echo", []string{wraptoolBin, "--config", us.ConfigPath, "--log-level", "warn", "connect"}),
	}
	rows := make([]benchRow, len(paths))
	for i, p := range paths {
		if err := waitTool(ctx, p); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		rows[i] = measure(ctx, p, echo, 1, upstreamCallsOne)
		if rows[i].unavailable != "" || rows[i].errors > 0 || rows[i].crossed > 0 {
			t.Fatalf("%s: %+v", p.name, rows[i])
		}
		r.linef("  %-32s p50 %8.3f ms   %7.0f calls/s", p.name, ms(rows[i].median), rows[i].rate)
	}
	r.linef("  bridge/direct p50 %.2fx;  connect//mcp p50 %.2fx", ratio(rows[1].median, rows[0].median), ratio(rows[2].median, rows[1].median))

	// Memory: idle, with 1,000 sessions, and with 500 × 10 rules.
	r.section("memory (VmRSS of the server process)")
	r.linef("  idle, after start (%5.0f ms to serve)        %7.1f MB", ms(started), mb(idleRSS))
	opened := openSessions(t, s.URL+"/mcp", s.Token, reportSessions)
	r.linef("  with %d idle Streamable HTTP sessions        %7.1f MB", opened, mb(rssOf(t, s.PID())))
	large := configtest.LargeTools(reportLargeTools, reportLargeRules, helpcli, "")
	ldir := t.TempDir()
	lcfg := serverConfig(t, ldir, large)
	start = time.Now()
	ls := startServerIn(t, ldir, lcfg, "WRAPTOOL_LOG_LEVEL=info")
	cold := time.Since(start)
	ls.stop(t)
	start = time.Now()
	ls = startServerIn(t, ldir, "", "WRAPTOOL_LOG_LEVEL=info")
	warm := time.Since(start)
	r.linef("  %d tools × %d rules served: start %6.0f ms (introspection cache cold), %6.0f ms (warm)", reportLargeTools, reportLargeRules, ms(cold), ms(warm))
	r.linef("  %d tools × %d rules served, idle after a warm start  %7.1f MB (peak during start %.1f MB)", reportLargeTools, reportLargeRules, mb(rssOf(t, ls.PID())), mb(hwmOf(t, ls.PID())))
	fmt.Println()
}

// report prints as it measures: nothing else in the test writes to
// standard output (the servers' logs go to buffers), so the lines stay
// together, and a run that fails half-way still shows what it measured.
type report struct{}

func (r *report) linef(format string, args ...any) { fmt.Printf(format+"\n", args...) }
func (r *report) section(title string)             { fmt.Printf("\n%s\n", title) }

// benchResult is one line of `go test -bench -benchmem` output.
type benchResult struct {
	name                string
	nsPerOp, bytesPerOp float64
	allocsPerOp         int64
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(?:\s+[\d.]+ MB/s)?\s+(\d+) B/op\s+(\d+) allocs/op`)

// goBench runs the benchmarks matching pattern in pkg and parses them.
func goBench(ctx context.Context, t *testing.T, pkg, pattern string) []benchResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, reportPhaseBudget)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", pattern, "-benchmem", "-benchtime", reportBenchTime, "-count", "1", pkg)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test -bench %s %s: %v\n%s", pattern, pkg, err, out)
	}
	var res []benchResult
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ns, _ := strconv.ParseFloat(m[2], 64)
		by, _ := strconv.ParseFloat(m[3], 64)
		al, _ := strconv.ParseInt(m[4], 10, 64)
		res = append(res, benchResult{name: m[1], nsPerOp: ns, bytesPerOp: by, allocsPerOp: al})
	}
	if len(res) == 0 {
		t.Fatalf("go test -bench %s %s printed no result:\n%s", pattern, pkg, out)
	}
	return res
}

// bareServer is the running baresdk fixture.
type bareServer struct {
	url   string
	pid   int
	alloc func() uint64
}

// startBare builds and starts integration/testdata/baresdk on a loopback
// port; it is stopped when the test ends.
func startBare(ctx context.Context, t *testing.T) *bareServer {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "baresdk")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./testdata/baresdk").CombinedOutput(); err != nil {
		t.Fatalf("build baresdk: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(startTimeout):
		t.Fatalf("baresdk did not start within %v", startTimeout)
	}
	addr, ok := strings.CutPrefix(line, "listening ")
	if !ok {
		t.Fatalf("baresdk printed %q", line)
	}
	b := &bareServer{url: "http://" + addr + "/mcp", pid: cmd.Process.Pid}
	b.alloc = func() uint64 {
		resp, err := http.Get("http://" + addr + "/memstats")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m struct {
			TotalAlloc uint64 `json:"total_alloc"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return m.TotalAlloc
	}
	return b
}

// reportSession opens a go-sdk Streamable HTTP session as the upstream
// report's httpPath does, closed when the test ends.
func reportSession(ctx context.Context, t *testing.T, endpoint, token string) *mcp.ClientSession {
	t.Helper()
	cs, closeSession, err := httpPath(t, endpoint, "", endpoint, token).connect(ctx)
	if err != nil {
		t.Fatalf("connect %s: %v", endpoint, err)
	}
	t.Cleanup(closeSession)
	return cs
}

func expectText(res *mcp.CallToolResult, err error) error {
	switch {
	case err != nil:
		return err
	case res.IsError:
		return fmt.Errorf("error result: %+v", res.Content)
	case len(res.Content) == 0:
		return fmt.Errorf("empty result")
	}
	return nil
}

func expectDenied(res *mcp.CallToolResult, err error) error {
	switch {
	case err != nil:
		return err
	case !res.IsError:
		return fmt.Errorf("call was not refused: %+v", res.Content)
	}
	return nil
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// timed runs one call under a bound and returns its latency.
func timed(t *testing.T, ctx context.Context, call func(context.Context) error) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, upstreamCallTimeout)
	defer cancel()
	start := time.Now()
	must(t, call(ctx))
	return time.Since(start)
}

// throughput has n clients, each built by newClient before the clock
// starts, make reportPerClient calls at once, and returns calls per second.
func throughput(ctx context.Context, t *testing.T, n int, newClient func(int) func(context.Context) error) float64 {
	t.Helper()
	calls := make([]func(context.Context) error, n)
	for i := range n {
		calls[i] = newClient(i)
		for range 10 { // warm-up
			must(t, calls[i](ctx))
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			for range reportPerClient {
				if err := calls[i](ctx); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, err := range errs {
		must(t, err)
	}
	return float64(n*reportPerClient) / elapsed.Seconds()
}

// openSessions initializes n Streamable HTTP sessions with bare requests
// (no notification stream, as an idle client between calls holds none)
// and returns how many the server accepted.
func openSessions(t *testing.T, endpoint, token string, n int) int {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	post := func(session, body string) (string, error) {
		req, err := http.NewRequest("POST", endpoint, strings.NewReader(body))
		if err != nil {
			return "", err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode >= 300 {
			return "", fmt.Errorf("%s", resp.Status)
		}
		return resp.Header.Get("Mcp-Session-Id"), nil
	}
	opened := 0
	for i := range n {
		id, err := post("", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"idle-%d","version":"1"}}}`, i))
		if err != nil || id == "" {
			t.Logf("session %d not opened: %v", i, err)
			break
		}
		if _, err := post(id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
			t.Logf("session %d not initialized: %v", i, err)
			break
		}
		opened++
	}
	return opened
}

// cpuOf is the CPU time (user + system) pid has used, in nanoseconds.
func cpuOf(t *testing.T, pid int) int64 {
	t.Helper()
	fields := waittest.Stat(pid) // state, ppid, … utime is the 12th, stime the 13th
	if len(fields) < 13 {
		t.Fatalf("/proc/%d/stat: process gone", pid)
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	const ticksPerSecond = 100 // USER_HZ on Linux
	return (utime + stime) * int64(time.Second) / ticksPerSecond
}

func rssOf(t *testing.T, pid int) int64 { return statusKB(t, pid, "VmRSS:") }
func hwmOf(t *testing.T, pid int) int64 { return statusKB(t, pid, "VmHWM:") }

func statusKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }
func mb(kb int64) float64              { return float64(kb) / 1024 }

func fmtNs(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.1f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

func fmtBytes(b float64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}
