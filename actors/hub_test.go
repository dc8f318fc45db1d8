package actors

import (
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
	"strconv"
	"strings"
	"sync/atomic"
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
	hub     *Hub
	server  *mcp.Server
	token   atomic.Pointer[string]
	aborted atomic.Bool
	// abort is done once the hub gave up waiting for tool calls.
	abort context.Context
	// started is signalled when the slow tool begins a call.
	started chan struct{}
	client  *http.Client
	stop    func() error
}

// newHubHarness binds a hub as o says (Token and AbortCalls are the
// harness's); it does not run it.
func newHubHarness(t *testing.T, o HubOptions, token string) *hubHarness {
	t.Helper()
	h := &hubHarness{started: make(chan struct{}, 1)}
	h.token.Store(&token)
	log, _ := newTestLogger()
	h.server = mcp.NewServer(&mcp.Implementation{Name: "wraptool-test", Version: "v0"}, &mcp.ServerOptions{Logger: log})
	abort, abortCalls := context.WithCancel(context.Background())
	t.Cleanup(abortCalls)
	h.abort = abort
	h.server.AddTool(&mcp.Tool{Name: "slow", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h.started <- struct{}{}
			select {
			case <-abort.Done():
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{}, nil
		})
	o.Token = func() string { return *h.token.Load() }
	o.AbortCalls = func() { h.aborted.Store(true); abortCalls() }
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

// TestHubAcceptsTheBearerSchemeInAnyCase: the auth scheme of an
// Authorization header is case-insensitive (RFC 7235 §2.1, RFC 6750 §2.1).
func TestHubAcceptsTheBearerSchemeInAnyCase(t *testing.T) {
	t.Parallel()
	h := startHub(t, "secret-token")
	for _, auth := range []string{"bearer secret-token", "BEARER secret-token"} {
		if res := h.do(t, hubRequest{method: "POST", path: "/mcp", auth: auth}); res.status != 200 {
			t.Errorf("Authorization %q: status = %d, want 200", auth, res.status)
		}
	}
}

func TestHubWithoutATokenServesAnyLocalClient(t *testing.T) {
	t.Parallel()
	h := startHub(t, "")
	if res := h.do(t, hubRequest{method: "POST", path: "/mcp"}); res.status != 200 {
		t.Errorf("status = %d, want 200; body %q", res.status, res.body)
	}
}

func TestHubAppliesARotatedTokenAtOnce(t *testing.T) {
	t.Parallel()
	h := startHub(t, "old-token")
	req := func(tok string) hubRequest { return hubRequest{method: "POST", path: "/mcp", token: tok} }
	if res := h.do(t, req("old-token")); res.status != 200 {
		t.Fatalf("before rotation, the old token: status %d, want 200", res.status)
	}
	rotated := "new-token"
	h.token.Store(&rotated)
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
	hc := &http.Client{Transport: toolsettest.Bearer{Token: *h.token.Load(), Base: &http.Transport{ResponseHeaderTimeout: wait}}}
	var tr mcp.Transport
	switch kind {
	case "streamable":
		tr = &mcp.StreamableClientTransport{Endpoint: h.hub.URL() + "/mcp", HTTPClient: hc, MaxRetries: -1}
	case "sse":
		tr = &mcp.SSEClientTransport{Endpoint: h.hub.URL() + "/sse", HTTPClient: hc}
	}
	// The SSE transport keeps Connect's context for its stream, so it must
	// outlive the session; the transports' own timeouts bound the wait.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v0"}, nil).Connect(context.Background(), tr, nil)
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
			if h.aborted.Load() {
				t.Error("AbortCalls was called with no call in flight")
			}
			if _, err := net.DialTimeout("tcp", h.hub.Addr().String(), time.Second); err == nil {
				t.Error("the listener still accepts connections after Run returned")
			}
		})
	}
}

func TestHubAbortsCallsStillRunningAfterTheGracePeriod(t *testing.T) {
	t.Parallel()
	h := newHubHarness(t, HubOptions{Transport: "sse", Listen: "127.0.0.1:0", Grace: 100 * time.Millisecond}, "secret-token")
	h.stop = start(t, h.hub)
	cs := h.connect(t, "streamable")
	called := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
		called <- err
	}()
	receive(t, h.started, "start of the slow call")
	if err := h.stop(); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
	if !h.aborted.Load() {
		t.Error("AbortCalls was not called for a call running past the grace period")
	}
	receive(t, called, "end of the slow call")
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
			HubOptions{Transport: "unix", Listen: path, Token: func() string { return "" }, AbortCalls: func() {}}, log)
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
			HubOptions{Transport: "unix", Listen: path, Token: func() string { return "" }, AbortCalls: func() {}}, log)
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
