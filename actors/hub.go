package actors

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/toolset"
	"github.com/wraptool/wraptool/webui/httpguard"
)

// Limits and timeouts of the MCP listener (see the README, Serving). Each bounds what
// one client, authenticated or not, can hold of the server.
const (
	// MaxBodyBytes bounds the memory one request can make the hub hold;
	// MCP messages are far smaller.
	MaxBodyBytes = httpguard.DefaultMaxBodyBytes
	// ReadHeaderTimeout frees a connection whose client opens it and then
	// sends no (or a slow) request head.
	ReadHeaderTimeout = 10 * time.Second
	// BodyTimeout frees a connection whose client declares a body and then
	// stalls. It applies only while the body is read, so streams and long
	// tool calls are not cut.
	BodyTimeout = httpguard.DefaultBodyTimeout
	// IdleTimeout frees a keep-alive connection no client uses any more.
	IdleTimeout = 120 * time.Second
	// MaxConns keeps a flood of connections from using up the process's
	// file descriptors; beyond it new connections wait in the listen queue.
	MaxConns = 4096
	// SessionTimeout ends Streamable HTTP sessions their client abandoned:
	// the MCP SDK closes a session no request (POST, DELETE) has reached
	// for this long.
	SessionTimeout = 30 * time.Minute
	// StreamlessTimeout ends sooner a Streamable HTTP session that never
	// opened its GET stream and sent nothing for this long. Such a session
	// cannot be told of a changed tool list, and clients that open one per
	// connection attempt and walk away (mcp-remote's probes, scripts that
	// never DELETE) would otherwise each hold one for SessionTimeout. Five
	// minutes is longer than any pause between a client's requests while it
	// works (a wait for an operator's decision is at most five minutes, and
	// a request in flight is never idle), and a client that does come back
	// later gets 404 and initializes anew, as the specification says.
	StreamlessTimeout = 5 * time.Minute
	// ShutdownGrace lets tool calls in flight finish on stop before they
	// are killed.
	ShutdownGrace = 10 * time.Second
	// MaxSessions bounds the Streamable HTTP sessions open at once, and
	// with them what the hub remembers of each (the token it belongs to):
	// the MCP SDK sets no limit, and a client may open a session per
	// connection attempt. Past it, opening one closes the least recently
	// used (one without a stream and idle first). Legacy SSE sessions need
	// no bound of their own: each holds a connection, so MaxConns bounds
	// them.
	MaxSessions = 1024
)

// Hub owns the MCP listener: legacy SSE at /sse and Streamable HTTP at /mcp
// on one listener (TCP or a unix socket), behind the DNS-rebinding check and
// bearer auth, plus an unauthenticated /healthz. On stop it lets in-flight
// tool calls finish within ShutdownGrace before killing them.
type Hub struct {
	server     *mcp.Server
	transport  string
	listen     string
	snapshots  Snapshots
	runs       context.Context    // done when in-flight tool runs must be killed
	abortCalls context.CancelFunc // ends runs
	grace      time.Duration
	// bodyTimeout, idleTimeout and maxConns are the HubOptions limits,
	// defaults applied.
	bodyTimeout time.Duration
	idleTimeout time.Duration
	maxConns    int
	log         *slog.Logger

	// streams tracks the Streamable HTTP sessions: the token each belongs
	// to, and those that never opened a GET stream, which Run expires
	// after StreamlessTimeout.
	streams *streamWatch
	// sseBound is the token each live legacy SSE session belongs to.
	sseBound *sseBindings
	// undelivered counts the list_changed notifications a notify round
	// could not deliver, one debug line per round.
	undelivered *undelivered

	ready      <-chan struct{} // serving starts once it is closed; nil: at once
	ln         net.Listener
	socketPath string        // the unix socket to remove on stop
	done       chan struct{} // closed when Run has returned

	// calls counts MCP requests being handled, so shutdown can wait for
	// them before closing sessions (the SDK drops the response of a call
	// that finishes after its session is closed).
	mu    sync.Mutex
	calls int
	idle  chan struct{} // closed while calls == 0
}

// HubOptions configure a Hub.
type HubOptions struct {
	// Transport is "sse" (TCP) or "unix".
	Transport string
	// Listen is host:port, or the socket path.
	Listen string
	// Snapshots give the bearer token required now (Snapshot.MCPToken),
	// read on every request so a rotated token applies at once; nil, or an
	// empty token, means no authentication.
	Snapshots Snapshots
	// Grace bounds how long in-flight calls may run on stop; zero means
	// ShutdownGrace.
	Grace time.Duration
	// BodyTimeout bounds how long a request body may take to arrive, so a
	// stalled client cannot hold a connection; zero means BodyTimeout.
	BodyTimeout time.Duration
	// IdleTimeout closes keep-alive connections left unused this long;
	// zero means IdleTimeout.
	IdleTimeout time.Duration
	// MaxConns bounds the connections open at once, so a flood cannot use
	// up file descriptors; zero means MaxConns.
	MaxConns int
	// Ready, when not nil, holds serving back until it is closed (the
	// upstream servers' first round, see Upstreams.Ready): clients that
	// connect meanwhile wait in the listen queue, and /healthz answers
	// only once the tools are all there.
	Ready <-chan struct{}
	// StreamlessTimeout ends a Streamable HTTP session that never opened
	// its GET stream and sent nothing for this long; zero means
	// StreamlessTimeout.
	StreamlessTimeout time.Duration
	// MaxSessions bounds the Streamable HTTP sessions open at once; zero
	// means MaxSessions.
	MaxSessions int
}

