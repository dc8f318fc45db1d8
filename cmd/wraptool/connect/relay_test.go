package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestBridgeCarriesEveryMessageBothWays(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	f.setToken("tok")
	h := startBridge(t, f, func(o *Options) { o.Token = func() (string, error) { return "tok", nil } })
	sess := h.initialize(f)

	recs := f.snapshot()
	inits := posted(recs, "initialize")
	if len(inits) != 1 || inits[0].session != "" || inits[0].auth != "Bearer tok" || inits[0].body != initializeLine {
		t.Errorf("initialize as posted = %+v, want the client's line as it came, no session, the token", inits)
	}
	if got := posted(recs, "notifications/initialized"); len(got) != 1 || got[0].session != sess.id || got[0].protocol != "2025-11-25" {
		t.Errorf("notifications/initialized as posted = %+v, want it on session %s with MCP-Protocol-Version 2025-11-25", got, sess.id)
	}

	t.Run("the server's stream reaches the client in order", func(t *testing.T) {
		for i := range 50 {
			sess.push <- fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"n":%d}}`, i)
		}
		for i := range 50 {
			m := h.next("a log notification")
			if p, _ := m["params"].(map[string]any); m["method"] != "notifications/message" || p["n"] != float64(i) {
				t.Fatalf("notification %d = %v, want n=%d", i, m, i)
			}
		}
	})
	t.Run("an SSE answer passes its notifications, then the response", func(t *testing.T) {
		h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		if m := h.next("progress"); m["method"] != "notifications/progress" {
			t.Errorf("first line %v, want the progress notification", m)
		}
		if m := h.next("the tools/list result"); m["id"] != float64(2) || m["result"] == nil {
			t.Errorf("second line %v, want the result for id 2", m)
		}
	})
	t.Run("a JSON answer passes, string ids and all", func(t *testing.T) {
		h.send(`{"jsonrpc":"2.0","id":"p-1","method":"ping"}`)
		if m := h.next("the ping result"); m["id"] != "p-1" || m["result"] == nil {
			t.Errorf("line %v, want the result for id p-1", m)
		}
	})
	t.Run("a JSON-RPC error the server writes with an HTTP error passes as it is", func(t *testing.T) {
		h.send(`{"jsonrpc":"2.0","id":3,"method":"refuse"}`)
		if code, msg := errorOf(t, h.next("the refusal"), float64(3)); code != -32602 || msg != "refused here" {
			t.Errorf("error %v %q, want the server's -32602 refused here", code, msg)
		}
	})
	t.Run("lines that are not JSON-RPC are answered and the bridge goes on", func(t *testing.T) {
		for _, tc := range []struct {
			line string
			id   any
			code float64
		}{
			{`this is not json`, nil, codeParse},
			{`{"jsonrpc":"2.0","id":4,"method":`, nil, codeParse},
			{`[1,2]`, nil, codeInvalidRequest},
			{`{"id":5,"method":"ping"}`, float64(5), codeInvalidRequest},
		} {
			h.send(tc.line)
			if code, _ := errorOf(t, h.next("an error for "+tc.line), tc.id); code != tc.code {
				t.Errorf("%s answered with code %v, want %v", tc.line, code, tc.code)
			}
		}
		// An answer to a question the server never asked goes nowhere.
		h.send(`{"jsonrpc":"2.0","id":"never-asked","result":{}}`)
		h.send(`{"jsonrpc":"2.0","id":6,"method":"ping"}`)
		if m := h.next("the ping after"); m["id"] != float64(6) || m["result"] == nil {
			t.Errorf("line %v, want the result for id 6", m)
		}
		if n := len(posted(f.snapshot(), "")); n != 0 {
			t.Errorf("the server got %d messages without a method from the bad lines, want none", n)
		}
	})
	t.Run("the client's notifications reach the server in order, each after what came before it", func(t *testing.T) {
		before := len(f.snapshot())
		var want []string
		for i := range 30 {
			n := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/n","params":{"i":%d}}`, i)
			r := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 100+i)
			h.send(n)
			h.send(r)
			want = append(want, n, r)
		}
		recs := f.waitFor("the 60 messages", func(recs []fakeRecord) bool { return len(recs) >= before+60 })
		// A notification is posted only once everything before it was
		// handed over, and the next message only once it was taken (202):
		// notification i reaches the server after ping i-1 began and
		// before ping i. (A ping, a request, is only settled, not awaited;
		// see the package comment.)
		at := map[string]int{}
		for i, r := range recs[before:] {
			at[r.body] = i
		}
		for i := 1; i < len(want); i += 2 {
			notification, ping := want[i-1], want[i]
			if at[notification] > at[ping] {
				t.Errorf("%s reached the server after %s", notification, ping)
			}
			if i >= 3 && at[notification] < at[want[i-3]] {
				t.Errorf("%s reached the server before the notification written before it", notification)
			}
		}
		if len(at) != len(want) {
			t.Errorf("the server got %d distinct messages, want %d", len(at), len(want))
		}
		for range 30 {
			h.next("a ping result")
		}
	})
}

