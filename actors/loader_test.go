package actors

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
)

// invalidConfig fails validation: an unknown key.
const invalidConfig = "mcp:\n  listen: 127.0.0.1:8717\n  listn: typo\n"

// loaderHarness runs a Loader on a config fixture. Loaded is unbuffered
// unless a test says otherwise, and the loader handles one trigger at a
// time, so a ring's outcome (a ConfigLoaded, a "reload skipped" or a
// "config rejected" line) comes after every earlier ring's.
type loaderHarness struct {
	*configFixture
	initial                *config.Loaded
	fileChanged, reloadNow messages.Doorbell
	out                    chan messages.ConfigLoaded
	sink                   *logSink
	loader                 *Loader
	// loads counts the loader's calls of its LoadFunc.
	loads atomic.Int64
	stop  func() error
}

// loaderSetup varies a harness.
type loaderSetup struct {
	// needToken is LoaderOptions.NeedToken.
	needToken string
	// load replaces config.LoadFile; nil keeps it.
	load LoadFunc
	// outBuffer is Loaded's buffer.
	outBuffer int
}

// newLoader builds a loader on a fresh config fixture, running the config
// the fixture holds; start runs it.
func newLoader(t *testing.T, o loaderSetup) *loaderHarness {
	t.Helper()
	f := newConfigFixture(t)
	h := &loaderHarness{
		configFixture: f,
		initial:       f.load(t),
		fileChanged:   make(messages.Doorbell, 1),
		reloadNow:     make(messages.Doorbell, 1),
		out:           make(chan messages.ConfigLoaded, o.outBuffer),
	}
	load := o.load
	if load == nil {
		load = config.LoadFile
	}
	log, sink := newTestLogger()
	h.sink = sink
	h.loader = NewLoader(LoaderOptions{
		Path:      f.path,
		Paths:     f.opts,
		Running:   h.initial.Hash,
		NeedToken: o.needToken,
		Load: func(ctx context.Context, path string, lo *config.LoadOptions) (*config.Loaded, error) {
			h.loads.Add(1)
			return load(ctx, path, lo)
		},
		FileChanged: h.fileChanged,
		ReloadNow:   h.reloadNow,
		Loaded:      h.out,
		Log:         log,
	})
	return h
}

func (h *loaderHarness) start(t *testing.T) *loaderHarness {
	t.Helper()
	h.stop = start(t, h.loader)
	return h
}

// startLoader runs a loader on a fresh config fixture.
func startLoader(t *testing.T) *loaderHarness {
	t.Helper()
	return newLoader(t, loaderSetup{}).start(t)
}

// loaded waits for the next ConfigLoaded and checks its cause.
func (h *loaderHarness) loaded(t *testing.T, cause string) *config.Loaded {
	t.Helper()
	m := receive(t, h.out, "ConfigLoaded for "+cause)
	if m.Cause != cause {
		t.Fatalf("got ConfigLoaded with cause %q, want %q", m.Cause, cause)
	}
	if l := m.Loaded; l == nil || l.Config == nil || l.Policy == nil || l.Hash == "" {
		t.Fatalf("got an incomplete ConfigLoaded: %+v", m.Loaded)
	}
	return m.Loaded
}

// settle proves, while the config is valid, that every earlier ring is
// handled and sent nothing: a forced reload is answered after them, and its
// ConfigLoaded must be the next one.
func (h *loaderHarness) settle(t *testing.T) *config.Loaded {
	t.Helper()
	ring(h.reloadNow)
	return h.loaded(t, "SIGHUP")
}

// skipped waits for the n-th "reload skipped" line.
func (h *loaderHarness) skipped(t *testing.T, n int) {
	t.Helper()
	h.sink.waitForN(t, n, "reload skipped")
}

// rejected waits for the n-th "config rejected" line.
func (h *loaderHarness) rejected(t *testing.T, n int) {
	t.Helper()
	h.sink.waitForN(t, n, "config rejected")
}

func ruleFlags(t *testing.T, l *config.Loaded, name string) []string {
	t.Helper()
	r, ok := l.Policy.Rule(name)
	if !ok {
		t.Fatalf("policy has no rule %s", name)
	}
	var flags []string
	for _, f := range r.Flags() {
		flags = append(flags, f.Flag)
	}
	return flags
}

func TestLoaderForcedReloadOfUnchangedFilesIsSent(t *testing.T) {
	t.Parallel()
	h := startLoader(t)
	for range 2 {
		ring(h.reloadNow)
		l := h.loaded(t, "SIGHUP")
		if l.Hash != h.initial.Hash {
			t.Errorf("hash of unchanged files = %.12s, want the running %.12s", l.Hash, h.initial.Hash)
		}
		if l.MCPToken != "first-token" {
			t.Errorf("MCPToken = %q, want %q", l.MCPToken, "first-token")
		}
		if _, ok := l.Policy.Rule("fake_status"); !ok {
			t.Errorf("policy lacks fake_status; rules: %v", l.Policy.Rules())
		}
	}
	if log := h.sink.String(); log != "" {
		t.Errorf("the loader logged %q, want nothing (the policy holder logs reloads)", log)
	}
}

