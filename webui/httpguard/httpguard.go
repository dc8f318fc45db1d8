// Package httpguard keeps from a local HTTP server's handlers the requests
// they must never see: a web page's requests smuggled in through DNS
// rebinding, clients without the bearer token, and bodies too large or too
// slow to arrive. The MCP hub and the admin UI share it, so both surfaces
// refuse in the same order and the same way.
//
// A refused request is answered at once and its connection closed, without
// reading its body: a client that announces a body and never sends it holds
// nothing. The one exception is a body too large from a client whose
// credentials were valid: it gets its 413 at once, and then the rest of its
// body is read and thrown away, within a bound and a deadline, before the
// connection closes. A client still sending when a server closes meets a
// connection reset, which also throws away the 413 it had not read yet, so
// without that read it would never learn why. An admitted request reaches
// its handler with the body whole in memory and no read deadline left, so a
// long response is never cut.
//
// A Guard is immutable once New returns and safe for concurrent use. It
// calls Options.Token on every request, from many goroutines at once.
package httpguard

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

const (
	// DefaultMaxBodyBytes bounds the memory one request can make a server
	// hold; MCP messages and admin API calls are far smaller.
	DefaultMaxBodyBytes = 4 << 20
	// DefaultBodyTimeout frees a connection whose client declares a body
	// and then stalls.
	DefaultBodyTimeout = 30 * time.Second
	// DefaultDiscardBytes bounds what is read and thrown away of an
	// oversized body after its 413 (nginx's lingering close does the
	// same): enough for a tool argument pasted many times over, while a
	// client sending more than that is not worth the bandwidth.
	DefaultDiscardBytes = 64 << 20
	// DefaultDiscardTimeout bounds how long that read may take, from the
	// 413 on, whatever the client sends meanwhile: a client trickling
	// its body (slowloris) holds the connection no longer.
	DefaultDiscardTimeout = 10 * time.Second
	// Challenge is the WWW-Authenticate value of a 401 to a request that
	// sent no credentials, telling a client which ones to send; a handler
	// that answers its own 401s (the admin API) sends it too, so both
	// surfaces challenge alike. RFC 6750 section 3.1: a request that lacks
	// any authentication information gets no error code.
	Challenge = `Bearer realm="wraptool"`
	// InvalidTokenChallenge is the WWW-Authenticate value of a 401 to a
	// request that sent an Authorization header that is not accepted: the
	// same challenge (a client parsing Challenge still finds its scheme and
	// realm first) with RFC 6750's error="invalid_token" and a description.
	// OAuth clients such as mcp-remote read these parameters; without them
	// a wrong token looks like a server that wants an OAuth sign-in.
	InvalidTokenChallenge = Challenge + `, error="invalid_token", error_description="the bearer token does not match this server's token file"`
)

// UnauthorizedMessage is the body of a 401 to r, saying which case it is:
// "no bearer token" when r sent no Authorization header, else that the
// bearer token does not match file (a phrase such as "this server's token
// file"), by the same test as ChallengeFor. It never repeats what r sent:
// clients show this body in their logs, and a token that is wrong here may
// be right elsewhere.
func UnauthorizedMessage(r *http.Request, file string) string {
	if r.Header.Get("Authorization") == "" {
		return "no bearer token"
	}
	return "the bearer token does not match " + file
}

// ChallengeFor is the WWW-Authenticate value of a 401 to r:
// InvalidTokenChallenge when r sent an Authorization header (whatever its
// scheme: a credential was offered and refused), Challenge when it sent
// none.
func ChallengeFor(r *http.Request) string {
	if r.Header.Get("Authorization") != "" {
		return InvalidTokenChallenge
	}
	return Challenge
}