// NewHub serves server as o says. It binds nothing until Listen.
func NewHub(server *mcp.Server, o HubOptions, log *slog.Logger) *Hub {
	if o.Grace <= 0 {
		o.Grace = ShutdownGrace
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = BodyTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = IdleTimeout
	}
	if o.MaxConns <= 0 {
		o.MaxConns = MaxConns
	}
	if o.StreamlessTimeout <= 0 {
		o.StreamlessTimeout = StreamlessTimeout
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = MaxSessions
	}
	runs, abort := context.WithCancel(context.Background())
	h := &Hub{server: server, transport: o.Transport, listen: o.Listen, snapshots: o.Snapshots,
		runs: runs, abortCalls: abort, grace: o.Grace, bodyTimeout: o.BodyTimeout, idleTimeout: o.IdleTimeout,
		maxConns: o.MaxConns, ready: o.Ready, log: log.With("component", "hub"), idle: make(chan struct{}),
		done: make(chan struct{})}
	h.streams = newStreamWatch(o.StreamlessTimeout, o.MaxSessions, h.liveSessions, h.log)
	h.sseBound = &sseBindings{bound: map[string]binding{}}
	h.undelivered = &undelivered{log: h.log, rounds: map[context.Context]int{}}
	close(h.idle)
	server.AddReceivingMiddleware(h.track)
	server.AddSendingMiddleware(h.undelivered.middleware)
	return h
}

// track counts requests while their handlers run. Notifications are not
// work a client waits on, and subscriptions/listen parks until its session
// closes (ServerSession.Close cancels it): counting either would make every
// shutdown wait out the whole grace period.
func (h *Hub) track(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if strings.HasPrefix(method, "notifications/") || method == "subscriptions/listen" {
			return next(ctx, method, req)
		}
		h.mu.Lock()
		if h.calls == 0 {
			h.idle = make(chan struct{})
		}
		h.calls++
		h.mu.Unlock()
		defer func() {
			h.mu.Lock()
			h.calls--
			if h.calls == 0 {
				close(h.idle)
			}
			h.mu.Unlock()
		}()
		// Once the grace period is over, every handler still running
		// is told to stop, not only the tool runs: a call waiting for a
		// decision or a client's answer must not hold shutdown up.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(h.runs, cancel)()
		// A client that went away (its SSE stream ended, or it ended its
		// Streamable HTTP session) waits for nothing: its calls stop, and
		// their processes with them. The SDK does not cancel handlers when
		// a session closes; its Close waits for them instead.
		if life, ok := ctx.Value(sessionLifeKey{}).(context.Context); ok {
			defer context.AfterFunc(life, cancel)()
		}
		return next(ctx, method, req)
	}
}

// idleCh is closed once no request is being handled.
func (h *Hub) idleCh() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.idle
}

// Listen binds the listener. It is separate from Run so a bind failure
// stops start-up with a clear error and the bound address (port 0) is
// known before serving.
func (h *Hub) Listen() error {
	if h.transport == "unix" {
		ln, err := listenUnix(h.listen)
		if err != nil {
			return fmt.Errorf("listen on unix socket %s: %w", h.listen, err)
		}
		h.ln, h.socketPath = ln, h.listen
		return nil
	}
	ln, err := net.Listen("tcp", h.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", h.listen, err)
	}
	h.ln = ln
	return nil
}

// Addr is the bound address (for a unix socket, its configured path);
// valid after Listen.
func (h *Hub) Addr() net.Addr {
	if h.socketPath != "" {
		return &net.UnixAddr{Name: h.socketPath, Net: "unix"}
	}
	return h.ln.Addr()
}

// URL is the base URL a local client uses ("http://127.0.0.1:8717"); a
// listener on every interface is reached through 127.0.0.1. Empty for a unix
// socket.
func (h *Hub) URL() string {
	if h.transport == "unix" {
		return ""
	}
	addr := h.ln.Addr().(*net.TCPAddr)
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, fmt.Sprint(addr.Port))
}

// Calls is done when in-flight tool runs must be killed: once the shutdown
// grace period is over, and at the latest when Run returns. Every wrapped
// tool's run derives from it (see RegistryOptions.Calls).
func (h *Hub) Calls() context.Context { return h.runs }

// token is the bearer token required now: the snapshot's, "" for none.
// confinement is the snapshot's confinement, for /healthz; "off" for a hub
// built without snapshots (its tests).
func (h *Hub) confinement() string {
	if h.snapshots == nil {
		return "off"
	}
	return h.snapshots.Current().Confinement()
}

func (h *Hub) token() string {
	if h.snapshots == nil {
		return ""
	}
	return h.snapshots.Current().MCPToken
}

// elicitTokens are the elicitation clients' tokens (mcp.elicit_clients),
// accepted like the MCP token: a session on one may be asked to decide its
// own requests.
func (h *Hub) elicitTokens() []string {
	if h.snapshots == nil {
		return nil
	}
	m := h.snapshots.Current().ElicitTokens
	out := make([]string, 0, len(m))
	for tok := range m {
		out = append(out, tok)
	}
	return out
}