func TestLoaderSkipsUnchangedFiles(t *testing.T) {
	t.Parallel()
	h := startLoader(t)
	for i := 1; i <= 2; i++ {
		ring(h.fileChanged)
		h.skipped(t, i)
	}
	h.settle(t) // nothing was sent for the skipped reloads
	lines := h.sink.lines("reload skipped")
	for _, l := range lines {
		for _, want := range []string{"level=DEBUG", "component=loader", "cause=file"} {
			if !strings.Contains(l, want) {
				t.Errorf("log line %q lacks %q", l, want)
			}
		}
	}
	if got := len(strings.Split(strings.TrimSpace(h.sink.String()), "\n")); got != len(lines) {
		t.Errorf("the loader logged more than its skips:\n%s", h.sink.String())
	}
}

func TestLoaderSendsChangedFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(t *testing.T, h *loaderHarness)
		check  func(t *testing.T, l *config.Loaded)
	}{
		{
			name:   "a changed config is sent with a new hash",
			change: func(t *testing.T, h *loaderHarness) { h.writeConfig(t, "info", `"--short", "--branch"`) },
			check: func(t *testing.T, l *config.Loaded) {
				if got := ruleFlags(t, l, "fake_status"); !slices.Contains(got, "--branch") {
					t.Errorf("fake_status flags = %v, want --branch among them", got)
				}
			},
		},
		{
			name:   "changing only the token file's content changes the hash",
			change: func(t *testing.T, h *loaderHarness) { configtest.WriteFile(t, h.token, "second-token\n", 0o600) },
			check: func(t *testing.T, l *config.Loaded) {
				if l.MCPToken != "second-token" {
					t.Errorf("MCPToken = %q, want %q", l.MCPToken, "second-token")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := startLoader(t)
			tt.change(t, h)
			ring(h.fileChanged)
			l := h.loaded(t, "file")
			if l.Hash == h.initial.Hash {
				t.Errorf("hash = %.12s, the same as before the change; want a new one", l.Hash)
			}
			tt.check(t, l)

			// The new files are now the running ones: skipped when unforced.
			ring(h.fileChanged)
			h.skipped(t, 1)
			h.settle(t)
		})
	}
}

func TestLoaderRejectsAnInvalidConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		spoil, mend  func(t *testing.T, h *loaderHarness)
		wantInReason string
	}{
		{
			name:         "an invalid config",
			spoil:        func(t *testing.T, h *loaderHarness) { configtest.WriteFile(t, h.path, invalidConfig, 0o600) },
			mend:         func(t *testing.T, h *loaderHarness) { h.writeConfig(t, "info", "--short") },
			wantInReason: "listn",
		},
		{
			name:         "an empty token file",
			spoil:        func(t *testing.T, h *loaderHarness) { configtest.WriteFile(t, h.token, "\n", 0o600) },
			mend:         func(t *testing.T, h *loaderHarness) { configtest.WriteFile(t, h.token, "first-token\n", 0o600) },
			wantInReason: "auth_token_file",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is rejected and logged on every reload", func(t *testing.T) {
			t.Parallel()
			h := startLoader(t)
			tt.spoil(t, h)
			for i, d := range []messages.Doorbell{h.fileChanged, h.fileChanged, h.reloadNow} {
				ring(d)
				h.rejected(t, i+1)
			}
			for _, c := range []struct {
				cause string
				want  int
			}{{"file", 2}, {"SIGHUP", 1}} {
				if got := len(h.sink.lines("config rejected", "cause="+c.cause+" ")); got != c.want {
					t.Errorf("config rejected lines for cause %s = %d, want %d; log:\n%s", c.cause, got, c.want, h.sink.String())
				}
			}
			for _, l := range h.sink.lines("config rejected") {
				if !containsAll(l, []string{"level=ERROR", "component=loader", h.dir, tt.wantInReason}) {
					t.Errorf("log line %q: want level=ERROR, component=loader, the file's path and %q", l, tt.wantInReason)
				}
			}
			// Nothing was sent for the rejections: the next ConfigLoaded is
			// the mended config's.
			tt.mend(t, h)
			if l := h.settle(t); l.Hash != h.initial.Hash {
				t.Errorf("hash after mending = %.12s, want the original %.12s", l.Hash, h.initial.Hash)
			}
		})
	}
}