// Options configure a Guard. A nil *Options, or a zero field, means the
// default that field documents.
type Options struct {
	// Hosts are the Host values ("localhost:8717", as LoopbackHosts gives
	// them) a request may name, compared case-insensitively; an Origin
	// header, when sent, must name one of them too (http or https). A page
	// that reaches the server through DNS rebinding names its own host.
	// Nil means no DNS-rebinding check, for a listener a browser cannot be
	// led to by a name (a unix socket) or one on a non-loopback address;
	// an empty non-nil list refuses every request.
	Hosts []string
	// Token returns the bearer token required now. It is called on every
	// request, so a rotated token applies at once. Nil, or "" returned,
	// means no authentication.
	Token func() string
	// Others returns further bearer tokens accepted beside Token's (the
	// elicitation clients' own, for interactive approval), read on every
	// request. They count only while Token's is set: without a token,
	// nothing is checked.
	Others func() []string
	// MaxBodyBytes bounds a request body (413 beyond); zero or less means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// BodyTimeout bounds how long a request body may take to arrive (408
	// beyond); zero or less means DefaultBodyTimeout.
	BodyTimeout time.Duration
	// DiscardBytes bounds how much of an oversized body is read and thrown
	// away after its 413, on a request whose credentials were valid (see
	// ReadAuthenticatedBody); it counts against no other limit. A body
	// declared longer than that is refused at once instead. Zero or less
	// means DefaultDiscardBytes.
	DiscardBytes int64
	// DiscardTimeout bounds how long that read may take from the 413 on;
	// it replaces BodyTimeout's deadline. Zero or less means
	// DefaultDiscardTimeout.
	DiscardTimeout time.Duration
}

// Guard refuses, before a handler runs, what Options rule out. Build it
// with New.
type Guard struct {
	hosts          map[string]bool // lower case; nil: no DNS-rebinding check
	token          func() string
	others         func() []string
	maxBody        int64
	bodyTimeout    time.Duration
	discardBytes   int64
	discardTimeout time.Duration
}

// New returns a Guard enforcing o; nil means defaults throughout (no host
// check, no authentication, the default body limits). It copies o.Hosts.
func New(o *Options) *Guard {
	g := &Guard{token: func() string { return "" }, maxBody: DefaultMaxBodyBytes, bodyTimeout: DefaultBodyTimeout,
		discardBytes: DefaultDiscardBytes, discardTimeout: DefaultDiscardTimeout}
	if o == nil {
		return g
	}
	if o.Hosts != nil {
		g.hosts = make(map[string]bool, len(o.Hosts))
		for _, h := range o.Hosts {
			g.hosts[strings.ToLower(h)] = true
		}
	}
	if o.Token != nil {
		g.token = o.Token
	}
	g.others = o.Others
	if o.MaxBodyBytes > 0 {
		g.maxBody = o.MaxBodyBytes
	}
	if o.BodyTimeout > 0 {
		g.bodyTimeout = o.BodyTimeout
	}
	if o.DiscardBytes > 0 {
		g.discardBytes = o.DiscardBytes
	}
	if o.DiscardTimeout > 0 {
		g.discardTimeout = o.DiscardTimeout
	}
	return g
}

// Wrap guards next with every check, cheapest first, in this fixed
// order: the DNS-rebinding check (403), the bearer token (401 with
// ChallengeFor), then the body (413 too large, 408 too slow, 400 broken), as
// ReadAuthenticatedBody reads it. So a client with neither the name nor the
// token never makes the server read a byte of its body.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return g.CheckHost(g.checkToken(g.ReadAuthenticatedBody(next)))
}

// Methods describes the methods a guarded route serves: for r it reports
// whether the route serves r (its method, and anything else the route
// needs to tell, such as a query parameter), and the Allow header's value
// to send when it does not.
type Methods func(r *http.Request) (serves bool, allow string)

// WrapMethods is Wrap with a method check between the DNS-rebinding check
// and the token: a request the route does not serve gets 405 with the
// Allow header methods gives, at once, without its body being read. The
// 405 comes before the 401 because it tells nothing a client could not
// read in the MCP specification (which methods an endpoint takes) and
// nothing about the token, while a 401 in its place would send a client
// that probes for a transport (mcp-remote POSTs to /sse first and falls
// back to legacy SSE only on 404 or 405) into an OAuth sign-in instead of
// its fallback.
func (g *Guard) WrapMethods(methods Methods, next http.Handler) http.Handler {
	inner := g.checkToken(g.ReadAuthenticatedBody(next))
	return g.CheckHost(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ok, allow := methods(r); !ok {
			w.Header().Set("Allow", allow)
			Refuse(w, r, http.StatusMethodNotAllowed, "method not allowed: this endpoint serves "+allow)
			return
		}
		inner.ServeHTTP(w, r)
	}))
}