// Close releases the listener of a hub whose Run never started (start-up
// failed after Listen). After Run it does nothing: Run has cleaned up, and
// the socket path may already belong to a new server.
func (h *Hub) Close() {
	select {
	case <-h.done:
		return
	default:
	}
	if h.ln != nil {
		h.ln.Close()
	}
	h.removeSocket()
}

// Run serves until ctx is done, then shuts down gracefully. No client can
// hold a connection for free: a request head must arrive within
// ReadHeaderTimeout, a body within the body timeout (see Handler), an idle
// keep-alive connection is closed after the idle timeout, and at most
// MaxConns connections are open at once.
func (h *Hub) Run(ctx context.Context) error {
	defer close(h.done)
	defer h.abortCalls()
	if h.ready != nil {
		select {
		case <-h.ready:
		case <-ctx.Done():
			h.ln.Close()
			h.removeSocket()
			return nil
		}
	}
	srv := &http.Server{Handler: h.Handler(), ReadHeaderTimeout: ReadHeaderTimeout, IdleTimeout: h.idleTimeout}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(limitConns(h.ln, h.maxConns)) }()
	sweepCtx, stopSweeping := context.WithCancel(ctx)
	swept := make(chan struct{})
	go func() { defer close(swept); h.streams.Run(sweepCtx) }()
	defer func() { stopSweeping(); <-swept }()
	select {
	case err := <-errc:
		h.removeSocket()
		return fmt.Errorf("serve MCP: %w", err)
	case <-ctx.Done():
	}
	h.shutdown(srv)
	<-errc
	h.removeSocket()
	return nil
}

// responseSettle is how long shutdown waits, once no handler runs, before
// closing sessions. The SDK writes a response just after its handler
// returns and offers no event for it; a session closed before that write
// drops the response, so the writes get this moment to happen.
const responseSettle = 100 * time.Millisecond

// closeBound bounds each remaining step of shutdown once the grace period
// is over (killed calls returning, sessions closing).
const closeBound = 5 * time.Second

// shutdown stops accepting connections, lets the requests being handled
// finish within the grace period (killing tool runs that outlast it), then
// closes every session and connection.
func (h *Hub) shutdown(srv *http.Server) {
	graceCtx, cancel := context.WithTimeout(context.Background(), h.grace)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(graceCtx) }()

	select {
	case <-h.idleCh():
	case <-graceCtx.Done():
		h.log.Warn("grace period over; killing tool calls still running", "grace", h.grace)
		h.abortCalls()
		select {
		case <-h.idleCh():
		case <-time.After(closeBound):
		}
	}
	time.Sleep(responseSettle) // see responseSettle: the SDK gives no event

	// Closing the sessions ends their streams, so the HTTP server goes idle.
	var wg sync.WaitGroup
	for ss := range h.server.Sessions() {
		wg.Go(func() { ss.Close() })
	}
	closed := make(chan struct{})
	go func() { wg.Wait(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(closeBound):
		h.log.Warn("sessions did not close in time; dropping connections")
	}
	if err := <-shut; err != nil {
		srv.Close()
	}
}

func (h *Hub) removeSocket() {
	if h.socketPath != "" {
		os.Remove(h.socketPath)
	}
}

// Handler is the whole HTTP surface, valid after Listen: /sse and /mcp
// behind the guard (DNS-rebinding check on a loopback listener, a method
// the endpoint does not serve, bearer token, body limits), /healthz open,
// and the OAuth discovery and registration paths answered with a 404 that
// says wraptool has no OAuth. Every request body, on every route, gets the
// body timeout to arrive, so neither a handler nor net/http (which reads
// what a handler left of a body to reuse the connection) waits on a
// stalled client for ever.
func (h *Hub) Handler() http.Handler {
	guard := httpguard.New(&httpguard.Options{
		Hosts:        httpguard.LoopbackHosts(h.ln.Addr()),
		Token:        h.token,
		Others:       h.elicitTokens,
		MaxBodyBytes: MaxBodyBytes,
		BodyTimeout:  h.bodyTimeout,
	})
	getServer := func(*http.Request) *mcp.Server { return h.server }
	sse := mcp.NewSSEHandler(getServer, &mcp.SSEOptions{MaxRequestBodyBytes: MaxBodyBytes})
	streamable := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		SessionTimeout:      SessionTimeout,
		MaxRequestBodyBytes: MaxBodyBytes,
	})
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		// Matched by path alone, so the catch-all below cannot take its
		// other methods: they get the 405 every endpoint gives.
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			httpguard.Refuse(w, r, http.StatusMethodNotAllowed, "method not allowed: this endpoint serves GET, HEAD")
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		// The first line stays "ok" for whoever checks only that; the
		// second says which confinement keeps the started processes away
		// from wraptool's files.
		w.Write([]byte("ok\nconfinement: " + h.confinement() + "\n"))
	})
	mux.Handle("/sse", guard.WrapMethods(sseMethods, h.sseLife(refuseBatches(sse))))
	mux.Handle("/mcp", guard.WrapMethods(streamableMethods, h.gateStreamable(refuseBatches(h.streams.observe(streamable)))))
	// Every other path, after the DNS-rebinding check: the OAuth ones get
	// their 404 that says why, the rest a plain one. Both are refusals:
	// answered at once, without waiting for a body nobody reads.
	mux.Handle("/", guard.CheckHost(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isOAuthPath(r.URL.Path) {
			httpguard.RefuseJSON(w, r, http.StatusNotFound, noOAuth)
			return
		}
		httpguard.Refuse(w, r, http.StatusNotFound, "404 page not found")
	})))
	return guard.Deadline(mux)
}

