package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/introspect/introspecttest"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// fakecli is the fixture CLI the served configs wrap, built once.
var fakecli string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

// testMain also builds the savedhelp fixture (config add's tests), in a
// folder removed before the process exits.
func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "savedhelp-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if savedHelp, err = introspecttest.BuildSavedHelp(ctx, dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return toolsettest.RunWithFakeCLI(m, &fakecli)
}

// bound limits every wait in these tests.
const bound = 15 * time.Second

// inProcess is `wraptool serve` running inside the test: its signals come
// from the test (through the app's notify hook, so no other test's server
// sees them) and its log is captured.
type inProcess struct {
	dir, config string
	// sigs is the signal channel serve installed last and has not
	// removed: during start-up its load's, then the server's own.
	mu         sync.Mutex
	sigs       chan<- os.Signal
	log        *syncBuffer
	done       chan error
	url, token string
}

// serveConfig is a config for dir: a loopback listener on a free port, the
// token and request log in dir, and the fake tool with rules.
func serveConfig(dir string, rules ...string) string {
	cfg := fmt.Sprintf("mcp:\n  listen: 127.0.0.1:0\n  auth_token_file: %s\n  request_log: %s\n  allowed_cwd_roots: [%s]\n"+
		"tools:\n  fake:\n    binary: %s\n    allow:\n",
		filepath.Join(dir, "mcp-token"), filepath.Join(dir, "requests.jsonl"), dir, fakecli)
	for _, r := range rules {
		cfg += "      - subcommand: [" + r + "]\n"
	}
	return cfg
}

// startServe writes the config for rules into a new folder and runs serve
// on it until the test ends. load, when not nil, replaces the load path
// (start-up and reloads).
func startServe(t *testing.T, rules []string, load func(ctx context.Context, path string, o *config.LoadOptions) (*config.Loaded, error)) *inProcess {
	return startServeWith(t, rules, load, nil)
}

// startServeWith is startServe; start, when not nil, replaces the wait for
// the server to serve (a test of start-up itself).
func startServeWith(t *testing.T, rules []string, load func(ctx context.Context, path string, o *config.LoadOptions) (*config.Loaded, error), start func(*inProcess)) *inProcess {
	t.Helper()
	dir := t.TempDir()
	p := &inProcess{dir: dir, config: filepath.Join(dir, "config.yaml"), log: &syncBuffer{}, done: make(chan error, 1)}
	configtest.ReplaceFile(t, p.config, serveConfig(dir, rules...))
	env := map[string]string{"HOME": filepath.Join(dir, "home"), "PATH": os.Getenv("PATH")}
	a := newApp(func(k string) string { return env[k] }, &bytes.Buffer{}, p.log)
	a.notify = func(c chan<- os.Signal, _ ...os.Signal) {
		p.mu.Lock()
		p.sigs = c
		p.mu.Unlock()
	}
	a.stopNotify = func(c chan<- os.Signal) {
		p.mu.Lock()
		if p.sigs == c {
			p.sigs = nil
		}
		p.mu.Unlock()
	}
	if load != nil {
		a.load = load
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		p.done <- a.exec(ctx, []string{"--config", p.config, "--log-level", "debug", "serve"})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-p.done:
		case <-time.After(bound):
			t.Errorf("serve did not stop within %v of its context's end", bound)
		}
	})
	if start != nil {
		start(p)
		return p
	}
	addr := p.waitLog(t, `msg="serving MCP"`, 1)
	if load == nil {
		// The watcher's first ring after its watches are in place: from
		// here on every edit the test makes is seen.
		p.waitLog(t, `msg="reload skipped"`, 1)
	}
	_, rest, _ := strings.Cut(addr, " address=")
	host, _, _ := strings.Cut(rest, " ")
	p.url = "http://" + host
	token, err := os.ReadFile(filepath.Join(dir, "mcp-token"))
	if err != nil {
		t.Fatal(err)
	}
	p.token = strings.TrimSpace(string(token))
	return p
}

// waitLog waits (bounded) until the log has n lines holding substr, and
// returns the last of them.
func (p *inProcess) waitLog(t *testing.T, substr string, n int) string {
	t.Helper()
	var found string
	waittest.Until(t, bound, func() error {
		var lines []string
		for line := range strings.Lines(p.log.String()) {
			if strings.Contains(line, substr) {
				lines = append(lines, line)
			}
		}
		if len(lines) >= n {
			found = strings.TrimSpace(lines[n-1])
			return nil
		}
		return fmt.Errorf("log has %d lines with %q, want %d:\n%s", len(lines), substr, n, p.log)
	})
	return found
}

