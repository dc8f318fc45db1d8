package httpguard

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// wait bounds every wait for something that must happen. It is generous
// because -race slows everything down; a passing test never waits it out.
const wait = 10 * time.Second

func TestLoopbackHosts(t *testing.T) {
	t.Parallel()
	own := []string{"localhost:8717", "127.0.0.1:8717", "[::1]:8717"}
	tests := []struct {
		name string
		addr net.Addr
		want []string
	}{
		{"127.0.0.1 answers to its three loopback names", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8717}, own},
		{"[::1] answers to its three loopback names", &net.TCPAddr{IP: net.IPv6loopback, Port: 8717}, own},
		{"another loopback address answers to the same names", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 8717}, own},
		{"every interface gets no check", &net.TCPAddr{IP: net.IPv4zero, Port: 8717}, nil},
		{"a public address gets no check", &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 8717}, nil},
		{"a unix socket gets no check", &net.UnixAddr{Name: "/run/wraptool.sock", Net: "unix"}, nil},
		{"no address gets no check", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := LoopbackHosts(tt.addr); !slices.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Errorf("LoopbackHosts(%v) = %#v, want %#v", tt.addr, got, tt.want)
			}
		})
	}
}

func TestBearerMatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, header, token string
		want                bool
	}{
		{"the token matches", "Bearer secret-token", "secret-token", true},
		{"the scheme in lower case matches (RFC 7235 section 2.1)", "bearer secret-token", "secret-token", true},
		{"the scheme in upper case matches", "BEARER secret-token", "secret-token", true},
		{"spaces around the token are ignored", "Bearer   secret-token ", "secret-token", true},
		{"a wrong token does not match", "Bearer wrong-token", "secret-token", false},
		{"a longer token does not match", "Bearer secret-token2", "secret-token", false},
		{"a prefix of the token does not match", "Bearer secret", "secret-token", false},
		{"another scheme does not match", "Basic secret-token", "secret-token", false},
		{"a scheme glued to the token does not match", "Bearersecret-token", "secret-token", false},
		{"no header does not match", "", "secret-token", false},
		{"an empty token matches nothing, not even an empty bearer", "Bearer ", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := BearerMatches(tt.header, tt.token); got != tt.want {
				t.Errorf("BearerMatches(%q, %q) = %v, want %v", tt.header, tt.token, got, tt.want)
			}
		})
	}
}

// echo answers 200 with what a guarded handler got of the body, so a test
// sees both that the request got through and that its body is whole.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	fmt.Fprintf(w, "ContentLength %d, body %q", r.ContentLength, body)
})

// guardRequest is one request against a guarded server.
type guardRequest struct {
	host   string // "" leaves the server's own address
	origin string
	auth   string // the whole Authorization header
	body   string // a POST when set, a GET otherwise
	// chunked sends the body without a Content-Length.
	chunked bool
}

