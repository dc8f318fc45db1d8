package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// toolsPullSleep has a quick rule and one that runs as long as its
// argument says (fakecli sleep D), for calls that outlast a client's
// request timeout.
const toolsPullSleep = `  fake:
    binary: $FAKECLI
    allow:
      - subcommand: [pull]
      - subcommand: [sleep]
`

// staticTokenText is what wraptool answers on the OAuth paths,
// and so what mcp-remote quotes when a wrong token sends it looking for an
// OAuth server.
const staticTokenText = "wraptool uses a static bearer token from its token file; run 'wraptool up' to print client set-up"

// wildEvent is one JSON line of integration/node/mcpremote.mjs.
type wildEvent struct {
	Event    string   `json:"event"`
	Names    []string `json:"names"`
	Tool     string   `json:"tool"`
	IsError  bool     `json:"isError"`
	Text     string   `json:"text"`
	Progress float64  `json:"progress"`
	Total    *float64 `json:"total"`
	Message  string   `json:"message"`
	MS       int64    `json:"ms"`
	Stderr   string   `json:"stderr"`
	Where    string   `json:"where"`
}

// TestWildMCPRemote puts mcp-remote 0.15.1, the stdio bridge that
// stdio-only clients (desktop apps, editors) use to reach an HTTP MCP
// server, in front of wraptool, driven by the official TypeScript SDK's
// stdio client (integration/node/mcpremote.mjs) and configured as its
// README says: the URL (a loopback http:// URL needs no --allow-http) and
// --header "Authorization:Bearer ${WRAPTOOL_TOKEN}", which mcp-remote
// expands from its environment.
//
// Pointed at /mcp or at /sse it connects (at /sse only because POST /sse
// answers 405, so its Streamable-HTTP-first probe falls back to legacy
// SSE), lists, calls, and keeps a call alive past its 7 s request timeout
// because wraptool reports progress every 5 s. With a wrong token it ends
// quoting wraptool's "static bearer token" answer to its OAuth discovery
// and client registration, which the test logs for the README.
//
// It needs node and npm like the other Node.js tests (nodeSetup); mcp-remote
// is a devDependency, so when integration/node lacks it (CI installs with
// --omit=dev) it is installed, exactly as package-lock.json pins it, into a
// folder of this test's own (see installLocked). Without npm or the
// registry it skips, except under CI=true.
func TestWildMCPRemote(t *testing.T) {
	slow(t, "mcp-remote as a client")
	t.Parallel()
	node, nodeDir := nodeSetup(t)
	entry := mcpRemoteEntry(t, nodeDir)

	srvDir := t.TempDir()
	s := startServerIn(t, srvDir, serverConfig(t, srvDir, toolsPullSleep))
	if s.Token == "" {
		t.Fatal("the server created no MCP token; the test needs one")
	}
	for _, endpoint := range []string{"/mcp", "/sse"} {
		t.Run("pointed at "+endpoint+" it lists, calls and keeps a long call alive on progress", func(t *testing.T) {
			t.Parallel()
			events, stderr := runMCPRemote(t, node, nodeDir, entry, s.URL+endpoint, s.Token,
				"--slow-tool", "fake_sleep", "--slow-args", "9s", "--timeout-ms", "7000")
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf(format+"\n--- events: %+v\n--- mcp-remote stderr:\n%s\n--- server log:\n%s", append(args, events, stderr, s.Log())...)
			}
			byKind := map[string][]wildEvent{}
			for _, ev := range events {
				byKind[ev.Event] = append(byKind[ev.Event], ev)
			}
			if len(byKind["error"]) > 0 || len(byKind["connect_failed"]) > 0 || len(byKind["done"]) != 1 {
				fail("the run did not end with done")
			}
			if names := byKind["tools"][0].Names; !slices.Contains(names, "fake_pull") || !slices.Contains(names, "fake_sleep") {
				fail("tools %v, want fake_pull and fake_sleep among them", names)
			}
			var report fakeReport
			if c := byKind["call"][0]; c.IsError || json.Unmarshal([]byte(c.Text), &report) != nil ||
				!slices.Equal(report.Argv[1:], []string{"pull", "origin"}) {
				fail("call %+v, want fakecli's report of pull origin", c)
			}
			notes := byKind["progress"]
			if len(notes) == 0 {
				fail("no progress during a 9 s call")
			}
			if p := notes[0]; p.Progress != 5 || p.Total == nil || *p.Total != 30 || p.Message != "fake_sleep has run for 5 s (timeout 30 s)" {
				fail("first progress %+v, want 5 of 30 s and a message saying so", p)
			}
			if sc := byKind["slow_call"]; len(sc) != 1 || sc[0].IsError || sc[0].MS < 9000 {
				fail("slow call %+v: want its answer after 9 s, past the 7 s timeout that progress reset", sc)
			}
		})
		t.Run("pointed at "+endpoint+" with a wrong token it says wraptool uses a static bearer token", func(t *testing.T) {
			t.Parallel()
			events, stderr := runMCPRemote(t, node, nodeDir, entry, s.URL+endpoint, "wrong-token")
			if len(events) != 1 || events[0].Event != "connect_failed" {
				t.Fatalf("events %+v, want one connect_failed\n--- mcp-remote stderr:\n%s", events, stderr)
			}
			got := events[0].Stderr
			if !strings.Contains(got, staticTokenText) {
				t.Fatalf("mcp-remote's output does not quote wraptool's answer %q:\n%s", staticTokenText, got)
			}
			// What the user sees last, for the README.
			for line := range strings.Lines(got) {
				if strings.Contains(line, "Fatal error") || strings.Contains(line, "Connection error") {
					t.Logf("mcp-remote at %s with a wrong token: %s", endpoint, strings.TrimSpace(line))
				}
			}
		})
	}
}

