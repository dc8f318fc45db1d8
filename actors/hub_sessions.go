package actors

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/actors/sessionstore"
)

// Sessions is the table of the Streamable HTTP sessions, and the actor that
// expires those that never opened a GET stream once they have been idle for
// the streamless timeout (StreamlessTimeout); the SDK expires every other
// session after SessionTimeout. The SDK offers no hook for this, so the hub
// passes the requests of /mcp through observe, admit asks it whom a session
// belongs to, and the table closes sessions through the MCP server it
// serves. It knows nothing of the hub. Its methods are safe for concurrent
// use; Run sweeps until its context ends.
//
// With a Path it also keeps, in that file, what each session needs to be
// re-created after a restart (see restore), flushing it from Run.
type Sessions struct {
	timeout time.Duration
	max     int                                     // the sessions it keeps at most (MaxSessions)
	live    func() map[string]func()                // the server's sessions now: id → Close
	params  func() map[string]*mcp.InitializeParams // the server's sessions' initialize params by id
	path    string                                  // the stored sessions file; "" keeps none
	log     *slog.Logger

	mu       sync.Mutex
	sessions map[string]*sessionUse         // by session id
	stored   map[string]sessionstore.Record // read at start, not restored yet
	flushing sync.Mutex                     // held while flushing; guards written
	written  []byte                         // what the file holds now

	// creating is held from the start of every request that may create a
	// session until the SDK has asked NextID for its id (or the request
	// ended without), so the id a restore hands NextID goes to that
	// restore's own request and no other.
	creating sync.Mutex
	idMu     sync.Mutex
	nextID   string // the id NextID gives next; "" for a random one
	release  func() // unlocks creating, once
	// restoring serialises restores, so two requests on one stored id
	// restore it once.
	restoring sync.Mutex
}

// SessionsOptions configure Sessions.
type SessionsOptions struct {
	// Server is the MCP server whose sessions are tracked and closed; nil
	// means one without sessions.
	Server *mcp.Server
	// StreamlessTimeout ends a session that never opened its GET stream and
	// sent nothing for this long; zero means StreamlessTimeout.
	StreamlessTimeout time.Duration
	// MaxSessions bounds the sessions remembered, and open, at once; zero
	// means MaxSessions.
	MaxSessions int
	// Path is the file that keeps the sessions across a restart (see
	// restore); "" keeps none. Its records are read here, at once.
	Path string
	// Log receives the sessions closed, as the hub's (component=hub); nil
	// discards it.
	Log *slog.Logger
}

// NewSessions tracks o.Server's Streamable HTTP sessions; it sweeps none
// until Run.
func NewSessions(o SessionsOptions) *Sessions {
	if o.StreamlessTimeout <= 0 {
		o.StreamlessTimeout = StreamlessTimeout
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = MaxSessions
	}
	sw := &Sessions{timeout: o.StreamlessTimeout, max: o.MaxSessions, live: liveSessions(o.Server),
		params: liveParams(o.Server), path: o.Path, log: logger(o.Log, "hub"), sessions: map[string]*sessionUse{},
		stored: map[string]sessionstore.Record{}}
	sw.load(time.Now())
	return sw
}

// liveParams lists the initialize params of server's Streamable HTTP
// sessions that have been initialised, by id.
func liveParams(server *mcp.Server) func() map[string]*mcp.InitializeParams {
	return func() map[string]*mcp.InitializeParams {
		out := map[string]*mcp.InitializeParams{}
		if server == nil {
			return out
		}
		for ss := range server.Sessions() {
			if id := ss.ID(); id != "" {
				if p := ss.InitializeParams(); p != nil {
					out[id] = p
				}
			}
		}
		return out
	}
}

// liveSessions lists server's Streamable HTTP sessions by id, each with its
// Close; legacy SSE sessions have no id and are left out (their stream is
// the session, so they end with it).
func liveSessions(server *mcp.Server) func() map[string]func() {
	return func() map[string]func() {
		live := map[string]func(){}
		if server == nil {
			return live
		}
		for ss := range server.Sessions() {
			if id := ss.ID(); id != "" {
				live[id] = func() { ss.Close() }
			}
		}
		return live
	}
}

