package actors

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sseEvents is a legacy SSE stream opened by hand: its session id and the
// data of each message event on it, in order.
type sseEvents struct {
	id       string
	messages <-chan string
	close    func()
}

// openSSEEvents opens GET /sse with token and reads the endpoint event;
// the stream's message events then arrive on messages.
func (h *hubHarness) openSSEEvents(t *testing.T, token string) sseEvents {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", h.baseURL()+"/sse", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := (&http.Client{Transport: h.client.Transport}).Do(req)
	if err != nil {
		t.Fatalf("GET /sse: %v", err)
	}
	if res.StatusCode != 200 {
		t.Fatalf("GET /sse: status %d", res.StatusCode)
	}
	got := make(chan string, 1)
	messages := make(chan string, 100)
	go func() {
		defer close(messages)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			if name, ok := strings.CutPrefix(line, "event: "); ok {
				event = name
				continue
			}
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			switch event {
			case "endpoint":
				_, id, _ := strings.Cut(data, "sessionid=")
				got <- id
			case "message":
				messages <- data
			}
		}
	}()
	id := receive(t, got, "the SSE endpoint event")
	return sseEvents{id: id, messages: messages, close: func() { cancel(); res.Body.Close() }}
}

// rpcMessage is what the tests read of a message on the stream.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// answers reads the stream until every id in ids has its answer, failing
// on any answer to an id the client never sent (the synthetic initialize's
// above all). Server requests and notifications are skipped.
func (s sseEvents) answers(t *testing.T, ids ...string) map[string]rpcMessage {
	t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	got := map[string]rpcMessage{}
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for len(got) < len(want) {
		select {
		case data, ok := <-s.messages:
			if !ok {
				t.Fatalf("the stream ended with answers to %v only", got)
			}
			var m rpcMessage
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				t.Fatalf("a message on the stream is not JSON-RPC: %q: %v", data, err)
			}
			if m.Method != "" {
				continue
			}
			if !want[string(m.ID)] {
				t.Fatalf("the stream carried an answer to id %s, which the client never sent: %s", m.ID, data)
			}
			got[string(m.ID)] = m
		case <-timeout.C:
			t.Fatalf("after %v, answers to %d of %v", wait, len(got), ids)
		}
	}
	return got
}

// noErrorLogged fails when the hub's log has an ERROR line.
func noErrorLogged(t *testing.T, h *hubHarness) {
	t.Helper()
	if lines := h.sink.lines("level=ERROR"); len(lines) > 0 {
		t.Errorf("the server logged errors:\n%s", strings.Join(lines, "\n"))
	}
}

const (
	sseListTools = `{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{}}`
	sseCallSlow  = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow","arguments":{}}}`
)

