package actors

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"log/slog"
	"mime"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Legacy SSE clients (Claude Code, Gemini CLI, the TypeScript SDK,
// supergateway) reconnect a dropped stream on their own, as EventSource
// does, and the stream's endpoint event moves them into a new session; but
// they never send initialize again, so after a server restart every call
// they make would fail as invalid before initialization. The hub's own SSE
// handler therefore initialises such a session on the client's behalf when
// its first message is not initialize: with what the same token's last
// session sent, else with sseDefaultInit.

// sseDefaultClient is the client name of a session the hub initialised
// without knowing what its client would have sent, so the audit log says
// the name is not the client's.
const sseDefaultClient = "unknown (initialised by wraptool)"

// sseDefaultInit is what a session is initialised with when its token has
// no earlier session the hub remembers: the legacy SSE transport's own
// protocol and a client that declares nothing.
var sseDefaultInit = mcp.InitializeParams{
	ProtocolVersion: "2024-11-05",
	Capabilities:    &mcp.ClientCapabilities{},
	ClientInfo:      &mcp.Implementation{Name: sseDefaultClient, Version: ""},
}

// sseInitMax bounds the initialize parameters remembered per token; a
// client's are far smaller, and larger ones are not remembered (the
// defaults serve instead).
const sseInitMax = 16 << 10

// sseInitTokens bounds how many tokens' parameters are remembered. Only
// tokens the config holds pass authentication, so a few suffice; without
// authentication any header's digest is a key, and the oldest go first.
const sseInitTokens = 64

// sseInits is the initialize parameters of the last legacy SSE session each
// token initialised, by the SHA-256 of the token (never the token), in
// memory only. Safe for concurrent use.
type sseInits struct {
	mu    sync.Mutex
	by    map[[sha256.Size]byte]json.RawMessage
	order [][sha256.Size]byte // oldest first
}

func newSSEInits() *sseInits {
	return &sseInits{by: map[[sha256.Size]byte]json.RawMessage{}}
}

// remember keeps params as digest's last, when they parse and fit the
// bound. The elicitation capability is dropped: a session the hub
// initialised is never to be asked to approve anything.
func (s *sseInits) remember(digest [sha256.Size]byte, params json.RawMessage) {
	if len(params) > sseInitMax {
		return
	}
	var p mcp.InitializeParams
	if err := json.Unmarshal(params, &p); err != nil || p.ProtocolVersion == "" {
		return
	}
	if p.Capabilities != nil {
		p.Capabilities.Elicitation = nil
	}
	kept, err := json.Marshal(&p)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.by[digest]; !ok {
		s.order = append(s.order, digest)
	}
	s.by[digest] = kept
	for len(s.order) > sseInitTokens {
		delete(s.by, s.order[0])
		s.order = s.order[1:]
	}
}

// params is what a session of digest's is initialised with, and whether
// it came from an earlier session rather than the defaults.
func (s *sseInits) params(digest [sha256.Size]byte) (json.RawMessage, bool) {
	s.mu.Lock()
	p, ok := s.by[digest]
	s.mu.Unlock()
	if ok {
		return p, true
	}
	p, _ = json.Marshal(&sseDefaultInit)
	return p, false
}

// sseHandler serves legacy SSE as the MCP SDK's SSEHandler does (a GET
// opens a session's stream and announces its message endpoint, a POST
// there carries a message to it), with each session's connection wrapped
// in an sseInitConn. The guard in front of it has already checked the
// host, the method, the token and the body's bound.
type sseHandler struct {
	server *mcp.Server
	inits  *sseInits
	// digest is the token digest a request carries (Hub.credential's).
	digest func(*http.Request) [sha256.Size]byte
	log    *slog.Logger

	mu       sync.Mutex
	sessions map[string]*mcp.SSEServerTransport
}

func (h *Hub) newSSEHandler() *sseHandler {
	return &sseHandler{server: h.server, inits: newSSEInits(), log: h.log,
		digest:   func(r *http.Request) [sha256.Size]byte { return h.credential(r).digest },
		sessions: map[string]*mcp.SSEServerTransport{}}
}

func (s *sseHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			http.Error(w, "Content-Type must be 'application/json'", http.StatusUnsupportedMediaType)
			return
		}
		s.mu.Lock()
		t := s.sessions[r.URL.Query().Get("sessionid")]
		s.mu.Unlock()
		if t == nil {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		t.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Connection", "keep-alive")
	id := rand.Text()
	endpoint, err := r.URL.Parse("?sessionid=" + id)
	if err != nil {
		http.Error(w, "internal error: failed to create endpoint", http.StatusInternalServerError)
		return
	}
	t := &mcp.SSEServerTransport{Endpoint: endpoint.RequestURI(), Response: w, MaxRequestBodyBytes: MaxBodyBytes}
	s.mu.Lock()
	s.sessions[id] = t
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.sessions, id)
		s.mu.Unlock()
	}()
	it := &sseInitTransport{SSEServerTransport: t, digest: s.digest(r), inits: s.inits, log: s.log, closed: make(chan struct{})}
	ss, err := s.server.Connect(r.Context(), it, nil)
	if err != nil {
		http.Error(w, "connection failed", http.StatusInternalServerError)
		return
	}
	defer ss.Close()
	select {
	case <-r.Context().Done():
	case <-it.closed:
	}
}