// sessionUse is what the watch knows of one session.
type sessionUse struct {
	streamed bool      // a GET stream was opened: the SDK's timeout applies
	active   int       // requests being served
	last     time.Time // when the last request ended, or the session was first seen
	// end ends the session's lifetime (sessionLifeKey), stopping its
	// calls; nil for a session the watch did not see created.
	end context.CancelFunc
	// bound is the token the session belongs to; nil for a session the
	// watch did not see created, which no request may use.
	bound *binding
	// created is when the session was made (first made, for a restored
	// one); params what its client's initialize said and protocol the
	// version it asked for, once known (params is empty, not nil, for an
	// initialize too large to keep).
	created  time.Time
	params   []byte
	protocol string
}

// sessionHeader names the session a Streamable HTTP request belongs to.
const sessionHeader = "Mcp-Session-Id"

// observe passes /mcp's requests to next, noting for each session the
// token it belongs to, whether it opened a GET stream and when it was last
// busy. A session is first noted, and bound to the credential its
// initialize carried (credentialKey), as the head of that initialize's
// answer goes out: the client learns the id from that head, so none of its
// requests can arrive before the binding. Requests naming a session have
// passed admit (gateStreamable) before they get here.
func (sw *Sessions) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(sessionHeader)
		switch {
		case id == "" && r.Method == http.MethodPost:
			cred, _ := r.Context().Value(credentialKey{}).(binding)
			restoreID, _ := r.Context().Value(restoreIDKey{}).(string)
			sw.creating.Lock()
			release := sync.OnceFunc(sw.creating.Unlock)
			defer release()
			sw.idMu.Lock()
			sw.nextID, sw.release = restoreID, release
			sw.idMu.Unlock()
			life, end := context.WithCancel(context.Background())
			var evicted []string
			bw := newBindingWriter(w, func(created string) { evicted = sw.bind(created, cred, end) })
			// Every answer's head comes after the SDK chose the id (or
			// chose none): a server not wired to NextID holds the lock
			// no longer than that either.
			bind := bw.head
			bw.head = func(code int) { release(); bind(code) }
			next.ServeHTTP(bw, r.WithContext(context.WithValue(r.Context(), sessionLifeKey{}, life)))
			// A handler that wrote nothing has its head written by
			// net/http after this returns; the binding comes first. The
			// Once also makes evicted safe to read here, whichever
			// goroutine wrote the head.
			bw.writingHead(http.StatusOK)
			if w.Header().Get(sessionHeader) == "" {
				end()
			}
			sw.closeEvicted(evicted)
			return
		case id != "" && r.Method == http.MethodDelete:
			// The client ends its session: stop its calls first, or the
			// SDK's Close (and this DELETE) would wait them out. Ended, it
			// is not kept for a restart either.
			sw.update(id, func(u *sessionUse) {
				if u.end != nil {
					u.end()
				}
				u.active++
			})
			status := 0
			hw := &headWriter{ResponseWriter: w, head: func(code int) { status = code }}
			next.ServeHTTP(hw, r)
			hw.writingHead(http.StatusOK)
			sw.mu.Lock()
			if u := sw.sessions[id]; u != nil {
				u.active--
				u.last = time.Now()
				if status == http.StatusNoContent {
					delete(sw.sessions, id)
				}
			}
			sw.mu.Unlock()
			return
		case id != "" && r.Method == http.MethodGet:
			// Streamed only once the SDK opens the stream: a GET it refuses
			// (a bad Accept, an unknown id) must not exempt the session
			// from the sweep of sessions that never streamed.
			w = &headWriter{ResponseWriter: w, head: func(code int) {
				if code == http.StatusOK {
					sw.update(id, func(u *sessionUse) { u.streamed = true })
					sw.log.Debug("a session opened its stream")
				}
			}}
		case id != "":
			sw.update(id, func(u *sessionUse) { u.active++ })
			defer sw.update(id, func(u *sessionUse) { u.active--; u.last = time.Now() })
		}
		next.ServeHTTP(w, r)
	})
}

// bind notes session id, just created, as belonging to b, with end ending
// its lifetime. Past the watch's bound it forgets the least recently used
// other sessions, of the newcomer's role first, preferring those without a
// stream and idle, and returns
// their ids for closeEvicted (closing a session waits for it, so not under
// the lock, nor while the SDK writes the new session's answer).
func (sw *Sessions) bind(id string, b binding, end context.CancelFunc) (evicted []string) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	u := sw.sessions[id]
	if u == nil {
		u = &sessionUse{}
		sw.sessions[id] = u
	}
	u.last, u.end, u.bound = time.Now(), end, &b
	if u.created.IsZero() {
		u.created = u.last
	}
	for len(sw.sessions) > sw.max {
		// A session of the newcomer's own role goes first: a flood of
		// sessions on one token (the assistant's) must not close the
		// session of a client a person answers.
		victim, vu := "", (*sessionUse)(nil)
		for _, sameRole := range []bool{true, false} {
			for other, ou := range sw.sessions {
				if other == id || sameRole && (ou.bound == nil || ou.bound.role != b.role) {
					continue
				}
				if vu == nil || evictsBefore(ou, vu) {
					victim, vu = other, ou
				}
			}
			if vu != nil {
				break
			}
		}
		if vu == nil {
			break
		}
		if vu.end != nil {
			vu.end()
		}
		delete(sw.sessions, victim)
		evicted = append(evicted, victim)
	}
	return evicted
}

