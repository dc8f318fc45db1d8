package connect

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// initializeOnly runs initialize without notifications/initialized: the
// bridge then opens no GET stream, so it learns of a restart only from the
// next request's POST.
func (h *bridgeRun) initializeOnly() {
	h.t.Helper()
	h.send(initializeLine)
	if res := h.next("the initialize result"); res["id"] != float64(1) || res["result"] == nil {
		h.t.Fatalf("initialize answer = %v, want a result for id 1", res)
	}
}

// waitLog waits (bounded) until the bridge's log has want.
func (h *bridgeRun) waitLog(want string) {
	h.t.Helper()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for !strings.Contains(h.log.String(), want) {
		select {
		case <-h.log.wrote:
		case <-deadline.C:
			h.t.Fatalf("the bridge never logged %q within %v", want, bound)
		}
	}
}

// results reads n lines and returns them by id, failing on anything but
// results and list_changed (which it counts).
func (h *bridgeRun) results(n int) (byID map[float64]map[string]any, order []float64, changed int) {
	h.t.Helper()
	byID = map[float64]map[string]any{}
	for len(byID) < n {
		m := h.next(fmt.Sprintf("result %d of %d", len(byID)+1, n))
		if m["method"] == "notifications/tools/list_changed" {
			changed++
			continue
		}
		if m["method"] == "notifications/progress" {
			continue
		}
		id, ok := m["id"].(float64)
		if !ok || m["result"] == nil {
			h.t.Fatalf("line %v, want a result", m)
		}
		byID[id] = m
		order = append(order, id)
	}
	return byID, order, changed
}

func TestBridgeHoldsCallsWhileTheServerRestarts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// listen: the client sent notifications/initialized, so the
		// bridge has a GET stream and may notice the restart on its own;
		// without it the first call's POST finds out.
		listen bool
		// during is what happens to the server before the calls are
		// sent; after, once they are.
		during, after func(*fakeServer)
	}{
		{"the server is down while the calls are sent, then comes back", true, (*fakeServer).stop, (*fakeServer).start},
		{"the server restarted before the bridge noticed (the POST gets 404)", false, (*fakeServer).restart, nil},
		{"the server is down and the bridge has not noticed (the POST cannot connect)", false, (*fakeServer).stop, (*fakeServer).start},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := startFake(t)
			if !tc.listen {
				f.stop()
				f.oneShot = true
				f.start()
			}
			h := startBridge(t, f, nil)
			if tc.listen {
				h.initialize(f)
			} else {
				h.initializeOnly()
			}
			tc.during(f)
			if tc.listen {
				// The bridge noticed on its own before the calls.
				h.waitLog("lost the session")
			}
			for id := 10; id < 13; id++ {
				method := "ping"
				if id == 11 {
					method = "tools/list"
				}
				h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q}`, id, method))
			}
			h.waitLog("lost the session")
			if tc.after != nil {
				tc.after(f)
			}
			byID, _, changed := h.results(3)
			if changed > 1 {
				t.Errorf("%d list_changed, want at most one", changed)
			}
			for id := 10.0; id < 13; id++ {
				if byID[id] == nil {
					t.Errorf("no result for id %v", id)
				}
			}
			recs := f.snapshot()
			inits := posted(recs, "initialize")
			last := inits[len(inits)-1]
			// Every call reached the new session exactly once, after
			// its initialize.
			seen := map[string]int{}
			for _, r := range append(posted(recs, "ping"), posted(recs, "tools/list")...) {
				var m struct{ ID json.RawMessage }
				json.Unmarshal([]byte(r.body), &m)
				if r.session == "sess-2" {
					seen[string(m.ID)]++
				}
			}
			for _, id := range []string{"10", "11", "12"} {
				if seen[id] != 1 {
					t.Errorf("call %s reached the new session %d times, want once:\n%s", id, seen[id], describe(recs))
				}
			}
			if !strings.Contains(last.body, "wraptool-connect-replay") {
				t.Errorf("the last initialize %s is not the bridge's replay", last.body)
			}
		})
	}
}

func TestBridgeHeldCallsInOrder(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	h := startBridge(t, f, nil)
	h.initialize(f)
	f.stop()
	h.waitLog("lost the session")
	h.send(`{"jsonrpc":"2.0","method":"notifications/first"}`)
	h.send(`{"jsonrpc":"2.0","id":20,"method":"ping"}`)
	h.send(`{"jsonrpc":"2.0","id":21,"method":"ping"}`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":20}}`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`)
	h.send(`{"jsonrpc":"2.0","id":"srv-old","result":{"action":"accept"}}`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/second"}`)
	h.send(`{"jsonrpc":"2.0","id":22,"method":"ping"}`)
	f.start()
	// The server may answer concurrent calls in any order; the order it
	// got them in is checked below.
	byID, _, _ := h.results(2)
	if byID[21] == nil || byID[22] == nil {
		t.Errorf("results for %v, want 21 and 22 (none for the cancelled 20)", byID)
	}
	h.quiet(100 * time.Millisecond)
	var got []string
	for _, r := range f.snapshot() {
		if r.session != "sess-2" || r.method != "POST" {
			continue
		}
		var m struct {
			ID     json.RawMessage
			Method string
		}
		json.Unmarshal([]byte(r.body), &m)
		got = append(got, m.Method+string(m.ID))
	}
	want := "[notifications/initialized notifications/first ping21 notifications/cancelled notifications/second ping22]"
	if fmt.Sprint(got) != want {
		t.Errorf("the new session got %v, want %s (the cancelled request and the old session's answer never sent)", got, want)
	}
}