// sessionLifeKey is the context key of a session's lifetime: a context
// that ends when the client has gone away (its legacy SSE stream ended, or
// it sent DELETE for its Streamable HTTP session). It is set on the request
// that creates the session; the SDK keeps that request context's values
// (not its cancellation) in its handlers' contexts, where track finds it.
type sessionLifeKey struct{}

// sseLife gives each legacy SSE session its stream's request context as its
// lifetime (the stream is the session), and its id: go-sdk names a legacy
// SSE session only in the endpoint it announces on the stream
// (?sessionid=…), and its ServerSession.ID() is "" there, so the id is read
// from that first event as it is written, for the audit log. The session
// belongs to the token that opened the stream: the id is bound to it before
// the event reaches the client, and a message (POST ?sessionid=…) is
// refused unless it carries that token (see admit).
func (h *Hub) sseLife(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred := h.credential(r)
		switch r.Method {
		case http.MethodGet:
			sw := &sseIDWriter{ResponseWriter: w, found: func(id string) { h.sseBound.bind(id, cred) }}
			ctx := context.WithValue(r.Context(), sessionLifeKey{}, r.Context())
			ctx = toolset.WithSessionID(ctx, sw.sessionID)
			defer func() {
				if id := sw.sessionID(); id != "" {
					h.sseBound.forget(id)
				}
			}()
			w, r = sw, r.WithContext(ctx)
		case http.MethodPost:
			if status, msg := h.sseBound.admit(r.URL.Query().Get("sessionid"), cred, h.tokenValid); status != 0 {
				refuseSession(w, r, status, msg)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// sseEndpointScan bounds how much of a stream's start sseIDWriter keeps
// while it looks for the endpoint event: the event is the stream's first.
const sseEndpointScan = 4 << 10

// sseIDWriter passes a legacy SSE stream through and reads the session id
// from its endpoint event. Calls can only arrive once the client has read
// that event, so the id is known by the first call; the mutex is for the
// race detector's sake and for a stream that never announces one.
type sseIDWriter struct {
	http.ResponseWriter
	// found, when not nil, is told the id once it is read, before the
	// event that carries it is passed on.
	found func(id string)
	mu    sync.Mutex
	id    string
	head  []byte // the stream so far, until the id is found or the scan ends
	done  bool
}

func (w *sseIDWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if !w.done {
		w.head = append(w.head, p[:min(len(p), sseEndpointScan-len(w.head))]...)
		w.id, w.done = sseSessionID(w.head)
		if w.done || len(w.head) >= sseEndpointScan {
			w.done, w.head = true, nil
		}
		if w.id != "" && w.found != nil {
			w.found(w.id)
			w.found = nil
		}
	}
	w.mu.Unlock()
	return w.ResponseWriter.Write(p)
}

// Flush keeps the stream flushable: the SDK flushes each event.
func (w *sseIDWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *sseIDWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *sseIDWriter) sessionID() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.id
}

// sseSessionID finds the session id in the endpoint event at the start of
// a legacy SSE stream ("event: endpoint\ndata: /sse?sessionid=ID\n\n"),
// and reports whether that event is complete. The id is kept only when it
// is plain (letters, digits, - and _), as the SDK makes them.
func sseSessionID(head []byte) (string, bool) {
	_, data, ok := bytes.Cut(head, []byte("\ndata: "))
	if !ok {
		return "", false
	}
	line, _, complete := bytes.Cut(data, []byte("\n"))
	if !complete {
		return "", false
	}
	u, err := url.Parse(string(line))
	if err != nil {
		return "", true
	}
	id := u.Query().Get("sessionid")
	for _, c := range id {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') || len(id) > 128 {
			return "", true
		}
	}
	return id, true
}

// sseMethods is what /sse serves: GET opens a session's stream, and a POST
// that names a session (?sessionid=…, the message endpoint the stream
// announces) carries a message to it. A POST without one is not served:
// 405 with Allow: GET, so a client that tries Streamable HTTP first
// (mcp-remote POSTs initialize) falls back to legacy SSE instead of
// failing on the SDK's 400.
func sseMethods(r *http.Request) (bool, string) {
	if r.URL.Query().Get("sessionid") != "" {
		return r.Method == http.MethodGet || r.Method == http.MethodPost, "GET, POST"
	}
	return r.Method == http.MethodGet, "GET"
}

// streamableMethods is what /mcp serves in stateful mode: POST (messages),
// GET (the session's stream) and DELETE (ending the session).
func streamableMethods(r *http.Request) (bool, string) {
	switch r.Method {
	case http.MethodGet, http.MethodPost, http.MethodDelete:
		return true, ""
	}
	return false, "GET, POST, DELETE"
}

// noOAuth is the body of the 404 on the OAuth paths. OAuth clients
// (mcp-remote, editors) that meet a 401 look for an authorization server
// there and, finding plain 404s, try to register a client; the text then
// reaches the user inside their error message, saying what to do.
var noOAuth = map[string]string{
	"error":             "not_supported",
	"error_description": "wraptool uses a static bearer token from its token file; run 'wraptool up' to print client set-up",
}

// isOAuthPath reports whether path is one an OAuth client asks for while
// looking for a way to sign in: /register (dynamic client registration at
// its default place) and the discovery documents under /.well-known/, at
// the root (RFC 8414 and RFC 9728, with the resource's path as a suffix:
// /.well-known/oauth-protected-resource/mcp) or below the resource's path
// (OpenID Connect's form, /mcp/.well-known/openid-configuration, which
// mcp-remote 0.15.1 asks for too).
func isOAuthPath(path string) bool {
	return path == "/register" ||
		strings.Contains(path, "/.well-known/oauth-") ||
		strings.Contains(path, "/.well-known/openid-configuration")
}

// liveSessions lists the server's Streamable HTTP sessions by id, each with
// its Close; legacy SSE sessions have no id and are left out (their stream
// is the session, so they end with it).
func (h *Hub) liveSessions() map[string]func() {
	live := map[string]func(){}
	for ss := range h.server.Sessions() {
		if id := ss.ID(); id != "" {
			live[id] = func() { ss.Close() }
		}
	}
	return live
}

// listenUnix binds a socket with mode 0600. A stale socket left by a dead
// process is replaced; a live one is refused. The socket is created inside a
// private (0700) temporary folder, restricted, then renamed into place, so
// nobody can connect while its mode is still the umask's.
func listenUnix(path string) (net.Listener, error) {
	if info, err := os.Lstat(path); err == nil {
		if info.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, ErrSocketInUse
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	tmpDir, err := os.MkdirTemp(filepath.Dir(path), ".wraptool-sock-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmpDir)
	tmp := filepath.Join(tmpDir, "s")
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	err = os.Chmod(tmp, 0o600)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// streamWatch expires the Streamable HTTP sessions that never opened a GET
// stream once they have been idle for timeout (StreamlessTimeout); the SDK
// expires every other session after SessionTimeout. The SDK offers no hook
// for this, so the watch sees the requests of /mcp (observe) and closes
// sessions through the server (live). Its methods are safe for concurrent
// use; Run sweeps until its context ends.
type streamWatch struct {
	timeout time.Duration
	max     int                      // the sessions it keeps at most (MaxSessions)
	live    func() map[string]func() // the server's sessions now: id → Close
	log     *slog.Logger

	mu       sync.Mutex
	sessions map[string]*sessionUse // by session id
}

// sessionUse is what the watch knows of one session.
type sessionUse struct {
	streamed bool      // a GET stream was opened: the SDK's timeout applies
	active   int       // requests being served
	last     time.Time // when the last request ended, or the session was first seen
	// end ends the session's lifetime (sessionLifeKey), stopping its
	// calls; nil for a session the watch did not see created.
	end context.CancelFunc
	// bound is the token the session belongs to; nil for a session the
	// watch did not see created, which no request may use.
	bound *binding
}

func newStreamWatch(timeout time.Duration, max int, live func() map[string]func(), log *slog.Logger) *streamWatch {
	return &streamWatch{timeout: timeout, max: max, live: live, log: log, sessions: map[string]*sessionUse{}}
}

// sessionHeader names the session a Streamable HTTP request belongs to.
const sessionHeader = "Mcp-Session-Id"

// observe passes /mcp's requests to next, noting for each session the
// token it belongs to, whether it opened a GET stream and when it was last
// busy. A session is first noted, and bound to the credential its
// initialize carried (credentialKey), as the head of that initialize's
// answer goes out: the client learns the id from that head, so none of its
// requests can arrive before the binding. Requests naming a session have
// passed admit (gateStreamable) before they get here.
func (sw *streamWatch) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(sessionHeader)
		switch {
		case id == "" && r.Method == http.MethodPost:
			cred, _ := r.Context().Value(credentialKey{}).(binding)
			life, end := context.WithCancel(context.Background())
			var evicted []string
			bw := &bindingWriter{ResponseWriter: w}
			bw.created = func(created string) { evicted = sw.bind(created, cred, end) }
			next.ServeHTTP(bw, r.WithContext(context.WithValue(r.Context(), sessionLifeKey{}, life)))
			// A handler that wrote nothing has its head written by
			// net/http after this returns; the binding comes first. The
			// Once also makes evicted safe to read here, whichever
			// goroutine wrote the head.
			bw.writingHead()
			if w.Header().Get(sessionHeader) == "" {
				end()
			}
			sw.closeEvicted(evicted)
			return
		case id != "" && r.Method == http.MethodDelete:
			// The client ends its session: stop its calls first, or the
			// SDK's Close (and this DELETE) would wait them out.
			sw.update(id, func(u *sessionUse) {
				if u.end != nil {
					u.end()
				}
				u.active++
			})
			defer sw.update(id, func(u *sessionUse) { u.active--; u.last = time.Now() })
		case id != "" && r.Method == http.MethodGet:
			// Streamed only once the SDK opens the stream: a GET it refuses
			// (a bad Accept, an unknown id) must not exempt the session
			// from the sweep of sessions that never streamed.
			w = &headWriter{ResponseWriter: w, head: func(code int) {
				if code == http.StatusOK {
					sw.update(id, func(u *sessionUse) { u.streamed = true })
				}
			}}
		case id != "":
			sw.update(id, func(u *sessionUse) { u.active++ })
			defer sw.update(id, func(u *sessionUse) { u.active--; u.last = time.Now() })
		}
		next.ServeHTTP(w, r)
	})
}

// bind notes session id, just created, as belonging to b, with end ending
// its lifetime. Past the watch's bound it forgets the least recently used
// other sessions, of the newcomer's role first, preferring those without a
// stream and idle, and returns
// their ids for closeEvicted (closing a session waits for it, so not under
// the lock, nor while the SDK writes the new session's answer).
func (sw *streamWatch) bind(id string, b binding, end context.CancelFunc) (evicted []string) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	u := sw.sessions[id]
	if u == nil {
		u = &sessionUse{}
		sw.sessions[id] = u
	}
	u.last, u.end, u.bound = time.Now(), end, &b
	for len(sw.sessions) > sw.max {
		// A session of the newcomer's own role goes first: a flood of
		// sessions on one token (the assistant's) must not close the
		// session of a client a person answers.
		victim, vu := "", (*sessionUse)(nil)
		for _, sameRole := range []bool{true, false} {
			for other, ou := range sw.sessions {
				if other == id || sameRole && (ou.bound == nil || ou.bound.role != b.role) {
					continue
				}
				if vu == nil || evictsBefore(ou, vu) {
					victim, vu = other, ou
				}
			}
			if vu != nil {
				break
			}
		}
		if vu == nil {
			break
		}
		if vu.end != nil {
			vu.end()
		}
		delete(sw.sessions, victim)
		evicted = append(evicted, victim)
	}
	return evicted
}

