package actors

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

	// streams tracks the Streamable HTTP sessions that never opened a GET
	// stream, which Run expires after StreamlessTimeout.
	streams *streamWatch
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
	runs, abort := context.WithCancel(context.Background())
	h := &Hub{server: server, transport: o.Transport, listen: o.Listen, snapshots: o.Snapshots,
		runs: runs, abortCalls: abort, grace: o.Grace, bodyTimeout: o.BodyTimeout, idleTimeout: o.IdleTimeout,
		maxConns: o.MaxConns, ready: o.Ready, log: log.With("component", "hub"), idle: make(chan struct{}),
		done: make(chan struct{})}
	h.streams = newStreamWatch(o.StreamlessTimeout, h.liveSessions, h.log)
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
	mux.Handle("/sse", guard.WrapMethods(sseMethods, sseLife(sse)))
	mux.Handle("/mcp", guard.WrapMethods(streamableMethods, h.streams.observe(streamable)))
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
// from that first event as it is written, for the audit log.
func sseLife(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			sw := &sseIDWriter{ResponseWriter: w}
			ctx := context.WithValue(r.Context(), sessionLifeKey{}, r.Context())
			ctx = toolset.WithSessionID(ctx, sw.sessionID)
			w, r = sw, r.WithContext(ctx)
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
	mu   sync.Mutex
	id   string
	head []byte // the stream so far, until the id is found or the scan ends
	done bool
}

func (w *sseIDWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if !w.done {
		w.head = append(w.head, p[:min(len(p), sseEndpointScan-len(w.head))]...)
		w.id, w.done = sseSessionID(w.head)
		if w.done || len(w.head) >= sseEndpointScan {
			w.done, w.head = true, nil
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
}

func newStreamWatch(timeout time.Duration, live func() map[string]func(), log *slog.Logger) *streamWatch {
	return &streamWatch{timeout: timeout, live: live, log: log, sessions: map[string]*sessionUse{}}
}

// sessionHeader names the session a Streamable HTTP request belongs to.
const sessionHeader = "Mcp-Session-Id"

// observe passes /mcp's requests to next, noting for each session whether
// it opened a GET stream and when it was last busy. A session is first
// noted when the initialize that created it is answered (the id is in the
// response's header once next returns); a GET can reach the server before
// that, so it notes the session too. Ids that name no session (forged or
// expired) are dropped by the next sweep.
func (sw *streamWatch) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(sessionHeader)
		switch {
		case id == "" && r.Method == http.MethodPost:
			life, end := context.WithCancel(context.Background())
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionLifeKey{}, life)))
			if created := w.Header().Get(sessionHeader); created != "" {
				sw.update(created, func(u *sessionUse) { u.last = time.Now(); u.end = end })
			} else {
				end()
			}
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
			sw.update(id, func(u *sessionUse) { u.streamed = true })
		case id != "":
			sw.update(id, func(u *sessionUse) { u.active++ })
			defer sw.update(id, func(u *sessionUse) { u.active--; u.last = time.Now() })
		}
		next.ServeHTTP(w, r)
	})
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