// signal delivers sig to this server only, on the handling it installed
// last.
func (p *inProcess) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	p.mu.Lock()
	c := p.sigs
	p.mu.Unlock()
	if c == nil {
		t.Fatalf("serve has no signal handling installed")
	}
	select {
	case c <- sig:
	case <-time.After(bound):
		t.Fatalf("serve did not take %v within %v", sig, bound)
	}
}

// wait waits (bounded) for serve to return.
func (p *inProcess) wait(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		return err
	case <-time.After(within):
		t.Fatalf("serve still running %v later:\n%s", within, p.log)
		return nil
	}
}

// client connects over Streamable HTTP, counting tools/list_changed.
func (p *inProcess) client(t *testing.T) (*mcp.ClientSession, chan struct{}) {
	t.Helper()
	changed := make(chan struct{}, 16)
	c := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	hc := &http.Client{Transport: toolsettest.Bearer{Token: p.token, Base: http.DefaultTransport}}
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.url + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, p.log)
	}
	t.Cleanup(func() { s.Close() })
	return s, changed
}

func tools(t *testing.T, s *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	res, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		if !strings.HasPrefix(tool.Name, "wraptool_") {
			names = append(names, tool.Name)
		}
	}
	slices.Sort(names)
	return names
}

// TestServe drives serve itself, as prometheus's reload tests do: a valid
// config, an invalid one (rejected, old tools kept), a valid one again (one
// list_changed), a rewrite that changes nothing (proved by the loader's
// "reload skipped", not by sleeping), SIGHUP, and a stop with a call in
// flight that still gets its result.
func TestServe(t *testing.T) {
	t.Parallel()
	p := startServe(t, []string{"status", "markwait"}, nil)
	s, changed := p.client(t)
	if got, want := tools(t, s), []string{"fake_markwait", "fake_status"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %q, want %q", got, want)
	}

	// Invalid: rejected, the old tools stay, nothing is sent.
	configtest.ReplaceFile(t, p.config, strings.Replace(serveConfig(p.dir, "status"), "mcp:\n", "mcp:\n  transprot: sse\n", 1))
	p.waitLog(t, `msg="config rejected"`, 1)
	if got, want := tools(t, s), []string{"fake_markwait", "fake_status"}; !slices.Equal(got, want) {
		t.Errorf("tools after a rejected reload = %q, want %q", got, want)
	}

	// Valid again, with a new rule: one list_changed and the new list.
	valid := serveConfig(p.dir, "status", "markwait", "version")
	configtest.ReplaceFile(t, p.config, valid)
	p.waitLog(t, `msg="config reloaded"`, 1)
	select {
	case <-changed:
	case <-time.After(bound):
		t.Fatalf("no tools/list_changed after a reload that added a rule:\n%s", p.log)
	}
	if got, want := tools(t, s), []string{"fake_markwait", "fake_status", "fake_version"}; !slices.Equal(got, want) {
		t.Errorf("tools after the reload = %q, want %q", got, want)
	}

	// The same bytes again: the loader says it skipped the reload, which is
	// the proof that nothing happened (no sleeping for an absence).
	skipped := strings.Count(p.log.String(), `msg="reload skipped"`)
	configtest.ReplaceFile(t, p.config, valid)
	p.waitLog(t, `msg="reload skipped"`, skipped+1)
	if n := len(changed); n != 0 {
		t.Errorf("%d tools/list_changed after a rewrite of the same bytes, want none", n)
	}

	// SIGHUP reloads in full and logs, even unchanged; no list_changed.
	p.signal(t, syscall.SIGHUP)
	if line := p.waitLog(t, `msg="config reloaded"`, 2); !strings.Contains(line, "cause=SIGHUP") {
		t.Errorf("reload line %q, want cause=SIGHUP", line)
	}
	if n := len(changed); n != 0 {
		t.Errorf("%d tools/list_changed after an unchanged SIGHUP, want none", n)
	}

	// A stop with a call in flight: the call finishes within the grace and
	// gets its result, then serve returns cleanly.
	// In a folder of its own: a tool cannot create entries beside the
	// config, whose folder lies above a protected file.
	work := filepath.Join(p.dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	mark, release := filepath.Join(work, "started"), filepath.Join(work, "release")
	result := make(chan *mcp.CallToolResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "fake_markwait", Arguments: map[string]any{"args": []any{mark, release}}})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		result <- res
	}()
	waittest.File(t, bound, mark)
	p.signal(t, syscall.SIGTERM)
	p.waitLog(t, `msg=stopping`, 1)
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-result:
		if text := toolsettest.ResultText(t, res); res.IsError || !strings.Contains(text, "released") {
			t.Errorf("call in flight: isError %v, %q; want its result", res.IsError, text)
		}
	case <-time.After(bound):
		t.Fatalf("the call in flight got no result:\n%s", p.log)
	}
	if err := p.wait(t, bound); err != nil {
		t.Errorf("serve returned %v, want nil after SIGTERM", err)
	}
}