func TestWrap(t *testing.T) {
	t.Parallel()
	const own, ui = "localhost:8717", "w-0123456789abcdef.localhost:8717"
	hosts := []string{own, "127.0.0.1:8717", "[::1]:8717"}
	token := func() string { return "secret-token" }
	tests := []struct {
		name       string
		opts       *Options
		req        guardRequest
		wantStatus int
		wantBody   string // a substring of the response body
	}{
		{"nil options let every request through", nil,
			guardRequest{host: "evil.example", body: "hi"}, 200, `ContentLength 2, body "hi"`},
		{"no Hosts means no DNS-rebinding check", &Options{},
			guardRequest{host: "evil.example", origin: "http://evil.example"}, 200, ""},
		{"the own Host is served", &Options{Hosts: hosts},
			guardRequest{host: own}, 200, ""},
		{"the own Host in upper case is served", &Options{Hosts: hosts},
			guardRequest{host: "LOCALHOST:8717"}, 200, ""},
		{"an extra name in Hosts is served", &Options{Hosts: append(hosts, ui)},
			guardRequest{host: ui, origin: "http://" + ui}, 200, ""},
		{"a foreign Host is refused with 403", &Options{Hosts: hosts},
			guardRequest{host: "evil.example:8717"}, 403, "Host is not this server's loopback name"},
		{"the own name on another port is refused with 403", &Options{Hosts: hosts},
			guardRequest{host: "localhost:1"}, 403, "Host"},
		{"an empty Hosts list refuses every request with 403", &Options{Hosts: []string{}},
			guardRequest{host: own}, 403, "Host"},
		{"the own Origin is served", &Options{Hosts: hosts},
			guardRequest{host: own, origin: "http://" + own}, 200, ""},
		{"the own Origin over https is served", &Options{Hosts: hosts},
			guardRequest{host: own, origin: "https://" + own}, 200, ""},
		{"a foreign Origin is refused with 403", &Options{Hosts: hosts},
			guardRequest{host: own, origin: "http://evil.example"}, 403, "Origin is not this server's loopback name"},
		{"an Origin on another port is refused with 403", &Options{Hosts: hosts},
			guardRequest{host: own, origin: "http://localhost:1"}, 403, "Origin"},
		{"Origin null is refused with 403", &Options{Hosts: hosts},
			guardRequest{host: own, origin: "null"}, 403, "Origin"},
		{"an Origin of another scheme is refused with 403", &Options{Hosts: hosts},
			guardRequest{host: own, origin: "ftp://" + own}, 403, "Origin"},
		{"the token is served", &Options{Token: token},
			guardRequest{auth: "Bearer secret-token"}, 200, ""},
		{"the token with the scheme in lower case is served", &Options{Token: token},
			guardRequest{auth: "bearer secret-token"}, 200, ""},
		{"no token is refused with 401", &Options{Token: token},
			guardRequest{}, 401, "no bearer token"},
		{"a wrong token is refused with 401", &Options{Token: token},
			guardRequest{auth: "Bearer wrong-token"}, 401, "the bearer token does not match this server's token file"},
		{"the token under another scheme is refused with 401", &Options{Token: token},
			guardRequest{auth: "Basic secret-token"}, 401, "the bearer token does not match this server's token file"},
		{"a Token returning nothing means no authentication", &Options{Token: func() string { return "" }},
			guardRequest{}, 200, ""},
		{"a body reaches the handler whole, with its length", &Options{MaxBodyBytes: 5},
			guardRequest{body: "12345"}, 200, `ContentLength 5, body "12345"`},
		{"a chunked body reaches the handler whole, with its length", &Options{MaxBodyBytes: 5},
			guardRequest{body: "12345", chunked: true}, 200, `ContentLength 5, body "12345"`},
		{"a body over the limit is refused with 413", &Options{MaxBodyBytes: 5},
			guardRequest{body: "123456"}, 413, "request body too large: the limit is 5 bytes"},
		{"a chunked body over the limit is refused with 413", &Options{MaxBodyBytes: 5},
			guardRequest{body: "123456", chunked: true}, 413, "the limit is 5 bytes"},
		{"a body over the default limit is refused with 413", nil,
			guardRequest{body: strings.Repeat("a", DefaultMaxBodyBytes+1)}, 413, fmt.Sprintf("the limit is %d bytes", DefaultMaxBodyBytes)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(New(tt.opts).Wrap(echo))
			t.Cleanup(srv.Close)
			res, body := get(t, srv, tt.req)
			if res.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %q", res.StatusCode, tt.wantStatus, body)
			}
			if !strings.Contains(body, tt.wantBody) {
				t.Errorf("body = %q, want it to contain %q", body, tt.wantBody)
			}
			refused := tt.wantStatus != 200
			if res.Close != refused { // the client moves Connection: close here
				t.Errorf("Connection: close is %v, want %v", res.Close, refused)
			}
			// RFC 6750 section 3.1: a request without credentials gets
			// the bare challenge, one with refused credentials
			// error="invalid_token".
			wantChallenge := ""
			switch {
			case tt.wantStatus == 401 && tt.req.auth == "":
				wantChallenge = Challenge
			case tt.wantStatus == 401:
				wantChallenge = InvalidTokenChallenge
			}
			if got := res.Header.Get("WWW-Authenticate"); got != wantChallenge {
				t.Errorf("WWW-Authenticate = %q, want %q", got, wantChallenge)
			}
		})
	}
}