// CheckHost is Wrap's first step alone: it refuses with 403 a request whose
// Host, or Origin when it sends one, is not in Options.Hosts. A handler
// that authenticates by other means than the bearer token (the admin UI's
// session cookie) keeps Wrap's order with CheckHost, its own check, then
// ReadAuthenticatedBody (or ReadBody where the credentials are in the body).
func (g *Guard) CheckHost(next http.Handler) http.Handler {
	if g.hosts == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.hosts[strings.ToLower(r.Host)] {
			Refuse(w, r, http.StatusForbidden, "forbidden: Host is not this server's loopback name")
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !g.originAllowed(o) {
			Refuse(w, r, http.StatusForbidden, "forbidden: Origin is not this server's loopback name")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// originAllowed reports whether origin is an http or https origin on one of
// the allowed hosts; "null" and every other scheme are not.
func (g *Guard) originAllowed(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return g.hosts[strings.ToLower(u.Host)]
}

// checkToken is Wrap's second step: the bearer token, read anew for each
// request.
func (g *Guard) checkToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok := g.token(); tok != "" && !g.accepted(r.Header.Get("Authorization"), tok) {
			w.Header().Set("WWW-Authenticate", ChallengeFor(r))
			Refuse(w, r, http.StatusUnauthorized, UnauthorizedMessage(r, "this server's token file"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// accepted reports whether header carries tok or one of the others, each
// compared in constant time, all of them every time.
func (g *Guard) accepted(header, tok string) bool {
	ok := BearerMatches(header, tok)
	if g.others != nil {
		for _, o := range g.others() {
			if o != "" && BearerMatches(header, o) {
				ok = true
			}
		}
	}
	return ok
}

// ReadBody reads a request's body whole, up to Options.MaxBodyBytes and
// within Options.BodyTimeout, then clears the read deadline and hands next
// the body in memory with its ContentLength. So next, even one that streams
// its answer or runs long, never meets the deadline, and a client cannot
// stall it halfway through a body. A body that fails is refused at once:
// 413 too large, 408 too slow, 400 broken. It is the step for a request
// whose credentials have not been checked (a sign-in form carries them in
// its body): such a client gets nothing more of the server's time.
func (g *Guard) ReadBody(next http.Handler) http.Handler {
	return g.readBodyThen(next, false)
}

// ReadAuthenticatedBody is ReadBody for a request whose credentials were
// valid, Wrap's last step (see CheckHost for composing it alone). It differs
// in one case: a body too large gets its 413 written out at once, and then
// the rest of the body is read and thrown away, up to Options.DiscardBytes
// and within Options.DiscardTimeout, before the connection closes. A client
// still sending when the server closes gets a connection reset, and its
// kernel drops the 413 it had not read yet with it: the client would only
// learn that the connection broke. A body declared longer than the discard
// bound, or announced with Expect: 100-continue (the client waits before
// sending it, and a final answer tells it not to), is refused at once.
func (g *Guard) ReadAuthenticatedBody(next http.Handler) http.Handler {
	return g.readBodyThen(next, true)
}

// readBodyThen is ReadBody, or with discard ReadAuthenticatedBody.
func (g *Guard) readBodyThen(next http.Handler, discard bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hasBody(r) {
			raw := r.Body
			body, status, msg := g.readBody(w, r)
			switch {
			case status == http.StatusRequestEntityTooLarge && discard:
				g.refuseDiscarding(w, r, raw, msg)
				return
			case status != 0:
				Refuse(w, r, status, msg)
				return
			}
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		}
		next.ServeHTTP(w, r)
	})
}

// refuseDiscarding answers r with 413 and msg, sends that answer out, and
// then reads what is left of raw, r's body as net/http gave it, throwing it
// away, so that the client finishes sending and reads the 413 before the
// connection closes, rather than a reset. The read stops at
// Options.DiscardBytes and at Options.DiscardTimeout, whichever comes first;
// the connection then closes whatever the client is still sending.
func (g *Guard) refuseDiscarding(w http.ResponseWriter, r *http.Request, raw io.Reader, msg string) {
	if r.ContentLength > g.discardBytes || expectsContinue(r) && r.ContentLength > g.maxBody {
		Refuse(w, r, http.StatusRequestEntityTooLarge, msg)
		return
	}
	rc := http.NewResponseController(w)
	// Connection: close already keeps net/http from draining the body
	// itself before the answer goes out (it would give up after 256 KiB
	// and close); full duplex says in so many words that the body is read
	// after the answer is written. A writer that cannot (a test's
	// recorder) needs neither.
	w.Header().Set("Connection", "close")
	rc.EnableFullDuplex()
	// http.Error drops a Content-Length; without one the flushed answer
	// would be chunked, and its end would wait for the read below.
	text := msg + "\n"
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(text)))
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	io.WriteString(w, text)
	rc.Flush()
	rc.SetReadDeadline(time.Now().Add(g.discardTimeout))
	n, err := io.Copy(io.Discard, io.LimitReader(raw, g.discardBytes))
	if err != nil || n == g.discardBytes {
		// The bound or the deadline ended the read (or the body broke):
		// nothing more is read, not even by net/http, which would wait up
		// to 256 KiB more for the body's end when it closes it.
		rc.SetReadDeadline(time.Now())
	}
}

// expectsContinue reports whether r asks, with Expect: 100-continue, to be
// told before it sends its body.
func expectsContinue(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Expect"), "100-continue")
}

// readBody reads r's body whole under the body deadline and then clears
// that deadline. A status other than 0 (with its message) says why the body
// was not read.
func (g *Guard) readBody(w http.ResponseWriter, r *http.Request) (body []byte, status int, msg string) {
	tooLarge := fmt.Sprintf("request body too large: the limit is %d bytes", g.maxBody)
	if r.ContentLength > g.maxBody {
		return nil, http.StatusRequestEntityTooLarge, tooLarge
	}
	g.startBodyClock(w)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.maxBody))
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

// Deadline gives the body of every request behind it Options.BodyTimeout to
// arrive. Put it around a whole mux, routes Wrap does not guard included:
// after any handler returns, net/http reads what is left of a body to reuse
// the connection, and without a deadline a stalled client would hold that
// read, and the connection, for ever. ReadBody sets the deadline as well,
// so a guarded route does not depend on Deadline.
func (g *Guard) Deadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Only a request with a body gets the deadline: a request without
		// one is already past it, and net/http then watches the connection
		// for the client going away, a read a deadline would end (and with
		// it the request's context, so a GET stream).
		if hasBody(r) {
			g.startBodyClock(w)
		}
		next.ServeHTTP(w, r)
	})
}

