package connect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Defaults of Options, and the fixed bounds of the bridge.
const (
	// StartTimeout is how long Run waits for a server that does not answer
	// yet (one still starting) before it gives up.
	StartTimeout = 5 * time.Second
	// RetryInterval is the longest pause between two attempts to reach a
	// server that went away; attempts start at a tenth of it. A restarted
	// server gets its new session within this (plus the replay) of
	// answering again, well inside the 5 s docs/clients.md promises.
	RetryInterval = time.Second
	// MaxEventBytes bounds one message from the server (an SSE event or a
	// JSON answer): a wrapped tool's result holds at most 1 MiB per stream,
	// an upstream's message at most 16 MiB; a larger one is dropped.
	MaxEventBytes = 32 << 20

	// callSettle is how long the next message waits behind a request that
	// has been written but not answered yet: the server publishes a request
	// right after reading its body, and tells nothing until its answer
	// begins (see the package comment). Only a request slower than this
	// holds the next message up, by this much.
	callSettle = 10 * time.Millisecond
	// postTimeout bounds posting a notification or a response, which the
	// server answers with 202 at once.
	postTimeout = 30 * time.Second
	// replayTimeout bounds the replayed initialize and initialized.
	replayTimeout = 30 * time.Second
	// dialTimeout bounds one attempt to reach the server.
	dialTimeout = 2 * time.Second
	// deleteTimeout bounds the DELETE that ends the session.
	deleteTimeout = 5 * time.Second
	// replayID is the id of the replayed initialize, never one of the
	// client's (its answer is the bridge's own and is not passed on).
	replayID = `"wraptool-connect-replay"`
)

// Options configure Run. Address, URL and Dial are required.
type Options struct {
	// Address names the server in messages: "127.0.0.1:8717" or the socket
	// path.
	Address string
	// URL is the Streamable HTTP endpoint, "http://127.0.0.1:8717/mcp" (for
	// a unix socket the host is only the Host header, "localhost").
	URL string
	// Dial opens a connection to the server's listener that will carry
	// token ("" for none) and no other. It must check who listens
	// (Owner.Check) before it returns: nothing is written on a connection
	// before Dial returns it, and, when token is not empty, make the
	// listener prove it holds that very token (Prove). An error wrapping
	// ErrForeignOwner or ErrNoProof stops the bridge at once; any other
	// error is a server not answering (yet).
	Dial func(ctx context.Context, token string) (net.Conn, error)
	// Token returns the bearer token, read afresh for every new session
	// and when the server refuses the one in use (a rotated token file);
	// nil, or "", sends none.
	Token func() (string, error)
	// Stdin and Stdout are the client's pipe.
	Stdin  io.Reader
	Stdout io.Writer
	// Log receives the bridge's log; nil discards it.
	Log *slog.Logger
	// MaxMessageBytes is the largest message the client may send, the
	// server's request body limit; zero means 4 MiB.
	MaxMessageBytes int
	// StartTimeout is how long to wait for the server at start, and how
	// long the client's messages are held for a restarted server to come
	// back; zero means StartTimeout.
	StartTimeout time.Duration
	// RetryInterval is the longest pause between attempts to reach a server
	// that went away; zero means RetryInterval.
	RetryInterval time.Duration
}

// Run bridges o.Stdin and o.Stdout to the server until stdin ends or ctx is
// done, then ends the session (HTTP DELETE) and returns nil. It returns an
// error wrapping ErrNoServer when no server answered within the start
// timeout (even if stdin ended meanwhile), ErrForeignOwner when the listener
// belongs to another user, ErrNoProof when it did not prove it holds the
// token, ErrUnauthorized when the server refuses the
// token, and ErrRefused when a restarted server refuses the client's
// initialize; requests still in flight then get a JSON-RPC error first.
//
// Run starts a goroutine that reads stdin; it ends at the end of stdin or
// at its first read after Run returned, so a stdin that never ends keeps
// it blocked in Read (the process is exiting then).
func Run(ctx context.Context, o Options) error {
	b := newBridge(o)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b.done = ctx.Done()
	// lines: buffer 4; the reader sends, the manager receives. A busy
	// manager (posting, waiting for a restarted server) holds the reader
	// back, and with it the client's writes: nothing is dropped and at most
	// five lines are held.
	lines := make(chan message, 4)
	go b.read(ctx, lines)
	defer b.closeIdle()
	return b.run(ctx, lines)
}