// runMCPRemote runs mcpremote.mjs against url with token (and extra
// flags), bounded by nodeRunTimeout, with HOME and mcp-remote's config
// folder in a fresh temporary folder. It returns the script's events and
// what it wrote to stderr.
func runMCPRemote(t *testing.T, node, nodeDir, entry, url, token string, extra ...string) ([]wildEvent, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), nodeRunTimeout)
	defer cancel()
	home := t.TempDir()
	args := append([]string{"mcpremote.mjs", "--url", url, "--tool", "fake_pull", "--args", "origin", "--mcp-remote", entry}, extra...)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = nodeDir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "MCP_REMOTE_CONFIG_DIR=" + filepath.Join(home, ".mcp-auth"),
		"WRAPTOOL_TOKEN=" + token}
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("mcpremote.mjs did not finish within %v:\n%s\n%s", nodeRunTimeout, stdout.String(), stderr.String())
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run mcpremote.mjs: %v", err)
	}
	var events []wildEvent
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var ev wildEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			ev = wildEvent{Event: "unparsed", Text: sc.Text()}
		}
		events = append(events, ev)
	}
	return events, stderr.String()
}

// mcpRemoteEntry returns the path of mcp-remote's entry script (see
// lockedEntry).
func mcpRemoteEntry(t *testing.T, nodeDir string) string {
	t.Helper()
	return lockedEntry(t, nodeDir, "mcp-remote", "mcp-remote")
}

// lockedEntry returns the path of the script that devDependency pkg names
// as command bin: the one in integration/node when a full `npm ci` put it
// there, else one installed for this test (installLocked). It skips the
// test when that cannot be done, and fails it under CI=true, as nodeSetup
// does.
func lockedEntry(t *testing.T, nodeDir, pkg, bin string) string {
	t.Helper()
	dir := nodeDir
	if len(nodeMissing(nodeDir, pkg)) > 0 {
		dir = t.TempDir()
		if err := installLocked(t.Context(), nodeDir, dir, pkg); err != nil {
			msg := "cannot install " + pkg + ": " + err.Error()
			if os.Getenv("CI") == "true" {
				t.Fatal(msg + " (CI=true: npm and the registry should be there)")
			}
			t.Skip(msg)
		}
	}
	entry, err := packageBin(dir, pkg, bin)
	if err != nil {
		t.Fatal(err)
	}
	return entry
}