func TestBridgeHeldCallsGetAnErrorAtTheBound(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	h := startBridge(t, f, func(o *Options) { o.StartTimeout = 300 * time.Millisecond })
	h.initialize(f)
	f.stop()
	start := time.Now()
	for id := 30; id < 33; id++ {
		h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id))
	}
	for id := 30.0; id < 33; id++ {
		code, msg := errorOf(t, h.next("the error at the bound"), id)
		if code != codeLost || !strings.Contains(msg, f.addr) {
			t.Errorf("error %v %q, want %d naming %s", code, msg, codeLost, f.addr)
		}
	}
	if took := time.Since(start); took > 300*time.Millisecond+time.Second {
		t.Errorf("the held calls got their error after %v, want soon after the 300ms bound", took)
	}
	// Past the bound, a call is answered at once; the bridge still waits
	// for the server.
	h.send(`{"jsonrpc":"2.0","id":33,"method":"ping"}`)
	errorOf(t, h.next("the refusal past the bound"), float64(33))
	f.start()
	if m := h.next("list_changed"); m["method"] != "notifications/tools/list_changed" {
		t.Fatalf("line %v, want list_changed", m)
	}
	h.send(`{"jsonrpc":"2.0","id":34,"method":"ping"}`)
	if m := h.next("a ping once back"); m["id"] != float64(34) || m["result"] == nil {
		t.Errorf("line %v, want the result for id 34", m)
	}
}

func TestBridgeHoldIsBounded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// flood returns the lines sent while the server is down, and how
		// many of them (the first ones) must be held.
		flood func() (lines []string, held int)
	}{
		// The bytes bound is the message size limit, 64 KiB here.
		{"in messages", func() ([]string, int) {
			var lines []string
			for id := range maxHeld + 10 {
				lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 100+id))
			}
			return lines, maxHeld
		}},
		{"in bytes", func() ([]string, int) {
			pad := strings.Repeat("x", 40<<10)
			return []string{
				fmt.Sprintf(`{"jsonrpc":"2.0","id":100,"method":"ping","params":{"pad":%q}}`, pad),
				fmt.Sprintf(`{"jsonrpc":"2.0","id":101,"method":"ping","params":{"pad":%q}}`, pad),
			}, 1
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := startFake(t)
			h := startBridge(t, f, func(o *Options) { o.MaxMessageBytes = 64 << 10 })
			h.initialize(f)
			f.stop()
			h.waitLog("lost the session")
			lines, held := tc.flood()
			go func() {
				for _, l := range lines {
					if _, err := h.stdin.Write([]byte(l + "\n")); err != nil {
						return
					}
				}
			}()
			for id := 100 + held; id < 100+len(lines); id++ {
				_, msg := errorOf(t, h.next("the refusal over the bound"), float64(id))
				if !strings.Contains(msg, "the most it holds") {
					t.Errorf("error %q, want it to say the hold is full", msg)
				}
			}
			f.start()
			byID, _, _ := h.results(held)
			for id := 100; id < 100+held; id++ {
				if byID[float64(id)] == nil {
					t.Errorf("no result for held call %d", id)
				}
			}
		})
	}
}

func TestBridgeHeldCallsAreAnsweredWhenStdinEnds(t *testing.T) {
	t.Parallel()
	f := startFake(t)
	h := startBridge(t, f, nil)
	h.initialize(f)
	f.stop()
	h.waitLog("lost the session")
	h.send(`{"jsonrpc":"2.0","id":40,"method":"ping"}`)
	h.stdin.Close()
	code, msg := errorOf(t, h.next("the held ping's error"), float64(40))
	if code != codeLost || !strings.Contains(msg, "stdin ended") {
		t.Errorf("error %v %q, want %d saying stdin ended", code, msg, codeLost)
	}
	if err := h.wait(); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}
