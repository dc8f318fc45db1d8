package actors

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy"
)

// holderHarness runs a PolicyHolder started from a config fixture's
// snapshot.
type holderHarness struct {
	*configFixture
	initial *Snapshot
	h       *PolicyHolder
	in      chan messages.ConfigLoaded
	out     chan messages.ToolsetChanged
	sink    *logSink

	mu     sync.Mutex
	levels []string
}

func startHolder(t *testing.T) *holderHarness {
	t.Helper()
	f := newConfigFixture(t)
	getenv := func(string) string { return "" }
	hh := &holderHarness{
		configFixture: f,
		initial:       NewSnapshot(f.load(t), f.path, getenv),
		in:            make(chan messages.ConfigLoaded),
		out:           make(chan messages.ToolsetChanged),
	}
	log, sink := newTestLogger()
	hh.sink = sink
	setLevel := func(l string) {
		hh.mu.Lock()
		defer hh.mu.Unlock()
		hh.levels = append(hh.levels, l)
	}
	hh.h = NewPolicyHolder(hh.initial, getenv, setLevel, hh.in, hh.out, log)
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
	writeFile(t, hh.path, body)
	m := hh.load(t)
	m.Cause = cause
	return m
}

// reload hands m to the holder and returns what it tells the registry.
func (hh *holderHarness) reload(t *testing.T, m messages.ConfigLoaded) messages.ToolsetChanged {
	t.Helper()
	select {
	case hh.in <- m:
	case tc := <-hh.out:
		t.Fatalf("got an unexpected ToolsetChanged %+v", tc)
	}
	return receive(t, hh.out, "ToolsetChanged")
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
	tc := hh.reload(t, m)

	if tc.Policy != m.Policy {
		t.Errorf("ToolsetChanged.Policy = %p, want the loaded policy %p", tc.Policy, m.Policy)
	}
	cur := hh.h.Current()
	checks := []struct {
		name      string
		got, want any
	}{
		{"Current().Policy", cur.Policy, m.Policy},
		{"Current().Config", cur.Config, m.Config},
		{"Current().Hash", cur.Hash, m.Hash},
		{"Current().MCPToken", cur.MCPToken, "first-token"},
		{"Current().ConfigPath", cur.ConfigPath, hh.path},
		{"State().Policy", hh.h.State().Policy, m.Policy},
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
			if got := hh.h.Current().Hash; got != m.Hash {
				t.Errorf("Current().Hash = %.12s, want the loaded %.12s", got, m.Hash)
			}
		})
	}
}

func TestPolicyHolderWithoutSetLevel(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	getenv := func(string) string { return "" }
	in, out := make(chan messages.ConfigLoaded), make(chan messages.ToolsetChanged)
	log, _ := newTestLogger()
	h := NewPolicyHolder(NewSnapshot(f.load(t), f.path, getenv), getenv, nil, in, out, log)
	start(t, h)
	m := f.load(t)
	in <- m
	if tc := receive(t, out, "ToolsetChanged"); tc.Policy != m.Policy {
		t.Errorf("ToolsetChanged.Policy = %p, want %p", tc.Policy, m.Policy)
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
	for _, m := range loads {
		if _, dup := policyOf[m.Hash]; dup {
			t.Fatalf("two loads share hash %.12s", m.Hash)
		}
		policyOf[m.Hash], levelOf[m.Hash] = m.Policy, m.Config.MCP.LogLevel
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
				if p, ok := policyOf[s.Hash]; !ok || p != s.Policy || s.Config.MCP.LogLevel != levelOf[s.Hash] {
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
	if got := hh.h.Current().Policy; got != loads[3].Policy {
		t.Errorf("Current().Policy after the last reload = %p, want %p", got, loads[3].Policy)
	}
}