// get sends r to srv and reads the whole response.
func get(t *testing.T, srv *httptest.Server, r guardRequest) (*http.Response, string) {
	t.Helper()
	method, body := http.MethodGet, io.Reader(nil)
	if r.body != "" {
		method, body = http.MethodPost, strings.NewReader(r.body)
		if r.chunked {
			body = io.MultiReader(body) // a length net/http cannot see
		}
	}
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.host != "" {
		req.Host = r.host
	}
	if r.origin != "" {
		req.Header.Set("Origin", r.origin)
	}
	if r.auth != "" {
		req.Header.Set("Authorization", r.auth)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read response body: %v", err)
	}
	return res, string(data)
}

// The hub reads its token file's current content for every request, so a
// rotated token applies without a restart.
func TestWrapReadsTheTokenOnEveryRequest(t *testing.T) {
	t.Parallel()
	var token atomic.Pointer[string]
	set := func(s string) { token.Store(&s) }
	set("old-token")
	srv := httptest.NewServer(New(&Options{Token: func() string { return *token.Load() }}).Wrap(echo))
	t.Cleanup(srv.Close)
	steps := []struct {
		name, token, auth string
		wantStatus        int
	}{
		{"before rotation the old token is served", "old-token", "Bearer old-token", 200},
		{"after rotation the old token is refused", "new-token", "Bearer old-token", 401},
		{"after rotation the new token is served", "new-token", "Bearer new-token", 200},
	}
	for _, s := range steps {
		set(s.token)
		if res, body := get(t, srv, guardRequest{auth: s.auth}); res.StatusCode != s.wantStatus {
			t.Errorf("%s: status = %d, want %d; body %q", s.name, res.StatusCode, s.wantStatus, body)
		}
	}
}

// The elicitation clients' tokens (Options.Others) are accepted beside the
// main one, read on every request, so one removed on reload stops working;
// without a main token nothing is checked, so they grant nothing extra.
func TestWrapAcceptsOtherTokens(t *testing.T) {
	t.Parallel()
	var main atomic.Pointer[string]
	var others atomic.Pointer[[]string]
	setMain := func(s string) { main.Store(&s) }
	setOthers := func(s ...string) { others.Store(&s) }
	srv := httptest.NewServer(New(&Options{Token: func() string { return *main.Load() },
		Others: func() []string { return *others.Load() }}).Wrap(echo))
	t.Cleanup(srv.Close)
	steps := []struct {
		name, main string
		others     []string
		auth       string
		wantStatus int
	}{
		{"the main token is served", "main-token", []string{"client-token"}, "Bearer main-token", 200},
		{"a client's token is served", "main-token", []string{"client-token"}, "Bearer client-token", 200},
		{"the second client's token is served", "main-token", []string{"one-token", "two-token"}, "Bearer two-token", 200},
		{"an unknown token is refused", "main-token", []string{"client-token"}, "Bearer other-token", 401},
		{"an empty other token never matches an empty bearer", "main-token", []string{""}, "Bearer ", 401},
		{"a removed client's token is refused", "main-token", nil, "Bearer client-token", 401},
		{"without a main token nothing is checked", "", []string{"client-token"}, "", 200},
	}
	for _, s := range steps {
		setMain(s.main)
		setOthers(s.others...)
		if res, body := get(t, srv, guardRequest{auth: s.auth}); res.StatusCode != s.wantStatus {
			t.Errorf("%s: status = %d, want %d; body %q", s.name, res.StatusCode, s.wantStatus, body)
		}
	}
}

// startRaw serves handler, built from the listener's loopback names, on a
// free loopback port, for requests net/http's client will not send: a
// declared body that never comes, a body that stalls.
func startRaw(t *testing.T, handler func(hosts []string) http.Handler) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.Handler = handler(LoopbackHosts(srv.Listener.Addr()))
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// rawExchange writes head (and any body bytes after it) on a new
// connection to addr and reads one response, failing the test if none
// comes within wait. It returns the connection for what follows.
func rawExchange(t *testing.T, addr, head string) (*http.Response, string, *bufio.Reader, net.Conn) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, wait)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(wait))
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatalf("write: %v", err)
	}
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no response within %v: %v", wait, err)
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read response body: %v", err)
	}
	return res, string(body), br, c
}

