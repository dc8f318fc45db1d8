package actors

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/toolset"
)

// holderHarness runs a PolicyHolder started from a config fixture's
// snapshot, with shared slots.
type holderHarness struct {
	*configFixture
	initial                         *Snapshot
	slots                           *toolset.Slots
	h                               *PolicyHolder
	in                              chan messages.ConfigLoaded
	toolsetChanged, watchSetChanged messages.Doorbell
	sink                            *logSink

	mu     sync.Mutex
	levels []string
}

func startHolder(t *testing.T) *holderHarness {
	t.Helper()
	f := newConfigFixture(t)
	getenv := func(string) string { return "" }
	shared := Shared{Slots: toolset.NewSlots(1)}
	hh := &holderHarness{
		configFixture:   f,
		slots:           shared.Slots,
		initial:         NewSnapshot(f.load(t), nil, shared, getenv),
		in:              make(chan messages.ConfigLoaded),
		toolsetChanged:  make(messages.Doorbell, 1),
		watchSetChanged: make(messages.Doorbell, 1),
	}
	log, sink := newTestLogger()
	hh.sink = sink
	setLevel := func(l string) {
		hh.mu.Lock()
		defer hh.mu.Unlock()
		hh.levels = append(hh.levels, l)
	}
	hh.h = NewPolicyHolder(PolicyHolderOptions{
		Initial: hh.initial, Shared: shared, Getenv: getenv, SetLevel: setLevel, Loaded: hh.in,
		ToolsetChanged: hh.toolsetChanged, WatchSetChanged: hh.watchSetChanged, Log: log,
	})
	start(t, hh.h)
	return hh
}

func (hh *holderHarness) setLevels() []string {
	hh.mu.Lock()
	defer hh.mu.Unlock()
	return slices.Clone(hh.levels)
}

// loadYAML writes body as the config and loads it.
func (hh *holderHarness) loadYAML(t *testing.T, body, cause string) messages.ConfigLoaded {
	t.Helper()
	configtest.WriteFile(t, hh.path, body, 0o600)
	return messages.ConfigLoaded{Loaded: hh.load(t), Cause: cause}
}

// send hands m to the holder.
func (hh *holderHarness) send(t *testing.T, m messages.ConfigLoaded) {
	t.Helper()
	select {
	case hh.in <- m:
	case <-time.After(wait):
		t.Fatalf("the holder did not take a ConfigLoaded within %v", wait)
	}
}

// reload hands m to the holder and waits for both its rings; when each
// arrives, the new snapshot must already be in service.
func (hh *holderHarness) reload(t *testing.T, m messages.ConfigLoaded) {
	t.Helper()
	hh.send(t, m)
	for _, d := range []struct {
		name string
		bell messages.Doorbell
	}{{"ToolsetChanged", hh.toolsetChanged}, {"WatchSetChanged", hh.watchSetChanged}} {
		receive(t, d.bell, d.name+" ring")
		if got := hh.h.Current().Hash; got != m.Loaded.Hash {
			t.Fatalf("at the %s ring Current().Hash = %.12s, want the loaded %.12s", d.name, got, m.Loaded.Hash)
		}
	}
}

