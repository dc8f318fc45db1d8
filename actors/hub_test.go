package actors

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/toolset/toolsettest"
	"github.com/wraptool/wraptool/webui/httpguard"
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
	// every call of it, as does the hub closing its KillCalls.
	started chan struct{}
	release chan struct{}
	// killed receives, for each call of the slow tool that KillCalls
	// ended, when that happened.
	killed chan time.Time
	// cancelled receives, for each call of the patient tool (which
	// watches only its own context), when that context ended.
	cancelled chan time.Time
	// calls is the hub's KillCalls, closed when running calls must be
	// killed.
	calls  <-chan struct{}
	sink   *logSink
	client *http.Client
	stop   func() error
}

// newHubHarness binds a hub as o says, its Snapshots giving token; it does
// not run it.
// healthzOff is /healthz's body for a hub whose snapshots confine nothing.
const healthzOff = "ok\nconfinement: off\n"

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
	if o.KillCalls != nil {
		t.Fatal("buildHub makes the hub's KillCalls itself, to watch it")
	}
	kill := make(chan struct{})
	o.KillCalls = kill
	h := &hubHarness{started: make(chan struct{}, 1), release: make(chan struct{}), killed: make(chan time.Time, 1),
		cancelled: make(chan time.Time, 1), calls: kill}
	log, sink := newTestLogger()
	h.sink = sink
	h.server = mcp.NewServer(&mcp.Implementation{Name: "wraptool-test", Version: "v0"}, &mcp.ServerOptions{Logger: log})
	h.server.AddTool(&mcp.Tool{Name: "slow", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h.started <- struct{}{}
			select {
			case <-h.calls:
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
	// session, when set, is sent as Mcp-Session-Id.
	session string
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
	if r.session != "" {
		req.Header.Set("Mcp-Session-Id", r.session)
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
				if tt.req.path == "/healthz" && res.body != healthzOff {
					t.Errorf("body = %q, want %q", res.body, healthzOff)
				}
			case 401:
				// A refused credential is named as such (RFC 6750
				// invalid_token); a missing one gets the bare challenge.
				want := httpguard.InvalidTokenChallenge
				if tt.req.token == "" && tt.req.auth == "" {
					want = httpguard.Challenge
				}
				if got := res.header.Get("WWW-Authenticate"); got != want {
					t.Errorf("WWW-Authenticate = %q, want %q", got, want)
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
			if !isClosed(h.calls) {
				t.Error("KillCalls is not closed after Run returned")
			}
			if _, err := net.DialTimeout("tcp", h.hub.Addr().String(), time.Second); err == nil {
				t.Error("the listener still accepts connections after Run returned")
			}
		})
	}
}

// A call that outlives the grace period is killed: KillCalls is closed once
// the grace is over, not before.
func TestHubCallsIsDoneAfterTheGraceWhenACallOutlivesIt(t *testing.T) {
	t.Parallel()
	const grace = 200 * time.Millisecond
	h := newHubHarness(t, HubOptions{Transport: "sse", Listen: "127.0.0.1:0", Grace: grace}, "secret-token")
	h.stop = start(t, h.hub)
	called := h.callSlow(t, h.connect(t, "streamable"))
	if isClosed(h.calls) {
		t.Fatal("KillCalls is closed while the hub runs, want it open")
	}
	begin := time.Now()
	if err := h.stop(); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
	killed := receive(t, h.killed, "the slow call killed by KillCalls")
	if after := killed.Sub(begin); after < grace || after > grace+prompt {
		t.Errorf("KillCalls was closed %v after the stop began, want once the grace of %v is over (within %v)", after, grace, prompt)
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

// Calls that end within the grace period are never killed: KillCalls stays
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
	case <-h.calls:
		t.Fatal("KillCalls is closed during the shutdown while a call is well within its grace, want it open")
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
	if !isClosed(h.calls) {
		t.Error("KillCalls is not closed after Run returned")
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
		if res := h.do(t, hubRequest{method: "GET", path: "/healthz"}); res.status != 200 || res.body != healthzOff {
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
		configtest.WriteFile(t, path, "keep me\n", 0o600)
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
		{"POST /sse without a session and with a body that never comes gets 405 at once",
			h.head("POST", "/sse", "Content-Length: 100"), 405},
		{"POST /register with a body that never comes gets 404 at once",
			h.head("POST", "/register", "Content-Length: 100"), 404},
		{"POST to an unknown path with a body that never comes gets 404 at once",
			h.head("POST", "/nope", "Content-Length: 100"), 404},
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
		if res, body := c.response(t, wait); res.StatusCode != 200 || body != healthzOff {
			t.Fatalf("healthz on connection %d: status %d body %q, want 200 ok", len(open)+1, res.StatusCode, body)
		}
		open = append(open, c)
	}
	third := h.dial(t)
	third.send(t, healthz)
	third.notAnswered(t, "a third connection while two are open")
	open[0].Close()
	if res, body := third.response(t, wait); res.StatusCode != 200 || body != healthzOff {
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

// A method an endpoint does not serve gets 405 with Allow, after the
// DNS-rebinding check and before the token: a client that tries Streamable
// HTTP first (mcp-remote POSTs initialize to the URL it was given) learns
// that /sse is legacy SSE and falls back to it, instead of failing on the
// SDK's 400 "sessionid must be provided". POSTs to an SSE session's message
// endpoint still reach it.
func TestHubAnswers405ForMethodsAnEndpointDoesNotServe(t *testing.T) {
	t.Parallel()
	h := startHub(t, "secret-token")
	port := h.hub.Addr().(*net.TCPAddr).Port
	tests := []struct {
		name       string
		req        hubRequest
		wantStatus int
		wantAllow  string
	}{
		{"POST /sse without a session gets 405 with Allow: GET", hubRequest{method: "POST", path: "/sse", token: "secret-token"}, 405, "GET"},
		{"POST /sse without a session and without a token gets 405, not 401", hubRequest{method: "POST", path: "/sse"}, 405, "GET"},
		{"POST /sse without a session and with a wrong token gets 405", hubRequest{method: "POST", path: "/sse", token: "wrong"}, 405, "GET"},
		{"DELETE /sse gets 405 with Allow: GET", hubRequest{method: "DELETE", path: "/sse", token: "secret-token"}, 405, "GET"},
		{"PUT /sse to a session gets 405 with Allow: GET, POST", hubRequest{method: "PUT", path: "/sse?sessionid=ABC", token: "secret-token"}, 405, "GET, POST"},
		{"POST /sse with a foreign Host gets 403 first", hubRequest{method: "POST", path: "/sse", host: "evil.example:" + strconv.Itoa(port)}, 403, ""},
		{"POST /sse to an unknown session without a token gets 401", hubRequest{method: "POST", path: "/sse?sessionid=ABC"}, 401, ""},
		{"POST /sse to an unknown session with the token gets the SDK's 404", hubRequest{method: "POST", path: "/sse?sessionid=ABC", token: "secret-token"}, 404, ""},
		{"PUT /mcp gets 405 with Allow: GET, POST, DELETE", hubRequest{method: "PUT", path: "/mcp"}, 405, "GET, POST, DELETE"},
		{"PATCH /mcp gets 405", hubRequest{method: "PATCH", path: "/mcp", token: "secret-token"}, 405, "GET, POST, DELETE"},
		{"OPTIONS /mcp gets 405", hubRequest{method: "OPTIONS", path: "/mcp"}, 405, "GET, POST, DELETE"},
		{"HEAD /mcp gets 405", hubRequest{method: "HEAD", path: "/mcp"}, 405, "GET, POST, DELETE"},
		{"DELETE /mcp without a token gets 401: /mcp serves DELETE", hubRequest{method: "DELETE", path: "/mcp"}, 401, ""},
		{"POST /healthz gets 405 with Allow: GET, HEAD", hubRequest{method: "POST", path: "/healthz"}, 405, "GET, HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := h.do(t, tt.req)
			if res.status != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %q", res.status, tt.wantStatus, res.body)
			}
			if got := res.header.Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow = %q, want %q", got, tt.wantAllow)
			}
		})
	}
	t.Run("an SSE session still gets its messages through /sse?sessionid=", func(t *testing.T) {
		t.Parallel()
		cs := h.connect(t, "sse")
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatalf("tools/list over SSE: %v", err)
		}
	})
}

// OAuth clients that meet a 401 look for an authorization server before
// they give up. Each path mcp-remote 0.15.1 asked for (seen through a
// logging proxy in front of wraptool) gets, without auth, a 404 whose JSON
// says wraptool uses a static bearer token; a foreign Host still gets 403
// and any other path net/http's plain 404.
func TestHubAnswersOAuthDiscoveryWithoutOAuth(t *testing.T) {
	t.Parallel()
	h := startHub(t, "secret-token")
	port := strconv.Itoa(h.hub.Addr().(*net.TCPAddr).Port)
	const want = `{"error":"not_supported","error_description":"wraptool uses a static bearer token from its token file; run 'wraptool up' to print client set-up"}` + "\n"
	for _, path := range []string{
		"/.well-known/oauth-protected-resource",
		"/.well-known/oauth-protected-resource/mcp",
		"/.well-known/oauth-protected-resource/sse",
		"/.well-known/oauth-authorization-server",
		"/.well-known/oauth-authorization-server/mcp",
		"/.well-known/openid-configuration",
		"/.well-known/openid-configuration/mcp",
		"/mcp/.well-known/openid-configuration",
		"/register",
	} {
		for _, method := range []string{"GET", "POST"} {
			t.Run(method+" "+path+" gets the 404 that says there is no OAuth", func(t *testing.T) {
				t.Parallel()
				res := h.do(t, hubRequest{method: method, path: path, body: `{"client_name":"x"}`})
				if res.status != 404 || res.body != want {
					t.Fatalf("status %d, body %q; want 404 and %q", res.status, res.body, want)
				}
				if got := res.header.Get("Content-Type"); got != "application/json" {
					t.Errorf("Content-Type = %q, want application/json", got)
				}
			})
		}
	}
	t.Run("a foreign Host on a discovery path gets 403", func(t *testing.T) {
		t.Parallel()
		res := h.do(t, hubRequest{method: "GET", path: "/.well-known/oauth-protected-resource", host: "evil.example:" + port})
		if res.status != 403 {
			t.Fatalf("status %d, want 403; body %q", res.status, res.body)
		}
	})
	t.Run("another unknown path gets a plain 404", func(t *testing.T) {
		t.Parallel()
		res := h.do(t, hubRequest{method: "GET", path: "/nope"})
		if res.status != 404 || strings.Contains(res.body, "bearer") {
			t.Fatalf("status %d, body %q; want net/http's 404", res.status, res.body)
		}
	})
}

// rawSession opens a Streamable HTTP session the way a client that never
// opens the GET stream does: initialize and initialized, nothing more. It
// returns the session id.
func (h *hubHarness) rawSession(t *testing.T) string {
	t.Helper()
	res, body := h.post(t, "", initializeBody)
	id := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != 200 || id == "" {
		t.Fatalf("initialize: status %d, session %q, body %q", res.StatusCode, id, body)
	}
	if res, body := h.post(t, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); res.StatusCode != 202 {
		t.Fatalf("initialized: status %d, body %q", res.StatusCode, body)
	}
	return id
}

// post sends one JSON-RPC message to /mcp in session id ("" for none) with
// the hub's token, and reads the whole answer.
func (h *hubHarness) post(t *testing.T, id, msg string) (*http.Response, string) {
	t.Helper()
	res, body, err := h.tryPost(id, msg)
	if err != nil {
		t.Fatal(err)
	}
	return res, body
}

// tryPost is post for a goroutine other than the test's: it returns the
// error instead of failing the test.
func (h *hubHarness) tryPost(id, msg string) (*http.Response, string, error) {
	req, err := http.NewRequest("POST", h.baseURL()+"/mcp", strings.NewReader(msg))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+h.token())
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
	}
	res, err := (&http.Client{Transport: h.client.Transport}).Do(req) // no timeout: a call may run long
	if err != nil {
		return nil, "", fmt.Errorf("POST /mcp: %w", err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	return res, string(data), err
}

// hasSession reports whether the server still holds session id. It asks
// the server, not the session: a request would make the session busy.
func (h *hubHarness) hasSession(id string) bool {
	for ss := range h.server.Sessions() {
		if ss.ID() == id {
			return true
		}
	}
	return false
}

// A list_changed that cannot reach a session without a GET stream is not a
// warning per session on every reload: the hub counts the sessions it
// missed and logs one debug line per notify round, while sessions with a
// stream get the notification as before.
func TestHubLogsUndeliveredListChangedOncePerRound(t *testing.T) {
	t.Parallel()
	h := startHub(t, "secret-token")
	h.rawSession(t)
	h.rawSession(t)
	changed := make(chan struct{}, 8)
	h.connectWith(t, "streamable", &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	h.connectWith(t, "sse", &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	for round := 1; round <= 2; round++ {
		h.server.AddTool(&mcp.Tool{Name: "added" + strconv.Itoa(round), InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		receive(t, changed, "list_changed on a session with a stream")
		receive(t, changed, "list_changed on the other session with a stream")
		h.sink.waitForN(t, round, "level=DEBUG", `msg="list_changed not delivered"`, "component=hub", "count=2")
	}
	if got := h.sink.lines("list_changed not delivered"); len(got) != 2 {
		t.Errorf("%d lines say list_changed was not delivered, want one per round (2):\n%s", len(got), strings.Join(got, "\n"))
	}
	if got := h.sink.lines("undelivered message"); len(got) > 0 {
		t.Errorf("the SDK's warning is still logged, once per session:\n%s", strings.Join(got, "\n"))
	}
}

// A session that never opened its GET stream ends after StreamlessTimeout
// without a request; one with a stream, or with a request in flight, does
// not.
func TestHubExpiresSessionsThatNeverOpenedAStream(t *testing.T) {
	t.Parallel()
	const timeout = 400 * time.Millisecond
	h := newHubHarness(t, HubOptions{Transport: "sse", Listen: "127.0.0.1:0", StreamlessTimeout: timeout}, "secret-token")
	h.stop = start(t, h.hub)
	start(t, h.hub.streams)
	idle := h.rawSession(t)
	idleSince := time.Now() // at or before the end of its last request
	busy := h.rawSession(t)
	streaming := h.connect(t, "streamable")

	// busy calls the slow tool without a stream of its own: the call's
	// answer comes on the POST, which stays open until the test releases it.
	called := make(chan error, 1)
	go func() {
		res, body, err := h.tryPost(busy, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
		if err == nil && (res.StatusCode != 200 || !strings.Contains(body, `"result"`)) {
			err = fmt.Errorf("status %d, body %q", res.StatusCode, body)
		}
		called <- err
	}()
	receive(t, h.started, "start of the slow call")

	waitUntil(t, "the idle stream-less session expired", func() bool { return !h.hasSession(idle) })
	// The hub notes a request's end just after its answer went out, so
	// allow a little for the moment between the two.
	if d := time.Since(idleSince); d < timeout-50*time.Millisecond {
		t.Errorf("the idle session ended %v after its last request, want at least the timeout %v", d, timeout)
	}
	time.Sleep(2 * timeout) // the busy session must outlive the timeout while its call runs
	if !h.hasSession(busy) {
		t.Fatal("the session with a call in flight expired")
	}
	if res, body := h.post(t, idle, `{"jsonrpc":"2.0","id":3,"method":"ping"}`); res.StatusCode != 404 {
		t.Errorf("a request in the expired session: status %d, body %q; want 404 (the client initializes anew)", res.StatusCode, body)
	}
	close(h.release)
	if err := receive(t, called, "the slow call's answer"); err != nil {
		t.Fatalf("slow call: %v", err)
	}
	waitUntil(t, "the busy session expired once idle", func() bool { return !h.hasSession(busy) })

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := streaming.Ping(ctx, nil); err != nil {
		t.Errorf("the session with a GET stream expired: %v", err)
	}
	h.sink.waitFor(t, `msg="closed sessions that never opened a stream"`, "count=1")
}

// The stream watch's numbers, in simulated time: a session that never
// opened a stream ends between StreamlessTimeout and 1.1 × it after its
// last request (5 min to 5 min 30 s); a session with a stream, or with a
// request in flight, is never ended by it; a session it never saw counts
// as idle from the first sweep that finds it.
func TestStreamWatchExpiresOnlyIdleStreamlessSessions(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		log, _ := newTestLogger()
		live := map[string]bool{"idle": true, "streamed": true, "busy": true, "unseen": true}
		var closed []string
		var mu sync.Mutex
		sw := NewSessions(SessionsOptions{Log: log})
		sw.live = func() map[string]func() {
			mu.Lock()
			defer mu.Unlock()
			m := map[string]func(){}
			for id, ok := range live {
				if ok {
					m[id] = func() {
						mu.Lock()
						defer mu.Unlock()
						live[id] = false
						closed = append(closed, id)
					}
				}
			}
			return m
		}
		sw.update("idle", func(u *sessionUse) {})
		sw.update("streamed", func(u *sessionUse) { u.streamed = true })
		sw.update("busy", func(u *sessionUse) { u.active++ })
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go sw.Run(ctx)
		closedNow := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return slices.Sorted(slices.Values(closed))
		}

		time.Sleep(StreamlessTimeout - time.Second)
		synctest.Wait()
		if got := closedNow(); len(got) != 0 {
			t.Fatalf("closed %v before the timeout", got)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := closedNow(); !slices.Equal(got, []string{"idle"}) {
			t.Fatalf("closed %v by 5 min 1 s, want [idle]", got)
		}
		// unseen was first found by the first sweep (at 30 s), so it ends
		// with the sweep at 5 min 30 s.
		time.Sleep(StreamlessTimeout / 10)
		synctest.Wait()
		if got := closedNow(); !slices.Equal(got, []string{"idle", "unseen"}) {
			t.Fatalf("closed %v by 5 min 31 s, want [idle unseen]", got)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := closedNow(); !slices.Equal(got, []string{"idle", "unseen"}) {
			t.Fatalf("closed %v after an hour, want the streamed and the busy session kept", got)
		}
		sw.update("busy", func(u *sessionUse) { u.active--; u.last = time.Now() })
		time.Sleep(StreamlessTimeout + StreamlessTimeout/10)
		synctest.Wait()
		if got := closedNow(); !slices.Equal(got, []string{"busy", "idle", "unseen"}) {
			t.Fatalf("closed %v, want the busy session ended 5.5 min after its request", got)
		}
	})
}

// The tokens of the binding tests: the main MCP token and an elicitation
// client's.
const (
	mainToken   = "main-token-0123456789"
	elicitToken = "elicit-token-0123456789"
)

// bindingSnapshot is a snapshot with the main token main and elicitation
// clients by token (token → name).
func bindingSnapshot(main string, elicit map[string]string) *Snapshot {
	s := &Snapshot{MCPToken: main}
	s.ElicitTokens = elicit
	return s
}

// startBindingHub runs a hub on mainToken and elicitToken ("Desk").
func startBindingHub(t *testing.T, o HubOptions) *hubHarness {
	t.Helper()
	o.Transport, o.Listen = "sse", "127.0.0.1:0"
	h := newHubHarness(t, o, "")
	h.snaps.Store(bindingSnapshot(mainToken, map[string]string{elicitToken: "Desk"}))
	h.stop = start(t, h.hub)
	return h
}

// openSession initializes a Streamable HTTP session with token and sends
// notifications/initialized; it returns the session id.
func (h *hubHarness) openSession(t *testing.T, token string) string {
	t.Helper()
	res := h.do(t, hubRequest{method: "POST", path: "/mcp", token: token})
	id := res.header.Get("Mcp-Session-Id")
	if res.status != 200 || id == "" {
		t.Fatalf("initialize with %q: status %d, session %q, body %q", token, res.status, id, res.body)
	}
	if res := h.do(t, hubRequest{method: "POST", path: "/mcp", token: token, session: id,
		body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`}); res.status != 202 {
		t.Fatalf("initialized: status %d, body %q", res.status, res.body)
	}
	return id
}

// ping is a JSON-RPC ping, a request any initialized session answers.
const ping = `{"jsonrpc":"2.0","id":7,"method":"ping"}`

// checkRefusal fails unless res is a refusal with status whose body says
// want and holds none of the tokens.
func checkRefusal(t *testing.T, what string, res hubResponse, status int, want string) {
	t.Helper()
	if res.status != status || !strings.Contains(res.body, want) {
		t.Errorf("%s: status %d, body %q; want %d saying %q", what, res.status, res.body, status, want)
	}
	for _, tok := range []string{mainToken, elicitToken, "main-2", "elicit-2"} {
		if strings.Contains(res.body, tok) {
			t.Errorf("%s: the refusal %q shows a token", what, res.body)
		}
	}
}

// A Streamable HTTP session belongs to the token it was created with: a
// POST, GET stream or DELETE on it with another valid token is refused
// with 403 before the SDK sees it, and the session goes on working with
// its own token. Ids the hub never bound get the SDK's 404.
func TestHubBindsStreamableSessionsToTheirToken(t *testing.T) {
	t.Parallel()
	h := startBindingHub(t, HubOptions{})
	onMain := h.openSession(t, mainToken)
	onElicit := h.openSession(t, elicitToken)

	tests := []struct {
		name          string
		req           hubRequest
		status        int
		want          string
		startsTheCall bool
	}{
		{"a ping on the main token's session with the elicit token is refused",
			hubRequest{method: "POST", path: "/mcp", token: elicitToken, session: onMain, body: ping}, 403, "belongs to the bearer token that created it", false},
		{"a tool call on the main token's session with the elicit token is refused",
			hubRequest{method: "POST", path: "/mcp", token: elicitToken, session: onMain,
				body: `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"slow","arguments":{}}}`}, 403, "belongs to the bearer token that created it", false},
		{"the GET stream of the main token's session with the elicit token is refused",
			hubRequest{method: "GET", path: "/mcp", token: elicitToken, session: onMain}, 403, "belongs to the bearer token that created it", false},
		{"ending the main token's session with the elicit token is refused",
			hubRequest{method: "DELETE", path: "/mcp", token: elicitToken, session: onMain}, 403, "belongs to the bearer token that created it", false},
		{"the elicit token's session with the main token is refused",
			hubRequest{method: "POST", path: "/mcp", token: mainToken, session: onElicit, body: ping}, 403, "belongs to the bearer token that created it", false},
		{"an initialize naming another token's session is refused",
			hubRequest{method: "POST", path: "/mcp", token: mainToken, session: onElicit}, 403, "belongs to the bearer token that created it", false},
		{"an id no session has is not found",
			hubRequest{method: "POST", path: "/mcp", token: mainToken, session: "NOSUCHSESSION", body: ping}, 404, "session not found", false},
		{"a forged id on a GET is not found",
			hubRequest{method: "GET", path: "/mcp", token: mainToken, session: "../../x y"}, 404, "session not found", false},
	}
	for _, tt := range tests {
		res := h.do(t, tt.req)
		checkRefusal(t, tt.name, res, tt.status, tt.want)
	}
	select {
	case <-h.started:
		t.Fatal("a refused tool call ran")
	default:
	}
	for _, c := range []struct{ token, id string }{{mainToken, onMain}, {elicitToken, onElicit}} {
		if res := h.do(t, hubRequest{method: "POST", path: "/mcp", token: c.token, session: c.id, body: ping}); res.status != 200 || !strings.Contains(res.body, `"result"`) {
			t.Errorf("a ping on the session with its own token: status %d, body %q", res.status, res.body)
		}
	}
	if res := h.do(t, hubRequest{method: "DELETE", path: "/mcp", token: mainToken, session: onMain}); res.status/100 != 2 {
		t.Errorf("ending the session with its own token: status %d, body %q", res.status, res.body)
	}
}

// A reload that rotates a token: the old one stops working (401); the
// session it created goes on with the rotated replacement of the same role
// (and is bound to it from then on), never with a token of another role;
// a second token of the same role is refused while the session's own still
// works; a token that a reload moved to another role takes none of its
// sessions with it.
func TestHubSessionsAcrossTokenRotation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// open is the token the session is created with; then the
		// snapshot becomes after, and send is the token of the request.
		open   string
		after  *Snapshot
		send   string
		status int
		want   string
	}{
		{"the main token's session goes on with the rotated main token",
			mainToken, bindingSnapshot("main-2", map[string]string{elicitToken: "Desk"}), "main-2", 200, `"result"`},
		{"the main token's session is not taken over by the elicit token after the main token rotated",
			mainToken, bindingSnapshot("main-2", map[string]string{elicitToken: "Desk"}), elicitToken, 403, "belongs to the bearer token"},
		{"the old main token stops working",
			mainToken, bindingSnapshot("main-2", map[string]string{elicitToken: "Desk"}), mainToken, 401, "does not match this server's token file"},
		{"an elicit client's session goes on with that client's rotated token",
			elicitToken, bindingSnapshot(mainToken, map[string]string{"elicit-2": "Desk"}), "elicit-2", 200, `"result"`},
		{"an elicit client's session is not taken over by the main token after its token rotated",
			elicitToken, bindingSnapshot(mainToken, map[string]string{"elicit-2": "Desk"}), mainToken, 403, "belongs to the bearer token"},
		{"an elicit client's session is not taken over by another client's token",
			elicitToken, bindingSnapshot(mainToken, map[string]string{"elicit-2": "Phone"}), "elicit-2", 403, "belongs to the bearer token"},
		{"a second token of the same client is refused while the session's own still works",
			elicitToken, bindingSnapshot(mainToken, map[string]string{elicitToken: "Desk", "elicit-2": "Desk"}), "elicit-2", 403, "belongs to the bearer token"},
		{"the main token's session is refused once its token became an elicit client's",
			mainToken, bindingSnapshot("main-2", map[string]string{mainToken: "Desk"}), mainToken, 403, "another role"},
		{"the rotated main token does not take a session whose token became an elicit client's",
			mainToken, bindingSnapshot("main-2", map[string]string{mainToken: "Desk"}), "main-2", 403, "belongs to the bearer token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := startBindingHub(t, HubOptions{})
			id := h.openSession(t, tt.open)
			h.snaps.Store(tt.after)
			res := h.do(t, hubRequest{method: "POST", path: "/mcp", token: tt.send, session: id, body: ping})
			checkRefusal(t, "the request after the reload", res, tt.status, tt.want)
		})
	}

	t.Run("after a rotation the session belongs to the new token", func(t *testing.T) {
		t.Parallel()
		h := startBindingHub(t, HubOptions{})
		id := h.openSession(t, mainToken)
		h.snaps.Store(bindingSnapshot("main-2", nil))
		if res := h.do(t, hubRequest{method: "POST", path: "/mcp", token: "main-2", session: id, body: ping}); res.status != 200 {
			t.Fatalf("the rotated token: status %d, body %q", res.status, res.body)
		}
		// The old token comes back as an elicit client's: it is valid
		// again, but the session now belongs to main-2.
		h.snaps.Store(bindingSnapshot("main-2", map[string]string{mainToken: "Desk"}))
		checkRefusal(t, "the old token, now an elicit client's", h.do(t, hubRequest{method: "POST", path: "/mcp", token: mainToken, session: id, body: ping}),
			403, "belongs to the bearer token")
		if res := h.do(t, hubRequest{method: "POST", path: "/mcp", token: "main-2", session: id, body: ping}); res.status != 200 {
			t.Errorf("the session's token: status %d, body %q", res.status, res.body)
		}
	})
}

// admit's decisions, one case per rule.
func TestAdmit(t *testing.T) {
	t.Parallel()
	digest := func(tok string) [32]byte { return sha256.Sum256([]byte(tok)) }
	validNow := func(toks ...string) func([32]byte) bool {
		return func(d [32]byte) bool {
			for _, tok := range toks {
				if digest(tok) == d {
					return true
				}
			}
			return false
		}
	}
	main := binding{role: roleMain, digest: digest("a")}
	tests := []struct {
		name    string
		bound   binding
		cred    binding
		valid   func([32]byte) bool
		keep    binding
		refused string
	}{
		{"the same token in the same role is admitted", main, main, validNow("a"), main, ""},
		{"the rotated main token is admitted and becomes the session's", main, binding{roleMain, digest("b")}, validNow("b"), binding{roleMain, digest("b")}, ""},
		{"an elicit client's token is refused on the main token's session", main, binding{roleElicit + "Desk", digest("e")}, validNow("a", "e"), main, refuseOtherToken},
		{"an elicit client's token is refused even once the main token rotated", main, binding{roleElicit + "Desk", digest("e")}, validNow("b", "e"), main, refuseOtherToken},
		{"a second token of one role is refused while the first is valid", binding{roleElicit + "Desk", digest("e")}, binding{roleElicit + "Desk", digest("f")}, validNow("e", "f"), binding{roleElicit + "Desk", digest("e")}, refuseOtherToken},
		{"the session's token in another role is refused", main, binding{roleElicit + "Desk", digest("a")}, validNow("a"), main, refuseRoleChanged},
		{"without authentication any request is the same client", binding{"", digest("")}, binding{"", digest("x")}, validNow(), binding{"", digest("x")}, ""},
		{"without a main token an elicit client's token is still not the session's", binding{"", digest("")}, binding{roleElicit + "Desk", digest("e")}, validNow("e"), binding{"", digest("")}, refuseOtherToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			keep, refused := admit(tt.bound, tt.cred, tt.valid)
			if keep != tt.keep || refused != tt.refused {
				t.Errorf("admit = %+v, %q; want %+v, %q", keep, refused, tt.keep, tt.refused)
			}
		})
	}
}

// sseStream is a legacy SSE session opened by hand: its id, and a way to
// end its stream.
type sseStream struct {
	id    string
	close func()
}

// openSSE opens GET /sse with token and reads the endpoint event; the
// stream's messages are read and dropped.
func (h *hubHarness) openSSE(t *testing.T, token string) sseStream {
	t.Helper()
	s := h.openSSEEvents(t, token)
	go func() {
		for range s.messages {
		}
	}()
	return sseStream{id: s.id, close: s.close}
}

// postSSE sends msg to the legacy SSE message endpoint of session id.
func (h *hubHarness) postSSE(t *testing.T, id, token, msg string) hubResponse {
	t.Helper()
	return h.do(t, hubRequest{method: "POST", path: "/sse?sessionid=" + id, token: token, body: msg})
}

// A legacy SSE session belongs to the token that opened its stream: a
// message with another token is refused with 403; its own token's is
// accepted; once the stream ends, the hub forgets the session.
func TestHubBindsSSESessionsToTheirToken(t *testing.T) {
	t.Parallel()
	h := startBindingHub(t, HubOptions{})
	onMain := h.openSSE(t, mainToken)
	onElicit := h.openSSE(t, elicitToken)

	checkRefusal(t, "the main token's SSE session with the elicit token", h.postSSE(t, onMain.id, elicitToken, initializeBody), 403, "belongs to the bearer token")
	checkRefusal(t, "the elicit token's SSE session with the main token", h.postSSE(t, onElicit.id, mainToken, initializeBody), 403, "belongs to the bearer token")
	checkRefusal(t, "an SSE session that does not exist", h.postSSE(t, "NOSUCHSESSION", mainToken, initializeBody), 404, "session not found")
	for _, c := range []struct {
		token string
		s     sseStream
	}{{mainToken, onMain}, {elicitToken, onElicit}} {
		if res := h.postSSE(t, c.s.id, c.token, initializeBody); res.status != 202 {
			t.Errorf("a message with the session's own token: status %d, body %q", res.status, res.body)
		}
	}

	h.snaps.Store(bindingSnapshot("main-2", map[string]string{elicitToken: "Desk"}))
	checkRefusal(t, "the main token's SSE session with the elicit token after a rotation", h.postSSE(t, onMain.id, elicitToken, ping), 403, "belongs to the bearer token")
	if res := h.postSSE(t, onMain.id, "main-2", ping); res.status != 202 {
		t.Errorf("the main token's SSE session with the rotated main token: status %d, body %q", res.status, res.body)
	}

	onMain.close()
	onElicit.close()
	waitUntil(t, "the ended streams' sessions are forgotten", func() bool {
		h.hub.sseBound.mu.Lock()
		defer h.hub.sseBound.mu.Unlock()
		return len(h.hub.sseBound.bound) == 0
	})
	checkRefusal(t, "a message to an ended SSE session", h.postSSE(t, onElicit.id, elicitToken, ping), 404, "session not found")
}

// The hub keeps at most MaxSessions Streamable HTTP sessions: opening one
// more closes the least recently used, one without a stream before one
// with a stream, and what it remembers of sessions stays within the bound.
func TestHubBoundsTheSessionsItKeeps(t *testing.T) {
	t.Parallel()
	const max = 3
	h := startBindingHub(t, HubOptions{MaxSessions: max})
	streaming := h.openSession(t, mainToken)
	stream := h.openGETStream(t, mainToken, streaming)
	defer stream()
	first := h.openSession(t, mainToken)
	var last string
	for range 2 * max {
		last = h.openSession(t, mainToken)
	}
	count := func() int {
		n := 0
		for range h.server.Sessions() {
			n++
		}
		return n
	}
	if n := count(); n > max {
		t.Errorf("the server holds %d sessions, want at most %d", n, max)
	}
	h.hub.streams.mu.Lock()
	remembered := len(h.hub.streams.sessions)
	h.hub.streams.mu.Unlock()
	if remembered > max {
		t.Errorf("the hub remembers %d sessions, want at most %d", remembered, max)
	}
	checkRefusal(t, "the least recently used session", h.do(t, hubRequest{method: "POST", path: "/mcp", token: mainToken, session: first, body: ping}), 404, "session not found")
	for name, id := range map[string]string{"the newest session": last, "the session with a stream": streaming} {
		if res := h.do(t, hubRequest{method: "POST", path: "/mcp", token: mainToken, session: id, body: ping}); res.status != 200 {
			t.Errorf("%s: status %d, body %q", name, res.status, res.body)
		}
	}
	h.sink.waitFor(t, `msg="too many sessions; closed the least recently used"`)
}

// A flood of sessions on one token closes sessions of that token first:
// the assistant, holding the main token, cannot close the idle session of a
// client a person answers by opening sessions of its own.
func TestHubEvictsTheNewcomersRoleFirst(t *testing.T) {
	t.Parallel()
	const max = 3
	h := startBindingHub(t, HubOptions{MaxSessions: max})
	asker := h.openSession(t, elicitToken) // the oldest, idle, no stream
	first := h.openSession(t, mainToken)
	for range 2 * max {
		h.openSession(t, mainToken)
	}
	if res := h.do(t, hubRequest{method: "POST", path: "/mcp", token: elicitToken, session: asker, body: ping}); res.status != 200 {
		t.Errorf("the elicitation client's session: status %d, body %q; want it kept", res.status, res.body)
	}
	checkRefusal(t, "the oldest main-token session", h.do(t, hubRequest{method: "POST", path: "/mcp", token: mainToken, session: first, body: ping}), 404, "session not found")
}

// A GET the SDK refuses does not count as a stream: only a stream the SDK
// opened exempts a session from the sweep of sessions that never streamed.
func TestHubCountsOnlyAnOpenedStream(t *testing.T) {
	t.Parallel()
	h := startBindingHub(t, HubOptions{})
	id := h.openSession(t, mainToken)
	req, err := http.NewRequest("GET", h.baseURL()+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+mainToken)
	req.Header.Set("Accept", "application/json") // no text/event-stream
	req.Header.Set("Mcp-Session-Id", id)
	res, err := (&http.Client{Transport: h.client.Transport, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode == http.StatusOK {
		t.Fatalf("the SDK opened a stream for Accept: application/json")
	}
	streamed := func() bool {
		h.hub.streams.mu.Lock()
		defer h.hub.streams.mu.Unlock()
		u := h.hub.streams.sessions[id]
		return u != nil && u.streamed
	}
	if streamed() {
		t.Errorf("a GET answered %d marked the session as streamed", res.StatusCode)
	}
	stop := h.openGETStream(t, mainToken, id) // waits until it is marked
	stop()
}

// openGETStream opens session id's GET stream and waits until the hub has
// noted it; the returned func ends it.
func (h *hubHarness) openGETStream(t *testing.T, token, id string) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", h.baseURL()+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	res, err := (&http.Client{Transport: h.client.Transport}).Do(req)
	if err != nil || res.StatusCode != 200 {
		cancel()
		t.Fatalf("GET stream: %v %v", res, err)
	}
	waitUntil(t, "the hub noted the stream", func() bool {
		h.hub.streams.mu.Lock()
		defer h.hub.streams.mu.Unlock()
		u := h.hub.streams.sessions[id]
		return u != nil && u.streamed
	})
	return func() { cancel(); res.Body.Close() }
}

// A JSON-RPC batch is refused at the hub with 400 and a JSON-RPC -32600
// error, on either endpoint, before a session is created and whatever
// protocol version the session speaks: none of its messages runs. One
// message, even after whitespace, is served as before.
func TestHubRefusesJSONRPCBatches(t *testing.T) {
	t.Parallel()
	h := startBindingHub(t, HubOptions{})
	const callSlow = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`
	oldInit := strings.Replace(initializeBody, "2025-06-18", "2025-03-26", 1)
	onOld := h.openSessionWith(t, mainToken, oldInit)
	sse := h.openSSE(t, mainToken)
	defer sse.close()

	tests := []struct {
		name string
		req  hubRequest
	}{
		{"[initialize, tools/call] without a session", hubRequest{method: "POST", path: "/mcp", token: mainToken, body: "[" + initializeBody + "," + callSlow + "]"}},
		{"a batch after whitespace", hubRequest{method: "POST", path: "/mcp", token: mainToken, body: " \r\n\t[" + initializeBody + "]"}},
		{"a one-message batch on a 2025-03-26 session", hubRequest{method: "POST", path: "/mcp", token: mainToken, session: onOld, body: "[" + callSlow + "]"}},
		{"a chunked batch", hubRequest{method: "POST", path: "/mcp", token: mainToken, session: onOld, body: "[" + callSlow + "]", chunked: true}},
		{"an empty batch", hubRequest{method: "POST", path: "/mcp", token: mainToken, session: onOld, body: "[]"}},
		{"a batch to the SSE message endpoint", hubRequest{method: "POST", path: "/sse?sessionid=" + sse.id, token: mainToken, body: "[" + initializeBody + "," + callSlow + "]"}},
	}
	for _, tt := range tests {
		res := h.do(t, tt.req)
		if res.status != 400 || res.header.Get("Content-Type") != "application/json" || res.body != string(batchRefusal) {
			t.Errorf("%s: status %d, Content-Type %q, body %q; want 400 with %q", tt.name, res.status, res.header.Get("Content-Type"), res.body, batchRefusal)
		}
		if id := res.header.Get("Mcp-Session-Id"); id != "" {
			t.Errorf("%s: created session %q", tt.name, id)
		}
	}
	select {
	case <-h.started:
		t.Fatal("a tool in a refused batch ran")
	default:
	}
	if res := h.do(t, hubRequest{method: "POST", path: "/mcp", token: mainToken, session: onOld, body: "\n  " + ping}); res.status != 200 || !strings.Contains(res.body, `"result"`) {
		t.Errorf("one message after whitespace: status %d, body %q", res.status, res.body)
	}
}

// openSessionWith is openSession with init as the initialize request.
func (h *hubHarness) openSessionWith(t *testing.T, token, init string) string {
	t.Helper()
	res := h.do(t, hubRequest{method: "POST", path: "/mcp", token: token, body: init})
	id := res.header.Get("Mcp-Session-Id")
	if res.status != 200 || id == "" {
		t.Fatalf("initialize: status %d, session %q, body %q", res.status, id, res.body)
	}
	if res := h.do(t, hubRequest{method: "POST", path: "/mcp", token: token, session: id,
		body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`}); res.status != 202 {
		t.Fatalf("initialized: status %d, body %q", res.status, res.body)
	}
	return id
}

// startsBatch looks at the first byte that is not JSON whitespace, and
// refuseBatches hands everything else on whole.
func TestStartsBatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		batch      bool
	}{
		{"an object", `{"jsonrpc":"2.0"}`, false},
		{"an array", `[{"jsonrpc":"2.0"}]`, true},
		{"an array after JSON whitespace", " \t\r\n[", true},
		{"an object after JSON whitespace", " \t\r\n{}", false},
		{"an array after a byte that is not JSON whitespace", "\v[", false},
		{"an array after a byte-order mark", "\ufeff[", false},
		{"nothing", "", false},
		{"whitespace only", "   \n", false},
		{"an array after more whitespace than a buffer holds", strings.Repeat(" ", 10_000) + "[", true},
		{"a scalar", "12345", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got string
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				data, _ := io.ReadAll(r.Body)
				got = string(data)
				w.WriteHeader(299)
			})
			req := httptest.NewRequest("POST", "/mcp", strings.NewReader(tt.body))
			rec := httptest.NewRecorder()
			refuseBatches(next).ServeHTTP(rec, req)
			switch {
			case tt.batch && (rec.Code != 400 || rec.Body.String() != string(batchRefusal)):
				t.Errorf("status %d, body %q; want the batch refusal", rec.Code, rec.Body.String())
			case !tt.batch && (rec.Code != 299 || got != tt.body):
				t.Errorf("status %d, the handler read %q; want it to get the body %q whole", rec.Code, got, tt.body)
			}
		})
	}
}

// The session an initialize creates is bound before the head that names
// it is written, so no request of its client can come first.
func TestBindingWriterBindsBeforeTheHead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		write func(w http.ResponseWriter)
	}{
		{"WriteHeader", func(w http.ResponseWriter) { w.WriteHeader(200) }},
		{"Write", func(w http.ResponseWriter) { w.Write([]byte("{}")) }},
		{"Flush", func(w http.ResponseWriter) { http.NewResponseController(w).Flush() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			var headWritten []bool
			bw := newBindingWriter(rec, func(id string) {
				if id != "S1" {
					t.Errorf("created %q, want S1", id)
				}
				headWritten = append(headWritten, rec.Code != 0 || rec.Flushed || rec.Body.Len() > 0)
			})
			rec.Code = 0 // so a written head shows
			bw.Header().Set(sessionHeader, "S1")
			tt.write(bw)
			tt.write(bw)
			if !slices.Equal(headWritten, []bool{false}) {
				t.Errorf("created calls, each saying whether the head was already written: %v; want one, before", headWritten)
			}
		})
	}
}

// Hostile spellings of a session's credentials and ids: the gate reads the
// same header and query values the SDK and the token check read (the
// first of each), so no spelling reaches a session past its binding, and
// the token's own allowed spellings (the scheme in any case, spaces
// around the token) are the same token.
func TestHubSessionGateHostileInputs(t *testing.T) {
	t.Parallel()
	h := startBindingHub(t, HubOptions{})
	onMain := h.openSession(t, mainToken)
	onElicit := h.openSession(t, elicitToken)
	sseMain := h.openSSE(t, mainToken)
	defer sseMain.close()
	sseElicit := h.openSSE(t, elicitToken)
	defer sseElicit.close()

	tests := []struct {
		name    string
		path    string
		auth    []string // Authorization headers, in order
		session []string // Mcp-Session-Id headers, in order
		body    string
		status  int
	}{
		{"the scheme in another case and spaces around the token are the same token", "/mcp",
			[]string{"bEaReR   " + mainToken + "  "}, []string{onMain}, ping, 200},
		{"a second session header naming the token's own session does not help", "/mcp",
			[]string{"Bearer " + mainToken}, []string{onElicit, onMain}, ping, 403},
		{"a second Authorization header with the session's token does not help", "/mcp",
			[]string{"Bearer " + elicitToken, "Bearer " + mainToken}, []string{onMain}, ping, 403},
		{"the session id in another case names no session", "/mcp",
			[]string{"Bearer " + mainToken}, []string{strings.ToLower(onMain)}, ping, 404},
		{"spaces around the session id are not part of it (HTTP trims them)", "/mcp",
			[]string{"Bearer " + mainToken}, []string{" " + onMain + " "}, ping, 200},
		{"a second sessionid naming the token's own SSE session does not help", "/sse?sessionid=" + sseElicit.id + "&sessionid=" + sseMain.id,
			[]string{"Bearer " + mainToken}, nil, ping, 403},
		{"an SSE session id given to /mcp names no session", "/mcp",
			[]string{"Bearer " + mainToken}, []string{sseMain.id}, ping, 404},
		{"a Streamable HTTP session id given to /sse names no session", "/sse?sessionid=" + onMain,
			[]string{"Bearer " + mainToken}, nil, ping, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest("POST", h.baseURL()+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for _, a := range tt.auth {
				req.Header.Add("Authorization", a)
			}
			for _, s := range tt.session {
				req.Header.Add("Mcp-Session-Id", s)
			}
			res, err := h.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(res.Body)
			res.Body.Close()
			want := tt.status
			if strings.HasPrefix(tt.path, "/sse") && want == 200 {
				want = 202
			}
			if res.StatusCode != want {
				t.Errorf("status %d, body %q; want %d", res.StatusCode, data, want)
			}
		})
	}
}

// isClosed reports whether ch is closed, without waiting.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestOrDefaultKeepsOnlyAPositiveValue(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		v, def time.Duration
		want   time.Duration
	}{
		{"a zero value takes the default", 0, time.Second, time.Second},
		{"a negative value takes the default", -time.Nanosecond, time.Second, time.Second},
		{"the most negative value takes the default", math.MinInt64, time.Second, time.Second},
		{"a positive value is kept", time.Millisecond, time.Second, time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := orDefault(tc.v, tc.def); got != tc.want {
				t.Errorf("orDefault(%v, %v) = %v, want %v", tc.v, tc.def, got, tc.want)
			}
			if got := orDefault(int(tc.v), int(tc.def)); got != int(tc.want) {
				t.Errorf("orDefault(%d, %d) = %d, want %d", tc.v, tc.def, got, tc.want)
			}
		})
	}
}