// bridge is one Run. The fields below the line are the manager's alone.
type bridge struct {
	o   Options
	log *slog.Logger
	// clientMu guards client and clientToken (clientFor), taken by every
	// goroutine that sends a request.
	clientMu    sync.Mutex
	client      *http.Client
	clientToken string
	out         *output
	// events: buffer 16; the goroutines serving a session send (report),
	// the manager receives. A sender also gives up when its session's
	// context ends, so none is left blocked once the manager moved on;
	// one handing back a request (retry) gives up only when Run ends
	// (done), since the request must still be answered.
	events chan event
	done   <-chan struct{}

	// sess is the session in use: before the client's initialize, a
	// session with no id (generation 0); nil while the server is away.
	sess *session
	gen  int
	// initMsg is the client's initialize (set once the server accepted it),
	// replayed on a restart; initialized is set once the client sent
	// notifications/initialized.
	initMsg     []byte
	initialized bool
	token       string
	// lines are the client's messages; nil until the server answered
	// once, so they wait for it rather than being refused.
	lines <-chan message
	// held are the client's messages kept while a restarted server comes
	// back, in stdin order, heldBytes their size; holdUntil is when they
	// get an error instead (zero while no session is being reopened).
	held      []message
	heldBytes int
	holdUntil time.Time
}

// session is one server session, immutable once made; its goroutines hold
// it, and end with its context.
type session struct {
	gen      int
	id       string // Mcp-Session-Id; "" before initialize
	protocol string // the negotiated protocol version, for MCP-Protocol-Version
	token    string
	// ctx ends the session's stream and posts; calls ends its requests
	// in flight, which may outlive the stream a little (see restart).
	// cancel ends both.
	ctx         context.Context
	stopStream  context.CancelFunc
	calls       context.Context
	cancelCalls context.CancelFunc
	listen      *sync.Once // starts the GET stream once
}

// cancel ends everything the session has going.
func (s *session) cancel() {
	s.stopStream()
	s.cancelCalls()
}

// event is what a session's goroutine reports to the manager.
type event struct {
	gen  int
	kind eventKind
	err  error
	// retry is a request of the client's that never reached the server
	// (its POST was not written whole, or was refused with 404 or 401
	// before it ran): the manager sends it again, on the next session if
	// this one is lost.
	retry *message
}

type eventKind int

const (
	eventLost         eventKind = iota // the server does not answer
	eventMissing                       // the server answered 404 for the session
	eventUnauthorized                  // the server refused the token
	eventFatal                         // stop the bridge with err
)

func newBridge(o Options) *bridge {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 4 << 20
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = StartTimeout
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = RetryInterval
	}
	log := o.Log
	return &bridge{o: o, log: log, out: newOutput(o.Stdout, log), events: make(chan event, 16)}
}

// clientFor is the HTTP client whose connections were proved for token and
// carry nothing else: a connection that proved one token is never handed
// a request with another (a token file rotated under connect, while an
// impostor that knew the old token held the port, would otherwise send it
// the new one on a connection it proved with the old). A new token's
// client replaces the last one, whose idle connections close; one still
// carrying a request ends with it, in that client's own pool.
func (b *bridge) clientFor(token string) *http.Client {
	b.clientMu.Lock()
	defer b.clientMu.Unlock()
	if b.client != nil && b.clientToken == token {
		return b.client
	}
	if b.client != nil {
		b.client.CloseIdleConnections()
	}
	dial := b.o.Dial
	b.client, b.clientToken = &http.Client{Transport: &http.Transport{
		// No proxy, whatever the environment says: the token goes to the
		// checked listener and nowhere else.
		Proxy: nil,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dial(ctx, token)
		},
		// Each request in flight holds a connection; keep enough idle ones
		// that a busy client does not pay a dial and an owner check per call.
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}}, token
	return b.client
}

