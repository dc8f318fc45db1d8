package connect

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"sync"
)

// output is stdout: every line the client reads goes through it, whole, one
// at a time. It also keeps what must be answered, so that each of the
// client's requests gets exactly one answer (the server's, or the bridge's
// error when the server cannot give one) and an answer the client gives to a
// server that has since restarted is not sent to the new one.
//
// It is safe for concurrent use: the manager and every stream's goroutine
// write through it. A write blocks while the client does not read; the lock
// is held meanwhile, so the other writers wait their turn (backpressure, no
// buffering).
type output struct {
	mu  sync.Mutex
	w   io.Writer
	log *slog.Logger
	// err is the first write error: the client is gone, and nothing more
	// is written. (Run ends when stdin does; a process whose stdout pipe
	// breaks is ended by SIGPIPE first.)
	err error

	// calls are the client's requests awaiting an answer, by id key.
	calls map[string]pending
	seq   int // orders calls, so failAll answers in the order they were sent
	// asks are the server's requests awaiting the client's answer, by id
	// key, with the generation of the session that asked.
	asks map[string]ask
}

type pending struct {
	id  json.RawMessage
	seq int
	// sent is set once the request was written to the server whole: from
	// then on it may have run, and a lost session answers it with an
	// error; before, it is sent again on the next session instead.
	sent bool
}

type ask struct {
	id  json.RawMessage
	gen int
}

func newOutput(w io.Writer, log *slog.Logger) *output {
	return &output{w: w, log: log, calls: map[string]pending{}, asks: map[string]ask{}}
}

// writeLocked writes one line; the caller holds mu.
func (o *output) writeLocked(line []byte) {
	if o.err != nil {
		return
	}
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	if _, err := o.w.Write(buf); err != nil {
		o.err = err
		o.log.Debug("cannot write to stdout; the client is gone", "error", err)
	}
}

// track records a request of the client's that is being sent.
func (o *output) track(key string, id json.RawMessage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seq++
	o.calls[key] = pending{id: id, seq: o.seq}
}

// markSent records that the request key was written to the server whole.
func (o *output) markSent(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if p, ok := o.calls[key]; ok {
		p.sent = true
		o.calls[key] = p
	}
}

// pending reports whether the request key still awaits an answer (it was
// neither answered nor cancelled by the client).
func (o *output) pending(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.calls[key]
	return ok
}

// untrack forgets a request the client cancelled: it expects no answer, so
// none is passed on.
func (o *output) untrack(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.calls, key)
}

// forward passes one message from the server's session gen to the client:
// a response only while its request awaits it (exactly one answer per
// request), a request of the server's remembered until the client answers,
// a notification as it is. data must be one JSON object; it is written on
// one line. It returns the key of the request a response answered, "" for
// anything else.
func (o *output) forward(data []byte, gen int) (answered string) {
	var line bytes.Buffer
	if err := json.Compact(&line, data); err != nil {
		o.log.Warn("dropped a message from the server that is not JSON", "error", err, "bytes", len(data))
		return ""
	}
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if t := bytes.TrimLeft(line.Bytes(), " "); len(t) == 0 || t[0] != '{' || json.Unmarshal(line.Bytes(), &env) != nil {
		o.log.Warn("dropped a message from the server that is not a JSON-RPC object", "bytes", len(data))
		return ""
	}
	key, hasID := idKey(env.ID)
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case env.Method == nil && hasID:
		if _, ok := o.calls[key]; !ok {
			o.log.Debug("dropped an answer to a request no longer waiting for one", "id", string(env.ID))
			return ""
		}
		delete(o.calls, key)
		o.writeLocked(line.Bytes())
		return key
	case env.Method != nil && hasID:
		o.asks[key] = ask{id: env.ID, gen: gen}
	}
	o.writeLocked(line.Bytes())
	return ""
}

// fail answers the client's request key with a JSON-RPC error, unless it
// was answered already.
func (o *output) fail(key string, code int, msg string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p, ok := o.calls[key]
	if !ok {
		return
	}
	delete(o.calls, key)
	o.writeLocked(errorLine(p.id, code, msg))
}

// failAll answers every request still in flight with a JSON-RPC error, in
// the order they were sent. With unsentToo false it leaves alone the
// requests not yet written whole: the server cannot have run those, and
// they go again on the next session (held, or handed back by their
// goroutine when their POST fails).
func (o *output) failAll(code int, msg string, unsentToo bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	keys := make([]string, 0, len(o.calls))
	for k, p := range o.calls {
		if p.sent || unsentToo {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return o.calls[a].seq - o.calls[b].seq })
	for _, k := range keys {
		o.writeLocked(errorLine(o.calls[k].id, code, msg))
		delete(o.calls, k)
	}
}

// answered takes the server's request key off the asks and reports whether
// the session generation gen asked it: only then does the client's answer
// go to the server. ok is false for a request the bridge never passed on.
func (o *output) answered(key string, gen int) (current, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	a, ok := o.asks[key]
	if !ok {
		return false, false
	}
	delete(o.asks, key)
	return a.gen == gen, true
}

// cancelAsks tells the client that the server's requests it has not
// answered yet are void (the session that asked is gone), with
// notifications/cancelled, so a prompt does not wait for nothing.
func (o *output) cancelAsks(reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, a := range o.asks {
		line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
			"params": map[string]any{"requestId": a.id, "reason": reason}})
		o.writeLocked(line)
		delete(o.asks, k)
	}
}

// reply writes an error answer to a message that never reached the
// server (a line that is not JSON-RPC, a request too large to pass, one
// made while no server answers). id nil means null.
func (o *output) reply(id json.RawMessage, code int, msg string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.writeLocked(errorLine(id, code, msg))
}

// notify writes a notification of the bridge's own.
func (o *output) notify(method string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	o.writeLocked(line)
}

// errorLine is a JSON-RPC error response.
func errorLine(id json.RawMessage, code int, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	line, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	return line
}