func TestPolicyHolderSwapsInALoadedConfig(t *testing.T) {
	t.Parallel()
	hh := startHolder(t)
	old := hh.h.Current()
	if old != hh.initial {
		t.Fatalf("Current() before any reload = %p, want the initial snapshot %p", old, hh.initial)
	}
	oldPolicy, oldHash := old.Policy, old.Hash

	m := hh.loadYAML(t, hh.config(t, "debug", `"--short", "--branch"`), "file")
	hh.reload(t, m)

	cur := hh.h.Current()
	checks := []struct {
		name      string
		got, want any
	}{
		{"Current().Policy", cur.Policy, m.Loaded.Policy},
		{"Current().Config", cur.Config, m.Loaded.Config},
		{"Current().Hash", cur.Hash, m.Loaded.Hash},
		{"Current().MCPToken", cur.MCPToken, "first-token"},
		{"Current().Config.File", cur.Config.File, hh.path},
		{"Current().Slots", cur.Slots, hh.slots},
		{"State().Policy", hh.h.State().Policy, m.Loaded.Policy},
		// The old snapshot is untouched: a call that holds it keeps it.
		{"old snapshot's Policy", old.Policy, oldPolicy},
		{"old snapshot's Hash", old.Hash, oldHash},
		{"old snapshot's mcp.log_level", old.Config.MCP.LogLevel, "info"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if _, ok := cur.Runtimes["fake"]; !ok {
		t.Errorf("Current().Runtimes = %v, want an entry for tool fake", cur.Runtimes)
	}
	if _, ok := old.Policy.Rule("fake_status"); !ok {
		t.Error("old snapshot lost its rule")
	}
	if got, want := hh.setLevels(), []string{"debug"}; !slices.Equal(got, want) {
		t.Errorf("setLevel calls = %q, want %q", got, want)
	}
	lines := hh.sink.lines("config reloaded")
	if len(lines) != 1 {
		t.Fatalf("config reloaded lines = %q, want 1; log:\n%s", lines, hh.sink.String())
	}
	for _, want := range []string{"level=INFO", "component=policy", "cause=file", "tools=1", "exposed=1"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("log line %q lacks %q", lines[0], want)
		}
	}
	if warns := hh.sink.lines("level=WARN"); len(warns) > 0 {
		t.Errorf("warnings = %q, want none when no listener setting changed", warns)
	}
}

// The holder rings the registry and the watcher after every swap, and a
// busy receiver never holds it up: swaps nobody answers collapse into one
// pending ring on each doorbell.
func TestPolicyHolderRingsBothDoorbellsAfterEachSwap(t *testing.T) {
	t.Parallel()
	hh := startHolder(t)
	for i, level := range []string{"debug", "warn"} {
		m := hh.loadYAML(t, hh.config(t, level, `"--short"`), "file")
		hh.reload(t, m)
		if rang(hh.toolsetChanged) || rang(hh.watchSetChanged) {
			t.Errorf("swap %d rang a doorbell twice, want once each", i+1)
		}
	}

	var last messages.ConfigLoaded
	for _, level := range []string{"error", "info", "debug"} {
		last = hh.loadYAML(t, hh.config(t, level, `"--short"`), "SIGHUP")
		hh.send(t, last) // nobody answers the rings meanwhile
	}
	hh.sink.waitForN(t, 5, "config reloaded")
	for _, d := range []struct {
		name string
		bell messages.Doorbell
	}{{"ToolsetChanged", hh.toolsetChanged}, {"WatchSetChanged", hh.watchSetChanged}} {
		if got := drain(d.bell); got != 1 {
			t.Errorf("%s holds %d rings after three unanswered swaps, want 1", d.name, got)
		}
	}
	if got := hh.h.Current().Hash; got != last.Loaded.Hash {
		t.Errorf("Current().Hash = %.12s, want the last loaded %.12s", got, last.Loaded.Hash)
	}
}

// mcp.max_concurrent_calls of each new config reaches the one set of slots
// every snapshot shares.
func TestPolicyHolderSetsTheSharedSlotsLimit(t *testing.T) {
	t.Parallel()
	hh := startHolder(t)
	withLimit := func(n string) messages.ConfigLoaded {
		body := strings.Replace(hh.config(t, "info", `"--short"`), "  log_level: info\n",
			"  log_level: info\n  max_concurrent_calls: "+n+"\n", 1)
		return hh.loadYAML(t, body, "file")
	}
	acquire := func(d time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		return hh.slots.Acquire(ctx)
	}

	hh.reload(t, withLimit("2"))
	for i := range 2 {
		if err := acquire(wait); err != nil {
			t.Fatalf("Acquire %d under a limit of 2: %v", i+1, err)
		}
	}
	if err := acquire(quiet); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third Acquire under a limit of 2 returned %v, want it to wait (context.DeadlineExceeded)", err)
	}

	third := make(chan error, 1)
	go func() { third <- acquire(wait) }()
	hh.reload(t, withLimit("3"))
	if err := receive(t, third, "the waiting Acquire admitted by a limit of 3"); err != nil {
		t.Errorf("Acquire waiting when the limit rose to 3: %v, want a slot", err)
	}
	if got := hh.slots.Running(); got != 3 {
		t.Errorf("slots running = %d, want 3", got)
	}
	if got := hh.h.Current().Slots; got != hh.slots {
		t.Errorf("Current().Slots = %p, want the shared %p", got, hh.slots)
	}
	for range 3 {
		hh.slots.Release()
	}
}

