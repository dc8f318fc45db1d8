package webui

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/policy/config/edit"
	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/policy/requests/requeststest"
)

const (
	adminToken = "4f1c0ffee0admin0token0a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
	mcpToken   = "9e8d7c6b5a4mcp0token0f1e2d3c4b5a69788796a5b4c3d2e1f0abcdef0123"
	port       = 8718
)

// fixtureConfig is a valid config with two tools: git (a flow-style rule,
// a block-style rule, a deny rule) and gh (a bare rule, so a request for
// no subcommand can be approved there). $DIR is the fixture's folder.
const fixtureConfig = `# wraptool test config
mcp:
  listen: 127.0.0.1:8717
  request_log: requests.jsonl
tools:
  git:
    binary: $DIR/bin/git
    allow:
      - subcommand: [pull]
        flags: ["--ff-only"]
      - subcommand: [push]
        flags:
          - --set-upstream
        arg_constraints:
          positional_max: 2
    deny:
      - subcommand: [config]
  gh:
    binary: $DIR/bin/gh
    allow:
      - subcommand: []
        flags: ["--version"]
`

// fixture is a UI over a real config (with stand-in binaries), a real
// request log, a settable clock and a settable admin token.
type fixture struct {
	dir    string
	config string
	log    string
	src    *fakeSource
	clock  *fakeClock
	ui     *UI
}

// options are the fixture's UI options for the listener at addr. The
// server hands the UI its request-log writer and config editor; here the
// two stand in for them with the calls those actors make.
func (f *fixture) options(addr net.Addr) Options {
	return Options{Source: f.src, Addr: addr, Now: f.clock.now, SignInDelay: time.Millisecond,
		Decide: func(ctx context.Context, id string, d requests.Decision) error {
			return requests.Decide(ctx, f.log, id, d, f.clock.now())
		},
		Apply: func(_ context.Context, path, tool string, sub, flags []string, paths *config.Options) (string, error) {
			a, err := edit.ApplyRequest(path, tool, sub, flags, paths)
			if err != nil {
				return "", err
			}
			return a.String(), nil
		}}
}

// fakeSource is a Source whose State a test changes (a rotated token).
type fakeSource struct {
	mu sync.Mutex
	st State
}

func (f *fakeSource) Current() State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fakeSource) setToken(tok string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st.AdminToken = tok
}

// fakeClock is a clock a test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fakeHelps answers from a table: "tool sub…" → flag → help line. A
// subcommand in the table has known help ("gh" alone is gh's own help);
// any other's help is unknown.
type fakeHelps map[string]map[string]string

func (h fakeHelps) Flag(tool string, sub []string, flag string) (policy.FlagHelp, bool) {
	d, ok := h[strings.Join(append([]string{tool}, sub...), " ")][flag]
	return policy.FlagHelp{Description: d}, ok
}
func (fakeHelps) Description(string, []string) string  { return "" }
func (fakeHelps) ShortHelpTaken(string, []string) bool { return false }
func (h fakeHelps) Subcommands(tool string, sub []string) (map[string]string, bool) {
	_, ok := h[strings.Join(append([]string{tool}, sub...), " ")]
	return map[string]string{}, ok
}

var testHelps = fakeHelps{
	"git push": {
		"--set-upstream": "set upstream for git pull/status",
		"--tags":         "push tags (can't be used with --all or --mirror)",
		"--force":        "force updates",
	},
	"git pull":  {"--ff-only": "abort if fast-forward is not possible"},
	"git fetch": {"--prune": "prune remote-tracking branches no longer on remote", "--all": "fetch all remotes"},
	"gh":        {"--version": "show gh version", "--help": "show help for command"},
}