// evictsBefore orders sessions for eviction: idle before busy, without a
// stream before with one (a client with a stream is one that stays), then
// the longest unused first.
func evictsBefore(a, b *sessionUse) bool {
	rank := func(u *sessionUse) int {
		switch {
		case u.active > 0:
			return 2
		case u.streamed:
			return 1
		}
		return 0
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra < rb
	}
	return a.last.Before(b.last)
}

// closeEvicted closes the sessions bind forgot, so the server holds no
// more of them than the watch remembers.
func (sw *streamWatch) closeEvicted(ids []string) {
	if len(ids) == 0 {
		return
	}
	live := sw.live()
	for _, id := range ids {
		if closeSession := live[id]; closeSession != nil {
			closeSession()
		}
	}
	sw.log.Info("too many sessions; closed the least recently used", "count", len(ids), "max", sw.max)
}

// admit decides whether a request that authenticated as cred may use
// session id: 0 when it may (the session then keeps the binding admit
// gives), else the status and message to refuse it with. A session the
// watch never saw bound is not found, as the SDK would say of an unknown
// id.
func (sw *streamWatch) admit(id string, cred binding, valid func([sha256.Size]byte) bool) (int, string) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	u := sw.sessions[id]
	if u == nil || u.bound == nil {
		return http.StatusNotFound, "session not found"
	}
	keep, refusal := admit(*u.bound, cred, valid)
	if refusal != "" {
		return http.StatusForbidden, refusal
	}
	u.bound = &keep
	return 0, ""
}