// closeIdle closes the idle connections of the client in use.
func (b *bridge) closeIdle() {
	b.clientMu.Lock()
	defer b.clientMu.Unlock()
	if b.client != nil {
		b.client.CloseIdleConnections()
	}
}

// read hands each line of stdin to the manager, classified, and closes
// lines at the end of stdin.
func (b *bridge) read(ctx context.Context, lines chan<- message) {
	defer close(lines)
	lr := newLineReader(b.o.Stdin, b.o.MaxMessageBytes)
	seq := 0
	for {
		line, size, tooLong, err := lr.next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				b.log.Debug("stdin ended", "error", err)
			}
			return
		}
		var m message
		switch {
		case tooLong:
			m = peekMessage(line, size)
		case len(trimSpace(line)) == 0:
			continue // a blank line is no message
		default:
			m = parseMessage(line)
		}
		seq++
		m.seq = seq
		select {
		case lines <- m:
		case <-ctx.Done():
			return
		}
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}

// errStdinClosed ends the bridge cleanly from inside a wait.
var errStdinClosed = errors.New("stdin closed")

// run is the manager: it reaches the server, then takes the client's
// messages and the sessions' reports in turn until stdin ends.
func (b *bridge) run(ctx context.Context, lines <-chan message) error {
	// Until the server answered once, stdin is not read: the client's
	// initialize must wait for the server, not be refused.
	if err := b.await(ctx, time.Now().Add(b.o.StartTimeout)); err != nil {
		return err
	}
	b.lines = lines
	tok, err := b.readToken()
	if err != nil {
		return err
	}
	b.token = tok
	b.sess = b.newSession(ctx, "", "", tok)
	b.log.Info("bridging stdio to the wraptool server", "address", b.o.Address)
	for {
		var err error
		select {
		case <-ctx.Done():
			b.end()
			return nil
		case m, ok := <-lines:
			if !ok {
				b.log.Debug("stdin closed")
				b.end()
				return nil
			}
			err = b.handle(ctx, m)
		case e := <-b.events:
			err = b.onEvent(ctx, e)
		}
		switch {
		case err == nil:
		case errors.Is(err, errStdinClosed):
			// The client may still read: what was held for a server
			// that never came back gets its answer, never silence.
			b.out.failAll(codeLost, fmt.Sprintf("wraptool connect: stdin ended before the wraptool server at %s came back; the request was not sent", b.o.Address), true)
			return nil
		case ctx.Err() != nil:
			b.end()
			return nil
		default:
			return b.fatal(err)
		}
	}
}

// newSession makes the next session generation.
func (b *bridge) newSession(ctx context.Context, id, protocol, token string) *session {
	s := &session{gen: b.gen, id: id, protocol: protocol, token: token, listen: new(sync.Once)}
	b.gen++
	s.ctx, s.stopStream = context.WithCancel(ctx)
	s.calls, s.cancelCalls = context.WithCancel(ctx)
	return s
}

// readToken reads the token through Options.Token.
func (b *bridge) readToken() (string, error) {
	if b.o.Token == nil {
		return "", nil
	}
	return b.o.Token()
}