func TestBridgeSizeLimit(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	const limit = 1000
	h := startBridge(t, f, func(o *Options) { o.MaxMessageBytes = limit })
	h.initialize(f)
	pad := func(head string, size int) string {
		// head ends inside a string value: pad it to size bytes, close it.
		return head + strings.Repeat("a", size-len(head)-3) + `"}}`
	}

	big := pad(`{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":"`, 5000)
	h.send(big)
	code, msg := errorOf(t, h.next("the refusal of a large request"), float64(7))
	if code != codeInvalidRequest || !strings.Contains(msg, "5000 bytes") || !strings.Contains(msg, "at most 1000") {
		t.Errorf("error %v %q, want -32600 naming 5000 bytes and the limit of 1000", code, msg)
	}
	h.send(pad(`{"jsonrpc":"2.0","method":"notifications/big","params":{"x":"`, 5000))
	exact := pad(`{"jsonrpc":"2.0","id":8,"method":"ping","params":{"x":"`, limit)
	if len(exact) != limit {
		t.Fatalf("test bug: %d bytes", len(exact))
	}
	h.send(exact)
	if m := h.next("the ping of exactly the limit"); m["id"] != float64(8) || m["result"] == nil {
		t.Errorf("line %v, want the result for id 8 (a large notification is dropped without a word)", m)
	}
	recs := f.snapshot()
	if n := len(posted(recs, "notifications/big")); n != 0 {
		t.Errorf("the server got the large notification %d times, want none", n)
	}
	if got := posted(recs, "ping"); len(got) != 1 || got[0].body != exact {
		t.Errorf("pings the server got: %d, want only the one of exactly the limit", len(got))
	}
	if !strings.Contains(h.log.String(), "dropped a message over the size limit") {
		t.Errorf("the log does not say the notification was dropped:\n%s", h.log.String())
	}
}

