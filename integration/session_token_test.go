package integration

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/policy/config/configtest"
)

// wire is a raw HTTP client of one server, each request with the token
// given, so a test can send a session's requests with another token.
type wire struct {
	t      *testing.T
	s      *server
	client *http.Client
	// protocols is the version each session negotiated, sent as
	// Mcp-Protocol-Version on its requests as a client does.
	protocols map[string]string
}

func newWire(t *testing.T, s *server) *wire {
	return &wire{t: t, s: s, client: &http.Client{Timeout: eventTimeout}, protocols: map[string]string{}}
}

// send makes one request: method on path, with token ("" for none), the
// session id ("" for none) and body (for a POST). It reads the answer
// whole unless it is a stream.
func (w *wire) send(method, path, token, session, body string) (int, http.Header, string) {
	w.t.Helper()
	var rd io.Reader
	if method == http.MethodPost {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, w.s.URL+path, rd)
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", cmp.Or(w.protocols[session], "2025-06-18"))
	}
	res, err := w.client.Do(req)
	if err != nil {
		w.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	var data []byte
	if method == http.MethodPost || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		data, _ = io.ReadAll(res.Body)
	}
	return res.StatusCode, res.Header, string(data)
}

// session initializes a Streamable HTTP session with token (init as the
// initialize request) and sends notifications/initialized.
func (w *wire) session(token, init string) string {
	w.t.Helper()
	status, hdr, body := w.send(http.MethodPost, "/mcp", token, "", init)
	id := hdr.Get("Mcp-Session-Id")
	if status != 200 || id == "" {
		w.t.Fatalf("initialize = %d %q (session %q)", status, body, id)
	}
	if _, rest, ok := strings.Cut(body, `"protocolVersion":"`); ok {
		w.protocols[id], _, _ = strings.Cut(rest, `"`)
	}
	if status, _, body := w.send(http.MethodPost, "/mcp", token, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != 202 {
		w.t.Fatalf("notifications/initialized = %d %q", status, body)
	}
	return id
}

// sse opens a legacy SSE stream with token and returns its session id;
// the stream ends with the test.
func (w *wire) sse(token string) string {
	w.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w.t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.s.URL+"/sse", nil)
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := (&http.Client{}).Do(req) // a stream: the context bounds it
	if err != nil || res.StatusCode != 200 {
		w.t.Fatalf("GET /sse = %v, %v", res, err)
	}
	w.t.Cleanup(func() { res.Body.Close() })
	got := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if _, id, ok := strings.Cut(sc.Text(), "sessionid="); ok && strings.HasPrefix(sc.Text(), "data: ") {
				got <- id
				return
			}
		}
		close(got)
	}()
	select {
	case id, ok := <-got:
		if !ok {
			w.t.Fatal("the SSE stream ended before its endpoint event")
		}
		return id
	case <-bounded(w.t).Done():
		w.t.Fatal("no SSE endpoint event")
	}
	return ""
}

const pingBody = `{"jsonrpc":"2.0","id":7,"method":"ping"}`

// refused checks a 403 that says the session belongs to another token and
// shows none of the tokens.
func refused(t *testing.T, what string, status int, body string, tokens ...string) {
	t.Helper()
	if status != http.StatusForbidden || !strings.Contains(body, "belongs to the bearer token that created it") {
		t.Errorf("%s = %d %q, want 403 saying the session belongs to its own token", what, status, body)
	}
	for _, tok := range tokens {
		if strings.Contains(body, tok) {
			t.Errorf("%s: the refusal shows a token: %q", what, body)
		}
	}
}

// With the real binary: a session belongs to the token it was created
// with. A request (POST, the GET stream, DELETE) on the main token's
// session with an elicitation client's token is refused with 403, and the
// reverse; each session goes on working with its own token; legacy SSE
// sessions likewise.
func TestSessionBelongsToItsToken(t *testing.T) {
	slow(t, "sessions bound to their token")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, elicitConfig(t, dir))
	elicit := strings.TrimSpace(string(configtest.ReadFile(t, filepath.Join(dir, "elicit-token"))))
	w := newWire(t, s)
	onMain := w.session(s.Token, initializeBody)
	onElicit := w.session(elicit, initializeBody)

	for _, c := range []struct {
		what, method, token, session string
	}{
		{"a ping on the main token's session with the elicit token", http.MethodPost, elicit, onMain},
		{"the main token's session's GET stream with the elicit token", http.MethodGet, elicit, onMain},
		{"ending the main token's session with the elicit token", http.MethodDelete, elicit, onMain},
		{"a ping on the elicit token's session with the main token", http.MethodPost, s.Token, onElicit},
	} {
		status, _, body := w.send(c.method, "/mcp", c.token, c.session, pingBody)
		refused(t, c.what, status, body, s.Token, elicit)
	}
	for _, c := range []struct{ token, session string }{{s.Token, onMain}, {elicit, onElicit}} {
		if status, _, body := w.send(http.MethodPost, "/mcp", c.token, c.session, pingBody); status != 200 || !strings.Contains(body, `"result"`) {
			t.Errorf("a ping with the session's own token = %d %q", status, body)
		}
	}

	sseMain, sseElicit := w.sse(s.Token), w.sse(elicit)
	status, _, body := w.send(http.MethodPost, "/sse?sessionid="+sseMain, elicit, "", initializeBody)
	refused(t, "a message to the main token's SSE session with the elicit token", status, body, s.Token, elicit)
	status, _, body = w.send(http.MethodPost, "/sse?sessionid="+sseElicit, s.Token, "", initializeBody)
	refused(t, "a message to the elicit token's SSE session with the main token", status, body, s.Token, elicit)
	for _, c := range []struct{ token, session string }{{s.Token, sseMain}, {elicit, sseElicit}} {
		if status, _, body := w.send(http.MethodPost, "/sse?sessionid="+c.session, c.token, "", initializeBody); status != 202 {
			t.Errorf("a message to an SSE session with its own token = %d %q", status, body)
		}
	}
	if log := s.Log(); strings.Contains(log, elicit) || strings.Contains(log, s.Token) {
		t.Error("the server log shows a token")
	}
}

