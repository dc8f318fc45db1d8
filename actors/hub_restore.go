package actors

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/actors/sessionstore"
)

// FlushInterval is how often, at most, the session table writes its file
// while the server runs; it writes once more when it stops. A session
// used in the last seconds before a crash (not a stop) may be restored
// with a slightly older last use, which only shortens its life.
const FlushInterval = 3 * time.Second

// lastUsedGrain is how finely a stored record keeps when its session was
// last used.
const lastUsedGrain = 30 * time.Second

// restoreIDKey is the context key under which restore hands observe the id
// the session it re-creates must get.
type restoreIDKey struct{}

// NextID is the MCP server's GetSessionID (ServerOptions): a random id,
// or, for the request of a restore, the stored id of the session it
// re-creates. observe holds the creation lock from before the SDK calls
// this until it does, so the stored id reaches that request only.
func (sw *Sessions) NextID() string {
	sw.idMu.Lock()
	id, release := sw.nextID, sw.release
	sw.nextID, sw.release = "", nil
	sw.idMu.Unlock()
	if release != nil {
		release()
	}
	if id == "" {
		id = rand.Text()
	}
	return id
}

// load reads the stored sessions, keeping the fresh and valid ones. A
// damaged, oversized or foreign file restores nothing and is logged; it is
// replaced at the next flush (a foreign non-file is left alone and every
// flush says so).
func (sw *Sessions) load(now time.Time) {
	if sw.path == "" {
		return
	}
	data, err := sessionstore.Read(sw.path)
	if err != nil {
		sw.log.Warn("stored sessions ignored; clients of the last run initialize anew", "path", sw.path, "err", err)
		return
	}
	if data == nil {
		return
	}
	records, skipped, err := sessionstore.Parse(data, sw.max)
	if err != nil {
		sw.log.Warn("stored sessions ignored; clients of the last run initialize anew", "path", sw.path, "err", err)
		return
	}
	stale := 0
	for _, r := range records {
		if !r.Fresh(now, SessionTimeout, sw.timeout) {
			stale++
			continue
		}
		sw.stored[r.ID] = r
	}
	sw.written = data
	if skipped > 0 {
		sw.log.Warn("stored sessions: skipped invalid records", "path", sw.path, "count", skipped)
	}
	sw.log.Debug("stored sessions read", "path", sw.path, "kept", len(sw.stored), "stale", stale)
}

// records is what the file should hold at now: every live session bound
// to a token whose initialize is known, and the stored ones not restored
// yet that are still fresh; the most recently used first, at most max.
func (sw *Sessions) records(now time.Time) []sessionstore.Record {
	params := sw.params()
	sw.mu.Lock()
	defer sw.mu.Unlock()
	var out []sessionstore.Record
	for id, u := range sw.sessions {
		if u.bound == nil {
			continue
		}
		if u.params == nil {
			if p := params[id]; p != nil {
				u.params, u.protocol = keepable(p)
			}
		}
		if len(u.params) == 0 {
			continue
		}
		last := u.last
		if u.active > 0 {
			last = now
		}
		// Kept to the half minute: a session in steady use (or a call that
		// runs for minutes) would otherwise change the file, and have it
		// rewritten and synced, at every flush; a restored session's life
		// is at most that much shorter.
		last = last.Truncate(lastUsedGrain)
		out = append(out, sessionstore.Record{ID: id, Protocol: u.protocol, Params: u.params, Role: u.bound.role,
			Digest: sessionstore.TokenDigest(u.bound.digest), Created: u.created, LastUsed: last, Streamed: u.streamed})
	}
	for id, r := range sw.stored {
		if !r.Fresh(now, SessionTimeout, sw.timeout) {
			delete(sw.stored, id)
			continue
		}
		if sw.sessions[id] == nil {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b sessionstore.Record) int { return b.LastUsed.Compare(a.LastUsed) })
	if len(out) > sw.max {
		out = out[:sw.max]
	}
	return out
}

// keepable is what a record keeps of an initialize: its params as JSON
// and the protocol version asked for; empty params (not nil, so they are
// not made again at every flush) for params too large to keep, which the
// table would otherwise hold a second copy of (a client's name alone may
// take most of a request body).
func keepable(p *mcp.InitializeParams) ([]byte, string) {
	b, err := json.Marshal(p)
	if err != nil || len(b) > sessionstore.MaxParamsBytes {
		return []byte{}, ""
	}
	return b, p.ProtocolVersion
}

// flush writes the file when what it should hold changed. Flushes are
// serialised: Run's, and a test's.
func (sw *Sessions) flush(now time.Time) {
	if sw.path == "" {
		return
	}
	sw.flushing.Lock()
	defer sw.flushing.Unlock()
	data := sessionstore.Encode(sw.records(now))
	if bytes.Equal(data, sw.written) {
		return
	}
	if err := sessionstore.Write(sw.path, data); err != nil {
		sw.log.Warn("could not keep the sessions for a restart", "path", sw.path, "err", err)
		return
	}
	sw.written = data
}