func TestBridgeOpensANewSessionWhenTheServerRestarts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		breakIt func(*fakeServer)
	}{
		{"a server that restarts on its address", (*fakeServer).restart},
		{"a server that forgets the session (404)", (*fakeServer).forget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := startFake(t)
			h := startBridge(t, f, nil)
			old := h.initialize(f)
			h.send(`{"jsonrpc":"2.0","id":5,"method":"hold"}`)
			f.waitFor("the held call", func(recs []fakeRecord) bool { return len(posted(recs, "hold")) == 1 })

			start := time.Now()
			tc.breakIt(f)
			// A server that still answers (404) ends the call's stream on
			// its own, so its error and the new session's list_changed
			// may come in either order.
			answer, changed := h.next("the error or list_changed"), h.next("list_changed or the error")
			if answer["method"] != nil {
				answer, changed = changed, answer
			}
			code, msg := errorOf(t, answer, float64(5))
			if code != codeLost || !strings.Contains(msg, "send") {
				t.Errorf("error %v %q, want %d telling the client to send it again", code, msg, codeLost)
			}
			if changed["method"] != "notifications/tools/list_changed" {
				t.Fatalf("line %v, want notifications/tools/list_changed", changed)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("the new session took %v, want well within the README's 5s", took)
			}
			h.quiet(200 * time.Millisecond) // exactly one list_changed, and no second initialize result

			recs := f.snapshot()
			inits := posted(recs, "initialize")
			if len(inits) != 2 {
				t.Fatalf("the server got %d initialize, want 2:\n%s", len(inits), describe(recs))
			}
			var first, again map[string]json.RawMessage
			json.Unmarshal([]byte(inits[0].body), &first)
			json.Unmarshal([]byte(inits[1].body), &again)
			if string(first["params"]) != string(again["params"]) || string(again["id"]) == string(first["id"]) {
				t.Errorf("replayed initialize %s, want the client's params under an id of the bridge's", inits[1].body)
			}
			s := f.session()
			if s.id == old.id {
				t.Fatalf("still on session %s", s.id)
			}
			if got := posted(recs, "notifications/initialized"); len(got) != 2 || got[1].session != s.id {
				t.Errorf("notifications/initialized as posted = %+v, want a second one on %s", got, s.id)
			}
			h.send(`{"jsonrpc":"2.0","id":6,"method":"ping"}`)
			if m := h.next("a ping on the new session"); m["id"] != float64(6) || m["result"] == nil {
				t.Errorf("line %v, want the result for id 6", m)
			}
			if pings := posted(f.snapshot(), "ping"); len(pings) != 1 || pings[0].session != s.id {
				t.Errorf("pings = %+v, want one on the new session %s", pings, s.id)
			}
		})
	}
}

func TestBridgeWhileTheServerIsAway(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	h := startBridge(t, f, nil)
	h.initialize(f)
	f.stop()
	// Whether the bridge noticed yet or finds out by posting it, the
	// request is held, not refused, and answered once the server is back.
	h.send(`{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	h.waitLog("lost the session")
	f.start()
	if m := h.next("list_changed"); m["method"] != "notifications/tools/list_changed" {
		t.Fatalf("line %v, want notifications/tools/list_changed", m)
	}
	if m := h.next("the held ping"); m["id"] != float64(9) || m["result"] == nil {
		t.Errorf("line %v, want the result for id 9", m)
	}
	h.send(`{"jsonrpc":"2.0","id":11,"method":"ping"}`)
	if m := h.next("a ping once back"); m["id"] != float64(11) || m["result"] == nil {
		t.Errorf("line %v, want the result for id 11", m)
	}
}

func TestBridgeEndsTheSession(t *testing.T) {
	t.Parallel()
	t.Run("when stdin ends, after a last line without a newline", func(t *testing.T) {
		t.Parallel()
		f := startFake(t)
		h := startBridge(t, f, nil)
		s := h.initialize(f)
		h.stdin.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/last"}`))
		h.stdin.Close()
		if err := h.wait(); err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
		recs := f.snapshot()
		if got := posted(recs, "notifications/last"); len(got) != 1 {
			t.Errorf("the last line reached the server %d times, want once", len(got))
		}
		if last := recs[len(recs)-1]; last.method != http.MethodDelete || last.session != s.id {
			t.Errorf("last request %s on %q, want DELETE on %s", last.method, last.session, s.id)
		}
	})
	t.Run("when the context ends (a signal)", func(t *testing.T) {
		t.Parallel()
		f := startFake(t)
		h := startBridge(t, f, nil)
		s := h.initialize(f)
		h.cancel()
		if err := h.wait(); err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
		recs := f.snapshot()
		if last := recs[len(recs)-1]; last.method != http.MethodDelete || last.session != s.id {
			t.Errorf("last request %s on %q, want DELETE on %s", last.method, last.session, s.id)
		}
	})
	t.Run("stdin ending before initialize sends nothing", func(t *testing.T) {
		t.Parallel()
		f := startFake(t)
		h := startBridge(t, f, nil)
		h.stdin.Close()
		if err := h.wait(); err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
		if recs := f.snapshot(); len(recs) != 0 {
			t.Errorf("the server got:\n%s\nwant nothing", describe(recs))
		}
	})
}