// evictsBefore orders sessions for eviction: idle before busy, without a
// stream before with one (a client with a stream is one that stays), then
// the longest unused first.
func evictsBefore(a, b *sessionUse) bool {
	rank := func(u *sessionUse) int {
		switch {
		case u.active > 0:
			return 2
		case u.streamed:
			return 1
		}
		return 0
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra < rb
	}
	return a.last.Before(b.last)
}

// closeEvicted closes the sessions bind forgot, so the server holds no
// more of them than the watch remembers.
func (sw *Sessions) closeEvicted(ids []string) {
	if len(ids) == 0 {
		return
	}
	live := sw.live()
	for _, id := range ids {
		if closeSession := live[id]; closeSession != nil {
			closeSession()
		}
	}
	sw.log.Info("too many sessions; closed the least recently used", "count", len(ids), "max", sw.max)
}

// admit decides whether a request that authenticated as cred may use
// session id: 0 when it may (the session then keeps the binding admit
// gives), else the status and message to refuse it with. A session the
// watch never saw bound is not found, as the SDK would say of an unknown
// id.
func (sw *Sessions) admit(id string, cred binding, valid func([sha256.Size]byte) bool) (int, string) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	u := sw.sessions[id]
	if u == nil || u.bound == nil {
		return http.StatusNotFound, "session not found"
	}
	keep, refusal := admit(*u.bound, cred, valid)
	if refusal != "" {
		return http.StatusForbidden, refusal
	}
	u.bound = &keep
	return 0, ""
}

// update applies change to session id's record, making one if needed.
func (sw *Sessions) update(id string, change func(*sessionUse)) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	u := sw.sessions[id]
	if u == nil {
		u = &sessionUse{last: time.Now()}
		sw.sessions[id] = u
	}
	change(u)
}

// Run sweeps every tenth of the timeout until ctx ends, so a stream-less
// session ends between timeout and 1.1 × timeout after its last request
// (5 min to 5 min 30 s with the defaults). It returns nil once ctx ends.
//
// With a Path it also writes the file of sessions kept for a restart, at
// most every FlushInterval, and once more when ctx ends: the hub closes
// its sessions as it stops, but their records stay for the next run.
func (sw *Sessions) Run(ctx context.Context) error {
	tick := time.NewTicker(sw.timeout / 10)
	defer tick.Stop()
	flush := time.NewTicker(FlushInterval)
	defer flush.Stop()
	for {
		select {
		case <-ctx.Done():
			sw.flush(time.Now())
			return nil
		case <-tick.C:
			if ctx.Err() == nil { // a stopping hub's closed sessions are not gone
				sw.sweep(time.Now())
			}
		case <-flush.C:
			sw.flush(time.Now())
		}
	}
}

// sweep closes the sessions that never opened a stream and have been idle
// for the timeout at now, and forgets the records of sessions that are
// gone. A session the watch has not seen yet (one made before it ran) is
// idle from now on.
func (sw *Sessions) sweep(now time.Time) {
	live := sw.live()
	var expired []func()
	sw.mu.Lock()
	for id, u := range sw.sessions {
		if _, ok := live[id]; !ok {
			if u.end != nil {
				u.end()
			}
			delete(sw.sessions, id)
		}
	}
	for id, closeSession := range live {
		u := sw.sessions[id]
		switch {
		case u == nil:
			sw.sessions[id] = &sessionUse{last: now}
		case !u.streamed && u.active == 0 && now.Sub(u.last) >= sw.timeout:
			if u.end != nil {
				u.end()
			}
			delete(sw.sessions, id)
			expired = append(expired, closeSession)
		}
	}
	sw.mu.Unlock()
	for _, closeSession := range expired {
		closeSession() // outside the lock: Close waits for the session's end
	}
	if len(expired) > 0 {
		sw.log.Debug("closed sessions that never opened a stream", "count", len(expired), "idle", sw.timeout)
	}
}