// rawHead is an HTTP/1.1 POST head for addr with the given header lines; a
// "Host: …" line replaces addr.
func rawHead(addr string, lines ...string) string {
	var b strings.Builder
	b.WriteString("POST / HTTP/1.1\r\n")
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "Host:") }) {
		fmt.Fprintf(&b, "Host: %s\r\n", addr)
	}
	for _, l := range lines {
		b.WriteString(l + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

// expectClosed fails the test unless the server closes c within wait and
// sends nothing more before that.
func expectClosed(t *testing.T, br *bufio.Reader, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(wait))
	n, err := br.Read(make([]byte, 1))
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Fatalf("connection still open %v later, want it closed by the server", wait)
	case err == nil:
		t.Fatalf("read %d more bytes, want the connection closed", n)
	}
}

// A refused request is answered at once, however much body it announces,
// and its connection is closed: a client that declares a body and never
// sends it must not hold a connection (and its file descriptor). Checks run
// in the order DNS-rebinding 403, 401, 413. The guard runs with the default
// BodyTimeout (30 s), far beyond wait, so an answer within wait did not
// come from the body deadline. The 413 too is answered at once; its
// connection then waits for the body to be thrown away, up to
// DiscardTimeout (short here; TestDiscardAfter413IsBounded shows it).
func TestWrapRefusesInOrderWithoutWaitingForTheBody(t *testing.T) {
	t.Parallel()
	addr := startRaw(t, func(hosts []string) http.Handler {
		g := New(&Options{Hosts: hosts, Token: func() string { return "secret-token" }, DiscardTimeout: 200 * time.Millisecond})
		return g.Deadline(g.Wrap(echo))
	})
	huge := fmt.Sprintf("Content-Length: %d", DefaultMaxBodyBytes+1)
	tests := []struct {
		name       string
		head       string
		wantStatus int
	}{
		{"no token and a body that never comes get 401 at once",
			rawHead(addr, "Content-Length: 100"), 401},
		{"a wrong token and a body that never comes get 401 at once",
			rawHead(addr, "Content-Length: 100", "Authorization: Bearer wrong-token"), 401},
		{"no token and a chunked body that never comes get 401 at once",
			rawHead(addr, "Transfer-Encoding: chunked"), 401},
		{"a foreign Host, the token and a body that never comes get 403 at once",
			rawHead(addr, "Host: evil.example", "Content-Length: 100", "Authorization: Bearer secret-token"), 403},
		{"a foreign Origin, the token and a body that never comes get 403 at once",
			rawHead(addr, "Origin: http://evil.example", "Content-Length: 100", "Authorization: Bearer secret-token"), 403},
		{"a foreign Host, no token and a huge body get 403",
			rawHead(addr, "Host: evil.example", huge), 403},
		{"a foreign Host, the token and a huge body get 403",
			rawHead(addr, "Host: evil.example", huge, "Authorization: Bearer secret-token"), 403},
		{"the own Host, no token and a huge body get 401",
			rawHead(addr, huge), 401},
		{"the own Host, the token and a huge body get 413",
			rawHead(addr, huge, "Authorization: Bearer secret-token"), 413},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, body, br, c := rawExchange(t, addr, tt.head)
			if res.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %q", res.StatusCode, tt.wantStatus, body)
			}
			if !res.Close { // ReadResponse moves Connection: close here
				t.Errorf("the response does not say Connection: close; header %v", res.Header)
			}
			wantChallenge := Challenge
			if strings.Contains(tt.head, "Authorization:") {
				wantChallenge = InvalidTokenChallenge
			}
			if got := res.Header.Get("WWW-Authenticate"); tt.wantStatus == 401 && got != wantChallenge {
				t.Errorf("WWW-Authenticate = %q, want %q", got, wantChallenge)
			}
			expectClosed(t, br, c)
		})
	}
}