func TestLoaderLoadsAConfigFixedAfterARejection(t *testing.T) {
	t.Parallel()
	h := startLoader(t)
	configtest.WriteFile(t, h.path, invalidConfig, 0o600)
	ring(h.fileChanged)
	h.rejected(t, 1)

	h.writeConfig(t, "debug", `"--short"`)
	ring(h.fileChanged)
	l := h.loaded(t, "file")
	if l.Hash == h.initial.Hash || l.Config.MCP.LogLevel != "debug" {
		t.Errorf("got hash %.12s and log level %q, want a new hash and debug", l.Hash, l.Config.MCP.LogLevel)
	}

	// The same broken bytes are rejected again.
	configtest.WriteFile(t, h.path, invalidConfig, 0o600)
	ring(h.fileChanged)
	h.rejected(t, 2)
}

// TestLoaderReportsABreakAfterARevert: valid → broken (logged) → reverted
// to the running bytes (skipped, nothing to load) → broken the same way
// again. The second break is a new edit and must be logged, or the operator
// gets no word that the save was refused.
func TestLoaderReportsABreakAfterARevert(t *testing.T) {
	t.Parallel()
	h := startLoader(t)
	good := h.config(t, "info", "--short")
	configtest.WriteFile(t, h.path, invalidConfig, 0o600)
	ring(h.fileChanged)
	h.rejected(t, 1)

	configtest.WriteFile(t, h.path, good, 0o600)
	ring(h.fileChanged)
	h.skipped(t, 1)

	configtest.WriteFile(t, h.path, invalidConfig, 0o600)
	ring(h.fileChanged)
	h.rejected(t, 2)
	if got := len(h.sink.lines("reload skipped")); got != 1 {
		t.Errorf("reload skipped lines = %d, want 1 (the revert); log:\n%s", got, h.sink.String())
	}
}

// TestLoaderReportsANewTokenFileProblem: the config bytes stay the same
// while the token file goes from empty to missing; both are logged, each
// with its own reason.
func TestLoaderReportsANewTokenFileProblem(t *testing.T) {
	t.Parallel()
	h := startLoader(t)
	configtest.WriteFile(t, h.token, "\n", 0o600)
	ring(h.fileChanged)
	h.rejected(t, 1)
	if err := os.Remove(h.token); err != nil {
		t.Fatal(err)
	}
	ring(h.fileChanged)
	h.rejected(t, 2)
	lines := h.sink.lines("config rejected")
	if lines[0] == lines[1] {
		t.Errorf("the empty and the missing token file were reported alike: %q", lines[0])
	}
}

// A listener other hosts can reach keeps its token: a reload that drops
// mcp.auth_token_file is refused, not swapped in with authentication off.
func TestLoaderKeepsTheTokenOfAnExposedListener(t *testing.T) {
	t.Parallel()
	noToken := func(t *testing.T, h *loaderHarness) string {
		return strings.Replace(h.config(t, "info", "--short"), "  auth_token_file: mcp-token\n", "", 1)
	}
	t.Run("a config without a token is refused behind an exposed listener", func(t *testing.T) {
		t.Parallel()
		h := newLoader(t, loaderSetup{needToken: "0.0.0.0:8717"}).start(t)
		configtest.WriteFile(t, h.path, noToken(t, h), 0o600)
		ring(h.fileChanged)
		h.rejected(t, 1)
		if !strings.Contains(h.sink.String(), "cannot remove its token") {
			t.Errorf("the rejection does not say why:\n%s", h.sink.String())
		}
		// A forced reload is refused too.
		ring(h.reloadNow)
		h.rejected(t, 2)
	})
	t.Run("the same config is loaded behind a loopback listener", func(t *testing.T) {
		t.Parallel()
		h := startLoader(t)
		configtest.WriteFile(t, h.path, noToken(t, h), 0o600)
		ring(h.fileChanged)
		if l := h.loaded(t, "file"); l.MCPToken != "" {
			t.Errorf("MCPToken = %q, want none", l.MCPToken)
		}
	})
}

func TestLoaderLogsConfigWarnings(t *testing.T) {
	t.Parallel()
	h := startLoader(t)
	h.writeConfig(t, "info", "-P") // an untyped short flag: valid, with a warning
	ring(h.fileChanged)
	l := h.loaded(t, "file")
	if len(l.Warnings) == 0 {
		t.Fatal("the config has no warnings; the test needs one")
	}
	lines := h.sink.lines("config warning")
	if len(lines) != len(l.Warnings) {
		t.Fatalf("config warning lines = %q, want %d", lines, len(l.Warnings))
	}
	if want := []string{"level=WARN", "component=loader", h.path + ":"}; !containsAll(lines[0], want) {
		t.Errorf("log line %q lacks one of %q", lines[0], want)
	}
}

