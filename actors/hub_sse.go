package actors

import (
	"bytes"
	"context"
	"crypto/sha256"
	"net/http"
	"net/url"
	"sync"

	"github.com/wraptool/wraptool/toolset"
)

// sessionLifeKey is the context key of a session's lifetime: a context
// that ends when the client has gone away (its legacy SSE stream ended, or
// it sent DELETE for its Streamable HTTP session). It is set on the request
// that creates the session; the SDK keeps that request context's values
// (not its cancellation) in its handlers' contexts, where track finds it.
type sessionLifeKey struct{}

// sseLife gives each legacy SSE session its stream's request context as its
// lifetime (the stream is the session), and its id: go-sdk names a legacy
// SSE session only in the endpoint it announces on the stream
// (?sessionid=…), and its ServerSession.ID() is "" there, so the id is read
// from that first event as it is written, for the audit log. The session
// belongs to the token that opened the stream: the id is bound to it before
// the event reaches the client, and a message (POST ?sessionid=…) is
// refused unless it carries that token (see admit).
func (h *Hub) sseLife(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred := h.credential(r)
		switch r.Method {
		case http.MethodGet:
			sw := &sseIDWriter{ResponseWriter: w, found: func(id string) { h.sseBound.bind(id, cred) }}
			ctx := context.WithValue(r.Context(), sessionLifeKey{}, r.Context())
			ctx = toolset.WithSessionID(ctx, sw.sessionID)
			defer func() {
				if id := sw.sessionID(); id != "" {
					h.sseBound.forget(id)
				}
			}()
			w, r = sw, r.WithContext(ctx)
		case http.MethodPost:
			if status, msg := h.sseBound.admit(r.URL.Query().Get("sessionid"), cred, h.tokenValid); status != 0 {
				refuseSession(w, r, status, msg)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// sseEndpointScan bounds how much of a stream's start sseIDWriter keeps
// while it looks for the endpoint event: the event is the stream's first.
const sseEndpointScan = 4 << 10

// sseIDWriter passes a legacy SSE stream through and reads the session id
// from its endpoint event. Calls can only arrive once the client has read
// that event, so the id is known by the first call; the mutex is for the
// race detector's sake and for a stream that never announces one.
type sseIDWriter struct {
	http.ResponseWriter
	// found, when not nil, is told the id once it is read, before the
	// event that carries it is passed on.
	found func(id string)
	mu    sync.Mutex
	id    string
	head  []byte // the stream so far, until the id is found or the scan ends
	done  bool
}

func (w *sseIDWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if !w.done {
		w.head = append(w.head, p[:min(len(p), sseEndpointScan-len(w.head))]...)
		w.id, w.done = sseSessionID(w.head)
		if w.done || len(w.head) >= sseEndpointScan {
			w.done, w.head = true, nil
		}
		if w.id != "" && w.found != nil {
			w.found(w.id)
			w.found = nil
		}
	}
	w.mu.Unlock()
	return w.ResponseWriter.Write(p)
}

// Flush keeps the stream flushable: the SDK flushes each event.
func (w *sseIDWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *sseIDWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *sseIDWriter) sessionID() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.id
}

// sseSessionID finds the session id in the endpoint event at the start of
// a legacy SSE stream ("event: endpoint\ndata: /sse?sessionid=ID\n\n"),
// and reports whether that event is complete. The id is kept only when it
// is plain (letters, digits, - and _), as the SDK makes them.
func sseSessionID(head []byte) (string, bool) {
	_, data, ok := bytes.Cut(head, []byte("\ndata: "))
	if !ok {
		return "", false
	}
	line, _, complete := bytes.Cut(data, []byte("\n"))
	if !complete {
		return "", false
	}
	u, err := url.Parse(string(line))
	if err != nil {
		return "", true
	}
	id := u.Query().Get("sessionid")
	for _, c := range id {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') || len(id) > 128 {
			return "", true
		}
	}
	return id, true
}

// sseBindings is the token each live legacy SSE session belongs to, by
// session id. A binding lives while its session's stream (a GET, holding a
// connection) does, so MaxConns bounds the map. Safe for concurrent use.
type sseBindings struct {
	mu    sync.Mutex
	bound map[string]binding
}

func (s *sseBindings) bind(id string, b binding) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bound[id] = b
}

func (s *sseBindings) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.bound, id)
}

// admit is Sessions.admit for a legacy SSE session: 0 when a message
// from cred may reach session id.
func (s *sseBindings) admit(id string, cred binding, valid func([sha256.Size]byte) bool) (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.bound[id]
	if !ok {
		return http.StatusNotFound, "session not found"
	}
	keep, refusal := admit(b, cred, valid)
	if refusal != "" {
		return http.StatusForbidden, refusal
	}
	s.bound[id] = keep
	return 0, ""
}
