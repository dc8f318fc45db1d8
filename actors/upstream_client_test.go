package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/toolset/toolsettest"
	"github.com/wraptool/wraptool/toolset/upstream"
)

// fastTiming restarts quickly and never pings: tests that need pings or a
// reset of the backoff set those fields themselves.
var fastTiming = UpstreamTiming{FirstBackoff: 50 * time.Millisecond, MaxBackoff: time.Second, StopGrace: 500 * time.Millisecond}

// upstreamsHarness runs an Upstreams supervisor against the fixture
// upstream server, with a fake registry that reads its offers.
type upstreamsHarness struct {
	u       *Upstreams
	ready   chan struct{} // the supervisor's Ready
	snaps   *testSnapshots
	changed messages.Doorbell
	// seen receives every offer the fake registry took, in order. With
	// apply, the fake registry has answered its Applied already; without,
	// the test must.
	seen chan messages.UpstreamTools
	sink *logSink
	stop func() error
}

// fakeServer is an mcp_servers entry running the fixture with args.
func fakeServer(t *testing.T, args ...string) *config.MCPServer {
	t.Helper()
	return &config.MCPServer{Command: fakeUpstreamPath(t), Args: args, InitTimeout: wait, Timeout: wait, NamePrefix: "fake"}
}

func serversSnapshot(servers map[string]*config.MCPServer) *Snapshot {
	return &Snapshot{Config: &config.Config{MCPServers: servers}}
}