// startBodyClock sets the read deadline by which the body must have arrived.
func (g *Guard) startBodyClock(w http.ResponseWriter) {
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(g.bodyTimeout))
}

// hasBody reports whether r announces a body (a Content-Length or chunked).
func hasBody(r *http.Request) bool {
	return r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody
}

// Refuse answers r with status and msg (plain text), and closes the
// connection without reading what is left of r's body: a client that
// announces a body and never sends it must not hold the connection. Set
// any header the refusal needs (WWW-Authenticate) before calling it.
//
// Connection: close alone is not enough. It does keep net/http from
// draining the body before writing the response (chunkWriter.writeHeader
// skips that when the connection will close), but once the handler returns,
// finishRequest closes the body, and body.Close still reads up to
// maxPostHandlerReadBytes of a declared body to find its end, waiting on
// the client. An expired read deadline makes that read fail at once (only
// bytes already buffered are consumed), so the response goes out, the
// connection closes, and nothing waits for the body.
func Refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	w.Header().Set("Connection", "close")
	if hasBody(r) {
		http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	http.Error(w, msg, status)
}

// RefuseJSON is Refuse with a JSON body: v encoded, Content-Type
// application/json. It too closes the connection without reading r's body.
func RefuseJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		Refuse(w, r, http.StatusInternalServerError, "cannot encode the answer")
		return
	}
	w.Header().Set("Connection", "close")
	if hasBody(r) {
		http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(data, '\n'))
}

// LoopbackHosts lists, for Options.Hosts, the Host values under which a
// local client reaches a loopback listener at addr: localhost, 127.0.0.1
// and [::1], each with addr's port. It returns nil, no DNS-rebinding check,
// for any other address: a unix socket has no name to rebind, and a
// listener on a non-loopback address cannot know the names it is reached
// by. A server with names of its own (the admin UI's host) appends them.
func LoopbackHosts(addr net.Addr) []string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsLoopback() {
		return nil
	}
	port := strconv.Itoa(tcp.Port)
	return []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port}
}

// BearerMatches reports whether an Authorization header carries token as a
// bearer token. It compares in constant time, hashing both sides first so
// the token's length does not leak either, and takes the scheme in any case
// (RFC 7235 section 2.1), so a handler that authenticates by itself (the
// admin API) checks exactly as Wrap does. An empty token matches nothing: an
// unset token must not admit "Bearer " with nothing after it.
func BearerMatches(header, token string) bool {
	scheme, got, ok := strings.Cut(header, " ")
	if token == "" || !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	a, b := sha256.Sum256([]byte(strings.TrimSpace(got))), sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}