func TestPolicyHolderWarnsThatListenerChangesNeedARestart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		edit     func(string) string
		wantWarn bool
	}{
		{
			name: "a new mcp.listen logs the restart warning",
			edit: func(s string) string {
				return strings.Replace(s, "listen: 127.0.0.1:8717", "listen: 127.0.0.1:8799", 1)
			},
			wantWarn: true,
		},
		{
			name: "a new mcp.transport logs the restart warning",
			edit: func(s string) string {
				return strings.Replace(s, "listen: 127.0.0.1:8717", "transport: unix\n  listen: wraptool.sock", 1)
			},
			wantWarn: true,
		},
		{
			name:     "a change elsewhere logs no warning",
			edit:     func(s string) string { return strings.Replace(s, "log_level: info", "log_level: warn", 1) },
			wantWarn: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			hh := startHolder(t)
			m := hh.loadYAML(t, tt.edit(hh.config(t, "info", `"--short"`)), "file")
			hh.reload(t, m)
			warns := hh.sink.lines("level=WARN", "take effect after a restart")
			if got := len(warns) == 1; got != tt.wantWarn {
				t.Errorf("restart warnings = %q, want one: %v; log:\n%s", warns, tt.wantWarn, hh.sink.String())
			}
			if tt.wantWarn && !strings.Contains(warns[0], "running.mcp.listen=127.0.0.1:8717") {
				t.Errorf("warning %q does not name the running listener", warns[0])
			}
			// The new config is in service all the same.
			if got := hh.h.Current().Hash; got != m.Loaded.Hash {
				t.Errorf("Current().Hash = %.12s, want the loaded %.12s", got, m.Loaded.Hash)
			}
		})
	}
}

func TestPolicyHolderWithoutSetLevelOrShared(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	in := make(chan messages.ConfigLoaded)
	toolsetChanged, watchSetChanged := make(messages.Doorbell, 1), make(messages.Doorbell, 1)
	h := NewPolicyHolder(PolicyHolderOptions{
		Initial: NewSnapshot(f.load(t), nil, Shared{}, func(string) string { return "" }),
		Loaded:  in, ToolsetChanged: toolsetChanged, WatchSetChanged: watchSetChanged,
	})
	start(t, h)
	l := f.load(t)
	in <- messages.ConfigLoaded{Loaded: l, Cause: "SIGHUP"}
	receive(t, toolsetChanged, "ToolsetChanged ring")
	receive(t, watchSetChanged, "WatchSetChanged ring")
	if got := h.Current(); got.Policy != l.Policy || got.Slots != nil {
		t.Errorf("Current() = policy %p, slots %p; want policy %p and no slots", got.Policy, got.Slots, l.Policy)
	}
}

// TestPolicyHolderReadersSeeWholeSnapshots reads Current() from several
// goroutines while configs are swapped in: every snapshot read must be one
// that was loaded, whole (run it with -race).
func TestPolicyHolderReadersSeeWholeSnapshots(t *testing.T) {
	t.Parallel()
	hh := startHolder(t)
	var loads []messages.ConfigLoaded
	for _, level := range []string{"debug", "warn", "error", "info"} {
		loads = append(loads, hh.loadYAML(t, hh.config(t, level, `"--short"`), level))
	}
	policyOf := map[string]*policy.Policy{hh.initial.Hash: hh.initial.Policy}
	levelOf := map[string]string{hh.initial.Hash: "info"}
	configOf := map[string]*config.Config{hh.initial.Hash: hh.initial.Config}
	for _, m := range loads {
		if _, dup := policyOf[m.Loaded.Hash]; dup {
			t.Fatalf("two loads share hash %.12s", m.Loaded.Hash)
		}
		policyOf[m.Loaded.Hash], levelOf[m.Loaded.Hash] = m.Loaded.Policy, m.Loaded.Config.MCP.LogLevel
		configOf[m.Loaded.Hash] = m.Loaded.Config
	}

	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				s := hh.h.Current()
				if p, ok := policyOf[s.Hash]; !ok || p != s.Policy || s.Config != configOf[s.Hash] ||
					s.Config.MCP.LogLevel != levelOf[s.Hash] || hh.h.State().Policy == nil {
					select {
					case errs <- "read a snapshot mixing loads: hash " + s.Hash[:12] + ", level " + s.Config.MCP.LogLevel:
					default:
					}
					return
				}
			}
		})
	}
	for _, m := range loads {
		hh.reload(t, m)
	}
	close(done)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if got := hh.h.Current().Policy; got != loads[3].Loaded.Policy {
		t.Errorf("Current().Policy after the last reload = %p, want %p", got, loads[3].Loaded.Policy)
	}
}
