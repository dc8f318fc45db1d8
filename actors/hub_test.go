package actors

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// initializeBody is a JSON-RPC initialize request, the first message of an
// MCP session over Streamable HTTP.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"v0"}}}`

// hubHarness is a Hub serving a fresh MCP server with one slow tool.
type hubHarness struct {
	hub    *Hub
	server *mcp.Server
	// snaps gives the hub its token; nil when the hub has no Snapshots.
	snaps *testSnapshots
	// started is signalled when the slow tool begins a call; release ends
	// every call of it, as does the hub's Calls context.
	started chan struct{}
	release chan struct{}
	// killed receives, for each call of the slow tool the hub's Calls
	// context ended, when that happened.
	killed chan time.Time
	// cancelled receives, for each call of the patient tool (which
	// watches only its own context), when that context ended.
	cancelled chan time.Time
	sink      *logSink
	client    *http.Client
	stop      func() error
}

// newHubHarness binds a hub as o says, its Snapshots giving token; it does
// not run it.
func newHubHarness(t *testing.T, o HubOptions, token string) *hubHarness {
	t.Helper()
	snaps := newTestSnapshots(&Snapshot{MCPToken: token})
	o.Snapshots = snaps
	h := buildHub(t, o)
	h.snaps = snaps
	return h
}

// buildHub binds a hub exactly as o says (o.Snapshots may be nil).
func buildHub(t *testing.T, o HubOptions) *hubHarness {
	t.Helper()
	h := &hubHarness{started: make(chan struct{}, 1), release: make(chan struct{}), killed: make(chan time.Time, 1),
		cancelled: make(chan time.Time, 1)}
	log, sink := newTestLogger()
	h.sink = sink
	h.server = mcp.NewServer(&mcp.Implementation{Name: "wraptool-test", Version: "v0"}, &mcp.ServerOptions{Logger: log})
	h.server.AddTool(&mcp.Tool{Name: "slow", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h.started <- struct{}{}
			select {
			case <-h.hub.Calls().Done():
				h.killed <- time.Now()
			case <-h.release:
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{}, nil
		})
	h.server.AddTool(&mcp.Tool{Name: "patient", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h.started <- struct{}{}
			<-ctx.Done()
			h.cancelled <- time.Now()
			return nil, ctx.Err()
		})
	h.hub = NewHub(h.server, o, log)
	if err := h.hub.Listen(); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	h.client = &http.Client{Timeout: wait, Transport: &http.Transport{}}
	if o.Transport == "unix" {
		h.client.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", o.Listen)
		}}
	}
	t.Cleanup(h.client.CloseIdleConnections)
	return h
}

// token is the token the hub requires now.
func (h *hubHarness) token() string {
	if h.snaps == nil {
		return ""
	}
	return h.snaps.cur.Load().MCPToken
}

// callSlow starts a call of the slow tool on cs and waits until it runs;
// the returned channel gets the call's error.
func (h *hubHarness) callSlow(t *testing.T, cs *mcp.ClientSession) <-chan error {
	t.Helper()
	called := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
		called <- err
	}()
	receive(t, h.started, "start of the slow call")
	return called
}

// startHub binds and runs a hub on a free loopback port.
func startHub(t *testing.T, token string) *hubHarness {
	t.Helper()
	h := newHubHarness(t, HubOptions{Transport: "sse", Listen: "127.0.0.1:0"}, token)
	h.stop = start(t, h.hub)
	return h
}

// baseURL is where requests go: the TCP URL, or any URL for a socket.
func (h *hubHarness) baseURL() string {
	if u := h.hub.URL(); u != "" {
		return u
	}
	return "http://wraptool"
}

type hubRequest struct {
	method, path string
	token        string // "" sends no Authorization
	host, origin string // "" leaves the default
	// auth, when set, is the whole Authorization header instead.
	auth string
	// body of a POST; "" sends initializeBody.
	body string
	// chunked sends the body without a Content-Length.
	chunked bool
}

type hubResponse struct {
	status int
	header http.Header
	body   string
}