// The challenge keeps the bare Bearer challenge's form (scheme and realm
// first, so a client that parsed it before still does) and adds RFC 6750's
// error parameters only when a credential was sent: a wrong token is told
// apart from a missing one, which mcp-remote and other OAuth-aware clients
// read from the header.
func TestChallengeFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, auth, want string
	}{
		{"a request without Authorization gets the bare challenge", "", `Bearer realm="wraptool"`},
		{"a wrong bearer token gets invalid_token with a description", "Bearer wrong",
			`Bearer realm="wraptool", error="invalid_token", error_description="the bearer token does not match this server's token file"`},
		{"a credential under another scheme gets invalid_token too", "Basic dXNlcjpwYXNz",
			`Bearer realm="wraptool", error="invalid_token", error_description="the bearer token does not match this server's token file"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			if tt.auth != "" {
				r.Header.Set("Authorization", tt.auth)
			}
			if got := ChallengeFor(r); got != tt.want {
				t.Errorf("ChallengeFor = %q, want %q", got, tt.want)
			}
			if !strings.HasPrefix(ChallengeFor(r), Challenge) {
				t.Errorf("ChallengeFor = %q, want it to begin with %q", ChallengeFor(r), Challenge)
			}
		})
	}
}

// WrapMethods answers a method the route does not serve with 405 and its
// Allow header, after the DNS-rebinding check and before the token (the
// HTTP surface rules' order: 403, 405, 401, 413), at once and without
// reading the body.
func TestWrapMethodsRefusesInOrder(t *testing.T) {
	t.Parallel()
	// The route of legacy SSE: GET, or POST to a session's message endpoint.
	sse := func(r *http.Request) (bool, string) {
		return r.Method == http.MethodGet || r.Method == http.MethodPost && r.URL.Query().Get("sessionid") != "", "GET"
	}
	addr := startRaw(t, func(hosts []string) http.Handler {
		g := New(&Options{Hosts: hosts, Token: func() string { return "secret-token" }, DiscardTimeout: 200 * time.Millisecond})
		return g.Deadline(g.WrapMethods(sse, echo))
	})
	head := func(method, target string, lines ...string) string {
		return strings.Replace(rawHead(addr, lines...), "POST / ", method+" "+target+" ", 1)
	}
	tests := []struct {
		name       string
		head       string
		wantStatus int
		wantAllow  string
	}{
		{"a POST without a session and without a token gets 405 with Allow: GET",
			head("POST", "/sse", "Content-Length: 100"), 405, "GET"},
		{"a POST without a session and with a wrong token gets 405",
			head("POST", "/sse", "Content-Length: 100", "Authorization: Bearer wrong"), 405, "GET"},
		{"a DELETE gets 405", head("DELETE", "/sse", "Authorization: Bearer secret-token"), 405, "GET"},
		{"a foreign Host comes first: 403, not 405",
			head("POST", "/sse", "Host: evil.example", "Content-Length: 100"), 403, ""},
		{"a POST to a session's endpoint without a token gets 401",
			head("POST", "/sse?sessionid=abc", "Content-Length: 100"), 401, ""},
		{"a POST to a session's endpoint with the token and a huge body gets 413",
			head("POST", "/sse?sessionid=abc", fmt.Sprintf("Content-Length: %d", DefaultMaxBodyBytes+1), "Authorization: Bearer secret-token"), 413, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, body, br, c := rawExchange(t, addr, tt.head)
			if res.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %q", res.StatusCode, tt.wantStatus, body)
			}
			if got := res.Header.Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow = %q, want %q", got, tt.wantAllow)
			}
			if !res.Close {
				t.Errorf("the response does not say Connection: close; header %v", res.Header)
			}
			expectClosed(t, br, c)
		})
	}
	t.Run("a served method reaches the handler", func(t *testing.T) {
		t.Parallel()
		res, body, _, _ := rawExchange(t, addr, head("GET", "/sse", "Authorization: Bearer secret-token"))
		if res.StatusCode != 200 {
			t.Fatalf("status = %d, want 200; body %q", res.StatusCode, body)
		}
	})
}

// RefuseJSON answers with the JSON body and closes the connection without
// waiting for a body that never comes.
func TestRefuseJSON(t *testing.T) {
	t.Parallel()
	addr := startRaw(t, func([]string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			RefuseJSON(w, r, http.StatusNotFound, map[string]string{"error": "not_supported"})
		})
	})
	res, body, br, c := rawExchange(t, addr, rawHead(addr, "Content-Length: 100"))
	if res.StatusCode != 404 || body != "{\"error\":\"not_supported\"}\n" {
		t.Fatalf("status %d, body %q; want 404 and the JSON", res.StatusCode, body)
	}
	if got := res.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", got)
	}
	expectClosed(t, br, c)
}

// A body that stalls is dropped after BodyTimeout, whether a guarded
// handler reads it (408) or an unguarded one leaves it unread and net/http
// waits for its end to reuse the connection (Deadline's case).
func TestBodyTimeoutDropsAStalledBody(t *testing.T) {
	t.Parallel()
	const bodyTimeout = 300 * time.Millisecond
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })
	tests := []struct {
		name       string
		handler    func(g *Guard) http.Handler
		wantStatus int
	}{
		{"Wrap alone answers 408", func(g *Guard) http.Handler { return g.Wrap(echo) }, http.StatusRequestTimeout},
		{"Wrap inside Deadline answers 408", func(g *Guard) http.Handler { return g.Deadline(g.Wrap(echo)) }, http.StatusRequestTimeout},
		{"Deadline around a handler that does not read the body closes the connection",
			func(g *Guard) http.Handler { return g.Deadline(ok) }, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			addr := startRaw(t, func([]string) http.Handler { return tt.handler(New(&Options{BodyTimeout: bodyTimeout})) })
			sent := time.Now()
			res, body, br, c := rawExchange(t, addr, rawHead(addr, "Content-Length: 100")+"only part")
			if elapsed := time.Since(sent); elapsed < bodyTimeout {
				t.Errorf("answered after %v, want no sooner than BodyTimeout %v", elapsed, bodyTimeout)
			}
			if res.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d; body %q", res.StatusCode, tt.wantStatus, body)
			}
			if !res.Close {
				t.Errorf("the response does not say Connection: close; header %v", res.Header)
			}
			expectClosed(t, br, c)
		})
	}
}

// The body deadline applies only while a body is read: a response that
// streams or comes late outlives BodyTimeout, whether its request had a
// body (ReadBody clears the deadline) or not (Deadline sets none).
func TestBodyTimeoutSparesLongResponses(t *testing.T) {
	t.Parallel()
	const bodyTimeout = 200 * time.Millisecond
	late := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("early "))
		http.NewResponseController(w).Flush()
		// Time must pass here and nothing signals it: a deadline wrongly
		// left on the connection ends the request's context within it.
		select {
		case <-r.Context().Done():
		case <-time.After(2 * bodyTimeout):
			w.Write([]byte("late"))
		}
	})
	g := New(&Options{BodyTimeout: bodyTimeout})
	srv := httptest.NewServer(g.Deadline(g.Wrap(late)))
	t.Cleanup(srv.Close)
	for _, req := range []guardRequest{{}, {body: "a body"}, {body: "a chunked body", chunked: true}} {
		if _, body := get(t, srv, req); body != "early late" {
			t.Errorf("request with body %q: response %q, want %q", req.body, body, "early late")
		}
	}
}

// A 401 says which case it is, whole (a client shows this body as its
// error), and never repeats the token it was sent: the body is compared
// whole, so nothing of what was sent can be in it.
func TestUnauthorizedBodySaysWhichCase(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(New(&Options{Token: func() string { return "secret-token" }}).Wrap(echo))
	t.Cleanup(srv.Close)
	const wrong = "the bearer token does not match this server's token file\n"
	tests := []struct {
		name, auth, want string
	}{
		{"no Authorization header is no bearer token", "", "no bearer token\n"},
		{"a wrong token does not match the token file", "Bearer wrong-token-4f1c", wrong},
		{"an empty bearer does not match the token file", "Bearer ", wrong},
		{"another scheme does not match the token file", "Basic d3JvbmctdG9rZW4tNGYxYw==", wrong},
		{"a token with markup is not echoed", "Bearer <script>wrong-token-4f1c</script>", wrong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, body := get(t, srv, guardRequest{auth: tt.auth})
			if res.StatusCode != 401 || body != tt.want {
				t.Fatalf("got %d %q, want 401 %q", res.StatusCode, body, tt.want)
			}
		})
	}
}

// startGuarded serves Deadline(Wrap(echo)) with the token "secret-token",
// as the hub does, on a loopback port, and returns its address.
func startGuarded(t *testing.T, o Options) string {
	t.Helper()
	return startRaw(t, func(hosts []string) http.Handler {
		o.Hosts, o.Token = hosts, func() string { return "secret-token" }
		g := New(&o)
		return g.Deadline(g.Wrap(echo))
	})
}

// An authenticated client sending a body over the limit reads its 413 and
// its reason, not a connection reset, whether it reads the answer while it
// sends (net/http's client) or only once it has sent everything (a simple
// client): the guard reads and throws away the rest of the body before the
// connection closes. Without that read, the server closes with the
// client's bytes unread, the kernel answers them with a reset, and the
// client's kernel drops the 413 it had received but not yet read.
func TestOversizedAuthenticatedBodyGets413(t *testing.T) {
	t.Parallel()
	addr := startGuarded(t, Options{})
	const wantBody = "request body too large: the limit is 4194304 bytes\n"
	tests := []struct {
		name    string
		size    int
		chunked bool
	}{
		{"a 5 MB body with a Content-Length", 5_000_000, false},
		{"a 20 MB body with a Content-Length", 20_000_000, false},
		{"a 5 MB chunked body without a Content-Length", 5_000_000, true},
		{"a 20 MB chunked body without a Content-Length", 20_000_000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name+", read while sending", func(t *testing.T) {
			t.Parallel()
			var body io.Reader = bytes.NewReader(bytes.Repeat([]byte("a"), tt.size))
			if tt.chunked {
				body = io.MultiReader(body)
			}
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/", body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer secret-token")
			client := &http.Client{Timeout: wait}
			res, err := client.Do(req)
			if err != nil {
				t.Fatalf("POST: %v, want a 413", err)
			}
			defer res.Body.Close()
			got, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatalf("read the 413's body: %v", err)
			}
			if res.StatusCode != 413 || string(got) != wantBody || !res.Close {
				t.Errorf("got %d %q (Connection: close %v), want 413 %q with Connection: close", res.StatusCode, got, res.Close, wantBody)
			}
		})
		t.Run(tt.name+", read after sending", func(t *testing.T) {
			t.Parallel()
			var msg bytes.Buffer
			if tt.chunked {
				msg.WriteString(rawHead(addr, "Authorization: Bearer secret-token", "Transfer-Encoding: chunked"))
				chunk := bytes.Repeat([]byte("a"), 1<<20)
				for left := tt.size; left > 0; left -= len(chunk) {
					c := chunk[:min(len(chunk), left)]
					fmt.Fprintf(&msg, "%x\r\n%s\r\n", len(c), c)
				}
				msg.WriteString("0\r\n\r\n")
			} else {
				msg.WriteString(rawHead(addr, "Authorization: Bearer secret-token", fmt.Sprintf("Content-Length: %d", tt.size)))
				msg.Write(bytes.Repeat([]byte("a"), tt.size))
			}
			res, got, br, c := rawExchange(t, addr, msg.String())
			if res.StatusCode != 413 || got != wantBody || !res.Close {
				t.Errorf("got %d %q (Connection: close %v), want 413 %q with Connection: close", res.StatusCode, got, res.Close, wantBody)
			}
			expectClosed(t, br, c)
		})
	}
}

// The read that follows a 413 is bounded: a client trickling its body
// holds the connection until DiscardTimeout, no longer; a body sent past
// DiscardBytes is read no further; a body declared longer than
// DiscardBytes, or one the client waits to be asked for (Expect:
// 100-continue), is refused at once, its bytes never read. The 413 comes
// first in each case. BodyTimeout stays at its default (30 s, beyond
// wait): an end within wait came from the discard bounds.
func TestDiscardAfter413IsBounded(t *testing.T) {
	t.Parallel()
	const discardTimeout = 300 * time.Millisecond
	addr := startGuarded(t, Options{MaxBodyBytes: 100, DiscardBytes: 1 << 20, DiscardTimeout: discardTimeout})
	auth := "Authorization: Bearer secret-token"
	tests := []struct {
		name string
		head string
		// first is sent with the head; then trickle is sent, a byte
		// every few milliseconds, until the connection closes.
		first   string
		trickle bool
		// flood sends this many more bytes, as fast as the server takes
		// them, until the connection closes.
		flood       int
		wantAtLeast time.Duration // the connection stays open this long
	}{
		{"a body trickled past the deadline is cut at DiscardTimeout",
			rawHead(addr, auth, "Content-Length: 1000000"), strings.Repeat("a", 101), true, 0, discardTimeout},
		{"a chunked body trickled past the deadline is cut at DiscardTimeout",
			rawHead(addr, auth, "Transfer-Encoding: chunked"), "f4240\r\n" + strings.Repeat("a", 101), true, 0, discardTimeout},
		{"a chunked body past DiscardBytes is read no further",
			rawHead(addr, auth, "Transfer-Encoding: chunked"), "8000000\r\n", false, 4 << 20, 0},
		{"a body declared past DiscardBytes is refused at once",
			rawHead(addr, auth, fmt.Sprintf("Content-Length: %d", 1<<21)), "", false, 0, 0},
		{"a body sent only when asked for (Expect: 100-continue) is refused at once",
			rawHead(addr, auth, "Content-Length: 1000", "Expect: 100-continue"), "", false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := net.DialTimeout("tcp", addr, wait)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			t.Cleanup(func() { c.Close() })
			c.SetDeadline(time.Now().Add(wait))
			start := time.Now()
			if _, err := io.WriteString(c, tt.head+tt.first); err != nil {
				t.Fatalf("write: %v", err)
			}
			stop := make(chan struct{})
			sent := make(chan struct{})
			go func() {
				defer close(sent)
				tick := time.NewTicker(10 * time.Millisecond)
				defer tick.Stop()
				flood := bytes.Repeat([]byte("a"), 64<<10)
				for left := tt.flood; tt.trickle || left > 0; left -= len(flood) {
					var err error
					if tt.trickle {
						select {
						case <-stop:
							return
						case <-tick.C:
						}
						_, err = c.Write([]byte("a"))
					} else {
						_, err = c.Write(flood)
					}
					if err != nil {
						return // the server closed: what the test waits for
					}
				}
			}()
			t.Cleanup(func() { close(stop); <-sent })
			br := bufio.NewReader(c)
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no response: %v", err)
			}
			body, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatalf("read the response's body: %v", err)
			}
			if res.StatusCode != 413 || !strings.Contains(string(body), "the limit is 100 bytes") {
				t.Fatalf("got %d %q, want 413 saying the limit", res.StatusCode, body)
			}
			expectClosed(t, br, c)
			if elapsed := time.Since(start); elapsed < tt.wantAtLeast {
				t.Errorf("closed after %v, want no sooner than %v", elapsed, tt.wantAtLeast)
			}
		})
	}
}

// A client without valid credentials gets nothing of the read that follows
// a 413: however large the body it declares, its 401 comes at once, with
// Connection: close, and the connection closes without a byte of the body
// read. DiscardTimeout is an hour here, so a close within wait did not come
// from the discard's deadline.
func TestUnauthenticatedOversizedBodyIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	addr := startGuarded(t, Options{DiscardTimeout: time.Hour})
	const twenty = "Content-Length: 20000000"
	tests := []struct {
		name, head string
	}{
		{"no token and a 20 MB body", rawHead(addr, twenty)},
		{"a wrong token and a 20 MB body", rawHead(addr, twenty, "Authorization: Bearer wrong-token")},
		{"no token and a chunked body", rawHead(addr, "Transfer-Encoding: chunked")},
		{"a wrong token and a 20 MB body announced with Expect: 100-continue", rawHead(addr, twenty, "Expect: 100-continue", "Authorization: Bearer wrong-token")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, body, br, c := rawExchange(t, addr, tt.head)
			if res.StatusCode != 401 || !res.Close {
				t.Fatalf("got %d %q (Connection: close %v), want 401 with Connection: close", res.StatusCode, body, res.Close)
			}
			expectClosed(t, br, c)
		})
	}
}