// newFixture writes the config and stand-in binaries into a temporary
// folder and builds a UI over them. o adjusts the Options (a delay, a TTL).
func newFixture(t *testing.T, o ...func(*Options)) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{dir: dir, config: filepath.Join(dir, "config.yaml"), log: filepath.Join(dir, "requests.jsonl"),
		clock: &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}}
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"git", "gh"} {
		if err := os.WriteFile(filepath.Join(dir, "bin", b), []byte("#!/bin/sh\nexit 0\n"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	configtest.WriteFile(t, f.config, strings.ReplaceAll(fixtureConfig, "$DIR", dir), 0o600)
	paths := &config.Options{Home: dir, Getenv: func(string) string { return "" }}
	l, err := config.LoadFile(t.Context(), f.config, &config.LoadOptions{Paths: paths})
	if err != nil {
		t.Fatalf("load fixture config: %v", err)
	}
	f.src = &fakeSource{st: State{AdminToken: adminToken, ConfigPath: f.config, RequestLog: f.log,
		Policy: l.Policy, Helps: testHelps, Paths: paths}}
	opts := f.options(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	for _, fn := range o {
		fn(&opts)
	}
	f.ui = New(opts)
	return f
}

// uiHost is the UI's host for tok.
func uiHost(tok string) string { return "w-" + HostLabel(tok) + ".localhost:8718" }

// uiOrigin is the UI's origin for the fixture's token.
var uiOrigin = "http://" + uiHost(adminToken)

// submit files a request as the server would.
func (f *fixture) submit(t *testing.T, tool string, sub, flags []string, rationale string) string {
	t.Helper()
	s, err := requests.Submit(t.Context(), f.log, requests.Request{Tool: tool, Subcommand: sub, Flags: flags,
		Rationale: rationale, Enables: "more work"}, f.clock.now())
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return s.ID
}

// status is request id's status in the log.
func (f *fixture) status(t *testing.T, id string) string {
	t.Helper()
	if r := requeststest.Find(t, f.log, id); r != nil {
		return r.Status
	}
	return "missing"
}

// call is one HTTP request to the handler.
type call struct {
	method string // GET when empty
	host   string // the UI host when empty
	target string
	header map[string]string
	form   url.Values // sent as a form body when set
	body   string     // sent as is when set
	cookie string     // the session cookie's value
}

func (f *fixture) do(t *testing.T, c call) *httptest.ResponseRecorder {
	t.Helper()
	method := c.method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	switch {
	case c.form != nil:
		body = strings.NewReader(c.form.Encode())
	case c.body != "":
		body = strings.NewReader(c.body)
	}
	r := httptest.NewRequestWithContext(t.Context(), method, c.target, body)
	r.Host = c.host
	if r.Host == "" {
		r.Host = uiHost(f.src.Current().AdminToken)
	}
	if c.form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range c.header {
		r.Header.Set(k, v)
	}
	if c.cookie != "" {
		r.AddCookie(&http.Cookie{Name: cookieName, Value: c.cookie})
	}
	w := httptest.NewRecorder()
	f.ui.Handler().ServeHTTP(w, r)
	return w
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// signIn signs in with ?token= and returns the session cookie and the
// page's CSRF token.
func (f *fixture) signIn(t *testing.T) (cookie, csrf string) {
	t.Helper()
	w := f.do(t, call{target: "/?token=" + url.QueryEscape(f.src.Current().AdminToken)})
	if w.Code != http.StatusSeeOther {
		t.Fatalf("sign in: status %d, want 303; body %s", w.Code, w.Body)
	}
	cookie = sessionCookie(t, w).Value
	page := f.do(t, call{target: "/", cookie: cookie})
	m := csrfField.FindStringSubmatch(page.Body.String())
	if page.Code != http.StatusOK || m == nil {
		t.Fatalf("review page after sign-in: status %d, no CSRF field; body %s", page.Code, page.Body)
	}
	return cookie, m[1]
}

// sessionCookie is the session cookie a response sets.
func sessionCookie(t *testing.T, w *httptest.ResponseRecorder) *http.Cookie {
	t.Helper()
	for _, c := range w.Result().Cookies() {
		if c.Name == cookieName {
			return c
		}
	}
	t.Fatalf("no %s cookie set; headers %v", cookieName, w.Header())
	return nil
}

// bearer is the Authorization header for tok.
func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

// jsonError is an API error's message; it fails when the body is not
// {"error": "…"}.
func jsonError(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	var e map[string]string
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || len(e) != 1 || e["error"] == "" {
		t.Fatalf("body %q is not {\"error\": …}", w.Body)
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	return e["error"]
}

// loadFixture loads the fixture's config as the UI checks an exact call:
// its policy (typed by the fixture's help) and its policy hash.
func (f *fixture) loadFixture(t *testing.T) *config.Loaded {
	t.Helper()
	l, err := config.LoadFile(t.Context(), f.config, &config.LoadOptions{Paths: f.src.Current().Paths, Tokens: config.TokensOptional,
		Introspect: func(context.Context, *config.Config, bool) (policy.Helps, error) { return testHelps, nil }})
	if err != nil {
		t.Fatalf("load fixture config: %v", err)
	}
	return l
}

// submitExact files an exact-call request as the server does after a
// denial: the call's canonical arguments, the command the config builds of
// them, the fixture's folder as its directory and the config's policy hash.
// edit, when set, changes the call before it is filed (a command the
// arguments do not build).
func (f *fixture) submitExact(t *testing.T, sub, flags []string, params map[string]any, edit func(*requests.Call)) string {
	t.Helper()
	l := f.loadFixture(t)
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	args, err := requests.CanonicalArguments(raw)
	if err != nil {
		t.Fatal(err)
	}
	// The server decodes arguments with UseNumber, as the UI does.
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.UseNumber()
	decoded := map[string]any{}
	if err := dec.Decode(&decoded); err != nil {
		t.Fatal(err)
	}
	command, ok := l.Policy.Command(policy.Call{Tool: "git", Subcommand: sub, Params: decoded})
	if !ok {
		t.Fatalf("the fixture builds no command of git %v %v", sub, params)
	}
	call := &requests.Call{Tool: "git_" + strings.Join(sub, "_"), Arguments: args, Command: command, Cwd: f.dir, Dir: "2049:131", Policy: l.PolicyHash()}
	if edit != nil {
		edit(call)
	}
	s, err := requests.Submit(t.Context(), f.log, requests.Request{Tool: "git", Subcommand: sub, Flags: flags,
		Rationale: "the exact call", Enables: "this one push", Call: call}, f.clock.now())
	if err != nil {
		t.Fatalf("submit an exact-call request: %v", err)
	}
	return s.ID
}

// record is request id as the log folds it.
func (f *fixture) record(t *testing.T, id string) *requests.Record {
	t.Helper()
	return requeststest.Record(t, f.log, id)
}