func (h *hubHarness) do(t *testing.T, r hubRequest) hubResponse {
	t.Helper()
	var body io.Reader
	if r.method == http.MethodPost {
		body = strings.NewReader(cmp.Or(r.body, initializeBody))
		if r.chunked {
			body = io.MultiReader(body) // a length net/http cannot see
		}
	}
	req, err := http.NewRequest(r.method, h.baseURL()+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	if r.auth != "" {
		req.Header.Set("Authorization", r.auth)
	}
	if r.host != "" {
		req.Host = r.host
	}
	if r.origin != "" {
		req.Header.Set("Origin", r.origin)
	}
	res, err := h.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer res.Body.Close()
	// An SSE stream never ends; a refusal or an initialize answer does.
	var data []byte
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") || r.method == http.MethodPost {
		data, _ = io.ReadAll(res.Body)
	}
	return hubResponse{res.StatusCode, res.Header, string(data)}
}

func TestHubGuardsTheMCPEndpoints(t *testing.T) {
	t.Parallel()
	h := startHub(t, "secret-token")
	port := h.hub.Addr().(*net.TCPAddr).Port
	hostPort := func(host string) string { return net.JoinHostPort(host, strconv.Itoa(port)) }
	tests := []struct {
		name       string
		req        hubRequest
		wantStatus int
	}{
		{"GET /healthz answers ok without a token", hubRequest{method: "GET", path: "/healthz"}, 200},
		{"POST /mcp without a token is refused with 401", hubRequest{method: "POST", path: "/mcp"}, 401},
		{"POST /mcp with a wrong token is refused with 401", hubRequest{method: "POST", path: "/mcp", token: "wrong-token"}, 401},
		{"POST /mcp with a longer token is refused with 401", hubRequest{method: "POST", path: "/mcp", token: "secret-token2"}, 401},
		{"GET /sse without a token is refused with 401", hubRequest{method: "GET", path: "/sse"}, 401},
		{"POST /mcp with the token initializes a session", hubRequest{method: "POST", path: "/mcp", token: "secret-token"}, 200},
		{"POST /mcp with the token to localhost is served", hubRequest{method: "POST", path: "/mcp", token: "secret-token", host: hostPort("localhost")}, 200},
		{"POST /mcp with a foreign Host is refused with 403", hubRequest{method: "POST", path: "/mcp", token: "secret-token", host: hostPort("evil.example")}, 403},
		{"POST /mcp with a foreign Host and no token is refused with 403", hubRequest{method: "POST", path: "/mcp", host: hostPort("evil.example")}, 403},
		{"POST /mcp with another port in Host is refused with 403", hubRequest{method: "POST", path: "/mcp", token: "secret-token", host: hostPort("127.0.0.1") + "1"}, 403},
		{"GET /sse with a foreign Host is refused with 403", hubRequest{method: "GET", path: "/sse", token: "secret-token", host: "evil.example"}, 403},
		{"POST /mcp with a foreign Origin is refused with 403", hubRequest{method: "POST", path: "/mcp", token: "secret-token", origin: "http://evil.example"}, 403},
		{"POST /mcp with an Origin on another port is refused with 403", hubRequest{method: "POST", path: "/mcp", token: "secret-token", origin: "http://localhost:1"}, 403},
		{"POST /mcp with Origin null is refused with 403", hubRequest{method: "POST", path: "/mcp", token: "secret-token", origin: "null"}, 403},
		{"POST /mcp with the listener's own Origin is served", hubRequest{method: "POST", path: "/mcp", token: "secret-token", origin: "http://" + hostPort("localhost")}, 200},
		{"POST /mcp with a token but another scheme is refused with 401", hubRequest{method: "POST", path: "/mcp", auth: "Basic secret-token"}, 401},
		{"POST /mcp with a body over 4 MiB is refused with 413", hubRequest{method: "POST", path: "/mcp", token: "secret-token", body: oversized}, 413},
		{"POST /mcp with a chunked body over 4 MiB is refused with 413", hubRequest{method: "POST", path: "/mcp", token: "secret-token", body: oversized, chunked: true}, 413},
		{"POST /mcp with a chunked body initializes a session", hubRequest{method: "POST", path: "/mcp", token: "secret-token", chunked: true}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := h.do(t, tt.req)
			if res.status != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %q", res.status, tt.wantStatus, res.body)
			}
			switch tt.wantStatus {
			case 200:
				if tt.req.path == "/healthz" && res.body != "ok" {
					t.Errorf("body = %q, want %q", res.body, "ok")
				}
			case 401:
				if got := res.header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
					t.Errorf("WWW-Authenticate = %q, want a Bearer challenge", got)
				}
			}
		})
	}
}

