package connect

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// onEvent acts on a report about a session: a stale one (an older
// generation) is ignored.
func (b *bridge) onEvent(ctx context.Context, e event) error {
	if e.retry != nil {
		b.requeue(e)
	}
	s := b.sess
	if s == nil || e.gen != s.gen {
		return nil
	}
	switch e.kind {
	case eventFatal:
		return e.err
	case eventUnauthorized:
		tok, err := b.readToken()
		if err != nil {
			return err
		}
		if tok == s.token {
			return fmt.Errorf("%w at %s (401); check the token file", ErrUnauthorized, b.o.Address)
		}
		b.log.Info("the token file changed; opening a new session with the new token")
		b.token = tok
		if b.initMsg == nil {
			b.sess = b.newSession(ctx, "", "", tok)
			return nil
		}
	}
	if b.initMsg == nil {
		// Nothing to replay yet: the client's initialize will open the
		// session, on the server that answers then.
		return nil
	}
	return b.restart(ctx, e)
}

// restart gives up the session, answers what was in flight, waits for the
// server, opens a new session with the client's initialize, and tells the
// client its tools may have changed.
func (b *bridge) restart(ctx context.Context, e event) error {
	why := map[eventKind]string{eventLost: "the server stopped answering", eventMissing: "the server no longer knows the session",
		eventUnauthorized: "the token changed"}[e.kind]
	b.log.Warn("lost the session; opening a new one once the server answers", "address", b.o.Address, "why", why, "error", e.err)
	// What the client sends from now on is held until the new session
	// is up, within the bound.
	if b.holdUntil.IsZero() {
		b.holdUntil = time.Now().Add(b.o.StartTimeout)
	}
	old := b.sess
	b.sess = nil
	// A server that answers (404: it no longer knows the session; 401:
	// it no longer takes the token) refuses each request of the old
	// session before running it, and those requests are handed back and
	// sent again: they are left to end on their own, within the bound,
	// instead of being answered with an error now. A server that went
	// away may have been running them: they are answered first, then
	// cancelled, so their goroutines find them answered and add nothing;
	// requests not written whole cannot have run, and are handed back.
	answering := e.kind == eventMissing || e.kind == eventUnauthorized
	if !answering {
		b.out.failAll(codeLost, fmt.Sprintf("wraptool connect: the session with the wraptool server at %s ended while this request was in flight (%s); send it again", b.o.Address, why), false)
	}
	b.out.cancelAsks("the wraptool server restarted")
	old.stopStream()
	if answering {
		time.AfterFunc(b.o.StartTimeout, old.cancelCalls)
	} else {
		old.cancelCalls()
	}
	b.closeIdle()
	for {
		if err := b.await(ctx, time.Time{}); err != nil {
			return err
		}
		s, err := b.replay(ctx)
		if err == nil {
			b.sess = s
			break
		}
		var st stop
		if errors.As(err, &st) || refusing(err) || errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrRefused) || ctx.Err() != nil {
			return err
		}
		b.log.Debug("the replayed initialize failed; trying again", "error", err)
	}
	b.log.Info("new session after the server came back", "address", b.o.Address)
	b.log.Debug("session started", "session_id", b.sess.id)
	if e.kind == eventLost {
		// The server may have lost only the connection, not the
		// session: it need not keep the old one until it expires.
		b.delete(old)
	}
	b.out.notify("notifications/tools/list_changed")
	if b.initialized {
		b.startListening(b.sess)
	}
	return b.release(ctx)
}