// A SIGTERM must stop the server while a reload is busy (introspection will
// make loads take seconds): SIGHUP rings a doorbell instead of waiting for
// the loader, signals are always read, and the load in progress ends with
// its context.
func TestServeStopsWhileALoadIsBusy(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	var loads sync.Mutex
	n := 0
	load := func(ctx context.Context, path string, o *config.LoadOptions) (*config.Loaded, error) {
		loads.Lock()
		n++
		first := n == 1
		loads.Unlock()
		if first {
			return config.LoadFile(ctx, path, o) // start-up
		}
		started <- struct{}{}
		<-ctx.Done() // busy until the server stops
		return nil, ctx.Err()
	}
	p := startServe(t, []string{"status"}, load)
	configtest.ReplaceFile(t, p.config, serveConfig(p.dir, "status", "version"))
	select {
	case <-started:
	case <-time.After(bound):
		t.Fatalf("no reload started after a config change:\n%s", p.log)
	}
	p.signal(t, syscall.SIGHUP)
	p.signal(t, syscall.SIGHUP)
	p.signal(t, syscall.SIGTERM)
	// No call is in flight: the stop needs no grace at all, so 5 s (half
	// the 10 s grace) is generous.
	if err := p.wait(t, 5*time.Second); err != nil {
		t.Errorf("serve returned %v, want nil after SIGTERM", err)
	}
	if strings.Contains(p.log.String(), `msg="config rejected"`) {
		t.Errorf("a load ended by the stop was logged as a rejection:\n%s", p.log)
	}
}

// Start-up introspection may take a while (each help run bounded by its
// timeout): a SIGTERM meanwhile ends it and serve returns cleanly.
func TestServeStopsDuringStartUpIntrospection(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	load := func(ctx context.Context, path string, o *config.LoadOptions) (*config.Loaded, error) {
		started <- struct{}{}
		<-ctx.Done() // a slow --help
		return nil, ctx.Err()
	}
	startServeWith(t, []string{"status"}, load, func(p *inProcess) {
		select {
		case <-started:
		case <-time.After(bound):
			t.Fatalf("the start-up load did not begin")
		}
		p.signal(t, syscall.SIGTERM)
		if err := p.wait(t, 5*time.Second); err != nil {
			t.Errorf("serve returned %v, want nil after SIGTERM during start-up", err)
		}
		p.waitLog(t, `msg=stopped during=start-up`, 1)
	})
}

// syncBuffer is a bytes.Buffer safe for the server's log writes and the
// test's reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestGCPercent(t *testing.T) {
	t.Parallel()
	const mb = 1 << 20
	tests := []struct {
		live uint64
		want int
	}{
		{0, 1000},
		{1 * mb, 1000},   // 16 MB of headroom would be 1,600%: capped
		{4 * mb, 400},    // a small server: 16 MB over 4 MB live
		{8 * mb, 200},    //
		{16 * mb, 100},   // from here on, Go's default
		{45 * mb, 100},   // 500 tools × 10 rules
		{1024 * mb, 100}, //
	}
	for _, tt := range tests {
		if got := gcPercent(tt.live); got != tt.want {
			t.Errorf("gcPercent(%d MB) = %d, want %d", tt.live/mb, got, tt.want)
		}
	}
}

// The tuner follows the live heap: after a collection with more live, the
// percent it sets gives the same headroom; it restores what it found when
// it stops.
func TestGCTunerFollowsTheLiveHeap(t *testing.T) {
	// What the tuner finds is not what it will set, so each step shows.
	before := debug.SetGCPercent(1000)
	defer debug.SetGCPercent(before)
	tuner := newGCTuner()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tuner.Run(ctx) }()
	held := make([][]byte, 0, 64)
	for range 64 { // 64 MB live: Go's default applies
		held = append(held, make([]byte, 1<<20))
	}
	// The tuner answers a finalizer after a collection: poll the runtime.
	percent := func() int {
		runtime.GC()
		got := debug.SetGCPercent(-1)
		debug.SetGCPercent(got)
		return got
	}
	waittest.Until(t, bound, func() error {
		if got := percent(); got != 100 {
			return fmt.Errorf("with 64 MB live the percent stayed %d, want 100", got)
		}
		return nil
	})
	runtime.KeepAlive(held)
	held = nil
	waittest.Until(t, bound, func() error {
		if got := percent(); got <= 100 {
			return fmt.Errorf("with the 64 MB freed the percent stayed %d, want more than 100", got)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := debug.SetGCPercent(1000); got != 1000 {
		t.Errorf("after the tuner stopped the percent is %d, want the 1000 it found", got)
	}
}
