package connect

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// bound limits every wait in these tests.
const bound = 10 * time.Second

// fakeServer is a Streamable HTTP server just large enough to test the
// bridge against: sessions made by initialize, JSON and SSE answers, a GET
// stream, DELETE, 404 for a session it does not know, 401 without its
// token, and a restart on the same address that forgets every session.
//
// Methods: ping answers JSON; tools/list answers SSE with a progress
// notification first; hold answers only once the test calls release; ask
// sends elicitation/create on its answer stream and answers with what the
// client replied.
type fakeServer struct {
	t    *testing.T
	addr string

	mu       sync.Mutex
	token    string
	srv      *http.Server
	served   chan struct{} // closed when Serve returned
	next     int
	sessions map[string]*fakeSession
	records  []fakeRecord
	down     chan struct{} // closed when the server stops or forgets its sessions: streams and held calls end
	released chan struct{} // closed by release: held calls answer
	notify   chan struct{} // a doorbell rung on every record
	// oneShot closes every connection after its answer, so the bridge
	// dials for each request (it never writes on a connection the server
	// is about to close).
	oneShot bool
}

type fakeSession struct {
	id      string
	push    chan string // messages for the GET stream
	answers chan []byte // the client's answers to the server's requests
	gets    int
}

// fakeRecord is one request the server got.
type fakeRecord struct {
	method, session, auth, protocol string
	body                            string
}

func startFake(t *testing.T) *fakeServer {
	t.Helper()
	f := &fakeServer{t: t, addr: "127.0.0.1:0", sessions: map[string]*fakeSession{}, notify: make(chan struct{}, 1),
		released: make(chan struct{})}
	f.start()
	t.Cleanup(f.stop)
	return f
}

// start listens (on the same address as before, after a stop) and serves.
func (f *fakeServer) start() {
	f.t.Helper()
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	f.addr = ln.Addr().String()
	f.srv = &http.Server{Handler: f}
	f.srv.SetKeepAlivesEnabled(!f.oneShot)
	f.down = make(chan struct{})
	f.served = make(chan struct{})
	srv, served := f.srv, f.served
	f.mu.Unlock()
	go func() { srv.Serve(ln); close(served) }()
}

// stop closes the listener and every connection, as a server that exits.
func (f *fakeServer) stop() {
	f.mu.Lock()
	srv, served, down := f.srv, f.served, f.down
	f.srv = nil
	f.mu.Unlock()
	if srv == nil {
		return
	}
	close(down)
	srv.Close()
	<-served
}

// restart is a new server process on the same address: no session of the
// old one survives.
func (f *fakeServer) restart() {
	f.stop()
	f.mu.Lock()
	f.sessions = map[string]*fakeSession{}
	f.mu.Unlock()
	f.start()
}

// forget drops every session and ends their streams while the server
// keeps listening, as when sessions expire.
func (f *fakeServer) forget() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sessions = map[string]*fakeSession{}
	close(f.down)
	f.down = make(chan struct{})
}

func (f *fakeServer) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.released)
}

func (f *fakeServer) setToken(tok string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.token = tok
}

// session returns the only session the server knows, waiting (bounded)
// for it and for its GET stream.
func (f *fakeServer) session() *fakeSession {
	f.t.Helper()
	var s *fakeSession
	f.waitFor("a session with its GET stream", func(recs []fakeRecord) bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, one := range f.sessions {
			if one.gets > 0 {
				s = one
				return true
			}
		}
		return false
	})
	return s
}

func (f *fakeServer) snapshot() []fakeRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRecord(nil), f.records...)
}

// waitFor waits (bounded) until ok holds for the records so far.
func (f *fakeServer) waitFor(what string, ok func([]fakeRecord) bool) []fakeRecord {
	f.t.Helper()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for {
		recs := f.snapshot()
		if ok(recs) {
			return recs
		}
		select {
		case <-f.notify:
		case <-time.After(20 * time.Millisecond): // session state changes ring no bell
		case <-deadline.C:
			f.t.Fatalf("the server never saw %s; it saw:\n%s", what, describe(recs))
		}
	}
}