// A rotated main token: the old one gets 401; the session it opened goes
// on with the new main token (the rotated replacement of the same role),
// and still not with the elicitation client's.
func TestSessionSurvivesTheRotationOfItsToken(t *testing.T) {
	slow(t, "a session across its token's rotation")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, elicitConfig(t, dir))
	elicit := strings.TrimSpace(string(configtest.ReadFile(t, filepath.Join(dir, "elicit-token"))))
	w := newWire(t, s)
	onMain := w.session(s.Token, initializeBody)
	sseMain := w.sse(s.Token)

	const rotated = "rotated-main-token-0123456789abcdef"
	configtest.ReplaceFile(t, filepath.Join(dir, "mcp-token"), rotated+"\n")
	waittest.Until(t, eventTimeout, func() error {
		if status, _, _ := w.send(http.MethodPost, "/mcp", s.Token, onMain, pingBody); status != http.StatusUnauthorized {
			return fmt.Errorf("the old token refused: status %d\n%s", status, s.Log())
		}
		return nil
	})

	if status, _, body := w.send(http.MethodPost, "/mcp", rotated, onMain, pingBody); status != 200 || !strings.Contains(body, `"result"`) {
		t.Errorf("the session with the rotated main token = %d %q, want it served", status, body)
	}
	status, _, body := w.send(http.MethodPost, "/mcp", elicit, onMain, pingBody)
	refused(t, "the session with the elicit token after the rotation", status, body, rotated, elicit, s.Token)
	if status, _, body := w.send(http.MethodPost, "/sse?sessionid="+sseMain, rotated, "", initializeBody); status != 202 {
		t.Errorf("the SSE session with the rotated main token = %d %q", status, body)
	}
	status, _, body = w.send(http.MethodPost, "/sse?sessionid="+sseMain, elicit, "", initializeBody)
	refused(t, "the SSE session with the elicit token after the rotation", status, body, rotated, elicit, s.Token)
}

// The finding, closed end to end: with an elicitation client configured,
// a session created with the main token by a client that declares
// elicitation sends wraptool_request_capability with the elicitation
// client's token. It is refused with 403 before the server sees it:
// nobody is asked and nothing is recorded. On its own token the same call
// files a request, and still nobody is asked (the main token's sessions
// never are).
func TestMainTokenSessionIsNeverAskedWhateverTheHeader(t *testing.T) {
	slow(t, "a main-token session never asked to elicit")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, elicitConfig(t, dir))
	elicit := strings.TrimSpace(string(configtest.ReadFile(t, filepath.Join(dir, "elicit-token"))))
	a := &asker{action: "accept", decision: "once"}
	session := connectWith(t, s, a.client(t), s.Token, "2025-06-18")
	if session.InitializeResult() == nil || session.ID() == "" {
		t.Fatal("no Streamable HTTP session")
	}

	call, err := jsonCall(8, "tools/call", map[string]any{"name": requestTool,
		"arguments": askFor("fake", []string{"status"}, []string{"--verbose"}, "smuggled through another token", "")})
	if err != nil {
		t.Fatal(err)
	}
	w := newWire(t, s)
	status, _, body := w.send(http.MethodPost, "/mcp", elicit, session.ID(), call)
	refused(t, "the request tool on the main token's session with the elicit token", status, body, s.Token, elicit)
	if q := a.questions(); len(q) != 0 {
		t.Errorf("the client was asked %d times, want never", len(q))
	}
	if data, err := os.ReadFile(s.RequestLog); err == nil && bytes.Contains(data, []byte("smuggled")) {
		t.Errorf("the refused request was recorded:\n%s", data)
	}

	// On its own token the session files the request, unasked.
	res, err := session.CallTool(bounded(t), &mcp.CallToolParams{Name: requestTool,
		Arguments: askFor("fake", []string{"status"}, []string{"--verbose"}, "on the session's own token", "")})
	if err != nil || res.IsError {
		t.Fatalf("the request tool on the session's own token: %v %v", res, err)
	}
	if q := a.questions(); len(q) != 0 {
		t.Errorf("the main token's session was asked %d times, want never", len(q))
	}
}

// jsonCall is a JSON-RPC request with id, method and params.
func jsonCall(id int, method string, params any) (string, error) {
	data, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return string(data), err
}