// await waits until a connection to the server can be made (and passes the
// owner check and the proof), trying at growing intervals up to the retry interval. With
// a deadline it gives up then (ErrNoServer). Once stdin is being read (not
// at start), the client's messages meanwhile are held (see hold), and so
// are requests their goroutines hand back; the end of stdin returns
// errStdinClosed.
func (b *bridge) await(ctx context.Context, deadline time.Time) error {
	lines := b.lines
	first := b.o.RetryInterval / 10
	delay := time.Duration(0)
	if lines != nil {
		delay = first // a restart: the server just went away
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	// hold fires when the held messages get their error: the bound on
	// reconnecting. Its channel stays nil while nothing is held.
	var holdC <-chan time.Time
	if !b.holdUntil.IsZero() {
		holdTimer := time.NewTimer(max(time.Until(b.holdUntil), 0))
		defer holdTimer.Stop()
		holdC = holdTimer.C
	}
	// events: only requests handed back matter here; any other report is
	// about a session already given up.
	var events <-chan event
	if lines != nil {
		events = b.events
	}
	logged := false
	for {
		select {
		case <-ctx.Done():
			if lines == nil {
				return fmt.Errorf("%w at %s: stopped before it answered", ErrNoServer, b.o.Address)
			}
			return ctx.Err()
		case m, ok := <-lines:
			if !ok {
				return errStdinClosed
			}
			b.hold(m)
			continue
		case e := <-events:
			if e.retry != nil {
				b.hold(*e.retry)
			}
			continue
		case <-holdC:
			b.failHeld()
			holdC = nil
			continue
		case <-timer.C:
		}
		// With the token the session will carry, so the listener proves
		// it holds it before connect reads the client's first line: an
		// impostor is refused before anything of the client's is taken.
		// A token that cannot be read proves nothing here; the session's
		// own read of it reports why.
		tok, terr := b.readToken()
		if terr != nil {
			tok = ""
		}
		dctx, cancel := context.WithTimeout(ctx, dialTimeout)
		conn, err := b.o.Dial(dctx, tok)
		cancel()
		if err == nil {
			conn.Close()
			return nil
		}
		if refusing(err) {
			return fmt.Errorf("refusing %s: %w; nothing was sent", b.o.Address, err)
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return fmt.Errorf("%w at %s (waited %v): %v", ErrNoServer, b.o.Address, b.o.StartTimeout, err)
		}
		if !logged {
			b.log.Info("waiting for the wraptool server", "address", b.o.Address, "error", err)
			logged = true
		} else {
			b.log.Debug("the wraptool server does not answer yet", "address", b.o.Address, "error", err)
		}
		delay = min(max(delay*2, first), b.o.RetryInterval)
		if !deadline.IsZero() {
			delay = max(min(delay, time.Until(deadline)), 0)
		}
		timer.Reset(delay)
	}
}

// refuse answers a message that arrives while no server answers.
func (b *bridge) refuse(m message) {
	switch {
	case b.malformed(m):
	case m.kind == kindRequest:
		b.out.reply(m.id, codeLost, fmt.Sprintf("wraptool connect: the wraptool server at %s does not answer (restarting?); try again shortly", b.o.Address))
	default:
		b.log.Warn("dropped a message while the server does not answer", "method", m.method, "address", b.o.Address)
	}
}

// malformed answers a line that cannot go to the server, and reports
// whether it was one: a line that is not one JSON-RPC message, or one over
// the server's size limit (a request is answered, anything else dropped
// with a log line: nothing could answer it).
func (b *bridge) malformed(m message) bool {
	switch {
	case m.kind == kindInvalid && !m.tooLong:
		b.out.reply(m.id, m.code, m.why)
	case m.tooLong:
		msg := fmt.Sprintf("wraptool connect: the message is %d bytes; the wraptool server takes at most %d", m.size, b.o.MaxMessageBytes)
		switch m.kind {
		case kindRequest:
			b.out.reply(m.id, codeInvalidRequest, "Invalid Request: "+msg)
		case kindInvalid:
			b.out.reply(nil, codeParse, "Parse error: the line is not a JSON object; "+msg)
		default:
			b.log.Warn("dropped a message over the size limit", "bytes", m.size, "limit", b.o.MaxMessageBytes, "method", m.method)
		}
	default:
		return false
	}
	return true
}

// handle passes one message of the client's on.
func (b *bridge) handle(ctx context.Context, m message) error {
	switch {
	case b.malformed(m):
		return nil
	case b.sess == nil:
		b.refuse(m)
		return nil
	case m.kind == kindRequest && m.method == "initialize" && b.initMsg == nil:
		return b.initialize(ctx, m)
	case m.kind == kindRequest:
		b.call(m)
		return nil
	case m.kind == kindResponse:
		// Only an answer to a question of this session's goes: one to a
		// server that has since restarted would reach a stranger (the new
		// server may use the same id for another question).
		if current, ok := b.out.answered(m.key, b.sess.gen); !ok || !current {
			b.log.Info("dropped the client's answer to a request the server's session no longer has", "id", string(m.id))
			return nil
		}
	case m.method == "notifications/cancelled":
		// The client expects no answer to what it cancelled.
		if key, ok := cancelledKey(m); ok {
			b.out.untrack(key)
		}
	}
	return b.send(ctx, m)
}