// oversized is an initialize request one byte over MaxBodyBytes.
var oversized = func() string {
	head, tail := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"`, `"}}`
	return head + strings.Repeat("a", MaxBodyBytes+1-len(head)-len(tail)) + tail
}()

func TestHubWithoutATokenServesAnyLocalClient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		build func(t *testing.T) *hubHarness
	}{
		{"a snapshot with no token lets any local client in", func(t *testing.T) *hubHarness {
			return newHubHarness(t, HubOptions{Transport: "sse", Listen: "127.0.0.1:0"}, "")
		}},
		{"a hub without Snapshots lets any local client in", func(t *testing.T) *hubHarness {
			return buildHub(t, HubOptions{Transport: "sse", Listen: "127.0.0.1:0"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := tt.build(t)
			h.stop = start(t, h.hub)
			if res := h.do(t, hubRequest{method: "POST", path: "/mcp"}); res.status != 200 {
				t.Errorf("status = %d, want 200; body %q", res.status, res.body)
			}
		})
	}
}

func TestHubAppliesARotatedTokenAtOnce(t *testing.T) {
	t.Parallel()
	h := startHub(t, "old-token")
	req := func(tok string) hubRequest { return hubRequest{method: "POST", path: "/mcp", token: tok} }
	if res := h.do(t, req("old-token")); res.status != 200 {
		t.Fatalf("before rotation, the old token: status %d, want 200", res.status)
	}
	h.snaps.Store(&Snapshot{MCPToken: "new-token"}) // a reload rotated the token
	if res := h.do(t, req("old-token")); res.status != 401 {
		t.Errorf("after rotation, the old token: status %d, want 401", res.status)
	}
	if res := h.do(t, req("new-token")); res.status != 200 {
		t.Errorf("after rotation, the new token: status %d, want 200", res.status)
	}
}

// connect opens an MCP client session on the hub over transport kind
// ("streamable" or "sse").
func (h *hubHarness) connect(t *testing.T, kind string) *mcp.ClientSession {
	t.Helper()
	return h.connectWith(t, kind, nil)
}

// connectWith is connect with client options (handlers for notifications).
func (h *hubHarness) connectWith(t *testing.T, kind string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: toolsettest.Bearer{Token: h.token(), Base: &http.Transport{ResponseHeaderTimeout: wait}}}
	var tr mcp.Transport
	switch kind {
	case "streamable":
		tr = &mcp.StreamableClientTransport{Endpoint: h.hub.URL() + "/mcp", HTTPClient: hc, MaxRetries: -1}
	case "sse":
		tr = &mcp.SSEClientTransport{Endpoint: h.hub.URL() + "/sse", HTTPClient: hc}
	}
	// The SSE transport keeps Connect's context for its stream, so it must
	// outlive the session; the transports' own timeouts bound the wait.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v0"}, opts).Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatalf("connect over %s: %v", kind, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestHubStopsPromptlyWhenNoCallIsInFlight(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"", "streamable", "sse"} {
		name := "cancelling Run with no client returns promptly"
		if kind != "" {
			name = "cancelling Run with an idle " + kind + " session returns promptly"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHubHarness(t, HubOptions{Transport: "sse", Listen: "127.0.0.1:0", Grace: time.Hour}, "secret-token")
			h.stop = start(t, h.hub)
			if kind != "" {
				cs := h.connect(t, kind)
				if _, err := cs.ListTools(t.Context(), nil); err != nil {
					t.Fatalf("ListTools: %v", err)
				}
			}
			// start's stop fails the test if Run takes longer than wait,
			// far less than the hour of grace.
			if err := h.stop(); err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
			if got := h.sink.lines("grace period over"); len(got) > 0 {
				t.Errorf("the hub killed calls with none in flight: %q", got)
			}
			if h.hub.Calls().Err() == nil {
				t.Error("Calls() is not done after Run returned")
			}
			if _, err := net.DialTimeout("tcp", h.hub.Addr().String(), time.Second); err == nil {
				t.Error("the listener still accepts connections after Run returned")
			}
		})
	}
}

// A call that outlives the grace period is killed: Calls() is done once
// the grace is over, not before.
func TestHubCallsIsDoneAfterTheGraceWhenACallOutlivesIt(t *testing.T) {
	t.Parallel()
	const grace = 200 * time.Millisecond
	h := newHubHarness(t, HubOptions{Transport: "sse", Listen: "127.0.0.1:0", Grace: grace}, "secret-token")
	h.stop = start(t, h.hub)
	called := h.callSlow(t, h.connect(t, "streamable"))
	if err := h.hub.Calls().Err(); err != nil {
		t.Fatalf("Calls() is done (%v) while the hub runs, want it open", err)
	}
	begin := time.Now()
	if err := h.stop(); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
	killed := receive(t, h.killed, "the slow call killed by Calls()")
	if after := killed.Sub(begin); after < grace || after > grace+prompt {
		t.Errorf("Calls() was done %v after the stop began, want once the grace of %v is over (within %v)", after, grace, prompt)
	}
	receive(t, called, "end of the slow call")
	if got := h.sink.lines("level=WARN", "grace period over", "component=hub"); len(got) != 1 {
		t.Errorf("grace period warnings = %q, want 1", got)
	}
}

// A handler that waits on nothing but its own context (a call waiting for
// a decision, or for a client's answer) has that context cancelled once
// the grace period is over, so it cannot hold the shutdown up.
func TestHubCancelsHandlersAfterTheGrace(t *testing.T) {
	t.Parallel()
	const grace = 200 * time.Millisecond
	h := newHubHarness(t, HubOptions{Transport: "sse", Listen: "127.0.0.1:0", Grace: grace}, "secret-token")
	h.stop = start(t, h.hub)
	cs := h.connect(t, "streamable")
	called := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "patient", Arguments: map[string]any{}})
		called <- err
	}()
	receive(t, h.started, "start of the patient call")
	begin := time.Now()
	if err := h.stop(); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
	cancelled := receive(t, h.cancelled, "the patient call's context cancelled")
	if after := cancelled.Sub(begin); after < grace || after > grace+prompt {
		t.Errorf("the handler's context ended %v after the stop began, want once the grace of %v is over (within %v)", after, grace, prompt)
	}
	receive(t, called, "end of the patient call")
}

// Calls that end within the grace period are never killed: Calls() stays
// open through the shutdown until they are done, and is done once Run has
// returned.
func TestHubCallsIsNotDoneWhileCallsFinishInTime(t *testing.T) {
	t.Parallel()
	h := newHubHarness(t, HubOptions{Transport: "sse", Listen: "127.0.0.1:0", Grace: time.Hour}, "secret-token")
	h.stop = start(t, h.hub)
	called := h.callSlow(t, h.connect(t, "streamable"))

	stopped := make(chan error, 1)
	go func() { stopped <- h.stop() }()
	// The shutdown has begun once the listener refuses connections.
	waitUntil(t, "the listener closes", func() bool {
		c, err := net.DialTimeout("tcp", h.hub.Addr().String(), time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	select {
	case <-h.hub.Calls().Done():
		t.Fatal("Calls() is done during the shutdown while a call is well within its grace, want it open")
	case <-time.After(quiet): // nothing says when it would have been
	}
	close(h.release)
	if err := receive(t, called, "the slow call's result"); err != nil {
		t.Errorf("CallTool: %v, want its result", err)
	}
	if err := receive(t, stopped, "return from Run"); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
	select {
	case <-h.killed:
		t.Error("the call was killed, want it to finish")
	default:
	}
	if h.hub.Calls().Err() == nil {
		t.Error("Calls() is not done after Run returned")
	}
}

// socketPath is a short path for a unix socket (sun_path is ~104 bytes).
func socketPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "wt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "s.sock")
}

func TestHubOnAUnixSocket(t *testing.T) {
	t.Parallel()
	path := socketPath(t)
	h := newHubHarness(t, HubOptions{Transport: "unix", Listen: path}, "secret-token")

	info, err := os.Lstat(path)
	if err != nil {
		t.Fatalf("after Listen: %v", err)
	}
	if info.Mode().Type() != fs.ModeSocket || info.Mode().Perm() != 0o600 {
		t.Errorf("socket mode = %v, want a socket with mode 0600", info.Mode())
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("folder holds %d entries after Listen, want only the socket", len(entries))
	}
	if u := h.hub.URL(); u != "" {
		t.Errorf("URL() = %q, want empty for a unix socket", u)
	}

	h.stop = start(t, h.hub)
	checks := []struct {
		name       string
		req        hubRequest
		wantStatus int
	}{
		{"healthz answers", hubRequest{method: "GET", path: "/healthz"}, 200},
		{"no token is refused", hubRequest{method: "POST", path: "/mcp"}, 401},
		// The DNS-rebinding check does not apply to a socket.
		{"any Host is served with the token", hubRequest{method: "POST", path: "/mcp", token: "secret-token", host: "anything"}, 200},
	}
	for _, c := range checks {
		if res := h.do(t, c.req); res.status != c.wantStatus {
			t.Errorf("%s: status = %d, want %d", c.name, res.status, c.wantStatus)
		}
	}

	if err := h.stop(); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket after Run returned: Lstat error %v, want it removed", err)
	}
}

func TestHubUnixSocketAlreadyThere(t *testing.T) {
	t.Parallel()
	t.Run("a stale socket left by a dead listener is replaced", func(t *testing.T) {
		t.Parallel()
		path := socketPath(t)
		ln, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		ln.(*net.UnixListener).SetUnlinkOnClose(false)
		ln.Close()
		if _, err := os.Lstat(path); err != nil {
			t.Fatalf("the stale socket is not there: %v", err)
		}

		h := newHubHarness(t, HubOptions{Transport: "unix", Listen: path}, "")
		h.stop = start(t, h.hub)
		if res := h.do(t, hubRequest{method: "GET", path: "/healthz"}); res.status != 200 || res.body != "ok" {
			t.Errorf("healthz on the replaced socket: status %d body %q, want 200 ok", res.status, res.body)
		}
	})
	t.Run("a live socket is refused with ErrSocketInUse and left alone", func(t *testing.T) {
		t.Parallel()
		path := socketPath(t)
		ln, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		log, _ := newTestLogger()
		hub := NewHub(mcp.NewServer(&mcp.Implementation{Name: "t", Version: "v0"}, nil),
			HubOptions{Transport: "unix", Listen: path}, log)
		if err := hub.Listen(); !errors.Is(err, ErrSocketInUse) {
			t.Fatalf("Listen = %v, want ErrSocketInUse", err)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err != nil {
			t.Fatalf("the live socket no longer answers: %v", err)
		}
		c.Close()
	})
	t.Run("a file that is not a socket is refused and left alone", func(t *testing.T) {
		t.Parallel()
		path := socketPath(t)
		writeFile(t, path, "keep me\n")
		log, _ := newTestLogger()
		hub := NewHub(mcp.NewServer(&mcp.Implementation{Name: "t", Version: "v0"}, nil),
			HubOptions{Transport: "unix", Listen: path}, log)
		if err := hub.Listen(); err == nil || errors.Is(err, ErrSocketInUse) {
			t.Fatalf("Listen = %v, want an error saying it is not a socket", err)
		}
		if data, err := os.ReadFile(path); err != nil || string(data) != "keep me\n" {
			t.Errorf("the file after Listen: %q, %v; want it untouched", data, err)
		}
	})
}

// A listener on every interface is reached locally through 127.0.0.1, so
// `up` prints a URL that works.
func TestHubURLOfAWildcardListener(t *testing.T) {
	t.Parallel()
	log, _ := newTestLogger()
	h := NewHub(mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil), HubOptions{Transport: "sse", Listen: "0.0.0.0:0"}, log)
	if err := h.Listen(); err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	port := h.Addr().(*net.TCPAddr).Port
	if got, want := h.URL(), fmt.Sprintf("http://127.0.0.1:%d", port); got != want {
		t.Errorf("URL() = %q, want %q", got, want)
	}
}

// Only work a client waits on holds up shutdown: a parked
// subscriptions/listen or a notification must not keep the hub busy.
func TestHubTracksOnlyRequestsClientsWaitOn(t *testing.T) {
	t.Parallel()
	log, _ := newTestLogger()
	h := NewHub(mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil), HubOptions{}, log)
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	parked := h.track(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		entered <- struct{}{}
		<-release
		return nil, nil
	})
	defer close(release)
	cases := []struct {
		method string
		busy   bool
	}{
		{"subscriptions/listen", false},
		{"notifications/initialized", false},
		{"tools/call", true},
	}
	for _, tc := range cases {
		go parked(context.Background(), tc.method, nil)
		<-entered
		select {
		case <-h.idleCh():
			if tc.busy {
				t.Errorf("%s running: the hub reports idle", tc.method)
			}
		default:
			if !tc.busy {
				t.Errorf("%s running: the hub reports busy, so shutdown would wait out the grace period", tc.method)
			}
		}
	}
}

// rawConn is a bare connection to the hub, for what net/http's client will
// not send: a declared body that never comes, a body that stalls.
type rawConn struct {
	net.Conn
	br *bufio.Reader
}

// dial opens a rawConn to the hub, closed when the test ends.
func (h *hubHarness) dial(t *testing.T) *rawConn {
	t.Helper()
	c, err := net.DialTimeout(h.hub.Addr().Network(), h.hub.Addr().String(), wait)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{Conn: c, br: bufio.NewReader(c)}
}

// head is an HTTP/1.1 request head for target on the hub with the given
// header lines; a "Host: …" line replaces the hub's own address.
func (h *hubHarness) head(method, target string, lines ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", method, target)
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "Host:") }) {
		fmt.Fprintf(&b, "Host: %s\r\n", h.hub.Addr())
	}
	for _, l := range lines {
		b.WriteString(l + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

func (c *rawConn) send(t *testing.T, s string) {
	t.Helper()
	c.SetWriteDeadline(time.Now().Add(wait))
	if _, err := io.WriteString(c, s); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// response reads one whole response, failing the test if none arrives
// within d.
func (c *rawConn) response(t *testing.T, d time.Duration) (*http.Response, string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	res, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatalf("no response within %v: %v", d, err)
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read response body: %v", err)
	}
	return res, string(body)
}

// waitClosed fails the test unless the server closes the connection within
// wait and sends nothing more before that.
func (c *rawConn) waitClosed(t *testing.T) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(wait))
	n, err := c.br.Read(make([]byte, 1))
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Fatalf("connection still open %v later, want it closed by the server", wait)
	case err == nil:
		t.Fatalf("read %d more bytes, want the connection closed", n)
	}
}

// notAnswered fails the test if anything arrives on c within quiet.
func (c *rawConn) notAnswered(t *testing.T, why string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(quiet))
	if _, err := c.br.Peek(1); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: read error %v, want nothing for %v", why, err, quiet)
	}
}

// Every MCP endpoint answers a refused request at once, however much body
// it announces, and closes its connection: a client that declares a body
// and never sends it must not hold a connection (and its file descriptor).
// The hub runs with the default BodyTimeout (30 s), far beyond wait, so an
// answer within wait did not come from the body deadline. The variants of
// each refusal, and their order, are httpguard's tests.
func TestHubRefusesWithoutWaitingForTheBody(t *testing.T) {
	t.Parallel()
	h := startHub(t, "secret-token")
	tests := []struct {
		name       string
		head       string
		wantStatus int
	}{
		{"POST /mcp without a token and with a body that never comes gets 401 at once",
			h.head("POST", "/mcp", "Content-Length: 100"), 401},
		{"POST /sse without a token and with a body that never comes gets 401 at once",
			h.head("POST", "/sse?sessionid=ABC", "Content-Length: 100"), 401},
		{"GET /sse without a token gets 401 and the connection closed",
			h.head("GET", "/sse"), 401},
		{"POST /mcp with a foreign Host and with a body that never comes gets 403 at once",
			h.head("POST", "/mcp", "Host: evil.example", "Content-Length: 100", "Authorization: Bearer secret-token"), 403},
		{"POST /sse with a foreign Host and with a body that never comes gets 403 at once",
			h.head("POST", "/sse?sessionid=ABC", "Host: evil.example", "Content-Length: 100", "Authorization: Bearer secret-token"), 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := h.dial(t)
			c.send(t, tt.head)
			res, body := c.response(t, wait)
			if res.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %q", res.StatusCode, tt.wantStatus, body)
			}
			if !res.Close { // ReadResponse moves Connection: close here
				t.Errorf("the response does not say Connection: close; header %v", res.Header)
			}
			if got, want := res.Header.Get("WWW-Authenticate"), `Bearer realm="wraptool"`; tt.wantStatus == 401 && got != want {
				t.Errorf("WWW-Authenticate = %q, want %q", got, want)
			}
			c.waitClosed(t)
		})
	}
}

// An authenticated request whose body stalls is dropped after BodyTimeout.
func TestHubDropsARequestWhoseBodyStalls(t *testing.T) {
	t.Parallel()
	const bodyTimeout = 300 * time.Millisecond
	h := newHubHarness(t, HubOptions{Transport: "sse", Listen: "127.0.0.1:0", BodyTimeout: bodyTimeout}, "secret-token")
	h.stop = start(t, h.hub)
	c := h.dial(t)
	sent := time.Now()
	c.send(t, h.head("POST", "/mcp", "Authorization: Bearer secret-token", "Content-Type: application/json",
		"Accept: application/json, text/event-stream", "Content-Length: 100")+initializeBody[:10])
	res, body := c.response(t, wait)
	if elapsed := time.Since(sent); elapsed < bodyTimeout {
		t.Errorf("answered after %v, want no sooner than BodyTimeout %v", elapsed, bodyTimeout)
	}
	if res.StatusCode != http.StatusRequestTimeout {
		t.Errorf("status = %d, want %d; body %q", res.StatusCode, http.StatusRequestTimeout, body)
	}
	if !res.Close {
		t.Errorf("the response does not say Connection: close; header %v", res.Header)
	}
	c.waitClosed(t)
}

// A keep-alive connection left idle after a complete request is closed
// after IdleTimeout.
func TestHubClosesIdleKeepAliveConnections(t *testing.T) {
	t.Parallel()
	const idleTimeout = 300 * time.Millisecond
	h := newHubHarness(t, HubOptions{Transport: "sse", Listen: "127.0.0.1:0", IdleTimeout: idleTimeout}, "secret-token")
	h.stop = start(t, h.hub)
	c := h.dial(t)
	// The server starts the idle clock once it has answered, so after sent.
	sent := time.Now()
	c.send(t, h.head("POST", "/mcp", "Authorization: Bearer secret-token", "Content-Type: application/json",
		"Accept: application/json, text/event-stream", fmt.Sprintf("Content-Length: %d", len(initializeBody)))+initializeBody)
	res, body := c.response(t, wait)
	if res.StatusCode != 200 || res.Close {
		t.Fatalf("initialize: status %d, Close %v; want 200 on a connection kept alive; body %q", res.StatusCode, res.Close, body)
	}
	c.waitClosed(t)
	if elapsed := time.Since(sent); elapsed < idleTimeout {
		t.Errorf("closed %v after the request, want no sooner than IdleTimeout %v", elapsed, idleTimeout)
	}
}

// Beyond MaxConns a new connection waits in the listen queue: the TCP
// connect succeeds, but nothing answers until an open connection closes.
func TestHubLimitsOpenConnections(t *testing.T) {
	t.Parallel()
	h := newHubHarness(t, HubOptions{Transport: "sse", Listen: "127.0.0.1:0", MaxConns: 2}, "")
	h.stop = start(t, h.hub)
	healthz := h.head("GET", "/healthz")
	var open []*rawConn
	for range 2 {
		c := h.dial(t)
		c.send(t, healthz)
		if res, body := c.response(t, wait); res.StatusCode != 200 || body != "ok" {
			t.Fatalf("healthz on connection %d: status %d body %q, want 200 ok", len(open)+1, res.StatusCode, body)
		}
		open = append(open, c)
	}
	third := h.dial(t)
	third.send(t, healthz)
	third.notAnswered(t, "a third connection while two are open")
	open[0].Close()
	if res, body := third.response(t, wait); res.StatusCode != 200 || body != "ok" {
		t.Errorf("healthz on the third connection once one closed: status %d body %q, want 200 ok", res.StatusCode, body)
	}
}

// The body deadline applies only while a body is read: streams and long
// calls outlive BodyTimeout.
func TestHubKeepsStreamsOpenPastTheBodyTimeout(t *testing.T) {
	t.Parallel()
	const bodyTimeout = 200 * time.Millisecond
	for _, kind := range []string{"sse", "streamable"} {
		t.Run("a "+kind+" session still gets list_changed after twice BodyTimeout", func(t *testing.T) {
			t.Parallel()
			h := newHubHarness(t, HubOptions{Transport: "sse", Listen: "127.0.0.1:0", BodyTimeout: bodyTimeout}, "secret-token")
			h.stop = start(t, h.hub)
			changed := make(chan struct{}, 1)
			cs := h.connectWith(t, kind, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
					select {
					case changed <- struct{}{}:
					default:
					}
				},
			})
			if _, err := cs.ListTools(t.Context(), nil); err != nil {
				t.Fatalf("ListTools: %v", err)
			}
			// Time must pass here and nothing signals it: a deadline wrongly
			// left on the stream would cut it within this span.
			time.Sleep(2 * bodyTimeout)
			h.server.AddTool(&mcp.Tool{Name: "late", InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{}, nil
				})
			receive(t, changed, "tools/list_changed notification")
		})
	}
	t.Run("a tool call running past twice BodyTimeout gets its result", func(t *testing.T) {
		t.Parallel()
		h := newHubHarness(t, HubOptions{Transport: "sse", Listen: "127.0.0.1:0", BodyTimeout: bodyTimeout}, "secret-token")
		h.stop = start(t, h.hub)
		cs := h.connect(t, "streamable")
		called := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
			called <- err
		}()
		receive(t, h.started, "start of the slow call")
		time.Sleep(2 * bodyTimeout) // as above: only time can pass here
		close(h.release)            // ends the slow tool, which then answers
		if err := receive(t, called, "end of the slow call"); err != nil {
			t.Errorf("CallTool: %v, want its result", err)
		}
	})
}

// A connection closed twice gives its slot back once, so the limit holds.
func TestHubConnLimitReleasesEachSlotOnce(t *testing.T) {
	t.Parallel()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := limitConns(inner, 1)
	defer ln.Close()
	accepted := make(chan net.Conn, 3)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	for range 3 {
		c, err := net.DialTimeout("tcp", inner.Addr().String(), wait)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer c.Close()
	}
	first := receive(t, accepted, "first accepted connection")
	first.Close()
	first.Close()
	second := receive(t, accepted, "second accepted connection")
	select {
	case <-accepted:
		t.Fatal("a third connection was accepted while the second is open: closing one twice freed two slots")
	case <-time.After(quiet):
	}
	second.Close()
	receive(t, accepted, "third accepted connection")
}
