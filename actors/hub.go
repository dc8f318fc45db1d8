package actors

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/webui/httpguard"
)

// Limits and timeouts of the MCP listener (see docs/operations.md, Serving). Each bounds what
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
	runs       context.Context // done when in-flight tool runs must be killed
	abortCalls func()          // ends runs and closes HubOptions.KillCalls
	grace      time.Duration
	// bodyTimeout, idleTimeout and maxConns are the HubOptions limits,
	// defaults applied.
	bodyTimeout time.Duration
	idleTimeout time.Duration
	maxConns    int
	log         *slog.Logger

	// streams tracks the Streamable HTTP sessions: the token each belongs
	// to, and those that never opened a GET stream, which its own Run
	// expires after StreamlessTimeout (see Sessions).
	streams *Sessions
	// sseBound is the token each live legacy SSE session belongs to.
	sseBound *sseBindings
	// undelivered counts the list_changed notifications a notify round
	// could not deliver, one debug line per round.
	undelivered *undelivered

	ready      <-chan struct{} // serving starts once it is closed; nil: at once
	ln         net.Listener
	socketPath string        // the unix socket to remove on stop
	done       chan struct{} // closed when Run has returned

	// calls counts MCP requests being handled or answered, so shutdown
	// can wait for them before closing sessions (the SDK drops the
	// response of a call whose session is closed before it is written).
	mu    sync.Mutex
	calls int
	idle  chan struct{} // closed while calls == 0
	// lastAnswer is when the last answer was written; shutdown gives the
	// client a moment to read it (see readMargin).
	lastAnswer time.Time
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
	// upstream servers' first round, see UpstreamsOptions.Ready): clients that
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
	// Sessions is the Streamable HTTP session table, which the hub binds and
	// checks on every request and whose own Run (in the run group) expires
	// idle sessions; nil makes one from StreamlessTimeout and MaxSessions
	// that nothing sweeps (a test's).
	Sessions *Sessions
	// KillCalls, when not nil, is closed when in-flight tool runs must be
	// killed: once the shutdown grace period is over, and at the latest
	// when Run returns. The registry's tool handlers run their children
	// until then (see RegistryOptions.KillCalls).
	KillCalls chan<- struct{}
}

// NewHub serves server as o says. It binds nothing until Listen.
func NewHub(server *mcp.Server, o HubOptions, log *slog.Logger) *Hub {
	o.Grace = orDefault(o.Grace, ShutdownGrace)
	o.BodyTimeout = orDefault(o.BodyTimeout, BodyTimeout)
	o.IdleTimeout = orDefault(o.IdleTimeout, IdleTimeout)
	o.MaxConns = orDefault(o.MaxConns, MaxConns)
	runs, cancelRuns := context.WithCancel(context.Background())
	var killOnce sync.Once
	abort := func() {
		cancelRuns()
		if o.KillCalls != nil {
			killOnce.Do(func() { close(o.KillCalls) })
		}
	}
	h := &Hub{server: server, transport: o.Transport, listen: o.Listen, snapshots: o.Snapshots,
		runs: runs, abortCalls: abort, grace: o.Grace, bodyTimeout: o.BodyTimeout, idleTimeout: o.IdleTimeout,
		maxConns: o.MaxConns, ready: o.Ready, log: log.With("component", "hub"), idle: make(chan struct{}),
		done: make(chan struct{})}
	h.streams = o.Sessions
	if h.streams == nil {
		h.streams = NewSessions(SessionsOptions{Server: server, StreamlessTimeout: o.StreamlessTimeout, MaxSessions: o.MaxSessions, Log: log})
	}
	h.sseBound = &sseBindings{bound: map[string]binding{}}
	h.undelivered = &undelivered{log: h.log, rounds: map[context.Context]int{}}
	close(h.idle)
	server.AddReceivingMiddleware(h.track)
	server.AddSendingMiddleware(h.undelivered.middleware)
	return h
}

// orDefault is v, or def where v is zero or negative: an option that
// bounds or times something means its default unless it is set, and a
// negative bound would be no bound at all.
func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
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
		// The request counts until its answer is out, not only while its
		// handler runs: the SDK writes the response after the handler
		// returns, then ends the request's context. The counter drops on
		// that end, so shutdown closes no session with a response owed.
		answered := ctx
		defer func() { context.AfterFunc(answered, h.answered) }()
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

// answered notes that a request's answer is out (or will never be).
func (h *Hub) answered() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastAnswer = time.Now()
	h.calls--
	if h.calls == 0 {
		close(h.idle)
	}
}

// idleCh is closed once no request is being handled or answered.
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