// restore re-creates session id, unknown to the server, from its stored
// record, for a request that authenticated as cred, replaying through
// next (the handler observe wraps) the initialize its client sent and the
// notifications/initialized that followed, under the same id. It answers
// 0 once the session is back, 404 when no fresh record has that id (the
// client initializes anew, as after any lost session), and 403 when the
// record belongs to another token or role: a session belongs to its token,
// and the record stays for the request that carries it. A record whose
// token the config no longer holds (valid says which stored digests are of
// a token it holds now) can never be claimed: it is dropped and the
// answer is 404, so the client of a rotated token initializes anew rather
// than stopping at a refusal.
func (sw *Sessions) restore(orig *http.Request, id string, cred binding, valid func(sessionstore.Digest) bool, next http.Handler) (int, string) {
	sw.restoring.Lock()
	defer sw.restoring.Unlock()
	sw.mu.Lock()
	if u := sw.sessions[id]; u != nil && u.bound != nil {
		sw.mu.Unlock()
		return 0, "" // restored by a request that came first
	}
	r, ok := sw.stored[id]
	if ok && !r.Fresh(time.Now(), SessionTimeout, sw.timeout) {
		delete(sw.stored, id)
		ok = false
	}
	sw.mu.Unlock()
	switch {
	case !ok:
		return http.StatusNotFound, "session not found"
	case !r.Matches(cred.digest) && !valid(r.Digest):
		sw.forget(id)
		return http.StatusNotFound, "session not found"
	case !r.Matches(cred.digest):
		return http.StatusForbidden, refuseOtherToken
	case r.Role != cred.role:
		return http.StatusForbidden, refuseRoleChanged
	}
	var params mcp.InitializeParams
	if json.Unmarshal(r.Params, &params) != nil {
		sw.forget(id)
		return http.StatusNotFound, "session not found"
	}
	params.ProtocolVersion = r.Protocol
	init, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": &params})
	// The replay is the server's own: it outlives the request that asked
	// for it only as long as the SDK's handler takes.
	base := context.WithValue(context.WithoutCancel(orig.Context()), credentialKey{}, binding{role: r.Role, digest: cred.digest})
	base, cancel := context.WithTimeout(base, BodyTimeout)
	defer cancel()
	w := &replayWriter{header: http.Header{}}
	next.ServeHTTP(w, replayRequest(context.WithValue(base, restoreIDKey{}, id), orig, init, "", ""))
	if w.status != http.StatusOK || w.header.Get(sessionHeader) != id {
		if got := w.header.Get(sessionHeader); got != "" && got != id {
			if closeSession := sw.live()[got]; closeSession != nil {
				closeSession()
			}
		}
		sw.log.Warn("could not restore a stored session; its client initializes anew", "status", w.status)
		sw.forget(id)
		return http.StatusNotFound, "session not found"
	}
	var answer struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	decodeAnswer(w.body.Bytes(), &answer)
	done := `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`
	w = &replayWriter{header: http.Header{}}
	next.ServeHTTP(w, replayRequest(base, orig, []byte(done), id, answer.Result.ProtocolVersion))
	sw.mu.Lock()
	delete(sw.stored, id)
	if u := sw.sessions[id]; u != nil {
		u.created, u.params, u.protocol, u.streamed = r.Created, r.Params, r.Protocol, false
	}
	sw.mu.Unlock()
	sw.log.Info("restored a session kept from the last run", "protocol_version", r.Protocol)
	return 0, ""
}

// forget drops a stored record that cannot be restored.
func (sw *Sessions) forget(id string) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	delete(sw.stored, id)
}

// replayRequest is one POST of a restore's replay, to the host and from
// the address of orig, the request that asked for it (which passed the
// DNS-rebinding check, as the SDK's own check needs).
func replayRequest(ctx context.Context, orig *http.Request, body []byte, id, version string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "/mcp", bytes.NewReader(body))
	req.Host, req.RemoteAddr = orig.Host, orig.RemoteAddr
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if id != "" {
		req.Header.Set(sessionHeader, id)
	}
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	return req
}

// decodeAnswer reads the JSON-RPC answer of a replayed POST, which the SDK
// writes as one server-sent event ("data: {…}") or as plain JSON.
func decodeAnswer(body []byte, v any) {
	for _, line := range bytes.Split(body, []byte("\n")) {
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			json.Unmarshal(data, v)
			return
		}
	}
	json.Unmarshal(body, v)
}

// replayWriter takes the answer of a replayed request, which goes to no
// client: its status, head and (bounded) body.
type replayWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *replayWriter) Header() http.Header { return w.header }

func (w *replayWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *replayWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if w.body.Len() < 64<<10 {
		w.body.Write(p)
	}
	return len(p), nil
}

// Flush lets the SDK flush its events; there is nothing to push.
func (w *replayWriter) Flush() { w.WriteHeader(http.StatusOK) }
