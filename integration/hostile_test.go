package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/actors"
	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/toolset"
)

// Hostile input against the built binary's MCP listener: a client that
// never finishes its headers, bodies that are not what JSON-RPC expects,
// token guessing, and a flood of capability requests. Each test ends by
// checking the server still serves.

// expectStillServing checks, after an attack, that the server answers
// /healthz, that a new session lists the wrapped tools, and that it
// logged no panic.
func expectStillServing(t *testing.T, s *server) {
	t.Helper()
	resp, err := (&http.Client{Timeout: eventTimeout}).Get(s.URL + "/healthz")
	if err != nil {
		t.Fatalf("/healthz after the attack: %v\n%s", err, s.Log())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !healthzOK(string(body)) {
		t.Errorf("/healthz after the attack = %d %q, want 200 ok", resp.StatusCode, body)
	}
	if got := s.Connect(t, "/mcp").WrappedTools(t); len(got) != 1 || got[0] != "fake_pull" {
		t.Errorf("tools/list after the attack = %v, want [fake_pull]", got)
	}
	if log := s.Log(); strings.Contains(log, "panic") {
		t.Errorf("the server log mentions a panic:\n%s", log)
	}
}

// A client that opens a connection and sends half a request, then nothing,
// loses the connection at the header deadline (10 s); meanwhile the server
// serves everyone else.
func TestHostileSlowHeaders(t *testing.T) {
	slow(t, "slow headers and the header deadline")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, toolsPull))
	c := s.Connect(t, "/mcp")

	host := strings.TrimPrefix(s.URL, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	opened := time.Now()
	// A request line and some headers, without the blank line that ends
	// them; a valid token, so only the header deadline can end this.
	if _, err := fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: appl", host, s.Token); err != nil {
		t.Fatal(err)
	}

	// While that connection is held, a normal session is served at once.
	listed := time.Now()
	if got := c.WrappedTools(t); len(got) != 1 || got[0] != "fake_pull" {
		t.Errorf("tools/list while a connection hangs = %v, want [fake_pull]", got)
	}
	t.Logf("tools/list while the slow connection was open took %v", time.Since(listed).Round(time.Millisecond))

	// The server closes it: the read ends (EOF, or a reset) well before
	// our own bound, and nothing but perhaps an error status arrives.
	const bound = 20 * time.Second
	conn.SetReadDeadline(opened.Add(bound))
	data, err := io.ReadAll(conn)
	lived := time.Since(opened)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the half-sent request's connection was still open after %v (want it closed by the %v header deadline)", bound, actors.ReadHeaderTimeout)
	}
	if len(data) > 0 && !bytes.HasPrefix(data, []byte("HTTP/1.1 4")) {
		t.Errorf("the server answered the half-sent request with %q, want nothing or a 4xx", data)
	}
	if lived < actors.ReadHeaderTimeout-time.Second {
		// Not a failure of the promise, but worth knowing: something
		// other than the header deadline closed it.
		t.Logf("the connection closed after only %v", lived)
	}
	t.Logf("the half-sent request's connection lived %v (read %q, %v)", lived.Round(time.Millisecond), data, err)

	expectStillServing(t, s)
}

// rawMCP is a Streamable HTTP session opened by hand, so a test can send
// bodies the SDK's client never would.
type rawMCP struct {
	s       *server
	client  *http.Client
	session string
}