// update applies change to session id's record, making one if needed.
func (sw *streamWatch) update(id string, change func(*sessionUse)) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	u := sw.sessions[id]
	if u == nil {
		u = &sessionUse{last: time.Now()}
		sw.sessions[id] = u
	}
	change(u)
}

// Run sweeps every tenth of the timeout until ctx ends, so a stream-less
// session ends between timeout and 1.1 × timeout after its last request
// (5 min to 5 min 30 s with the defaults).
func (sw *streamWatch) Run(ctx context.Context) {
	tick := time.NewTicker(sw.timeout / 10)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			sw.sweep(time.Now())
		}
	}
}

// sweep closes the sessions that never opened a stream and have been idle
// for the timeout at now, and forgets the records of sessions that are
// gone. A session the watch has not seen yet (one made before it ran) is
// idle from now on.
func (sw *streamWatch) sweep(now time.Time) {
	live := sw.live()
	var expired []func()
	sw.mu.Lock()
	for id, u := range sw.sessions {
		if _, ok := live[id]; !ok {
			if u.end != nil {
				u.end()
			}
			delete(sw.sessions, id)
		}
	}
	for id, closeSession := range live {
		u := sw.sessions[id]
		switch {
		case u == nil:
			sw.sessions[id] = &sessionUse{last: now}
		case !u.streamed && u.active == 0 && now.Sub(u.last) >= sw.timeout:
			if u.end != nil {
				u.end()
			}
			delete(sw.sessions, id)
			expired = append(expired, closeSession)
		}
	}
	sw.mu.Unlock()
	for _, closeSession := range expired {
		closeSession() // outside the lock: Close waits for the session's end
	}
	if len(expired) > 0 {
		sw.log.Debug("closed sessions that never opened a stream", "count", len(expired), "idle", sw.timeout)
	}
}

// undelivered keeps the SDK from logging a warning for every session a
// list_changed cannot reach. A Streamable HTTP session whose client never
// opened the GET stream has nowhere to receive it: the transport rejects
// the notification, and the SDK would log "rejected by transport:
// undelivered message" at WARN, once per such session on every reload.
// Its sending middleware counts those rejections instead and logs one
// debug line per notify round. Safe for concurrent use.
type undelivered struct {
	log *slog.Logger

	mu     sync.Mutex
	rounds map[context.Context]int // rejections so far, by notify round
}

