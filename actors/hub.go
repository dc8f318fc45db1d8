package actors

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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
	// SessionTimeout ends Streamable HTTP sessions their client abandoned.
	SessionTimeout = 30 * time.Minute
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
	runs, abort := context.WithCancel(context.Background())
	h := &Hub{server: server, transport: o.Transport, listen: o.Listen, snapshots: o.Snapshots,
		runs: runs, abortCalls: abort, grace: o.Grace, bodyTimeout: o.BodyTimeout, idleTimeout: o.IdleTimeout,
		maxConns: o.MaxConns, ready: o.Ready, log: log.With("component", "hub"), idle: make(chan struct{}),
		done: make(chan struct{})}
	close(h.idle)
	server.AddReceivingMiddleware(h.track)
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
// behind the guard (DNS-rebinding check on a loopback listener, bearer
// token, body limits), /healthz open. Every request body, on every route,
// gets the body timeout to arrive, so neither a handler nor net/http (which
// reads what a handler left of a body to reuse the connection) waits on a
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
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok"))
	})
	mux.Handle("/sse", guard.Wrap(sse))
	mux.Handle("/mcp", guard.Wrap(streamable))
	return guard.Deadline(mux)
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
