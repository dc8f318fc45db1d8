package actors

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/toolset"
)

// wait bounds every wait for something that must happen. It is generous
// because -race slows everything down; a passing test never waits it out.
const wait = 10 * time.Second

// quiet is how long a test watches for something that must not happen,
// where nothing else can tell it that the moment has passed.
const quiet = 300 * time.Millisecond

// prompt bounds what must end "promptly": a stop that must not wait for a
// load, a lock or a signal nobody reads. It is well below the delays a
// broken actor would show (jsonl.LockTimeout, a load that never ends).
const prompt = 2 * time.Second

// logSink is an io.Writer for a slog handler that keeps every record and
// rings a doorbell on each, so a test can wait for a log line without
// polling.
type logSink struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	bell chan struct{}
}

func newLogSink() *logSink { return &logSink{bell: make(chan struct{}, 1)} }

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	select {
	case s.bell <- struct{}{}:
	default:
	}
	return len(p), nil
}

// String returns everything logged so far.
func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// lines returns the logged lines that contain every one of parts.
func (s *logSink) lines(parts ...string) []string {
	var out []string
	for l := range strings.Lines(s.String()) {
		if containsAll(l, parts) {
			out = append(out, strings.TrimSuffix(l, "\n"))
		}
	}
	return out
}

// waitFor blocks until a line containing every one of parts is logged.
func (s *logSink) waitFor(t *testing.T, parts ...string) {
	t.Helper()
	s.waitForN(t, 1, parts...)
}

// waitForN blocks until n lines containing every one of parts are logged.
func (s *logSink) waitForN(t *testing.T, n int, parts ...string) {
	t.Helper()
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for {
		if len(s.lines(parts...)) >= n {
			return
		}
		select {
		case <-s.bell:
		case <-timeout.C:
			t.Fatalf("got %d log lines with %q after %v, want %d; log:\n%s", len(s.lines(parts...)), parts, wait, n, s.String())
		}
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// newTestLogger returns a logger writing text records to a fresh sink, at
// debug level so nothing is filtered.
func newTestLogger() (*slog.Logger, *logSink) {
	sink := newLogSink()
	return slog.New(slog.NewTextHandler(sink, &slog.HandlerOptions{Level: slog.LevelDebug})), sink
}

// start runs actor in its own goroutine until the test ends. The returned
// stop cancels its context and reports what Run returned; the test fails if
// Run does not return within wait. stop is also registered as a cleanup,
// and may be called more than once.
func start(t *testing.T, actor interface{ Run(context.Context) error }) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- actor.Run(ctx) }()
	var (
		once sync.Once
		err  error
	)
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(wait):
				t.Errorf("Run did not return within %v of its context being cancelled", wait)
			}
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

// receive waits for one value on ch.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	return waittest.Receive(t, ch, wait, what)
}

// waitUntil polls cond until it holds, failing the test after wait. It is
// for states nothing signals (a doorbell emptied by its receiver).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waittest.Until(t, wait, func() error {
		if cond() {
			return nil
		}
		return errors.New(what)
	})
}

// rang reports whether d holds a ring, taking it.
func rang(d messages.Doorbell) bool {
	select {
	case <-d:
		return true
	default:
		return false
	}
}

// drain takes every ring d holds and returns how many there were (more
// than one only for a doorbell a test made with a larger buffer, to count
// rings).
func drain(d messages.Doorbell) int {
	n := 0
	for rang(d) {
		n++
	}
	return n
}

// testSnapshots is a Snapshots a test can change. It counts Current calls
// and rings a bell on each, so a test can wait for an actor to read it.
type testSnapshots struct {
	cur   atomic.Pointer[Snapshot]
	calls atomic.Int64
	bell  messages.Doorbell
}

func newTestSnapshots(s *Snapshot) *testSnapshots {
	ts := &testSnapshots{bell: make(messages.Doorbell, 1)}
	ts.cur.Store(s)
	return ts
}

func (s *testSnapshots) Current() *Snapshot {
	s.calls.Add(1)
	ring(s.bell)
	return s.cur.Load()
}

// Store puts n in service.
func (s *testSnapshots) Store(n *Snapshot) { s.cur.Store(n) }

// waitCalls blocks until Current has been called n times in all.
func (s *testSnapshots) waitCalls(t *testing.T, n int64) {
	t.Helper()
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for s.calls.Load() < n {
		select {
		case <-s.bell:
		case <-timeout.C:
			t.Fatalf("Current was called %d times within %v, want %d", s.calls.Load(), wait, n)
		}
	}
}

// configFixture is a folder with a config, the token file it names and an
// executable for its tool: a shell script in the folder (never run by these
// tests; it only has to be an executable file only its owner may write).
type configFixture struct {
	dir, path, token string
	opts             *config.Options
}

// baseConfig is a valid config with one exposed rule, fake_status. Its
// verbs are mcp.log_level, the tool's binary and the rule's flags (the body
// of a YAML flow list).
const baseConfig = `mcp:
  listen: 127.0.0.1:8717
  auth_token_file: mcp-token
  request_log: requests.jsonl
  log_level: %s
tools:
  fake:
    binary: %s
    allow:
      - subcommand: [status]
        flags: [%s]
`

func newConfigFixture(t *testing.T) *configFixture {
	t.Helper()
	dir := t.TempDir()
	f := &configFixture{
		dir:   dir,
		path:  filepath.Join(dir, "config.yaml"),
		token: filepath.Join(dir, "mcp-token"),
		opts:  &config.Options{Home: dir, Getenv: func(string) string { return "" }},
	}
	configtest.WriteFile(t, f.token, "first-token\n", 0o600)
	configtest.WriteFile(t, f.tool(), "#!/bin/sh\n", 0o700)
	f.writeConfig(t, "info", "--short")
	return f
}

// tool is the path of the fixture's tool binary.
func (f *configFixture) tool() string { return filepath.Join(f.dir, "fake-tool") }

// writeConfig writes a valid config with the given log level and flags.
func (f *configFixture) writeConfig(t *testing.T, level, flags string) {
	t.Helper()
	configtest.WriteFile(t, f.path, f.config(t, level, flags), 0o600)
}

func (f *configFixture) config(t *testing.T, level, flags string) string {
	t.Helper()
	return fmt.Sprintf(baseConfig, level, f.tool(), flags)
}

// load loads the fixture's config as a reload does.
func (f *configFixture) load(t *testing.T) *config.Loaded {
	t.Helper()
	l, err := config.LoadFile(t.Context(), f.path, &config.LoadOptions{Paths: f.opts})
	if err != nil {
		t.Fatalf("config.LoadFile(%s): %v", f.path, err)
	}
	return l
}

// Current is the snapshot h published last: what its tests look at.
func (h *PolicyHolder) Current() *Snapshot { return h.cur.Current() }

// State is the tool-call state of the snapshot h published last.
func (h *PolicyHolder) State() *toolset.State { return h.cur.State() }
