package actors

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wraptool/wraptool/messages"
)

// invalidConfig fails validation: an unknown key.
const invalidConfig = "mcp:\n  listen: 127.0.0.1:8717\n  listn: typo\n"

// loaderHarness runs a Loader on a config fixture. Its channels are
// unbuffered, so a send to in returns only once the loader has finished
// the request before it (emitting included).
type loaderHarness struct {
	*configFixture
	initial messages.ConfigLoaded
	in      chan messages.ReloadRequest
	out     chan messages.ConfigLoaded
	sink    *logSink
	probes  int // settleInvalid's so far, to tell their log lines apart
}

func startLoader(t *testing.T) *loaderHarness {
	t.Helper()
	return startLoaderNeedingToken(t, "")
}

// startLoaderNeedingToken starts a loader whose running listener (named by
// needToken, when not empty) is reachable from other hosts.
func startLoaderNeedingToken(t *testing.T, needToken string) *loaderHarness {
	t.Helper()
	f := newConfigFixture(t)
	h := &loaderHarness{
		configFixture: f,
		initial:       f.load(t),
		in:            make(chan messages.ReloadRequest),
		out:           make(chan messages.ConfigLoaded),
	}
	log, sink := newTestLogger()
	h.sink = sink
	start(t, NewLoader(f.path, f.opts, h.initial.Hash, needToken, h.in, h.out, log))
	return h
}

// send hands req to the loader; the test fails if the loader emits
// instead of taking it.
func (h *loaderHarness) send(t *testing.T, req messages.ReloadRequest) {
	t.Helper()
	select {
	case h.in <- req:
	case m := <-h.out:
		t.Fatalf("got ConfigLoaded (cause %q, hash %.12s) while sending %+v, want none", m.Cause, m.Hash, req)
	case <-time.After(wait):
		t.Fatalf("the loader did not take %+v within %v", req, wait)
	}
}

// loaded waits for the next ConfigLoaded and checks its cause.
func (h *loaderHarness) loaded(t *testing.T, cause string) messages.ConfigLoaded {
	t.Helper()
	m := receive(t, h.out, "ConfigLoaded for "+cause)
	if m.Cause != cause {
		t.Fatalf("got ConfigLoaded with cause %q, want %q", m.Cause, cause)
	}
	if m.Config == nil || m.Policy == nil || m.Hash == "" {
		t.Fatalf("got an incomplete ConfigLoaded: %+v", m)
	}
	return m
}

// settleValid proves every earlier request is done while the config is
// valid: a forced request is answered only after them, and nothing may come
// before its answer.
func (h *loaderHarness) settleValid(t *testing.T) {
	t.Helper()
	h.send(t, messages.ReloadRequest{Forced: true, Cause: "probe"})
	h.loaded(t, "probe")
}

// settleInvalid is settleValid for an invalid config: the forced probe is
// logged after every earlier request is done.
func (h *loaderHarness) settleInvalid(t *testing.T) {
	t.Helper()
	h.probes++
	cause := fmt.Sprintf("probe-%d", h.probes)
	h.send(t, messages.ReloadRequest{Forced: true, Cause: cause})
	h.sink.waitFor(t, "config rejected", "cause="+cause+" ")
}

// rejections counts "config rejected" lines for a cause.
func (h *loaderHarness) rejections(cause string) int {
	return len(h.sink.lines("config rejected", "cause="+cause+" "))
}

func ruleFlags(t *testing.T, m messages.ConfigLoaded, name string) []string {
	t.Helper()
	r, ok := m.Policy.Rule(name)
	if !ok {
		t.Fatalf("policy has no rule %s", name)
	}
	var flags []string
	for _, f := range r.Flags() {
		flags = append(flags, f.Flag)
	}
	return flags
}

func TestLoaderForcedReloadAlwaysEmits(t *testing.T) {
	t.Parallel()
	h := startLoader(t)
	for range 2 {
		h.send(t, messages.ReloadRequest{Forced: true, Cause: "SIGHUP"})
		m := h.loaded(t, "SIGHUP")
		if m.Hash != h.initial.Hash {
			t.Errorf("hash of unchanged files = %.12s, want the running %.12s", m.Hash, h.initial.Hash)
		}
		if m.MCPToken != "first-token" {
			t.Errorf("MCPToken = %q, want %q", m.MCPToken, "first-token")
		}
		if _, ok := m.Policy.Rule("fake_status"); !ok {
			t.Errorf("policy lacks fake_status; rules: %v", m.Policy.Rules())
		}
	}
	if log := h.sink.String(); log != "" {
		t.Errorf("the loader logged %q, want nothing (the policy holder logs reloads)", log)
	}
}

