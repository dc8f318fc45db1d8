package actors

import (
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

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits and timeouts of the MCP listener (CONTRACT §9). Each bounds what
// one client, authenticated or not, can hold of the server.
const (
	// MaxBodyBytes bounds the memory one request can make the hub hold;
	// MCP messages are far smaller.
	MaxBodyBytes = 4 << 20
	// ReadHeaderTimeout frees a connection whose client opens it and then
	// sends no (or a slow) request head.
	ReadHeaderTimeout = 10 * time.Second
	// BodyTimeout frees a connection whose client declares a body and then
	// stalls. It applies only while the body is read, so streams and long
	// tool calls are not cut.
	BodyTimeout = 30 * time.Second
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
	token      func() string
	abortCalls context.CancelFunc
	grace      time.Duration
	// bodyTimeout, idleTimeout and maxConns are the HubOptions limits,
	// defaults applied.
	bodyTimeout time.Duration
	idleTimeout time.Duration
	maxConns    int
	log         *slog.Logger

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
	// Token returns the bearer token required now, read on every request so
	// a rotated token applies at once; nil or "" means no authentication.
	Token func() string
	// AbortCalls kills in-flight tool runs once the grace period is over;
	// nil means there is nothing to kill.
	AbortCalls context.CancelFunc
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
}

// NewHub serves server as o says. It binds nothing until Listen.
func NewHub(server *mcp.Server, o HubOptions, log *slog.Logger) *Hub {
	if o.Grace <= 0 {
		o.Grace = ShutdownGrace
	}
	if o.Token == nil {
		o.Token = func() string { return "" }
	}
	if o.AbortCalls == nil {
		o.AbortCalls = func() {}
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
	h := &Hub{server: server, transport: o.Transport, listen: o.Listen, token: o.Token,
		abortCalls: o.AbortCalls, grace: o.Grace, bodyTimeout: o.BodyTimeout, idleTimeout: o.IdleTimeout,
		maxConns: o.MaxConns, log: log.With("component", "hub"), idle: make(chan struct{}),
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

// Done is closed once Run has returned: the listener is closed and every
// session has ended.
func (h *Hub) Done() <-chan struct{} { return h.done }

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

// Handler is the whole HTTP surface. Every request body gets the body
// timeout to arrive, on every route, so neither a handler nor net/http
// (which reads what a handler left of a body to reuse the connection) waits
// on a stalled client for ever.
func (h *Hub) Handler() http.Handler {
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
	mux.Handle("/sse", h.guard(sse))
	mux.Handle("/mcp", h.guard(streamable))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Only a request with a body gets the deadline: a request without
		// one is already past it, and net/http then watches the connection
		// for the client going away, a read a deadline would end (and with
		// it the request's context, so a GET stream).
		if hasBody(r) {
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(h.bodyTimeout))
		}
		mux.ServeHTTP(w, r)
	})
}

// guard applies, in this order, the DNS-rebinding check (loopback TCP
// listeners only), the bearer token and the body size. A refused request
// is answered at once and its connection closed, without reading its body.
// An admitted one has its body read whole under the body deadline, which is
// then cleared, so the SDK's handler gets an in-memory body and its
// response (a stream, a long call) is never cut by the deadline.
func (h *Hub) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if allowed := h.loopbackNames(); allowed != nil {
			if !allowed[strings.ToLower(r.Host)] {
				refuse(w, r, http.StatusForbidden, "forbidden: Host is not this server's loopback name")
				return
			}
			if o := r.Header.Get("Origin"); o != "" && !originAllowed(o, allowed) {
				refuse(w, r, http.StatusForbidden, "forbidden: Origin is not this server's loopback name")
				return
			}
		}
		if tok := h.token(); tok != "" && !bearerMatches(r.Header.Get("Authorization"), tok) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="wraptool"`)
			refuse(w, r, http.StatusUnauthorized, "unauthorized: send Authorization: Bearer <token>")
			return
		}
		if hasBody(r) {
			body, status, msg := readBody(w, r)
			if status != 0 {
				refuse(w, r, status, msg)
				return
			}
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		}
		next.ServeHTTP(w, r)
	})
}

// hasBody reports whether r announces a body (a Content-Length or chunked).
func hasBody(r *http.Request) bool {
	return r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody
}

// readBody reads r's body whole, up to MaxBodyBytes, under the deadline
// Handler set, and then clears that deadline. A status other than 0 (with
// its message) says why the body was not read.
func readBody(w http.ResponseWriter, r *http.Request) (body []byte, status int, msg string) {
	tooLarge := fmt.Sprintf("request body too large: the limit is %d bytes", MaxBodyBytes)
	if r.ContentLength > MaxBodyBytes {
		return nil, http.StatusRequestEntityTooLarge, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var maxBytes *http.MaxBytesError
	switch {
	case errors.As(err, &maxBytes):
		return nil, http.StatusRequestEntityTooLarge, tooLarge
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, http.StatusRequestTimeout, "request body did not arrive in time"
	case err != nil:
		return nil, http.StatusBadRequest, "cannot read request body"
	}
	// net/http clears the deadline too once it sees the body's end; doing
	// it here does not depend on that.
	http.NewResponseController(w).SetReadDeadline(time.Time{})
	return body, 0, ""
}

// refuse answers r with status and msg, and closes the connection without
// reading what is left of r's body: a client that announces a body and
// never sends it must not hold the connection.
//
// Connection: close alone is not enough. It does keep net/http from
// draining the body before writing the response (chunkWriter.writeHeader
// skips that when the connection will close), but once the handler returns,
// finishRequest closes the body, and body.Close still reads up to
// maxPostHandlerReadBytes of a declared body to find its end, waiting on
// the client. An expired read deadline makes that read fail at once (only
// bytes already buffered are consumed), so the response goes out, the
// connection closes, and nothing waits for the body.
func refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	w.Header().Set("Connection", "close")
	if hasBody(r) {
		http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	http.Error(w, msg, status)
}

// loopbackNames lists the Host values a loopback listener answers to
// (localhost, 127.0.0.1 and [::1] with its port), or nil when the check
// does not apply (a unix socket or a non-loopback address).
func (h *Hub) loopbackNames() map[string]bool {
	tcp, ok := h.ln.Addr().(*net.TCPAddr)
	if !ok || !tcp.IP.IsLoopback() {
		return nil
	}
	port := fmt.Sprint(tcp.Port)
	return map[string]bool{
		"localhost:" + port: true,
		"127.0.0.1:" + port: true,
		"[::1]:" + port:     true,
	}
}

func originAllowed(origin string, allowed map[string]bool) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return allowed[strings.ToLower(u.Host)]
}

// bearerMatches compares in constant time; hashing first hides the
// token's length as well. The scheme is case-insensitive (RFC 7235).
func bearerMatches(header, token string) bool {
	scheme, got, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	a, b := sha256.Sum256([]byte(strings.TrimSpace(got))), sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
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