// openRawMCP initializes a session with a plain POST and returns it.
func openRawMCP(t *testing.T, s *server) *rawMCP {
	t.Helper()
	r := &rawMCP{s: s, client: &http.Client{Timeout: eventTimeout}}
	status, hdr, body, err := r.post([]byte(initializeBody))
	if err != nil || status != 200 || hdr.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize = %d %q (session %q), %v", status, body, hdr.Get("Mcp-Session-Id"), err)
	}
	r.session = hdr.Get("Mcp-Session-Id")
	if status, _, body, err := r.post([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil || status/100 != 2 {
		t.Fatalf("notifications/initialized = %d %q, %v", status, body, err)
	}
	t.Cleanup(func() {
		req, _ := http.NewRequest(http.MethodDelete, s.URL+"/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+s.Token)
		req.Header.Set("Mcp-Session-Id", r.session)
		if resp, err := r.client.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	return r
}

// post sends body to /mcp with the token (and the session once there is
// one) and returns the answer, its body read whole (bounded by the
// client's timeout).
func (r *rawMCP) post(body []byte) (status int, hdr http.Header, answer string, err error) {
	req, err := http.NewRequest(http.MethodPost, r.s.URL+"/mcp", bytes.NewReader(body))
	if err != nil {
		return 0, nil, "", err
	}
	req.Header.Set("Authorization", "Bearer "+r.s.Token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if r.session != "" {
		req.Header.Set("Mcp-Session-Id", r.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(data), err
}

// Bodies that are not a JSON-RPC request each get an error, promptly, and
// leave the server serving.
func TestHostileMalformedJSONRPC(t *testing.T) {
	slow(t, "malformed JSON-RPC bodies")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, toolsPull))
	raw := openRawMCP(t, s)

	limit := int(actors.MaxBodyBytes)
	hugeString := func() []byte {
		head := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"no_such_tool","arguments":{"x":"`
		tail := `"}}}`
		pad := limit - len(head) - len(tail) - 1024 // just under the limit
		return []byte(head + strings.Repeat("A", pad) + tail)
	}()
	tests := []struct {
		name string
		body []byte
		// want413 for the body over the limit; every other body must get a
		// 4xx or a JSON-RPC error (a 200 whose body holds "error").
		want413 bool
		// wantBatch for a body that is a JSON array: the hub's 400 with
		// its JSON-RPC -32600 error, before the SDK sees it.
		wantBatch bool
	}{
		{name: "not JSON", body: []byte("this is not json {")},
		{name: "empty body", body: []byte("")},
		{name: "a JSON-RPC batch", body: []byte(`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`), wantBatch: true},
		{name: "id is an object", body: []byte(`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`)},
		{name: "method is a number", body: []byte(`{"jsonrpc":"2.0","id":3,"method":42}`)},
		{name: "params of the wrong type", body: []byte(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":"call everything"}`)},
		{name: "a JSON scalar", body: []byte(`12345`)},
		{name: "100,000 unclosed brackets", body: bytes.Repeat([]byte("["), 100_000), wantBatch: true},
		{name: "100,000 nested arrays as params", body: []byte(`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":` +
			strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}`)},
		{name: "a 5 MiB body", body: append(append([]byte(`{"jsonrpc":"2.0","id":6,"method":"ping","params":{"x":"`),
			bytes.Repeat([]byte("A"), 5<<20)...), `"}}`...), want413: true},
		{name: "a string field just under the limit", body: hugeString},
	}
	for _, tt := range tests {
		start := time.Now()
		status, _, answer, err := raw.post(tt.body)
		took := time.Since(start)
		short := answer
		if len(short) > 200 {
			short = short[:200] + "…"
		}
		t.Logf("%s (%d bytes): %d in %v: %q", tt.name, len(tt.body), status, took.Round(time.Millisecond), short)
		switch {
		case err != nil:
			t.Errorf("%s: no answer: %v (after %v)", tt.name, err, took)
		case tt.want413 && status != http.StatusRequestEntityTooLarge:
			t.Errorf("%s: status %d, want 413", tt.name, status)
		case tt.wantBatch && (status != http.StatusBadRequest || answer != batchRefusal):
			t.Errorf("%s: status %d with %q, want 400 with %q", tt.name, status, short, batchRefusal)
		case !tt.want413 && status/100 == 5:
			t.Errorf("%s: status %d, want a 4xx or a JSON-RPC error", tt.name, status)
		case !tt.want413 && status/100 == 2 && !strings.Contains(answer, `"error"`) && !strings.Contains(answer, `"isError":true`):
			t.Errorf("%s: status %d with %q, want a JSON-RPC error or a tool error", tt.name, status, short)
		}
		if took > eventTimeout {
			t.Errorf("%s: the answer took %v", tt.name, took)
		}
	}

	// The hand-made session itself still works after all that.
	if status, _, answer, err := raw.post([]byte(`{"jsonrpc":"2.0","id":100,"method":"tools/list"}`)); err != nil || status != 200 || !strings.Contains(answer, `"fake_pull"`) {
		t.Errorf("tools/list on the same session afterwards = %d %.300q, %v", status, answer, err)
	}
	expectStillServing(t, s)
}

// Wrong tokens of every shape get 401 at once; the real one still works;
// the server's log never holds it. Timing is not measured here: the
// compare is constant-time by construction (SHA-256 of both sides, then
// subtle.ConstantTimeCompare; see webui/httpguard.BearerMatches), so a
// guess's answer time says nothing about how close it was.
func TestHostileTokenGuessing(t *testing.T) {
	slow(t, "token guessing")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, toolsPull))
	tok := s.Token
	if len(tok) < 16 {
		t.Fatalf("token %d characters long, want a generated one", len(tok))
	}
	shapes := []string{
		"",                      // Authorization: Bearer (nothing)
		"a",                     // one character
		tok[:1],                 // its first character
		tok[:len(tok)/2],        // half of it
		tok[:len(tok)-1],        // all but the last character
		tok + "0",               // the token plus one
		tok + tok,               // twice
		strings.ToUpper(tok),    // another case
		" " + tok[:len(tok)-1],  // padded prefix
		strings.Repeat("0", 64), // the right length, all zeros
		strings.Repeat("x", 4000),
	}
	var guesses []string
	for i := range 200 {
		g := shapes[i%len(shapes)]
		if i >= len(shapes) && len(g) > 0 {
			// Vary the rest: flip one character of the shape.
			b := []byte(g)
			j := i % len(b)
			b[j] = "0123456789abcdefXYZ"[(i/len(shapes))%19]
			if string(b) == tok {
				b[j] = '!'
			}
			g = string(b)
		}
		guesses = append(guesses, g)
	}

	client := &http.Client{Timeout: eventTimeout}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		slowest time.Duration
		errs    = make(chan error, len(guesses)+1)
		work    = make(chan int)
	)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				header := "Bearer " + guesses[i]
				if i%25 == 0 {
					header = "Basic " + tok // the real token, the wrong scheme
				}
				req, _ := http.NewRequest(http.MethodPost, s.URL+"/mcp", strings.NewReader(initializeBody))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Authorization", header)
				start := time.Now()
				resp, err := client.Do(req)
				took := time.Since(start)
				if err != nil {
					errs <- fmt.Errorf("guess %d: %v", i, err)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
					errs <- fmt.Errorf("guess %d (%d chars): %d, WWW-Authenticate %q; want 401 with a Bearer challenge",
						i, len(guesses[i]), resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
				}
				mu.Lock()
				slowest = max(slowest, took)
				mu.Unlock()
			}
		})
	}
	start := time.Now()
	for i := range guesses {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d wrong guesses answered in %v, the slowest in %v", len(guesses), time.Since(start).Round(time.Millisecond), slowest.Round(time.Millisecond))
	if slowest > 5*time.Second {
		t.Errorf("a wrong guess took %v to refuse, want it refused at once", slowest)
	}

	// The real token still works, in a new session.
	if status, _, body := (rawRequest{method: "POST", path: "/mcp", token: tok}).do(t, s); status != 200 {
		t.Errorf("the real token after 200 guesses: %d %q, want 200", status, body)
	}
	expectStillServing(t, s)
	if strings.Contains(s.Log(), tok) {
		t.Errorf("the server log contains the token")
	}
}

// 64 sessions file capability requests as fast as they can: every call is
// answered with a result (recorded, or a limit's tool error), never a
// transport failure; the request log stays whole.
func TestHostileRequestFlood(t *testing.T) {
	slow(t, "a flood of capability requests")
	t.Parallel()
	const sessions, perSession = 64, 20
	tests := []struct {
		name    string
		prefill int // pending requests already in the log
		want    int // requests the flood may record
	}{
		// 64 sessions × 10: only the per-session limit bites.
		{name: "empty log", prefill: 0, want: sessions * toolset.MaxPendingPerSession},
		// Room for 300 more: the global limit must hold exactly, with
		// every session racing for the last slots.
		{name: "near the pending limit", prefill: requests.MaxPending - 300, want: 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			hostileFlood(t, sessions, perSession, tt.prefill, tt.want)
		})
	}
}

func hostileFlood(t *testing.T, sessions, perSession, prefill, want int) {
	dir := t.TempDir()
	path := filepath.Join(dir, "requests.jsonl")
	var lines []byte
	for i := range prefill {
		lines = append(lines, pendingLine(t, fmt.Sprintf("req_%08x", i), "fake", []string{fmt.Sprintf("pre%d", i)})...)
	}
	if err := os.WriteFile(path, lines, 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServerIn(t, dir, serverConfig(t, dir, toolsPull))
	clients := make([]*mcpClient, sessions)
	for i := range clients {
		clients[i] = s.Connect(t, "/mcp")
	}

	var (
		wg                 sync.WaitGroup
		mu                 sync.Mutex
		recorded           = map[string]bool{}
		perLimit, allLimit int
		errs               = make(chan error, sessions*perSession)
		start              = make(chan struct{})
	)
	for i, c := range clients {
		wg.Go(func() {
			<-start
			for j := range perSession {
				// Not c.Call: t.Fatal must not run off the test's goroutine.
				ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
				res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: requestTool,
					Arguments: askFor("fake", []string{fmt.Sprintf("s%d-%d", i, j)}, []string{"--flag"}, "flood", "nothing")})
				cancel()
				if err != nil {
					errs <- fmt.Errorf("session %d call %d: %v", i, j, err)
					continue
				}
				var out struct{ ID string }
				data, _ := json.Marshal(res.StructuredContent)
				json.Unmarshal(data, &out)
				text := ""
				for _, content := range res.Content {
					if tc, ok := content.(*mcp.TextContent); ok {
						text += tc.Text
					}
				}
				mu.Lock()
				switch {
				case !res.IsError && idPattern.MatchString(out.ID):
					if recorded[out.ID] {
						errs <- fmt.Errorf("id %s given twice", out.ID)
					}
					recorded[out.ID] = true
				case res.IsError && strings.Contains(text, "requests awaiting the"):
					perLimit++
				case res.IsError && strings.Contains(text, "pending limit is reached"):
					allLimit++
				default:
					errs <- fmt.Errorf("session %d call %d: isError %v %q, structuredContent %s", i, j, res.IsError, text, data)
				}
				mu.Unlock()
			}
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d calls in %v: %d recorded, %d refused by the per-session limit, %d by the pending limit",
		sessions*perSession, time.Since(began).Round(time.Millisecond), len(recorded), perLimit, allLimit)
	if len(recorded) != want {
		t.Errorf("%d requests recorded, want %d (%d sessions × the per-session limit of %d, %d pending already, the limit %d)",
			len(recorded), want, sessions, toolset.MaxPendingPerSession, prefill, requests.MaxPending)
	}
	if prefill+want >= requests.MaxPending && allLimit == 0 {
		t.Errorf("no call was refused by the pending limit, want the calls beyond it refused")
	}

	objs := logObjects(t, configtest.ReadFile(t, s.RequestLog))
	inLog := map[string]bool{}
	for _, obj := range objs {
		var id string
		json.Unmarshal(obj["id"], &id)
		inLog[id] = true
	}
	if len(objs) != prefill+len(recorded) || len(inLog) != prefill+len(recorded) {
		t.Errorf("the request log has %d lines (%d ids), want the %d pre-filled and one per recorded request (%d)", len(objs), len(inLog), prefill, len(recorded))
	}
	recs, warns, err := requests.Read(s.RequestLog)
	if err != nil || len(warns) > 0 {
		t.Errorf("requests.Read after the flood = %d records, %v, warnings %v", len(recs), err, warns)
	}
	for id := range recorded {
		if !inLog[id] {
			t.Errorf("recorded id %s is not in the log", id)
		}
	}
	expectStillServing(t, s)
}