// sseInitTransport is an SSE session's transport whose connection
// initialises the session on its client's behalf (see sseInitConn).
type sseInitTransport struct {
	*mcp.SSEServerTransport
	digest [sha256.Size]byte
	inits  *sseInits
	log    *slog.Logger
	closed chan struct{} // closed when the connection is
}

func (t *sseInitTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.SSEServerTransport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &sseInitConn{Connection: conn, t: t}, nil
}

// sseInitConn reads a session's messages in the order they were posted
// (the SDK reads a connection from one goroutine, and handles initialize
// and notifications before it reads on). When the first message that is
// not one a client may send before initialize (beforeInitialize) is not
// initialize, it reads a synthetic initialize and
// notifications/initialized first, so concurrent first posts initialise
// the session once. The synthetic initialize's answer, under an id no
// client sent, is dropped rather than written to the stream. A client's
// own successful initialize is remembered for its token's next session.
type sseInitConn struct {
	mcp.Connection
	t         *sseInitTransport
	closeOnce sync.Once

	mu sync.Mutex
	// started is set once the session's initialize was read, the
	// client's or the synthetic one.
	started bool
	queue   []jsonrpc.Message // read next, before the client's next post
	// synthID is the synthetic initialize's id while its answer is
	// awaited; the zero ID otherwise.
	synthID jsonrpc.ID
	// clientInit is the client's own initialize while its answer is
	// awaited (nil otherwise).
	clientInit *jsonrpc.Request
}

func (c *sseInitConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	c.mu.Lock()
	if len(c.queue) > 0 {
		msg := c.queue[0]
		c.queue = c.queue[1:]
		c.mu.Unlock()
		return msg, nil
	}
	c.mu.Unlock()
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return nil, err
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return msg, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started || beforeInitialize(req) {
		return msg, nil
	}
	c.started = true
	if req.Method == "initialize" {
		if req.IsCall() {
			c.clientInit = req
		}
		return msg, nil
	}
	params, known := c.t.inits.params(c.t.digest)
	// A string id of 26 random characters: no client's id is ever equal.
	c.synthID, _ = jsonrpc.MakeID("wraptool-initialize-" + rand.Text())
	if req.Method != "notifications/initialized" {
		c.queue = append(c.queue, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage("{}")})
	}
	c.queue = append(c.queue, msg)
	c.t.log.Info("initialising a legacy SSE session on its client's behalf: its first message was not initialize",
		"method", req.Method, "from_earlier_session", known)
	return &jsonrpc.Request{ID: c.synthID, Method: "initialize", Params: params}, nil
}

// beforeInitialize reports whether req is one a client may send before
// initialize without being initialised for: a ping, and server/discover,
// with which clients of the newer protocol (the MCP SDK's among them) probe
// a server before they fall back to initialize. The newer protocol's
// per-request metadata does not count: it is not served over legacy SSE.
func beforeInitialize(req *jsonrpc.Request) bool {
	return req.Method == "ping" || req.Method == "server/discover"
}

func (c *sseInitConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if res, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		synthetic := c.synthID.IsValid() && res.ID == c.synthID
		if synthetic {
			c.synthID = jsonrpc.ID{}
		}
		var remember json.RawMessage
		if ci := c.clientInit; ci != nil && res.ID == ci.ID {
			c.clientInit = nil
			if res.Error == nil {
				remember = ci.Params
			} else {
				// The session is still not initialised: its next
				// call gets it initialised as if this never came.
				c.started = false
			}
		}
		c.mu.Unlock()
		if synthetic {
			if res.Error != nil {
				c.t.log.Warn("the legacy SSE session could not be initialised on its client's behalf", "error", res.Error)
			}
			return nil
		}
		if remember != nil {
			c.t.inits.remember(c.t.digest, remember)
		}
	}
	return c.Connection.Write(ctx, msg)
}

// Close ends the stream's GET as well, as the SDK's handler does when its
// session is closed (on shutdown, or a failed write).
func (c *sseInitConn) Close() error {
	c.closeOnce.Do(func() { close(c.t.closed) })
	return c.Connection.Close()
}