// middleware is sending middleware for the MCP server: a list_changed the
// transport rejected is counted and reported as sent.
//
// The SDK notifies every session of one change in one loop, under one
// context that it cancels when the loop ends; that context names the
// round, and its end is when the count is logged. A context that never
// ends (a change in the SDK) gets its line at once, so nothing is held.
func (u *undelivered) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err == nil || !strings.HasSuffix(method, "/list_changed") || !rejectedByTransport(err) {
			return res, err
		}
		if ctx.Done() == nil {
			u.log.Debug("list_changed not delivered", "method", method, "count", 1, "why", "no GET stream")
			return res, nil
		}
		u.mu.Lock()
		if u.rounds[ctx] == 0 {
			context.AfterFunc(ctx, func() {
				u.mu.Lock()
				n := u.rounds[ctx]
				delete(u.rounds, ctx)
				u.mu.Unlock()
				u.log.Debug("list_changed not delivered", "method", method, "count", n, "why", "no GET stream")
			})
		}
		u.rounds[ctx]++
		u.mu.Unlock()
		return res, nil
	}
}

// rejectedByTransport reports whether err is the JSON-RPC layer's
// "rejected by transport" (code -32005): the transport refused one message
// (here: no stream to carry it), the connection is fine.
func rejectedByTransport(err error) bool {
	var wire *jsonrpc.Error
	return errors.As(err, &wire) && wire.Code == codeRejected
}

// codeRejected is the go-sdk's jsonrpc2.ErrRejected code, which its public
// jsonrpc package does not export.
const codeRejected = -32005

// binding is what a session belongs to: the role of the token that created
// it and a digest of that token. Only the digest is kept, never the token,
// so the hub holds no credential of its own and a binding could be written
// down as it is.
type binding struct {
	// role is roleMain, roleElicit followed by the client's name, or ""
	// for a request that matched no configured token (a server without
	// authentication).
	role   string
	digest [sha256.Size]byte // SHA-256 of the bearer token sent ("" when none)
}

// The roles a token can have. A session is asked to approve its own
// requests only on an elicitation client's token, so a session must never
// change role: the main token's session must not become askable because
// one request carried another token.
const (
	roleMain   = "mcp.auth_token_file"
	roleElicit = "mcp.elicit_clients:"
)

// The refusals of a request on a session that belongs to another token.
// They say which case it is and what to do, and name no token or client.
const (
	refuseOtherToken = "forbidden: this session belongs to the bearer token that created it, and this request carries another one; " +
		"send the session's own token, or open a new session with this one"
	refuseRoleChanged = "forbidden: the bearer token that created this session has since been given another role in the config; " +
		"open a new session"
)

// admit decides whether a request that authenticated as cred may use a
// session bound to b. It returns the binding the session keeps and, when
// the request is refused, why. The same token in the same role is admitted.
// Another token is admitted only as the rotated replacement of the
// session's: the same role, and the session's own token no longer valid
// (valid reports whether a digest is of a token the config holds now), so
// a session on the main token survives the rotation of the main token, and
// is bound to the new one from then on. Everything else is refused: a
// token of another role (the main token's session used with an elicitation
// client's, or the reverse), a second token of the same role while the
// first still works, and the session's own token after a reload gave it
// another role.
func admit(b, cred binding, valid func([sha256.Size]byte) bool) (binding, string) {
	sameToken := subtle.ConstantTimeCompare(b.digest[:], cred.digest[:]) == 1
	switch {
	case sameToken && cred.role == b.role:
		return b, ""
	case sameToken:
		return b, refuseRoleChanged
	case cred.role == b.role && !valid(b.digest):
		return cred, ""
	}
	return b, refuseOtherToken
}

// credentialKey is the context key under which gateStreamable hands
// observe the credential of the request that may create a session.
type credentialKey struct{}

// credential is what r authenticated as: the role of the token it carries
// and the token's digest. Every configured token is compared, in constant
// time, each time.
func (h *Hub) credential(r *http.Request) binding {
	header := r.Header.Get("Authorization")
	token := header
	if scheme, rest, ok := strings.Cut(header, " "); ok && strings.EqualFold(scheme, "Bearer") {
		token = strings.TrimSpace(rest)
	}
	b := binding{digest: sha256.Sum256([]byte(token))}
	if h.snapshots == nil {
		return b
	}
	snap := h.snapshots.Current()
	if httpguard.BearerMatches(header, snap.MCPToken) {
		b.role = roleMain
	}
	for tok, name := range snap.ElicitTokens {
		if httpguard.BearerMatches(header, tok) && b.role == "" {
			b.role = roleElicit + name
		}
	}
	return b
}

// tokenValid reports whether digest is of a token the config holds now
// (the MCP token or an elicitation client's).
func (h *Hub) tokenValid(digest [sha256.Size]byte) bool {
	if h.snapshots == nil {
		return false
	}
	snap := h.snapshots.Current()
	valid := false
	check := func(tok string) {
		if tok == "" {
			return
		}
		d := sha256.Sum256([]byte(tok))
		if subtle.ConstantTimeCompare(d[:], digest[:]) == 1 {
			valid = true
		}
	}
	check(snap.MCPToken)
	for tok := range snap.ElicitTokens {
		check(tok)
	}
	return valid
}