func TestBridgeGivesUpWithoutAServer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	for _, tc := range []struct {
		name       string
		closeStdin bool
	}{
		{"with the client waiting", false},
		{"even when stdin has ended (exit 1 wins)", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeServer{t: t, addr: addr}
			start := time.Now()
			h := startBridge(t, f, func(o *Options) { o.StartTimeout = 300 * time.Millisecond })
			if tc.closeStdin {
				h.stdin.Close()
			} else {
				h.send(initializeLine)
			}
			err := h.wait()
			took := time.Since(start)
			if !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), addr) {
				t.Errorf("Run = %v, want ErrNoServer naming %s", err, addr)
			}
			if took < 300*time.Millisecond || took > 2*time.Second {
				t.Errorf("gave up after %v, want after the 300ms start timeout and soon after", took)
			}
			if line, ok := <-h.lines; ok {
				t.Errorf("stdout has %q, want nothing", line)
			}
		})
	}
}

func TestBridgeRefusesAListenerOfAnotherUser(t *testing.T) {
	t.Parallel()
	foreign := fmt.Errorf("%w: the socket listening on 127.0.0.1:1 belongs to uid 4242, not to you (uid 1000)", ErrForeignOwner)
	t.Run("at start: at once, sending nothing", func(t *testing.T) {
		t.Parallel()
		f := startFake(t)
		start := time.Now()
		h := startBridge(t, f, func(o *Options) {
			o.Dial = func(context.Context, string) (net.Conn, error) { return nil, foreign }
		})
		h.send(initializeLine)
		err := h.wait()
		if !errors.Is(err, ErrForeignOwner) || !strings.Contains(err.Error(), "uid 4242") || !strings.Contains(err.Error(), "nothing was sent") {
			t.Errorf("Run = %v, want ErrForeignOwner naming the owner and saying nothing was sent", err)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("refused after %v, want at once", took)
		}
		if recs := f.snapshot(); len(recs) != 0 {
			t.Errorf("the server got:\n%s\nwant nothing", describe(recs))
		}
		if line, ok := <-h.lines; ok {
			t.Errorf("stdout has %q, want nothing", line)
		}
	})
	t.Run("after a restart: the call in flight is answered and nothing is replayed", func(t *testing.T) {
		t.Parallel()
		f := startFake(t)
		var taken atomic.Bool
		h := startBridge(t, f, func(o *Options) {
			real := o.Dial
			o.Dial = func(ctx context.Context, token string) (net.Conn, error) {
				if taken.Load() {
					return nil, foreign
				}
				return real(ctx, token)
			}
		})
		h.initialize(f)
		h.send(`{"jsonrpc":"2.0","id":5,"method":"hold"}`)
		f.waitFor("the held call", func(recs []fakeRecord) bool { return len(posted(recs, "hold")) == 1 })
		taken.Store(true)
		f.restart()
		if code, _ := errorOf(t, h.next("the error for the call in flight"), float64(5)); code != codeLost {
			t.Errorf("error code %v, want %d", code, codeLost)
		}
		if err := h.wait(); !errors.Is(err, ErrForeignOwner) {
			t.Errorf("Run = %v, want ErrForeignOwner", err)
		}
		if inits := posted(f.snapshot(), "initialize"); len(inits) != 1 {
			t.Errorf("the server got %d initialize, want only the first", len(inits))
		}
	})
}

func TestBridgeCarriesElicitation(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	h := startBridge(t, f, nil)
	h.initialize(f)
	h.send(`{"jsonrpc":"2.0","id":3,"method":"ask"}`)
	if m := h.next("elicitation/create"); m["method"] != "elicitation/create" || m["id"] != "srv-1" {
		t.Fatalf("line %v, want the server's elicitation/create", m)
	}
	h.send(`{"jsonrpc":"2.0","id":"srv-1","result":{"action":"accept","content":{"decision":"once"}}}`)
	m := h.next("the call's result")
	res, _ := m["result"].(map[string]any)
	answer, _ := res["answer"].(map[string]any)
	if m["id"] != float64(3) || answer["id"] != "srv-1" {
		t.Errorf("line %v, want the result for id 3 carrying the client's answer", m)
	}
}

