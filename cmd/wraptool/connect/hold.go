package connect

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// maxHeld bounds how many messages the bridge holds while a restarted
// server comes back, and Options.MaxMessageBytes (4 MiB by default) their
// total size, so that the largest message the server takes always fits
// alone: a client that floods the bridge meanwhile gets errors, not a
// bridge that grows without end.
const maxHeld = 64

// hold keeps a message of the client's that arrives while the session is
// being reopened, to send it on the new session in stdin order: requests
// (tracked, so they are answered whatever happens), notifications, and
// cancellations, except that a cancellation of a held request removes the
// request instead. An answer to the server's question is dropped: the
// question belonged to the old session. Past the reconnect bound, or over
// the hold's bounds, a request gets an error at once and a notification
// is dropped with a log line.
func (b *bridge) hold(m message) {
	if b.malformed(m) {
		return
	}
	switch {
	case m.kind == kindResponse:
		b.log.Info("dropped the client's answer to a request of a session the server no longer has", "id", string(m.id))
		return
	case m.kind == kindNotification && m.method == "notifications/cancelled":
		if key, ok := cancelledKey(m); ok && b.unhold(key) {
			return
		}
	}
	if m.kind == kindRequest {
		// Tracked afresh (not sent): a lost session's failAll leaves
		// it alone, and whatever happens it gets one answer.
		b.out.track(m.key, m.id)
	}
	var why string
	switch {
	case b.holdUntil.IsZero() || !time.Now().Before(b.holdUntil):
		why = fmt.Sprintf("wraptool connect: the wraptool server at %s does not answer (restarting?); try again shortly", b.o.Address)
	case len(b.held) >= maxHeld || b.heldBytes+len(m.raw) > b.o.MaxMessageBytes:
		why = fmt.Sprintf("wraptool connect: %d messages (%d bytes) already wait for the wraptool server at %s to come back, the most it holds; send this one again shortly",
			len(b.held), b.heldBytes, b.o.Address)
	default:
		i := slices.IndexFunc(b.held, func(h message) bool { return h.seq > m.seq })
		if i < 0 {
			i = len(b.held)
		}
		b.held = slices.Insert(b.held, i, m)
		b.heldBytes += len(m.raw)
		return
	}
	if m.kind == kindRequest {
		b.out.fail(m.key, codeLost, why)
		return
	}
	b.log.Warn("dropped a message while the server does not answer", "method", m.method, "address", b.o.Address)
}

// unhold removes the held request key, and reports whether one was held:
// the client cancelled it before it could be sent, so it never is, and it
// gets no answer.
func (b *bridge) unhold(key string) bool {
	i := slices.IndexFunc(b.held, func(h message) bool { return h.kind == kindRequest && h.key == key })
	if i < 0 {
		return false
	}
	b.heldBytes -= len(b.held[i].raw)
	b.held = slices.Delete(b.held, i, i+1)
	b.out.untrack(key)
	return true
}

// failHeld ends the hold at the reconnect bound: every held request gets
// an error naming the address, never silence, and held notifications are
// dropped.
func (b *bridge) failHeld() {
	for _, m := range b.held {
		if m.kind == kindRequest {
			b.out.fail(m.key, codeLost, fmt.Sprintf("wraptool connect: the wraptool server at %s did not come back within %v; send the request again", b.o.Address, b.o.StartTimeout))
			continue
		}
		b.log.Warn("dropped a message held for a server that did not come back", "method", m.method, "address", b.o.Address)
	}
	b.held, b.heldBytes = nil, 0
}

// release sends the held messages on the new session, in order. A message
// that loses this session too is held again by the restart it causes,
// with the rest.
func (b *bridge) release(ctx context.Context) error {
	b.holdUntil = time.Time{}
	for len(b.held) > 0 {
		m := b.held[0]
		b.held = b.held[1:]
		b.heldBytes -= len(m.raw)
		if m.kind == kindRequest && !b.out.pending(m.key) {
			continue // answered or cancelled meanwhile
		}
		if err := b.handle(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// requeue acts on a request handed back by its goroutine (it never
// reached the server): sent again on the session in use, held when the
// session it went to is the one being lost (the restart that follows
// sends it), answered with an error when there is no session to wait for
// (the client has not initialized) or the bridge stops. One the client
// cancelled meanwhile is dropped.
func (b *bridge) requeue(e event) {
	m := *e.retry
	if !b.out.pending(m.key) {
		return
	}
	s := b.sess
	switch {
	case e.kind == eventFatal || b.initMsg == nil || s == nil:
		b.out.fail(m.key, codeLost, fmt.Sprintf("wraptool connect: could not send the request to the wraptool server at %s (%v); send it again", b.o.Address, e.err))
	case e.gen == s.gen:
		b.holdAgain(m)
	default:
		b.call(m)
	}
}

// holdAgain holds a message of the client's that the session being lost
// never published, so that the restart that follows sends it.
func (b *bridge) holdAgain(m message) {
	if b.holdUntil.IsZero() {
		b.holdUntil = time.Now().Add(b.o.StartTimeout)
	}
	b.hold(m)
}

// cancelledKey is the id key a notifications/cancelled names.
func cancelledKey(m message) (string, bool) {
	var p struct {
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(m.raw, &p) != nil {
		return "", false
	}
	return idKey(p.Params.RequestID)
}
