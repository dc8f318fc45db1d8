package connect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Streamable HTTP headers (MCP 2025-11-25, and the 2026-07-28 draft's
// standard headers for the server/discover probe some clients send first).
const (
	sessionIDHeader       = "Mcp-Session-Id"
	protocolVersionHeader = "MCP-Protocol-Version"
	methodHeader          = "Mcp-Method"
	nameHeader            = "Mcp-Name"
	// metaProtocolVersion is where a 2026-07-28 request carries its
	// protocol version; the server wants it in the header as well.
	metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	// standardHeadersFrom is the first protocol version whose requests
	// carry Mcp-Method and Mcp-Name.
	standardHeadersFrom = "2026-07-28"
)

// do sends one HTTP request to the endpoint on session s: the token, the
// session id and the protocol version as s has them, and hdr on top.
func (b *bridge) do(ctx context.Context, method string, s *session, body []byte, hdr http.Header) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.o.URL, rd)
	if err != nil {
		return nil, err
	}
	switch method {
	case http.MethodPost:
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	case http.MethodGet:
		req.Header.Set("Accept", "text/event-stream")
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	if s.id != "" {
		req.Header.Set(sessionIDHeader, s.id)
	}
	if s.protocol != "" {
		req.Header.Set(protocolVersionHeader, s.protocol)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	return b.clientFor(s.token).Do(req)
}

// messageHeaders are the headers a request of the client's needs beyond
// the session's: the protocol version its own _meta names (a 2026-07-28
// client's server/discover probe, sent before any session), and from that
// version on Mcp-Method and Mcp-Name, as the go-sdk's client sets them.
func messageHeaders(m message, s *session) http.Header {
	if m.kind != kindRequest {
		return nil
	}
	protocol := s.protocol
	if bytes.Contains(m.raw, []byte(metaProtocolVersion)) {
		var p struct {
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(m.raw, &p) == nil {
			if v, ok := p.Params.Meta[metaProtocolVersion].(string); ok && v != "" {
				protocol = v
			}
		}
	}
	if protocol == "" || protocol == s.protocol && protocol < standardHeadersFrom {
		return nil
	}
	h := http.Header{}
	h.Set(protocolVersionHeader, protocol)
	if protocol >= standardHeadersFrom {
		h.Set(methodHeader, m.method)
		var p struct {
			Params struct {
				Name string `json:"name"`
				URI  string `json:"uri"`
			} `json:"params"`
		}
		if json.Unmarshal(m.raw, &p) == nil {
			switch m.method {
			case "tools/call", "prompts/get":
				h.Set(nameHeader, p.Params.Name)
			case "resources/read":
				h.Set(nameHeader, p.Params.URI)
			}
		}
	}
	return h
}

// readAnswer reads the answer to a POST, JSON or an event stream, and
// passes each message to fn until fn says it was the awaited response.
// tooLarge says a message over MaxEventBytes was dropped.
func (b *bridge) readAnswer(resp *http.Response, fn func(data []byte) (isAnswer bool)) (answered, tooLarge bool, err error) {
	switch mediaType(resp) {
	case "application/json":
		data, err := io.ReadAll(io.LimitReader(resp.Body, MaxEventBytes+1))
		if err != nil {
			return false, false, err
		}
		if len(data) > MaxEventBytes {
			b.log.Warn("dropped an answer from the server over the size limit", "limit", MaxEventBytes)
			return false, true, nil
		}
		return fn(data), false, nil
	case "text/event-stream":
		err := readEvents(resp.Body, MaxEventBytes, func(data []byte, large bool) bool {
			if large {
				tooLarge = true
				b.log.Warn("dropped a message from the server over the size limit", "limit", MaxEventBytes)
				return true
			}
			answered = fn(data)
			return !answered
		})
		if answered {
			finish(resp)
		}
		return answered, tooLarge, err
	default:
		return false, false, fmt.Errorf("the server answered with Content-Type %q", resp.Header.Get("Content-Type"))
	}
}

// statusEvent is what an HTTP status means for session s, if anything
// beyond the one request: 404 on a session (the server forgot it: it
// restarted, or the session expired), 401 (the token is refused), 403
// (the server refuses the bridge itself).
func statusEvent(s *session, resp *http.Response, body []byte) (event, bool) {
	switch {
	case resp.StatusCode == http.StatusNotFound && s.id != "":
		return event{gen: s.gen, kind: eventMissing, err: errors.New(resp.Status)}, true
	case resp.StatusCode == http.StatusUnauthorized:
		return event{gen: s.gen, kind: eventUnauthorized, err: errors.New(resp.Status)}, true
	case resp.StatusCode == http.StatusForbidden:
		return event{gen: s.gen, kind: eventFatal, err: fmt.Errorf("the server answered %s: %s", resp.Status, excerpt(body))}, true
	}
	return event{}, false
}

// transportEvent is what a failed request means for session s: a
// listener of another user stops the bridge; anything else is a server
// that does not answer.
func transportEvent(s *session, err error) event {
	if refusing(err) {
		return event{gen: s.gen, kind: eventFatal, err: fmt.Errorf("refusing the listener: %w; nothing was sent", err)}
	}
	return event{gen: s.gen, kind: eventLost, err: err}
}

// writing follows one request's way out, for telling a request the server
// cannot have read from one it may have run.
type writing struct {
	conn   atomic.Bool // a connection was got for it
	ended  atomic.Bool // writing it ended
	failed atomic.Bool // and failed
}

// unsent reports whether the request cannot have reached the server whole:
// no connection was got for it, or writing it failed. A write still going
// on when the request ended (cancelled) may yet land: that is not unsent.
func (w *writing) unsent() bool {
	return !w.conn.Load() || w.ended.Load() && w.failed.Load()
}

// withWrote is ctx with w following the request, and fn called once
// writing it ended, with nil when it was written body and all.
func withWrote(ctx context.Context, w *writing, fn func(err error)) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { w.conn.Store(true) },
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			w.failed.Store(i.Err != nil)
			w.ended.Store(true)
			fn(i.Err)
		},
	})
}

// streamEnd is how long a stream may take to end once its response came:
// the server ends it right after the response; reading to its end lets the
// connection serve the next request (a dial and an owner check saved).
const streamEnd = 100 * time.Millisecond

// finish reads an answered stream to its end, within streamEnd, and closes
// it.
func finish(resp *http.Response) {
	t := time.AfterFunc(streamEnd, func() { resp.Body.Close() })
	defer t.Stop()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// drain reads what is left of a small answer and closes it, so its
// connection can be used again.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

func mediaType(resp *http.Response) string {
	t, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return t
}

func isJSON(resp *http.Response) bool { return mediaType(resp) == "application/json" }

// excerpt is the start of a body for a message: one line of at most 200
// bytes, valid UTF-8.
func excerpt(body []byte) string {
	s := strings.TrimSpace(string(body))
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return strings.ToValidUTF8(s, "?")
}