func TestLoaderSkipsUnchangedFilesSilently(t *testing.T) {
	t.Parallel()
	h := startLoader(t)
	h.send(t, messages.ReloadRequest{Cause: "file"})
	h.send(t, messages.ReloadRequest{Cause: "file"})
	h.settleValid(t)
	if log := h.sink.String(); log != "" {
		t.Errorf("logged %q, want nothing", log)
	}
}

func TestLoaderEmitsChangedFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(t *testing.T, h *loaderHarness)
		check  func(t *testing.T, h *loaderHarness, m messages.ConfigLoaded)
	}{
		{
			name:   "a changed config emits ConfigLoaded with a new hash",
			change: func(t *testing.T, h *loaderHarness) { h.writeConfig(t, "info", `"--short", "--branch"`) },
			check: func(t *testing.T, h *loaderHarness, m messages.ConfigLoaded) {
				if got := ruleFlags(t, m, "fake_status"); !slices.Contains(got, "--branch") {
					t.Errorf("fake_status flags = %v, want --branch among them", got)
				}
			},
		},
		{
			name:   "changing only the token file's content changes the hash",
			change: func(t *testing.T, h *loaderHarness) { writeFile(t, h.token, "second-token\n") },
			check: func(t *testing.T, h *loaderHarness, m messages.ConfigLoaded) {
				if m.MCPToken != "second-token" {
					t.Errorf("MCPToken = %q, want %q", m.MCPToken, "second-token")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := startLoader(t)
			tt.change(t, h)
			h.send(t, messages.ReloadRequest{Cause: "file"})
			m := h.loaded(t, "file")
			if m.Hash == h.initial.Hash {
				t.Errorf("hash = %.12s, the same as before the change; want a new one", m.Hash)
			}
			tt.check(t, h, m)

			// The new files are now the running ones: skipped when unforced.
			h.send(t, messages.ReloadRequest{Cause: "file again"})
			h.settleValid(t)
			if log := h.sink.String(); log != "" {
				t.Errorf("logged %q, want nothing", log)
			}
		})
	}
}

func TestLoaderRejectsAnInvalidConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		spoil func(t *testing.T, h *loaderHarness)
	}{
		{
			name:  "an invalid config",
			spoil: func(t *testing.T, h *loaderHarness) { writeFile(t, h.path, invalidConfig) },
		},
		{
			name:  "an empty token file",
			spoil: func(t *testing.T, h *loaderHarness) { writeFile(t, h.token, "\n") },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is rejected and logged on every reload (CONTRACT §10)", func(t *testing.T) {
			t.Parallel()
			h := startLoader(t)
			tt.spoil(t, h)
			h.send(t, messages.ReloadRequest{Cause: "file"})
			h.send(t, messages.ReloadRequest{Cause: "file-again"})
			h.send(t, messages.ReloadRequest{Forced: true, Cause: "SIGHUP"})
			h.settleInvalid(t)

			for _, c := range []struct {
				cause string
				want  int
			}{{"file", 1}, {"file-again", 1}, {"SIGHUP", 1}} {
				if got := h.rejections(c.cause); got != c.want {
					t.Errorf("config rejected lines for cause %s = %d, want %d; log:\n%s", c.cause, got, c.want, h.sink.String())
				}
			}
			for _, l := range h.sink.lines("config rejected") {
				if !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "component=loader") || !strings.Contains(l, h.dir) {
					t.Errorf("log line %q: want level=ERROR, component=loader and the file's path", l)
				}
			}
		})
	}
}