// posted reports the POSTed bodies whose method is method.
func posted(recs []fakeRecord, method string) []fakeRecord {
	var out []fakeRecord
	for _, r := range recs {
		if r.method != http.MethodPost {
			continue
		}
		var m struct {
			Method string `json:"method"`
		}
		json.Unmarshal([]byte(r.body), &m)
		if m.Method == method {
			out = append(out, r)
		}
	}
	return out
}

func describe(recs []fakeRecord) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "  %s session=%q %s\n", r.method, r.session, r.body)
	}
	return b.String()
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := fakeRecord{method: r.Method, session: r.Header.Get(sessionIDHeader), auth: r.Header.Get("Authorization"),
		protocol: r.Header.Get(protocolVersionHeader), body: string(body)}
	f.mu.Lock()
	f.records = append(f.records, rec)
	token, down, released := f.token, f.down, f.released
	sess := f.sessions[rec.session]
	f.mu.Unlock()
	select {
	case f.notify <- struct{}{}:
	default:
	}
	if token != "" && rec.auth != "Bearer "+token {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	json.Unmarshal(body, &msg)
	if r.Method == http.MethodPost && msg.Method == "initialize" {
		f.mu.Lock()
		f.next++
		sess = &fakeSession{id: fmt.Sprintf("sess-%d", f.next), push: make(chan string, 256), answers: make(chan []byte, 16)}
		f.sessions[sess.id] = sess
		f.mu.Unlock()
		w.Header().Set(sessionIDHeader, sess.id)
		writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"fake","version":"1"}}}`, msg.ID))
		return
	}
	if sess == nil {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodDelete:
		f.mu.Lock()
		delete(f.sessions, sess.id)
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodGet:
		f.mu.Lock()
		sess.gets++
		f.mu.Unlock()
		sse(w)
		for {
			select {
			case m := <-sess.push:
				sseEvent(w, m)
			case <-down:
				return
			case <-r.Context().Done():
				return
			}
		}
	}
	if msg.ID == nil || msg.Method == "" { // a notification, or the client's answer
		if msg.Method == "" {
			sess.answers <- body
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	switch msg.Method {
	case "ping":
		writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, msg.ID))
	case "tools/list":
		sse(w)
		sseEvent(w, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`)
		sseEvent(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[]}}`, msg.ID))
	case "hold":
		// As the go-sdk's server: nothing, not even the headers, until
		// the answer.
		select {
		case <-released:
			sse(w)
			sseEvent(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"held":true}}`, msg.ID))
		case <-down:
		case <-r.Context().Done():
		}
	case "ask":
		sse(w)
		sseEvent(w, `{"jsonrpc":"2.0","id":"srv-1","method":"elicitation/create","params":{"message":"ok?"}}`)
		select {
		case a := <-sess.answers:
			sseEvent(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"answer":%s}}`, msg.ID, a))
		case <-down:
		case <-r.Context().Done():
		}
	case "refuse":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"refused here"}}`, msg.ID)
	default:
		writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"unknown method"}}`, msg.ID))
	}
}

func writeJSON(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, body)
}

func sse(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

func sseEvent(w http.ResponseWriter, data string) {
	fmt.Fprintf(w, "event: message\ndata: %s\n\n", data)
	w.(http.Flusher).Flush()
}

// bridgeRun is a Run on a pipe the test writes and reads.
type bridgeRun struct {
	t      *testing.T
	stdin  *io.PipeWriter
	lines  chan string // stdout, line by line; closed when Run returned
	done   chan error  // Run's result, once
	cancel context.CancelFunc
	log    *lockedBuffer
	seen   []string
}

// startBridge runs the bridge against f (dialling it with the real owner
// check) with short retry intervals; change adjusts the options.
func startBridge(t *testing.T, f *fakeServer, change func(*Options)) *bridgeRun {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &bridgeRun{t: t, stdin: inW, lines: make(chan string, 1024), done: make(chan error, 1), log: newLockedBuffer()}
	f.mu.Lock()
	addr := f.addr
	f.mu.Unlock()
	o := Options{
		Address: addr, URL: "http://" + addr + "/mcp",
		Dial: func(ctx context.Context, _ string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			if err := (Owner{UID: os.Getuid()}).Check(c); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		},
		Stdin: inR, Stdout: outW,
		Log:           slog.New(slog.NewTextHandler(h.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		RetryInterval: 50 * time.Millisecond,
		StartTimeout:  2 * time.Second,
	}
	if change != nil {
		change(&o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		err := Run(ctx, o)
		outW.Close()
		h.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		select {
		case <-h.done:
		case <-time.After(bound):
			t.Errorf("Run did not return within %v of the end of stdin", bound)
		}
		if t.Failed() {
			t.Logf("bridge log:\n%s", h.log.String())
		}
	})
	return h
}

// send writes one line to the bridge's stdin.
func (h *bridgeRun) send(line string) {
	h.t.Helper()
	if _, err := io.WriteString(h.stdin, line+"\n"); err != nil {
		h.t.Fatalf("write stdin: %v", err)
	}
}

// next returns the next stdout line as an object, failing after bound.
func (h *bridgeRun) next(what string) map[string]any {
	h.t.Helper()
	select {
	case line, ok := <-h.lines:
		if !ok {
			h.t.Fatalf("stdout ended while waiting for %s; lines so far:\n%s", what, strings.Join(h.seen, "\n"))
		}
		h.seen = append(h.seen, line)
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			h.t.Fatalf("stdout line %q is not a JSON object (%v), waiting for %s", line, err, what)
		}
		return m
	case <-time.After(bound):
		h.t.Fatalf("no stdout line within %v, waiting for %s; lines so far:\n%s", bound, what, strings.Join(h.seen, "\n"))
	}
	return nil
}

// quiet fails if stdout has a line within d.
func (h *bridgeRun) quiet(d time.Duration) {
	h.t.Helper()
	select {
	case line, ok := <-h.lines:
		if ok {
			h.t.Fatalf("stdout line %s, want none", line)
		}
	case <-time.After(d):
	}
}

// wait waits (bounded) for Run to return.
func (h *bridgeRun) wait() error {
	h.t.Helper()
	select {
	case err := <-h.done:
		h.done <- err // for the cleanup
		return err
	case <-time.After(bound):
		h.t.Fatalf("Run still running after %v", bound)
	}
	return nil
}

// initialize runs the handshake and returns the server's session.
func (h *bridgeRun) initialize(f *fakeServer) *fakeSession {
	h.t.Helper()
	h.send(initializeLine)
	if res := h.next("the initialize result"); res["id"] != float64(1) || res["result"] == nil {
		h.t.Fatalf("initialize answer = %v, want a result for id 1", res)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return f.session()
}

const initializeLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"test-client","version":"9"}}}`

// errorOf returns a response's error code and message, failing on
// anything else.
func errorOf(t *testing.T, m map[string]any, id any) (code float64, msg string) {
	t.Helper()
	e, ok := m["error"].(map[string]any)
	if !ok || m["id"] != id {
		t.Fatalf("line %v, want an error for id %v", m, id)
	}
	code, _ = e["code"].(float64)
	msg, _ = e["message"].(string)
	return code, msg
}

type lockedBuffer struct {
	mu    sync.Mutex
	b     strings.Builder
	wrote chan struct{} // a doorbell rung on every write
}

func newLockedBuffer() *lockedBuffer { return &lockedBuffer{wrote: make(chan struct{}, 1)} }

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case l.wrote <- struct{}{}:
	default:
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