// A stop ends a load in progress instead of waiting for it, and sends
// nothing for it (nor reports it as a rejection).
func TestLoaderStopEndsALoadInProgress(t *testing.T) {
	t.Parallel()
	for _, trigger := range []string{"file", "SIGHUP"} {
		t.Run("a "+trigger+" reload in progress ends when Run's ctx is cancelled", func(t *testing.T) {
			t.Parallel()
			started := make(chan struct{}, 1)
			h := newLoader(t, loaderSetup{
				outBuffer: 1, // so a send after the stop would show
				load: func(ctx context.Context, _ string, _ *config.LoadOptions) (*config.Loaded, error) {
					started <- struct{}{}
					<-ctx.Done()
					return nil, ctx.Err()
				},
			}).start(t)
			if trigger == "file" {
				ring(h.fileChanged)
			} else {
				ring(h.reloadNow)
			}
			receive(t, started, "start of the load")
			begin := time.Now()
			if err := h.stop(); err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
			if elapsed := time.Since(begin); elapsed > prompt {
				t.Errorf("Run returned %v after its ctx was cancelled, want within %v", elapsed, prompt)
			}
			select {
			case m := <-h.out:
				t.Errorf("got ConfigLoaded %+v after the stop, want nothing", m)
			default:
			}
			if got := h.sink.lines("config rejected"); len(got) != 0 {
				t.Errorf("a stopped load was logged as a rejection: %q", got)
			}
		})
	}
}

// SIGHUP wins: ReloadNow rung while a FileChanged is pending is one forced
// reload, not a forced one and a file one. The loader picks between two
// ready doorbells at random, so the test runs the race several times.
func TestLoaderSIGHUPAbsorbsAPendingFileChange(t *testing.T) {
	t.Parallel()
	for round := range 16 {
		h := newLoader(t, loaderSetup{})
		h.writeConfig(t, "debug", "--short") // a file reload would be sent too
		ring(h.fileChanged)
		ring(h.reloadNow)
		h.start(t)
		l := h.loaded(t, "SIGHUP")
		if l.Config.MCP.LogLevel != "debug" {
			t.Fatalf("round %d: the forced reload has log level %q, want the changed config's debug", round, l.Config.MCP.LogLevel)
		}
		h.settle(t)
		if got := h.loads.Load(); got != 2 {
			t.Fatalf("round %d: %d loads for a SIGHUP with a pending file change and a probe, want 2", round, got)
		}
		if got := h.sink.lines("reload skipped"); len(got) != 0 {
			t.Fatalf("round %d: a second reload ran and was skipped: %q", round, got)
		}
		h.stop()
	}
}

// After a rejection, the first good load says so ("config accepted"), so the
// ERROR is not the log's last word: whether the fix is a new config or a
// revert to the one in service (which is skipped, nothing to send). Loads
// with no rejection before them log no such line.
func TestLoaderSaysAConfigIsAcceptedAfterARejection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		fix      func(t *testing.T, h *loaderHarness, good []byte)
		wait     func(t *testing.T, h *loaderHarness)
		wantNote string
	}{
		{"a new config", func(t *testing.T, h *loaderHarness, _ []byte) { h.writeConfig(t, "debug", `"--short"`) },
			func(t *testing.T, h *loaderHarness) { h.loaded(t, "file") }, "replace the config in service"},
		{"a revert to the config in service", func(t *testing.T, h *loaderHarness, good []byte) {
			configtest.WriteFile(t, h.path, string(good), 0o600)
		},
			func(t *testing.T, h *loaderHarness) { h.skipped(t, 1) }, "back to the config in service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := startLoader(t)
			good := h.config(t, "info", "--short")
			configtest.WriteFile(t, h.path, invalidConfig, 0o600)
			ring(h.fileChanged)
			h.rejected(t, 1)
			if n := len(h.sink.lines("config accepted")); n != 0 {
				t.Fatalf("config accepted before any fix; log:\n%s", h.sink.String())
			}
			tc.fix(t, h, []byte(good))
			ring(h.fileChanged)
			tc.wait(t, h)
			lines := h.sink.lines("config accepted")
			if len(lines) != 1 || !containsAll(lines[0], []string{"level=INFO", "component=loader", "cause=file", tc.wantNote}) {
				t.Errorf("config accepted lines %q, want one INFO line saying %q; log:\n%s", lines, tc.wantNote, h.sink.String())
			}
			// A later good load, with no rejection before it, logs none.
			h.writeConfig(t, "warn", `"--short"`)
			ring(h.fileChanged)
			h.loaded(t, "file")
			if n := len(h.sink.lines("config accepted")); n != 1 {
				t.Errorf("config accepted lines = %d after a plain reload, want still 1; log:\n%s", n, h.sink.String())
			}
		})
	}
}