func TestLoaderLoadsAConfigFixedAfterARejection(t *testing.T) {
	t.Parallel()
	h := startLoader(t)
	writeFile(t, h.path, invalidConfig)
	h.send(t, messages.ReloadRequest{Cause: "file"})
	h.settleInvalid(t)

	h.writeConfig(t, "debug", `"--short"`)
	h.send(t, messages.ReloadRequest{Cause: "fixed"})
	m := h.loaded(t, "fixed")
	if m.Hash == h.initial.Hash || m.Config.MCP.LogLevel != "debug" {
		t.Errorf("got hash %.12s and log level %q, want a new hash and debug", m.Hash, m.Config.MCP.LogLevel)
	}

	// The fix clears the rejection: the same broken bytes are news again.
	writeFile(t, h.path, invalidConfig)
	h.send(t, messages.ReloadRequest{Cause: "broken-again"})
	h.settleInvalid(t)
	if got := h.rejections("broken-again"); got != 1 {
		t.Errorf("config rejected lines for the config broken again = %d, want 1; log:\n%s", got, h.sink.String())
	}
}

// TestLoaderReportsABreakAfterARevert: valid → broken (logged) → reverted
// to the running bytes (skipped, nothing to load) → broken the same way
// again. The second break is a new edit and must be logged, or the operator
// gets no word that the save was refused.
func TestLoaderReportsABreakAfterARevert(t *testing.T) {
	t.Parallel()
	h := startLoader(t)
	good := h.config(t, "info", "--short")
	writeFile(t, h.path, invalidConfig)
	h.send(t, messages.ReloadRequest{Cause: "broken"})
	h.settleInvalid(t)

	writeFile(t, h.path, good)
	h.send(t, messages.ReloadRequest{Cause: "reverted"})
	h.send(t, messages.ReloadRequest{Cause: "between"})
	replaceFile(t, h.path, invalidConfig) // "between" may be reading it

	h.send(t, messages.ReloadRequest{Cause: "broken-again"})
	h.settleInvalid(t)

	if got := h.rejections("broken-again"); got != 1 {
		t.Errorf("config rejected lines after breaking the reverted config again = %d, want 1; log:\n%s", got, h.sink.String())
	}
	if got := h.rejections("reverted"); got != 0 {
		t.Errorf("config rejected lines for the revert = %d, want 0", got)
	}
}

// TestLoaderReportsANewTokenFileProblem: the config bytes stay the same
// while the token file goes from empty to missing. The inputs differ, and
// so does the error, so the second problem must be logged too.
func TestLoaderReportsANewTokenFileProblem(t *testing.T) {
	t.Parallel()
	h := startLoader(t)
	writeFile(t, h.token, "\n")
	h.send(t, messages.ReloadRequest{Cause: "emptied"})
	h.settleInvalid(t)
	if err := os.Remove(h.token); err != nil {
		t.Fatal(err)
	}
	h.send(t, messages.ReloadRequest{Cause: "removed"})
	h.settleInvalid(t)

	for _, c := range []struct {
		cause string
		want  int
	}{{"emptied", 1}, {"removed", 1}} {
		if got := h.rejections(c.cause); got != c.want {
			t.Errorf("config rejected lines for cause %s = %d, want %d; log:\n%s", c.cause, got, c.want, h.sink.String())
		}
	}
}

// A listener other hosts can reach keeps its token: a reload that drops
// mcp.auth_token_file is refused, not swapped in with authentication off.
func TestLoaderKeepsTheTokenOfAnExposedListener(t *testing.T) {
	t.Parallel()
	h := startLoaderNeedingToken(t, "0.0.0.0:8717")
	noToken := strings.Replace(h.config(t, "info", "--short"), "  auth_token_file: mcp-token\n", "", 1)
	writeFile(t, h.path, noToken)
	h.send(t, messages.ReloadRequest{Cause: "file"})
	h.settleInvalid(t)
	if got := h.rejections("file"); got != 1 {
		t.Fatalf("config rejected lines = %d, want 1; log:\n%s", got, h.sink.String())
	}
	if !strings.Contains(h.sink.String(), "cannot remove its token") {
		t.Errorf("the rejection does not say why:\n%s", h.sink.String())
	}

	// The same config is fine behind a loopback listener.
	l := startLoader(t)
	writeFile(t, l.path, strings.Replace(l.config(t, "info", "--short"), "  auth_token_file: mcp-token\n", "", 1))
	l.send(t, messages.ReloadRequest{Cause: "file"})
	if m := l.loaded(t, "file"); m.MCPToken != "" {
		t.Errorf("MCPToken = %q, want none", m.MCPToken)
	}
}
