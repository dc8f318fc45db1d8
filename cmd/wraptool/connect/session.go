package connect

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// initialize posts the client's first initialize and, once the server
// accepted it, makes the session its answer opens (its Mcp-Session-Id and
// protocol version) and keeps the message to replay after a restart.
func (b *bridge) initialize(ctx context.Context, m message) error {
	pre := b.sess
	b.out.track(m.key, m.id)
	resp, err := b.do(pre.ctx, http.MethodPost, pre, m.raw, messageHeaders(m, pre))
	if err != nil {
		b.out.fail(m.key, codeLost, fmt.Sprintf("wraptool connect: the wraptool server at %s did not take the initialize: %v", b.o.Address, err))
		return b.onEvent(ctx, transportEvent(pre, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		if e, ok := b.answerStatus(pre, m, resp); ok {
			return b.onEvent(ctx, e)
		}
		return nil
	}
	var answer []byte
	answered, _, err := b.readAnswer(resp, func(data []byte) bool {
		if respondsTo(data, m.key) {
			answer = data
			return true
		}
		b.out.forward(data, pre.gen)
		return false
	})
	if !answered {
		b.out.fail(m.key, codeLost, fmt.Sprintf("wraptool connect: the wraptool server at %s ended its answer to initialize without one (%v)", b.o.Address, err))
		return nil
	}
	if protocol, ok := initializeResult(answer); ok {
		b.initMsg = m.raw
		b.sess = b.newSession(ctx, resp.Header.Get(sessionIDHeader), protocol, pre.token)
		b.log.Debug("session started", "session_id", b.sess.id, "protocol", protocol)
	}
	b.out.forward(answer, b.sess.gen)
	return nil
}

// replay opens a new session on a server that came back, with the
// client's own initialize (under an id of the bridge's, its answer not
// passed on: the client has had one) and, if the client sent it,
// notifications/initialized.
func (b *bridge) replay(ctx context.Context) (*session, error) {
	tok, err := b.readToken()
	if err != nil {
		return nil, stop{fmt.Errorf("read the token: %w", err)}
	}
	b.token = tok
	rctx, cancel := context.WithTimeout(ctx, replayTimeout)
	defer cancel()
	body, err := withID(b.initMsg, replayID)
	if err != nil {
		return nil, stop{err}
	}
	bare := &session{token: tok}
	resp, err := b.do(rctx, http.MethodPost, bare, body, nil)
	if err != nil {
		if refusing(err) {
			return nil, fmt.Errorf("refusing %s: %w; nothing was sent", b.o.Address, err)
		}
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if e, ok := statusEvent(bare, resp, answer); ok && e.kind != eventMissing {
			if e.kind == eventUnauthorized {
				return nil, fmt.Errorf("%w at %s (401); check the token file", ErrUnauthorized, b.o.Address)
			}
			return nil, e.err
		}
		return nil, fmt.Errorf("the replayed initialize got %s: %s", resp.Status, excerpt(answer))
	}
	key, _ := idKey(json.RawMessage(replayID))
	var answer []byte
	answered, _, err := b.readAnswer(resp, func(data []byte) bool {
		if respondsTo(data, key) {
			answer = data
			return true
		}
		return false // nothing else can come before initialized
	})
	if !answered {
		return nil, fmt.Errorf("the replayed initialize got no answer (%v)", err)
	}
	protocol, ok := initializeResult(answer)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrRefused, excerpt(answer))
	}
	s := b.newSession(ctx, resp.Header.Get(sessionIDHeader), protocol, tok)
	if !b.initialized {
		return s, nil
	}
	resp, err = b.do(rctx, http.MethodPost, s, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), nil)
	if err != nil {
		s.cancel()
		return nil, err
	}
	drain(resp)
	if resp.StatusCode/100 != 2 {
		s.cancel()
		return nil, fmt.Errorf("the replayed notifications/initialized got %s", resp.Status)
	}
	return s, nil
}

// startListening opens the session's GET stream, once: the server's
// notifications and requests that belong to no request of the client's
// come there.
func (b *bridge) startListening(s *session) {
	if s.id == "" {
		return // a server without sessions has no stream to offer
	}
	s.listen.Do(func() { go b.listen(s) })
}

