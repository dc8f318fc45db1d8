package connect

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// send posts a notification or a response and waits for its 202, so the
// server has it before the next message goes.
func (b *bridge) send(ctx context.Context, m message) error {
	s := b.sess
	pctx, cancel := context.WithTimeout(s.ctx, postTimeout)
	defer cancel()
	var w writing
	pctx = withWrote(pctx, &w, func(error) {})
	resp, err := b.do(pctx, http.MethodPost, s, m.raw, messageHeaders(m, s))
	if err != nil {
		e := transportEvent(s, err)
		if (w.unsent() || closedIdle(err)) && e.kind == eventLost && b.initMsg != nil {
			// The server never had it: it goes on the next session.
			b.holdAgain(m)
		} else {
			b.log.Warn("could not pass a message to the server", "method", m.method, "error", err)
		}
		return b.onEvent(ctx, e)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	drain(resp)
	if e, ok := statusEvent(s, resp, body); ok {
		if (e.kind == eventMissing || e.kind == eventUnauthorized) && b.initMsg != nil {
			b.holdAgain(m) // refused before it was published
		} else {
			b.log.Warn("the server refused a message", "method", m.method, "status", resp.Status)
		}
		return b.onEvent(ctx, e)
	}
	if resp.StatusCode/100 != 2 {
		b.log.Warn("the server refused a message", "method", m.method, "status", resp.Status, "answer", excerpt(body))
	}
	if m.method == "notifications/initialized" && resp.StatusCode/100 == 2 {
		b.initialized = true
		b.startListening(s)
	}
	return nil
}

// call posts a request; its answer is read by a goroutine of its own,
// and the next message waits only until the request is out (see
// callSettle).
func (b *bridge) call(m message) {
	s := b.sess
	b.out.track(m.key, m.id)
	sent := make(chan struct{})
	var once sync.Once
	markSent := func() { once.Do(func() { close(sent) }) }
	go b.runCall(s, m, markSent)
	select {
	case <-sent:
	case <-s.calls.Done():
	}
}

// runCall posts request m on session s and passes its answer on: the
// server's messages as they come, and a JSON-RPC error when no answer can
// come (the request never left, the server went away, the stream ended
// without it). A request already answered (by failAll, when the session
// was given up) is not answered twice.
func (b *bridge) runCall(s *session, m message, sent func()) {
	defer sent()
	var w writing
	ctx := withWrote(s.calls, &w, func(err error) {
		if err == nil {
			b.out.markSent(m.key)
		}
		time.AfterFunc(callSettle, sent)
	})
	resp, err := b.do(ctx, http.MethodPost, s, m.raw, messageHeaders(m, s))
	sent()
	if err != nil {
		if w.unsent() || closedIdle(err) {
			// Not written whole: the server cannot have run it (a
			// server that went away, or a session given up), so it goes
			// again, on the next session if this one is lost.
			b.handBack(s, m, transportEvent(s, err))
			return
		}
		// It was sent: the server died during the call, which may have
		// run.
		b.out.fail(m.key, codeLost, fmt.Sprintf("wraptool connect: the wraptool server at %s went away before answering (%v); send the request again", b.o.Address, err))
		b.report(s, transportEvent(s, err))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		if e, ok := b.answerStatus(s, m, resp); ok {
			b.report(s, e)
		}
		return
	}
	answered, tooLarge, err := b.readAnswer(resp, func(data []byte) bool { return b.out.forward(data, s.gen) == m.key })
	if answered {
		return
	}
	why := "the server ended its answer without a response (it may have stopped)"
	switch {
	case tooLarge:
		why = fmt.Sprintf("the server's answer was larger than %d bytes and was dropped", MaxEventBytes)
	case err != nil:
		why = "the connection broke (the server may have stopped): " + err.Error()
	}
	b.out.fail(m.key, codeLost, fmt.Sprintf("wraptool connect: %s; send the request again", why))
}

// answerStatus answers request m refused at the HTTP level: with the
// JSON-RPC error the server wrote, else one saying the status. It returns
// the event the status means for the session, if any.
func (b *bridge) answerStatus(s *session, m message, resp *http.Response) (event, bool) {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if e, ok := statusEvent(s, resp, body); ok {
		if e.kind == eventMissing || e.kind == eventUnauthorized {
			// Refused before it ran (a server that no longer knows the
			// session, or a token it no longer takes): it goes again on
			// the session the manager opens next, which the handed-back
			// request tells it to.
			b.handBack(s, m, e)
			return event{}, false
		}
		b.out.fail(m.key, codeLost, fmt.Sprintf("wraptool connect: the server answered %s to this request", resp.Status))
		return e, true
	}
	if isJSON(resp) && b.out.forward(body, s.gen) == m.key {
		return event{}, false
	}
	b.out.fail(m.key, codeLost, fmt.Sprintf("wraptool connect: the server answered %s: %s", resp.Status, excerpt(body)))
	return event{}, false
}

// closedIdle reports whether err says the server closed the kept-alive
// connection while it was idle, before the request came: the server never
// read it (net/http does not resend a POST itself, nor export the error).
func closedIdle(err error) bool {
	return strings.Contains(err.Error(), "http: server closed idle connection")
}

// handBack gives the manager request m, which never reached the server,
// with what happened to session s (e): it is not answered here, but sent
// again. The manager must get it whatever became of s, so only the end of
// Run gives up (then it is answered with e's error).
func (b *bridge) handBack(s *session, m message, e event) {
	e.retry = &m
	select {
	case b.events <- e:
	case <-b.done:
		b.out.fail(m.key, codeLost, fmt.Sprintf("wraptool connect: could not send the request to the wraptool server at %s (%v); send it again", b.o.Address, e.err))
	}
}

// report tells the manager about trouble on session s, unless s was given
// up meanwhile.
func (b *bridge) report(s *session, e event) {
	select {
	case b.events <- e:
	case <-s.ctx.Done():
	}
}