// installLocked installs pkg into dir exactly as nodeDir's
// package-lock.json pins it: the lock's entries for pkg and everything it
// needs, at the same places, under a package.json that asks for pkg alone,
// then `npm ci`. The test installs into a folder of its own because `npm
// ci` first empties node_modules, and in integration/node that would pull
// the SDK from under the Node.js tests running beside it; the lock's subset
// keeps the versions the repository pins, and takes 3 s for mcp-remote
// where the whole lock takes 13 s and 325 MB.
func installLocked(ctx context.Context, nodeDir, dir, pkg string) error {
	data, err := os.ReadFile(filepath.Join(nodeDir, "package-lock.json"))
	if err != nil {
		return err
	}
	var lock struct {
		Packages map[string]json.RawMessage `json:"packages"`
	}
	if err := json.Unmarshal(data, &lock); err != nil {
		return fmt.Errorf("package-lock.json: %w", err)
	}
	root, ok := lock.Packages["node_modules/"+pkg]
	if !ok {
		return fmt.Errorf("package-lock.json does not pin %s", pkg)
	}
	var pin struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(root, &pin); err != nil {
		return err
	}
	subset, err := lockClosure(lock.Packages, "node_modules/"+pkg)
	if err != nil {
		return err
	}
	deps, err := json.Marshal(map[string]string{pkg: pin.Version})
	if err != nil {
		return err
	}
	subset[""] = json.RawMessage(fmt.Sprintf(`{"name":"wraptool-locked","devDependencies":%s}`, deps))
	manifest := fmt.Sprintf(`{"name":"wraptool-locked","private":true,"devDependencies":%s}`, deps)
	lockOut, err := json.MarshalIndent(map[string]any{"name": "wraptool-locked", "lockfileVersion": 3, "requires": true, "packages": subset}, "", "  ")
	if err != nil {
		return err
	}
	npmrc, err := os.ReadFile(filepath.Join(nodeDir, ".npmrc"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for name, body := range map[string][]byte{"package.json": []byte(manifest), "package-lock.json": lockOut, ".npmrc": npmrc} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o600); err != nil {
			return err
		}
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return errors.New("npm is not on PATH")
	}
	ctx, cancel := context.WithTimeout(ctx, nodeInstallTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("npm ci for %s: %w\n%s", pkg, errors.Join(err, ctx.Err()), output.String())
	}
	return nil
}

// lockClosure returns the lock entries (by their node_modules path) that
// from needs at run time: from itself and, recursively, each dependency
// (regular, optional or peer) resolved as node does, in the nearest
// node_modules folder from the dependent's own outwards. A regular
// dependency the lock does not hold is an error; an optional or peer one
// the lock left out is not needed.
func lockClosure(packages map[string]json.RawMessage, from string) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	todo := []string{from}
	for len(todo) > 0 {
		path := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if _, done := out[path]; done {
			continue
		}
		out[path] = packages[path]
		var entry struct {
			Dependencies         map[string]string `json:"dependencies"`
			OptionalDependencies map[string]string `json:"optionalDependencies"`
			PeerDependencies     map[string]string `json:"peerDependencies"`
		}
		if err := json.Unmarshal(packages[path], &entry); err != nil {
			return nil, fmt.Errorf("package-lock.json %s: %w", path, err)
		}
		for _, deps := range []struct {
			names    map[string]string
			required bool
		}{{entry.Dependencies, true}, {entry.OptionalDependencies, false}, {entry.PeerDependencies, false}} {
			for _, name := range slices.Sorted(maps.Keys(deps.names)) {
				resolved, ok := resolveInLock(packages, path, name)
				switch {
				case ok:
					todo = append(todo, resolved)
				case deps.required:
					return nil, fmt.Errorf("package-lock.json: %s needs %s, which the lock does not hold", path, name)
				}
			}
		}
	}
	return out, nil
}

// resolveInLock finds the lock entry that package path's require(name)
// loads: path/node_modules/name, then the same in each enclosing package's
// folder, then node_modules/name at the top.
func resolveInLock(packages map[string]json.RawMessage, path, name string) (string, bool) {
	dir := path
	for {
		candidate := "node_modules/" + name
		if dir != "" {
			candidate = dir + "/node_modules/" + name
		}
		if _, ok := packages[candidate]; ok {
			return candidate, true
		}
		if dir == "" {
			return "", false
		}
		i := strings.LastIndex(dir, "/node_modules/")
		if i < 0 {
			dir = ""
		} else {
			dir = dir[:i]
		}
	}
}