// startUpstreams runs a supervisor for servers until the test ends. With
// apply, the fake registry answers every Applied itself.
func startUpstreams(t *testing.T, servers map[string]*config.MCPServer, timing UpstreamTiming, apply bool) *upstreamsHarness {
	t.Helper()
	log, sink := newTestLogger()
	offers := make(chan messages.UpstreamTools)
	h := &upstreamsHarness{snaps: newTestSnapshots(serversSnapshot(servers)), changed: make(messages.Doorbell, 1),
		seen: make(chan messages.UpstreamTools, 64), sink: sink}
	ctx, cancel := context.WithCancel(context.Background())
	registryDone := make(chan struct{})
	go func() {
		defer close(registryDone)
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-offers:
				if apply && m.Applied != nil {
					m.Applied <- struct{}{}
				}
				select {
				case h.seen <- m:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	// Registered first, so it runs after the supervisor has stopped.
	t.Cleanup(func() {
		cancel()
		<-registryDone
	})
	h.ready = make(chan struct{})
	h.u = NewUpstreams(UpstreamsOptions{Snapshots: h.snaps, UpstreamsChanged: h.changed, Offers: offers, Ready: h.ready,
		Getenv: func(k string) string {
			switch k {
			case "PATH":
				return os.Getenv("PATH")
			case "HOME":
				return "/home/wraptool-test"
			}
			return "server-only"
		},
		Timing: timing, Version: "test", Log: log})
	h.stop = start(t, h.u)
	return h
}

// next waits for the next offer the fake registry took.
func (h *upstreamsHarness) next(t *testing.T) messages.UpstreamTools {
	t.Helper()
	return receive(t, h.seen, "an offer from an upstream client")
}

// none checks that no offer has been taken (beyond those read already).
func (h *upstreamsHarness) none(t *testing.T) {
	t.Helper()
	select {
	case m := <-h.seen:
		t.Errorf("unexpected offer %s", describeOffer(m))
	default:
	}
}

// reconcile puts servers in service and rings the supervisor, returning
// once it has reconciled: it rings twice, and the second ring is taken
// (read as a Current call) only once the first one's reconcile is over.
func (h *upstreamsHarness) reconcile(t *testing.T, servers map[string]*config.MCPServer) {
	t.Helper()
	h.snaps.Store(serversSnapshot(servers))
	for range 2 {
		n := h.snaps.calls.Load()
		ring(h.changed)
		h.snaps.waitCalls(t, n+1)
	}
}

func describeOffer(m messages.UpstreamTools) string {
	if m.Tools == nil {
		return fmt.Sprintf("withdrawal{%s gen %d}", m.Server, m.Generation)
	}
	return fmt.Sprintf("offer{%s gen %d, %q}", m.Server, m.Generation, toolNames(m.Tools))
}

func toolNames(tools []*mcp.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

// wantOffer checks that m offers the fixture's tools from server.
func wantOffer(t *testing.T, m messages.UpstreamTools, server string) {
	t.Helper()
	if m.Server != server || m.Tools == nil || !slices.Contains(toolNames(m.Tools), "echo") {
		t.Fatalf("got %s, want an offer of the fixture's tools from %s", describeOffer(m), server)
	}
}

// wantWithdrawal checks that m withdraws server's tools for generation gen.
func wantWithdrawal(t *testing.T, m messages.UpstreamTools, server string, gen uint64) {
	t.Helper()
	if m.Server != server || m.Tools != nil || m.Generation != gen {
		t.Fatalf("got %s, want withdrawal{%s gen %d}", describeOffer(m), server, gen)
	}
}

// send sends a call to the upstream client behind offer and returns its reply
// channel. done, when not nil, is the call's Done.
func send(t *testing.T, offer messages.UpstreamTools, tool, args string, done <-chan struct{}, progress chan<- messages.UpstreamProgress) <-chan messages.UpstreamResult {
	t.Helper()
	reply := make(chan messages.UpstreamResult, 1)
	if done == nil {
		done = make(chan struct{})
	}
	c := messages.UpstreamCall{Tool: tool, Arguments: json.RawMessage(args), Done: done, Progress: progress, Reply: reply}
	select {
	case offer.Calls <- c:
	case <-offer.Gone:
		t.Fatalf("the upstream client of %s is gone; calling %s", describeOffer(offer), tool)
	case <-time.After(wait):
		t.Fatalf("the upstream client of %s did not take a call to %s within %v", describeOffer(offer), tool, wait)
	}
	return reply
}

// call calls tool through offer's upstream client and waits for the answer.
func call(t *testing.T, offer messages.UpstreamTools, tool, args string) messages.UpstreamResult {
	t.Helper()
	return receive(t, send(t, offer, tool, args, nil, nil), "the answer to "+tool)
}

// upstreamEnv is what the fixture's env tool reports.
type upstreamEnv struct {
	Env  []string `json:"env"`
	Cwd  string   `json:"cwd"`
	Pid  int      `json:"pid"`
	Pgid int      `json:"pgid"`
}

// envOf calls the env tool through offer's upstream client.
func envOf(t *testing.T, offer messages.UpstreamTools) upstreamEnv {
	t.Helper()
	r := call(t, offer, "env", "{}")
	if r.Err != nil {
		t.Fatalf("calling env: %v", r.Err)
	}
	text, _ := resultText(t, r.Result)
	var e upstreamEnv
	if err := json.Unmarshal([]byte(text), &e); err != nil {
		t.Fatalf("env result %q: %v", text, err)
	}
	return e
}

// markedPids returns the pids the fixture marked with prefix ("start",
// "child", "crash") in the marks file, in order.
func markedPids(t *testing.T, marks, prefix string) []int {
	t.Helper()
	data, err := os.ReadFile(marks)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var pids []int
	for l := range strings.Lines(string(data)) {
		rest, ok := strings.CutPrefix(l, prefix+" pid=")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(strings.Fields(rest)[0])
		if err != nil {
			t.Fatalf("marks line %q: %v", l, err)
		}
		pids = append(pids, pid)
	}
	return pids
}

func TestUpstreamsReadyWaitsForTheFirstOfferToBeApplied(t *testing.T) {
	t.Parallel()
	h := startUpstreams(t, map[string]*config.MCPServer{
		"good":    fakeServer(t),
		"missing": {Command: "wraptool-test-no-such-command", InitTimeout: wait},
	}, fastTiming, false)
	m := h.next(t)
	wantOffer(t, m, "good")
	if m.Applied == nil {
		t.Fatalf("the first offer has no Applied channel; the supervisor cannot wait for it")
	}
	// The upstream client waits for Applied before it reports its first start, so
	// Ready cannot be closed yet, whatever the missing server did.
	h.sink.waitFor(t, "upstream server failed", "server=missing", "cannot start")
	select {
	case <-h.ready:
		t.Fatalf("Ready is closed before the registry applied the first offer")
	default:
	}
	m.Applied <- struct{}{}
	receive(t, h.ready, "Ready once the first offer is applied")
}

func TestUpstreamsReadyAfterAFailedFirstStart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		servers func(t *testing.T) map[string]*config.MCPServer
		// wantLog is logged for the failure, if any.
		wantLog []string
	}{
		{
			name:    "no servers at all: Ready at once",
			servers: func(*testing.T) map[string]*config.MCPServer { return nil },
		},
		{
			name: "a command not found",
			servers: func(*testing.T) map[string]*config.MCPServer {
				return map[string]*config.MCPServer{"up": {Command: "wraptool-test-no-such-command", InitTimeout: wait}}
			},
			wantLog: []string{"upstream server failed", "server=up", "cannot start"},
		},
		{
			name: "a working_dir that does not exist",
			servers: func(t *testing.T) map[string]*config.MCPServer {
				s := fakeServer(t)
				s.WorkingDir = filepath.Join(t.TempDir(), "nowhere")
				return map[string]*config.MCPServer{"up": s}
			},
			wantLog: []string{"upstream server failed", "server=up", "cannot start"},
		},
		{
			name: "an upstream that exits before it initializes",
			servers: func(t *testing.T) map[string]*config.MCPServer {
				return map[string]*config.MCPServer{"up": fakeServer(t, "-exit-at-start", "2")}
			},
			wantLog: []string{"upstream server failed", "server=up", "exited before it could initialize", "exit status 2"},
		},
		{
			name: "an upstream slower than its init_timeout",
			servers: func(t *testing.T) map[string]*config.MCPServer {
				s := fakeServer(t, "-start-delay", "1m")
				s.InitTimeout = 200 * time.Millisecond
				return map[string]*config.MCPServer{"up": s}
			},
			wantLog: []string{"upstream server failed", "server=up", "did not initialize within init_timeout (200ms)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A long backoff: one failure is all this test needs.
			h := startUpstreams(t, tt.servers(t), UpstreamTiming{FirstBackoff: time.Minute, StopGrace: 500 * time.Millisecond}, true)
			receive(t, h.ready, "Ready after the first start failed")
			if tt.wantLog != nil {
				h.sink.waitFor(t, tt.wantLog...)
			}
			h.none(t)
		})
	}
}

// Every start of an upstream checks its command and its script arguments
// again: a folder made writable by others while the server runs is caught at
// the next (re)start, which fails with the reason and backs off as any failed
// start does, and the program is not run.
func TestUpstreamsRefuseAProgramOthersCouldReplace(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// server places the fixture (or its script) in open/sub, where
		// open is private until the test opens it.
		server  func(t *testing.T, open string) *config.MCPServer
		wantLog []string
	}{
		{
			name: "the command under a folder made world-writable",
			server: func(t *testing.T, open string) *config.MCPServer {
				s := fakeServer(t)
				s.Command = filepath.Join(open, "sub", "fakeupstream")
				copyFile(t, fakeUpstreamPath(t), s.Command)
				return s
			},
			wantLog: []string{"refused to start", "fakeupstream is under"},
		},
		{
			name: "a relative script argument, taken from working_dir, under a folder made world-writable",
			server: func(t *testing.T, open string) *config.MCPServer {
				s := fakeServer(t, "server.js")
				s.WorkingDir = filepath.Join(open, "sub")
				if err := os.WriteFile(filepath.Join(s.WorkingDir, "server.js"), []byte("// a script\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				return s
			},
			wantLog: []string{"cannot start: its argument server.js", "server.js is under"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			open := filepath.Join(t.TempDir(), "open")
			if err := os.MkdirAll(filepath.Join(open, "sub"), 0o700); err != nil {
				t.Fatal(err)
			}
			h := startUpstreams(t, map[string]*config.MCPServer{"up": tt.server(t, open)}, fastTiming, true)
			first := h.next(t)
			wantOffer(t, first, "up")
			pid := envOf(t, first).Pid

			if err := os.Chmod(open, 0o777); err != nil {
				t.Fatal(err)
			}
			send(t, first, "crash", "{}", nil, nil)
			wantWithdrawal(t, h.next(t), "up", first.Generation)
			waittest.Gone(t, wait, pid)
			want := append([]string{"upstream server failed", "server=up"}, tt.wantLog...)
			want = append(want, "chmod go-w "+open, "restart_in=")
			h.sink.waitFor(t, want...)
			h.none(t)
		})
	}
}

// The upstream runs the entry's command in its working_dir, with the
// entry's environment over a small base, and none of the server's own.
func TestUpstreamsStartTheEntryAsWritten(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := fakeServer(t)
	s.WorkingDir = dir
	s.FileEnv = map[string]string{"FROM_FILE": "file", "BOTH": "file"}
	s.Env = map[string]string{"INLINE": "inline", "BOTH": "inline"}
	h := startUpstreams(t, map[string]*config.MCPServer{"up": s}, fastTiming, true)
	m := h.next(t)
	wantOffer(t, m, "up")
	e := envOf(t, m)
	if want, _ := filepath.EvalSymlinks(dir); e.Cwd != want && e.Cwd != dir {
		t.Errorf("cwd = %q, want working_dir %q", e.Cwd, dir)
	}
	for _, kv := range []string{"FROM_FILE=file", "INLINE=inline", "BOTH=inline", "HOME=/home/wraptool-test", "LANG=C.UTF-8"} {
		if !slices.Contains(e.Env, kv) {
			t.Errorf("env = %q, want %s among it", e.Env, kv)
		}
	}
	for _, kv := range e.Env {
		if strings.Contains(kv, "server-only") {
			t.Errorf("env holds %q: the server's own environment leaked", kv)
		}
	}
	if e.Pgid != e.Pid {
		t.Errorf("pgid = %d, want the upstream to lead its own process group (pid %d)", e.Pgid, e.Pid)
	}
}

func TestUpstreamsRestartAFailedUpstream(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// tool is what the test calls to make the upstream fail.
		tool   string
		timing UpstreamTiming
		// wantLog is the failure's log line.
		wantLog []string
		// raced is an answer the call may get all the same: the fixture's
		// freeze sends SIGSTOP to its process, whose other threads stop a
		// moment later, so now and then its answer is out first.
		raced string
	}{
		{
			name:    "a hung upstream misses a ping and is killed and restarted",
			tool:    "freeze",
			timing:  UpstreamTiming{PingEvery: 100 * time.Millisecond, PingTimeout: 500 * time.Millisecond, FirstBackoff: 100 * time.Millisecond, StopGrace: 100 * time.Millisecond},
			wantLog: []string{"upstream server failed", "server=up", "did not answer a ping within 500ms"},
			raced:   "thawed",
		},
		{
			name:    "a crashed upstream is restarted",
			tool:    "crash",
			timing:  fastTiming,
			wantLog: []string{"upstream server failed", "server=up", "the process exited (exit status 3)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := startUpstreams(t, map[string]*config.MCPServer{"up": fakeServer(t)}, tt.timing, true)
			first := h.next(t)
			wantOffer(t, first, "up")
			before := envOf(t, first).Pid

			reply := send(t, first, tt.tool, "{}", nil, nil)
			wantWithdrawal(t, h.next(t), "up", first.Generation)
			// The call in flight ends when its upstream does.
			r := receive(t, reply, "the answer to "+tt.tool)
			res, err := upstream.Outcome("up", r)
			text, _ := resultText(t, res)
			raced := tt.raced != "" && err == nil && text == tt.raced
			if !raced && (err != nil || !strings.Contains(text, "stopped while handling the call")) {
				t.Errorf("the %s call ended with %q, %v; want it told the upstream stopped while handling it", tt.tool, text, err)
			}
			waittest.Gone(t, wait, before)

			again := h.next(t)
			wantOffer(t, again, "up")
			if again.Generation != first.Generation {
				t.Errorf("restarted offer's generation = %d, want the upstream client's own %d", again.Generation, first.Generation)
			}
			if again.Calls != first.Calls || again.Gone != first.Gone {
				t.Errorf("the restarted offer has another Calls or Gone: the handlers registered for the upstream client would be stale")
			}
			if after := envOf(t, again).Pid; after == before {
				t.Errorf("pid after the restart = %d, the same as before", after)
			}
			h.sink.waitFor(t, tt.wantLog...)
			if got := h.sink.lines("stopping upstream server"); got != nil {
				t.Errorf("log = %q, want no stop by the supervisor: an upstream client restarts its own upstream", got)
			}
		})
	}
}

// restartDelays are the restart_in values the upstream clients logged, in order.
func restartDelays(sink *logSink) []string {
	re := regexp.MustCompile(`restart_in=(\S+)`)
	var out []string
	for _, l := range sink.lines("upstream server failed") {
		if m := re.FindStringSubmatch(l); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// The wait before a restart doubles with each failure, up to the cap, and
// starts again from FirstBackoff once the upstream has been healthy for
// HealthyAfter.
func TestUpstreamsBackoffDoublesAndResetsAfterHealth(t *testing.T) {
	t.Parallel()
	const healthy = time.Second
	timing := UpstreamTiming{FirstBackoff: 50 * time.Millisecond, MaxBackoff: 150 * time.Millisecond,
		HealthyAfter: healthy, StopGrace: 500 * time.Millisecond}
	h := startUpstreams(t, map[string]*config.MCPServer{"up": fakeServer(t)}, timing, true)
	m := h.next(t)
	wantOffer(t, m, "up")
	crash := func() {
		t.Helper()
		send(t, m, "crash", "{}", nil, nil)
		wantWithdrawal(t, h.next(t), "up", m.Generation)
		m = h.next(t)
		wantOffer(t, m, "up")
	}
	for range 3 {
		crash()
	}
	// Let the upstream serve past HealthyAfter: the time passing is what
	// this step tests, so a timer, not a signal, ends it. The margin covers
	// the moment between the offer and the start of serving.
	<-time.After(healthy + 300*time.Millisecond)
	crash()
	want := []string{"50ms", "100ms", "150ms", "50ms"}
	if got := restartDelays(h.sink); !slices.Equal(got, want) {
		t.Errorf("restart_in = %q, want %q: doubling, capped at MaxBackoff, reset after HealthyAfter", got, want)
	}
}

// A call reaching an upstream client between two runs of its upstream is refused at
// once, saying why, rather than waiting for the restart.
func TestUpstreamsRefuseCallsWhileRestarting(t *testing.T) {
	t.Parallel()
	timing := fastTiming
	timing.FirstBackoff, timing.MaxBackoff = time.Minute, time.Minute
	h := startUpstreams(t, map[string]*config.MCPServer{"up": fakeServer(t)}, timing, true)
	m := h.next(t)
	wantOffer(t, m, "up")
	send(t, m, "crash", "{}", nil, nil)
	wantWithdrawal(t, h.next(t), "up", m.Generation)
	r := call(t, m, "echo", `{"text":"hi"}`)
	var down upstream.Down
	if r.Result != nil || r.Err == nil {
		t.Fatalf("call while restarting = %+v, want an upstream.Down", r)
	}
	if !errors.As(r.Err, &down) || !strings.Contains(down.Why, "restarts in 1m0s") {
		t.Fatalf("call while restarting failed with %T %v, want an upstream.Down saying it restarts in 1m0s", r.Err, r.Err)
	}
	res, err := upstream.Outcome("up", r)
	if text, isError := resultText(t, res); err != nil || !isError || !strings.Contains(text, `upstream server "up" is not available: it failed`) {
		t.Errorf("outcome = %q, %v; want a tool error saying the upstream is not available", text, err)
	}
}

// A caller that gives up (its Done closes) has its call cancelled on the
// upstream, and progress notes reach a caller that asked for them.
func TestUpstreamsCancelACallTheCallerGaveUp(t *testing.T) {
	t.Parallel()
	marks := filepath.Join(t.TempDir(), "marks")
	h := startUpstreams(t, map[string]*config.MCPServer{"up": fakeServer(t, "-marks", marks)}, fastTiming, true)
	m := h.next(t)
	wantOffer(t, m, "up")
	done := make(chan struct{})
	progress := make(chan messages.UpstreamProgress, upstream.ProgressBuffer)
	reply := send(t, m, "slow", `{"ms": 60000, "steps": 1000}`, done, progress)
	// The first note comes from inside the upstream's handler: the call is
	// running there.
	p := receive(t, progress, "a progress note")
	if p.Progress != 1 || p.Total != 1000 || p.Message != "step 1" {
		t.Errorf("progress = %+v, want step 1 of 1000", p)
	}
	close(done)
	r := receive(t, reply, "the answer to the cancelled call")
	if r.Err == nil {
		t.Errorf("cancelled call answered %+v, want an error", r)
	}
	waitUntil(t, "the upstream marks the call cancelled", func() bool {
		data, _ := os.ReadFile(marks)
		return strings.Contains(string(data), "cancelled slow")
	})
	// The upstream is still in service.
	if r := call(t, m, "echo", `{"text":"still here"}`); r.Err != nil {
		t.Errorf("echo after the cancelled call: %v", r.Err)
	}
	h.none(t)
}

// An upstream's own tools/list_changed brings a new offer from the same
// upstream client.
func TestUpstreamsFollowTheUpstreamsListChanged(t *testing.T) {
	t.Parallel()
	h := startUpstreams(t, map[string]*config.MCPServer{"up": fakeServer(t)}, fastTiming, true)
	m := h.next(t)
	wantOffer(t, m, "up")
	if r := call(t, m, "toggle", `{"name": "extra", "present": true}`); r.Err != nil {
		t.Fatalf("toggle: %v", r.Err)
	}
	again := h.next(t)
	wantOffer(t, again, "up")
	if !slices.Contains(toolNames(again.Tools), "extra") || again.Generation != m.Generation {
		t.Errorf("got %s, want the same generation %d with extra among the tools", describeOffer(again), m.Generation)
	}
	if r := call(t, m, "toggle", `{"name": "extra", "present": false}`); r.Err != nil {
		t.Fatalf("toggle: %v", r.Err)
	}
	if last := h.next(t); slices.Contains(toolNames(last.Tools), "extra") {
		t.Errorf("got %s, want extra gone", describeOffer(last))
	}
}

// On each swap the supervisor leaves unchanged entries alone, stops then
// restarts a changed one (its withdrawal before the new upstream client's offer),
// stops and withdraws a removed one, and starts a new one.
func TestUpstreamsReconcile(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: upstream reconcile starts and stops real upstream processes")
	}
	t.Parallel()
	entry := func(name string, change func(s *config.MCPServer)) *config.MCPServer {
		s := fakeServer(t, "-stderr-lines", "1")
		s.NamePrefix = name
		s.Allow = []*config.ToolRef{{Tool: "echo"}}
		if change != nil {
			change(s)
		}
		return s
	}
	h := startUpstreams(t, map[string]*config.MCPServer{"a": entry("a", nil), "b": entry("b", nil)}, fastTiming, true)
	offers := map[string]messages.UpstreamTools{}
	for range 2 {
		m := h.next(t)
		wantOffer(t, m, m.Server)
		offers[m.Server] = m
	}
	receive(t, h.ready, "Ready")
	pidA, pidB := envOf(t, offers["a"]).Pid, envOf(t, offers["b"]).Pid

	// Equal entries, rebuilt, with only allow, deny, name_prefix and
	// timeout changed: nothing restarts.
	h.reconcile(t, map[string]*config.MCPServer{
		"a": entry("a", func(s *config.MCPServer) {
			s.Allow = append(s.Allow, &config.ToolRef{Tool: "add"})
			s.Deny = []*config.ToolRef{{Tool: "secret"}}
			s.NamePrefix = "renamed"
			s.Timeout = time.Second
		}),
		"b": entry("b", nil),
	})
	h.none(t)
	if got := h.sink.lines("stopping upstream server"); got != nil {
		t.Fatalf("log = %q, want no upstream stopped for unchanged entries", got)
	}
	if got := envOf(t, offers["a"]).Pid; got != pidA {
		t.Errorf("a's pid = %d, want %d: an unchanged entry is not restarted", got, pidA)
	}

	// a's env changes: its upstream client stops, is withdrawn, and a new one
	// offers with a higher generation.
	changedA := entry("a", func(s *config.MCPServer) { s.Env = map[string]string{"WRAPTOOL_TEST_RESTART": "1"} })
	h.reconcile(t, map[string]*config.MCPServer{"a": changedA, "b": entry("b", nil)})
	wantWithdrawal(t, h.next(t), "a", offers["a"].Generation)
	select {
	case <-offers["a"].Gone:
	default:
		t.Errorf("the old upstream client's Gone is open after its withdrawal")
	}
	waittest.Gone(t, wait, pidA)
	newA := h.next(t)
	wantOffer(t, newA, "a")
	if newA.Generation <= offers["a"].Generation || newA.Generation <= offers["b"].Generation {
		t.Errorf("new upstream client's generation = %d, want above every earlier one (%d, %d)", newA.Generation, offers["a"].Generation, offers["b"].Generation)
	}
	if e := envOf(t, newA); e.Pid == pidA || !slices.Contains(e.Env, "WRAPTOOL_TEST_RESTART=1") {
		t.Errorf("new a runs as pid %d (old %d) with env %q, want a new process with the new env", e.Pid, pidA, e.Env)
	}
	h.sink.waitFor(t, "stopping upstream server", "server=a", `because="its entry changed"`)

	// b is removed: it is stopped and withdrawn, and nothing else moves.
	h.reconcile(t, map[string]*config.MCPServer{"a": changedA})
	wantWithdrawal(t, h.next(t), "b", offers["b"].Generation)
	select {
	case <-offers["b"].Gone:
	default:
		t.Errorf("b's Gone is open after its withdrawal")
	}
	waittest.Gone(t, wait, pidB)
	h.sink.waitFor(t, "stopping upstream server", "server=b", `because="removed from the config"`)

	// c is added: it starts, with the highest generation yet.
	h.reconcile(t, map[string]*config.MCPServer{"a": changedA, "c": entry("c", nil)})
	c := h.next(t)
	wantOffer(t, c, "c")
	if c.Generation <= newA.Generation {
		t.Errorf("c's generation = %d, want above %d", c.Generation, newA.Generation)
	}
	h.none(t)
	// Each upstream's stderr reaches the log under its server's name.
	h.sink.waitFor(t, `msg="upstream stderr"`, `line="fakeupstream stderr line 1"`, "server=c")
}

// When its context ends, the supervisor stops every upstream with its
// whole process group, and withdraws nothing (the registry stops too).
func TestUpstreamsStopAllKillsTheProcessGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: stopping upstream process groups waits out their grace")
	}
	t.Parallel()
	dir := t.TempDir()
	servers := map[string]*config.MCPServer{}
	for _, name := range []string{"a", "b"} {
		servers[name] = fakeServer(t, "-child", "-marks", filepath.Join(dir, name))
	}
	h := startUpstreams(t, servers, fastTiming, true)
	var pids []int
	for range 2 {
		m := h.next(t)
		wantOffer(t, m, m.Server)
		marks := filepath.Join(dir, m.Server)
		// Marked before the upstream serves, so before its offer.
		leader, child := markedPids(t, marks, "start"), markedPids(t, marks, "child")
		if len(leader) != 1 || len(child) != 1 {
			t.Fatalf("%s marked start %v and child %v, want one of each", m.Server, leader, child)
		}
		pids = append(pids, leader[0], child[0])
	}
	for _, pid := range pids {
		if !toolsettest.Alive(pid) {
			t.Fatalf("pid %d is gone before the stop", pid)
		}
	}
	if err := h.stop(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	for _, pid := range pids {
		waittest.Gone(t, wait, pid)
	}
	h.none(t)
}