// A legacy SSE stream that reconnected into a fresh session sends its
// calls without initialize: each is answered as if the client had
// initialised, no answer to a request it never sent reaches its stream, and
// the server logs no error.
func TestSSESessionIsInitialisedOnItsClientsBehalf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		posts []string // posted in order, each answered 202
		ids   []string // the answers the stream must carry
	}{
		{"a tools/list before initialize is answered", []string{fmt.Sprintf(sseListTools, 7)}, []string{"7"}},
		{"a string id is answered", []string{`{"jsonrpc":"2.0","id":"abc","method":"tools/list"}`}, []string{`"abc"`}},
		{"a ping first leaves the session for the next call", []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, fmt.Sprintf(sseListTools, 2)}, []string{"1", "2"}},
		{"notifications/initialized first is not sent twice",
			[]string{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, fmt.Sprintf(sseListTools, 3)}, []string{"3"}},
		{"another notification first initialises the session", []string{`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`, fmt.Sprintf(sseListTools, 4)}, []string{"4"}},
		{"a client id like the hub's own is still answered", []string{`{"jsonrpc":"2.0","id":"wraptool-initialize-AAAAAAAAAAAAAAAAAAAAAAAAAA","method":"tools/list"}`},
			[]string{`"wraptool-initialize-AAAAAAAAAAAAAAAAAAAAAAAAAA"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := startHub(t, "secret-token")
			s := h.openSSEEvents(t, "secret-token")
			defer s.close()
			for _, p := range tt.posts {
				if res := h.postSSE(t, s.id, "secret-token", p); res.status != http.StatusAccepted {
					t.Fatalf("POST %s: status %d (%s), want 202", p, res.status, res.body)
				}
			}
			for id, m := range s.answers(t, tt.ids...) {
				if m.Error != nil {
					t.Errorf("the answer to %s is an error: %s", id, m.Error.Message)
				}
			}
			noErrorLogged(t, h)
		})
	}
}

// The call itself runs, on the SDK's client as on raw posts: a tools/call
// before initialize reaches the tool and its result reaches the stream.
func TestSSECallBeforeInitializeRunsTheTool(t *testing.T) {
	t.Parallel()
	h := startHub(t, "secret-token")
	s := h.openSSEEvents(t, "secret-token")
	defer s.close()
	if res := h.postSSE(t, s.id, "secret-token", fmt.Sprintf(sseCallSlow, 9)); res.status != http.StatusAccepted {
		t.Fatalf("POST tools/call: status %d (%s)", res.status, res.body)
	}
	receive(t, h.started, "the start of the slow call")
	close(h.release)
	m := s.answers(t, "9")["9"]
	if m.Error != nil || !strings.Contains(string(m.Result), "content") {
		t.Errorf("tools/call answered %s (error %v), want a tool result", m.Result, m.Error)
	}
	noErrorLogged(t, h)
}

// Concurrent first posts on one session initialise it once: every call is
// answered, and the SDK never sees a second initialize (it would log
// "duplicate initialize request" at ERROR).
func TestSSEConcurrentFirstPostsInitialiseOnce(t *testing.T) {
	t.Parallel()
	h := startHub(t, "secret-token")
	s := h.openSSEEvents(t, "secret-token")
	defer s.close()
	const n = 8
	var wg sync.WaitGroup
	statuses := make(chan int, n)
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprint(i + 1)
		wg.Go(func() { statuses <- h.postSSE(t, s.id, "secret-token", fmt.Sprintf(sseListTools, i+1)).status })
	}
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if st != http.StatusAccepted {
			t.Errorf("a first post: status %d, want 202", st)
		}
	}
	for id, m := range s.answers(t, ids...) {
		if m.Error != nil {
			t.Errorf("the answer to %s is an error: %s", id, m.Error.Message)
		}
	}
	if got := len(h.sink.lines("initialising a legacy SSE session")); got != 1 {
		t.Errorf("the session was initialised on its client's behalf %d times, want 1", got)
	}
	noErrorLogged(t, h)
}

// sessionNamed waits for the server's one session whose client is named
// name and returns its initialize parameters.
func sessionNamed(t *testing.T, server *mcp.Server, name string) *mcp.InitializeParams {
	t.Helper()
	for ss := range server.Sessions() {
		if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil && p.ClientInfo.Name == name {
			return p
		}
	}
	t.Fatalf("no session of a client named %q", name)
	return nil
}

// A session is initialised with what its token's last session sent (its
// protocol and client), less the elicitation capability; a token with no
// earlier session gets the legacy SSE defaults.
func TestSSESessionIsInitialisedWithItsTokensLastParams(t *testing.T) {
	t.Parallel()
	h := startHub(t, "secret-token")
	first := h.openSSEEvents(t, "secret-token")
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26",` +
		`"capabilities":{"elicitation":{},"roots":{"listChanged":true}},"clientInfo":{"name":"claude-code","version":"2.1"}}}`
	h.postSSE(t, first.id, "secret-token", init)
	first.answers(t, "1")
	first.close()
	// The first session leaves the server's list when its stream's end
	// reaches the SDK; until then sessionNamed could find it instead.
	waitUntil(t, "the first session to end", func() bool {
		for ss := range h.server.Sessions() {
			if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil && p.ClientInfo.Name == "claude-code" {
				return false
			}
		}
		return true
	})

	second := h.openSSEEvents(t, "secret-token")
	defer second.close()
	h.postSSE(t, second.id, "secret-token", fmt.Sprintf(sseListTools, 2))
	second.answers(t, "2")
	p := sessionNamed(t, h.server, "claude-code")
	if p.ProtocolVersion != "2025-03-26" || p.ClientInfo.Version != "2.1" {
		t.Errorf("initialised with protocol %q, client version %q; want the last session's 2025-03-26, 2.1", p.ProtocolVersion, p.ClientInfo.Version)
	}
	//lint:ignore SA1019 the client declared roots; the test checks they are kept
	if p.Capabilities == nil || p.Capabilities.RootsV2 == nil || !p.Capabilities.RootsV2.ListChanged {
		t.Errorf("initialised with capabilities %+v, want the last session's roots", p.Capabilities)
	}
	if p.Capabilities != nil && p.Capabilities.Elicitation != nil {
		t.Error("a session the hub initialised declares elicitation: it could be asked to approve")
	}
	noErrorLogged(t, h)
}

func TestSSESessionWithoutAnEarlierOneGetsTheDefaults(t *testing.T) {
	t.Parallel()
	h := startHub(t, "secret-token")
	s := h.openSSEEvents(t, "secret-token")
	defer s.close()
	h.postSSE(t, s.id, "secret-token", fmt.Sprintf(sseListTools, 1))
	s.answers(t, "1")
	p := sessionNamed(t, h.server, sseDefaultClient)
	if p.ProtocolVersion != "2024-11-05" {
		t.Errorf("initialised with protocol %q, want 2024-11-05", p.ProtocolVersion)
	}
	//lint:ignore SA1019 a default session must declare no sampling either
	if p.Capabilities == nil || p.Capabilities.Elicitation != nil || p.Capabilities.Sampling != nil {
		t.Errorf("initialised with capabilities %+v, want none", p.Capabilities)
	}
}

// What the hub remembers is bounded, keyed by the token's digest, and only
// what parsed: hostile initialize parameters are not kept, and cannot give
// a later session the elicitation capability.
func TestSSEInitsRemembersOnlyWhatIsSafe(t *testing.T) {
	t.Parallel()
	d := func(tok string) [sha256.Size]byte { return sha256.Sum256([]byte(tok)) }
	tests := []struct {
		name       string
		params     string
		wantKnown  bool
		wantClient string
	}{
		{"a client's parameters are kept", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"gemini","version":"0.61"}}`, true, "gemini"},
		{"parameters over the bound are not kept", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"` + strings.Repeat("x", sseInitMax) + `","version":"1"}}`, false, sseDefaultClient},
		{"parameters that are not an object are not kept", `"initialize"`, false, sseDefaultClient},
		{"parameters without a protocol version are not kept", `{"clientInfo":{"name":"x","version":"1"}}`, false, sseDefaultClient},
		{"malformed JSON is not kept", `{"protocolVersion":`, false, sseDefaultClient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSSEInits()
			s.remember(d("tok"), json.RawMessage(tt.params))
			raw, known := s.params(d("tok"))
			var p mcp.InitializeParams
			if err := json.Unmarshal(raw, &p); err != nil {
				t.Fatalf("params are not initialize parameters: %s: %v", raw, err)
			}
			if known != tt.wantKnown || p.ClientInfo == nil || p.ClientInfo.Name != tt.wantClient {
				t.Errorf("got known %v, client %+v; want %v, %q", known, p.ClientInfo, tt.wantKnown, tt.wantClient)
			}
			if _, other := s.params(d("other")); other {
				t.Error("another token got this token's parameters")
			}
		})
	}
	t.Run("elicitation is dropped", func(t *testing.T) {
		t.Parallel()
		s := newSSEInits()
		s.remember(d("tok"), json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"c","version":"1"}}`))
		raw, _ := s.params(d("tok"))
		if strings.Contains(string(raw), "elicitation") {
			t.Errorf("remembered %s, want no elicitation", raw)
		}
	})
	t.Run("the oldest tokens are forgotten past the bound", func(t *testing.T) {
		t.Parallel()
		s := newSSEInits()
		for i := range sseInitTokens + 10 {
			s.remember(d(fmt.Sprint(i)), json.RawMessage(`{"protocolVersion":"2025-06-18","clientInfo":{"name":"c","version":"1"}}`))
		}
		if len(s.by) != sseInitTokens || len(s.order) != sseInitTokens {
			t.Errorf("holding %d tokens (%d in order), want %d", len(s.by), len(s.order), sseInitTokens)
		}
		if _, known := s.params(d("0")); known {
			t.Error("the oldest token is still remembered")
		}
		if _, known := s.params(d(fmt.Sprint(sseInitTokens + 9))); !known {
			t.Error("the newest token is forgotten")
		}
	})
}

// Hostile posts to a fresh session: none of them makes the hub initialise
// it with something the client chose, and the session still works after.
func TestSSEHostilePostsBeforeInitialize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		body       string
		wantStatus int
		// answered is set when the hostile message gets an answer (an
		// error) on the stream, under its id 1.
		answered bool
	}{
		{"malformed JSON", `{"jsonrpc":"2.0","id":1,"method":`, http.StatusBadRequest, false},
		{"a method the server does not know", `{"jsonrpc":"2.0","id":1,"method":"evil/method"}`, http.StatusBadRequest, false},
		{"a response to nothing", `{"jsonrpc":"2.0","id":"wraptool-initialize-x","result":{}}`, http.StatusAccepted, false},
		{"tools/call with params that are not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}`, http.StatusAccepted, true},
		{"initialize with params that are not initialize's", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5}}`, http.StatusAccepted, true},
		{"initialize without params", `{"jsonrpc":"2.0","id":1,"method":"initialize"}`, http.StatusBadRequest, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := startHub(t, "secret-token")
			s := h.openSSEEvents(t, "secret-token")
			defer s.close()
			if res := h.postSSE(t, s.id, "secret-token", tt.body); res.status != tt.wantStatus {
				t.Errorf("POST %s: status %d (%s), want %d", tt.body, res.status, res.body, tt.wantStatus)
			}
			if tt.answered {
				if m := s.answers(t, "1")["1"]; m.Error == nil {
					t.Errorf("the hostile message was answered %s, want an error", m.Result)
				}
			}
			h.postSSE(t, s.id, "secret-token", fmt.Sprintf(sseListTools, 5))
			if m := s.answers(t, "5")["5"]; m.Error != nil {
				t.Errorf("the next call's answer is an error: %s", m.Error.Message)
			}
		})
	}
}

// A client that initialises itself is untouched: the SDK's SSE client
// connects, lists and calls, and the hub never initialises for it.
func TestSSEClientThatInitialisesIsUntouched(t *testing.T) {
	t.Parallel()
	h := startHub(t, "secret-token")
	cs := h.connect(t, "sse")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	if lines := h.sink.lines("initialising a legacy SSE session"); len(lines) > 0 {
		t.Errorf("the hub initialised a session whose client did:\n%s", strings.Join(lines, "\n"))
	}
	noErrorLogged(t, h)
}

// What a client may send before initialize leaves initialising to the
// client: its own initialize after a ping or a server/discover probe is
// the session's, with no duplicate.
func TestSSEProbesBeforeInitializeLeaveItToTheClient(t *testing.T) {
	t.Parallel()
	for _, probe := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
	} {
		t.Run(probe, func(t *testing.T) {
			t.Parallel()
			h := startHub(t, "secret-token")
			s := h.openSSEEvents(t, "secret-token")
			defer s.close()
			for _, p := range []string{probe, strings.Replace(initializeBody, `"id":1`, `"id":2`, 1),
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`, fmt.Sprintf(sseListTools, 3)} {
				if res := h.postSSE(t, s.id, "secret-token", p); res.status != http.StatusAccepted {
					t.Fatalf("POST %s: status %d (%s), want 202", p, res.status, res.body)
				}
			}
			got := s.answers(t, "1", "2", "3")
			for _, id := range []string{"2", "3"} {
				if got[id].Error != nil {
					t.Errorf("the answer to %s is an error: %s", id, got[id].Error.Message)
				}
			}
			if lines := h.sink.lines("initialising a legacy SSE session"); len(lines) > 0 {
				t.Errorf("the hub initialised a session whose client did:\n%s", strings.Join(lines, "\n"))
			}
			sessionNamed(t, h.server, "test")
			noErrorLogged(t, h)
		})
	}
}