// A wrapped-tool call that runs longer than 5 s sends notifications/progress
// with its request's token, over Streamable HTTP and legacy SSE, so a client
// with a short request timeout that resets on progress keeps waiting; a
// call without a token is sent none.
func TestWildProgressOnALongCall(t *testing.T) {
	slow(t, "progress on a long call")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, toolsPullSleep))
	for _, endpoint := range []string{"/mcp", "/sse"} {
		for _, token := range []any{"long-call-7", nil} {
			name := fmt.Sprintf("a 6 s call over %s with progress token %v", endpoint, token)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				var mu sync.Mutex
				var notes []*mcp.ProgressNotificationParams
				cs := wildConnect(t, s, endpoint, &mcp.ClientOptions{
					ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
						mu.Lock()
						defer mu.Unlock()
						notes = append(notes, r.Params)
					},
				})
				ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
				defer cancel()
				params := &mcp.CallToolParams{Name: "fake_sleep", Arguments: map[string]any{"args": []string{"6s"}}}
				if token != nil {
					params.SetProgressToken(token)
				}
				res, err := cs.CallTool(ctx, params)
				if err != nil || res.IsError {
					t.Fatalf("call: %v %+v\n%s", err, res, s.Log())
				}
				time.Sleep(settle) // a note that must not come, or one handled after the result
				mu.Lock()
				defer mu.Unlock()
				want := 0
				if token != nil {
					want = 1
				}
				if len(notes) != want {
					t.Fatalf("%d progress notes during a 6 s call, want %d: %+v", len(notes), want, notes)
				}
				for _, p := range notes {
					if p.ProgressToken != token || p.Progress != 5 || p.Total != 30 || p.Message != "fake_sleep has run for 5 s (timeout 30 s)" {
						t.Errorf("note %+v: want the call's token, 5 of 30 s, and a message saying so", p)
					}
				}
			})
		}
	}
}

// wildConnect is server.Connect with client options: an MCP session on s
// at endpoint, sending the server's token, closed when the test ends.
func wildConnect(t *testing.T, s *server, endpoint string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	httpClient := &http.Client{Transport: toolsettest.Bearer{Token: s.Token, Base: http.DefaultTransport}}
	var transport mcp.Transport = &mcp.StreamableClientTransport{Endpoint: s.URL + endpoint, HTTPClient: httpClient}
	if endpoint == "/sse" {
		transport = &mcp.SSEClientTransport{Endpoint: s.URL + endpoint, HTTPClient: httpClient}
	}
	// The SSE transport keeps Connect's context for its stream: it lives
	// until the test ends, and a timer bounds the connect.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	timer := time.AfterFunc(eventTimeout, cancel)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "wraptool-wild", Version: "1"}, opts).Connect(ctx, transport, nil)
	if !timer.Stop() || err != nil {
		t.Fatalf("connect to %s%s: %v\n%s", s.URL, endpoint, err, s.Log())
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// A reload that changes the tools while sessions without a GET stream are
// open (clients that only POST, like scripts and mcp-remote's abandoned
// probes) logs no warning per session: one debug line counts them.
func TestWildReloadDoesNotWarnPerStreamlessSession(t *testing.T) {
	slow(t, "reload warnings per streamless session")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, toolsPullSleep))
	for range 3 {
		postOnlySession(t, s)
	}
	streaming := s.Connect(t, "/mcp")
	cfg, err := os.ReadFile(s.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	// The tools come last in the config: one more rule.
	if err := os.WriteFile(s.ConfigPath, append(cfg, "      - subcommand: [fetch]\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	expectOneListChanged(t, s, streaming)
	log := s.WaitLog(t, `msg="list_changed not delivered"`, 1, eventTimeout)
	if !strings.Contains(log, `msg="list_changed not delivered" component=hub method=notifications/tools/list_changed count=3`) {
		t.Errorf("no debug line counting the 3 sessions without a stream:\n%s", log)
	}
	if strings.Contains(log, "undelivered message") || strings.Contains(log, "level=WARN msg=\"calling notifications") {
		t.Errorf("the MCP SDK's warning per session is still logged:\n%s", log)
	}
}

// postOnlySession opens a Streamable HTTP session on s and never opens its
// GET stream: initialize and initialized, as a client that only POSTs.
func postOnlySession(t *testing.T, s *server) {
	t.Helper()
	post := func(id, body string) *http.Response {
		req, err := http.NewRequest("POST", s.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+s.Token)
		if id != "" {
			req.Header.Set("Mcp-Session-Id", id)
		}
		res, err := (&http.Client{Timeout: eventTimeout}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	res := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"post-only","version":"1"}}}`)
	id := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != 200 || id == "" {
		t.Fatalf("initialize: status %d, session %q", res.StatusCode, id)
	}
	if res := post(id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); res.StatusCode != 202 {
		t.Fatalf("initialized: status %d", res.StatusCode)
	}
}