// listen reads the session's GET stream and reopens it when it ends, for
// as long as the session lives. When it cannot be reopened (the server is
// away, or no longer knows the session) it reports to the manager and
// ends: that is how a restart of the server is noticed.
func (b *bridge) listen(s *session) {
	short := 0 // streams in a row that ended within a second
	for {
		opened := time.Now()
		resp, err := b.do(s.ctx, http.MethodGet, s, nil, nil)
		if err != nil {
			if s.ctx.Err() == nil {
				b.report(s, transportEvent(s, err))
			}
			return
		}
		if resp.StatusCode/100 != 2 {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			drain(resp)
			if e, ok := statusEvent(s, resp, body); ok {
				b.report(s, e)
			} else {
				// 405: the server offers no stream; anything else is
				// logged, and the session goes on without one.
				b.log.Debug("no stream for server messages", "status", resp.Status, "answer", excerpt(body))
			}
			return
		}
		if mediaType(resp) != "text/event-stream" {
			drain(resp)
			b.log.Warn("the server's stream is not text/event-stream; going on without it", "content_type", resp.Header.Get("Content-Type"))
			return
		}
		err = readEvents(resp.Body, MaxEventBytes, func(data []byte, tooLarge bool) bool {
			if tooLarge {
				b.log.Warn("dropped a message from the server over the size limit", "limit", MaxEventBytes)
				return true
			}
			b.out.forward(data, s.gen)
			return true
		})
		resp.Body.Close()
		if s.ctx.Err() != nil {
			return
		}
		b.log.Debug("the server's stream ended; reopening it", "error", err)
		// The first end is looked into at once (a restart is noticed
		// there); a server that keeps ending the stream at once does not
		// make a busy loop of it.
		if time.Since(opened) > time.Second {
			short = 0
			continue
		}
		if short++; short > 1 {
			t := time.NewTimer(time.Second)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return
			}
		}
	}
}

// end ends the session: the server forgets it at once (HTTP DELETE)
// instead of when it expires.
func (b *bridge) end() {
	s := b.sess
	if s == nil {
		return
	}
	// The session's goroutines stop first, so the end of its stream is
	// not taken for a server that went away.
	s.cancel()
	b.delete(s)
}

// delete asks the server to forget session s (HTTP DELETE), bounded by
// deleteTimeout; a failure only costs the server an idle session until it
// expires.
func (b *bridge) delete(s *session) {
	if s.id == "" {
		return
	}
	// The run's context may be over (a signal): the DELETE has its own.
	ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
	defer cancel()
	resp, err := b.do(ctx, http.MethodDelete, s, nil, nil)
	if err != nil {
		b.log.Debug("could not end the session", "session_id", s.id, "error", err)
		return
	}
	drain(resp)
	b.log.Debug("session ended", "session_id", s.id, "status", resp.StatusCode)
}

// fatal stops the bridge with err: every request in flight is answered
// with it first, and nothing more is sent (no DELETE: the listener may not
// be the user's, or may not take the token).
func (b *bridge) fatal(err error) error {
	if b.sess != nil {
		b.sess.cancel()
	}
	b.out.failAll(codeLost, "wraptool connect stopped: "+err.Error(), true)
	b.held, b.heldBytes = nil, 0
	b.out.cancelAsks("wraptool connect stopped")
	return err
}

// initializeResult returns the protocol version of a successful answer to
// initialize; ok is false for an error answer.
func initializeResult(answer []byte) (protocol string, ok bool) {
	var r struct {
		Result *struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if json.Unmarshal(answer, &r) != nil || r.Result == nil {
		return "", false
	}
	return r.Result.ProtocolVersion, true
}

// respondsTo reports whether data is the response to the request key.
func respondsTo(data []byte, key string) bool {
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if json.Unmarshal(data, &env) != nil || env.Method != nil {
		return false
	}
	k, ok := idKey(env.ID)
	return ok && k == key
}

// withID is the message raw with its id replaced.
func withID(raw []byte, id string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	m["id"] = json.RawMessage(id)
	return json.Marshal(m)
}

// stop marks an error that ends the bridge instead of another attempt to
// open a session: trying again would fail the same way.
type stop struct{ err error }

func (s stop) Error() string { return s.err.Error() }
func (s stop) Unwrap() error { return s.err }