func TestBridgeDropsAnswersToARestartedServer(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	h := startBridge(t, f, nil)
	h.initialize(f)
	h.send(`{"jsonrpc":"2.0","id":3,"method":"ask"}`)
	if m := h.next("elicitation/create"); m["method"] != "elicitation/create" {
		t.Fatalf("line %v, want the server's elicitation/create", m)
	}
	f.restart()
	errorOf(t, h.next("the error for the call"), float64(3))
	m := h.next("the cancellation of the question")
	if p, _ := m["params"].(map[string]any); m["method"] != "notifications/cancelled" || p["requestId"] != "srv-1" {
		t.Errorf("line %v, want notifications/cancelled for srv-1", m)
	}
	if m := h.next("list_changed"); m["method"] != "notifications/tools/list_changed" {
		t.Fatalf("line %v, want notifications/tools/list_changed", m)
	}
	h.send(`{"jsonrpc":"2.0","id":"srv-1","result":{"action":"accept"}}`)
	h.send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	h.next("the ping after")
	for _, r := range f.snapshot() {
		if strings.Contains(r.body, `"srv-1"`) {
			t.Errorf("the answer to the old server's question reached the new one: %s", r.body)
		}
	}
}

func TestBridgeCancelledRequestGetsNoAnswer(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	h := startBridge(t, f, nil)
	h.initialize(f)
	h.send(`{"jsonrpc":"2.0","id":8,"method":"hold"}`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8}}`)
	f.waitFor("the cancellation", func(recs []fakeRecord) bool { return len(posted(recs, "notifications/cancelled")) == 1 })
	f.release()
	h.send(`{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	if m := h.next("the ping"); m["id"] != float64(9) {
		t.Errorf("line %v, want only the ping's result (none for the cancelled request)", m)
	}
	f.restart()
	if m := h.next("list_changed"); m["method"] != "notifications/tools/list_changed" {
		t.Errorf("line %v, want list_changed and no error for the cancelled request", m)
	}
}

func TestBridgeToken(t *testing.T) {
	t.Parallel()
	t.Run("a token the server refuses, and the file still holds, stops the bridge", func(t *testing.T) {
		t.Parallel()
		f := startFake(t)
		f.setToken("right")
		h := startBridge(t, f, func(o *Options) { o.Token = func() (string, error) { return "wrong", nil } })
		h.send(initializeLine)
		if code, _ := errorOf(t, h.next("the refusal"), float64(1)); code != codeLost {
			t.Errorf("error code %v, want %d", code, codeLost)
		}
		if err := h.wait(); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("Run = %v, want ErrUnauthorized", err)
		}
	})
	t.Run("a rotated token file opens a new session with the new token", func(t *testing.T) {
		t.Parallel()
		f := startFake(t)
		f.setToken("old")
		var tok atomic.Value
		tok.Store("old")
		h := startBridge(t, f, func(o *Options) { o.Token = func() (string, error) { return tok.Load().(string), nil } })
		h.initialize(f)
		f.setToken("new")
		tok.Store("new")
		// The ping the server refused (401) never ran: it goes again on
		// the new session.
		h.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
		if m := h.next("list_changed"); m["method"] != "notifications/tools/list_changed" {
			t.Fatalf("line %v, want list_changed", m)
		}
		if m := h.next("the refused ping, sent again"); m["id"] != float64(2) || m["result"] == nil {
			t.Errorf("line %v, want the result for id 2", m)
		}
		h.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
		if m := h.next("the ping"); m["id"] != float64(3) || m["result"] == nil {
			t.Errorf("line %v, want the result for id 3", m)
		}
		if inits := posted(f.snapshot(), "initialize"); len(inits) != 2 || inits[1].auth != "Bearer new" {
			t.Errorf("initialize as posted = %+v, want a second one with the new token", inits)
		}
	})
}