// gateStreamable refuses, before the SDK sees it, a request on a
// Streamable HTTP session (POST, GET stream, DELETE) that belongs to
// another token (403), or that names a session the hub never bound (404,
// as the SDK answers an unknown id; the client initializes anew). So
// whether a session is asked to approve never depends on one request's
// header: every request that reaches it carries a token of its role. A
// request without a session id goes on with its credential, which the
// session it creates is bound to.
func (h *Hub) gateStreamable(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred := h.credential(r)
		if id := r.Header.Get(sessionHeader); id != "" {
			if status, msg := h.streams.admit(id, cred, h.tokenValid); status != 0 {
				refuseSession(w, r, status, msg)
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), credentialKey{}, cred)))
	})
}

// refuseSession answers a request admit refused. A 403 closes the
// connection as every refusal does; a 404 is a session that ended, which
// its client meets in the normal course, so its connection stays.
func refuseSession(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if status == http.StatusForbidden {
		httpguard.Refuse(w, r, status, msg)
		return
	}
	http.Error(w, msg, status)
}

// bindingWriter tells created the session id an initialize's answer
// carries, as that answer's head is written (by WriteHeader, the first
// Write or a Flush), before anything reaches the client.
type bindingWriter struct {
	http.ResponseWriter
	created func(id string)
	once    sync.Once
}

// writingHead tells created the id, the first time only.
func (w *bindingWriter) writingHead() {
	w.once.Do(func() {
		if id := w.Header().Get(sessionHeader); id != "" {
			w.created(id)
		}
	})
}

func (w *bindingWriter) WriteHeader(code int) {
	w.writingHead()
	w.ResponseWriter.WriteHeader(code)
}

func (w *bindingWriter) Write(p []byte) (int, error) {
	w.writingHead()
	return w.ResponseWriter.Write(p)
}

// Flush keeps the answer flushable: the SDK flushes each event of a
// stream, and an unwrapped flush would write the head past writingHead.
func (w *bindingWriter) Flush() {
	w.writingHead()
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *bindingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// headWriter tells head the status of the answer as its head is written,
// once.
type headWriter struct {
	http.ResponseWriter
	head func(code int)
	once sync.Once
}

func (w *headWriter) WriteHeader(code int) {
	w.once.Do(func() { w.head(code) })
	w.ResponseWriter.WriteHeader(code)
}

func (w *headWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { w.head(http.StatusOK) })
	return w.ResponseWriter.Write(p)
}

// Flush keeps the stream flushable; a flush before any head writes 200.
func (w *headWriter) Flush() {
	w.once.Do(func() { w.head(http.StatusOK) })
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *headWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// sseBindings is the token each live legacy SSE session belongs to, by
// session id. A binding lives while its session's stream (a GET, holding a
// connection) does, so MaxConns bounds the map. Safe for concurrent use.
type sseBindings struct {
	mu    sync.Mutex
	bound map[string]binding
}

func (s *sseBindings) bind(id string, b binding) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bound[id] = b
}

func (s *sseBindings) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.bound, id)
}

// admit is streamWatch.admit for a legacy SSE session: 0 when a message
// from cred may reach session id.
func (s *sseBindings) admit(id string, cred binding, valid func([sha256.Size]byte) bool) (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.bound[id]
	if !ok {
		return http.StatusNotFound, "session not found"
	}
	keep, refusal := admit(b, cred, valid)
	if refusal != "" {
		return http.StatusForbidden, refusal
	}
	s.bound[id] = keep
	return 0, ""
}

// batchRefusal is the answer to a JSON-RPC batch: a JSON-RPC error
// (-32600, invalid request) with a null id, since no one message of the
// batch is answered.
var batchRefusal = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"JSON-RPC batches are not supported: send each message in a request of its own"}}` + "\n")

// refuseBatches answers a POST whose body is a JSON-RPC batch (its first
// byte that is not JSON whitespace is '[') with 400 and batchRefusal, on
// both endpoints and whatever protocol version the session speaks. MCP
// dropped batching in 2025-06-18, and the SDK, which still runs the
// batches of older sessions, would run every message of one in a single
// step: an [initialize, tools/call] batch called a tool before the client
// had sent notifications/initialized. The body is already in memory (the
// guard read it, within its limit and deadline), so the look costs no
// network read and leaves the body whole for the SDK.
func refuseBatches(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Body != nil && r.Body != http.NoBody {
			// A small buffer: only the first bytes are looked at, and
			// the SDK's larger reads then go past it to the body.
			br := bufio.NewReaderSize(r.Body, 64)
			lead, batch := startsBatch(br)
			if batch {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("X-Content-Type-Options", "nosniff")
				w.WriteHeader(http.StatusBadRequest)
				w.Write(batchRefusal)
				return
			}
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(lead), br), r.Body}
		}
		next.ServeHTTP(w, r)
	})
}

// startsBatch reports whether the JSON text br holds is an array, reading
// no further than its first byte that is not whitespace (left unread). It
// returns the whitespace it read, to be put back.
func startsBatch(br *bufio.Reader) (lead []byte, batch bool) {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return lead, false
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			lead = append(lead, c)
			continue
		}
		br.UnreadByte()
		return lead, c == '['
	}
}
