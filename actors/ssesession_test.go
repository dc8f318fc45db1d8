package actors

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestSSESessionID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, head   string
		want         string
		wantComplete bool
	}{
		{"the SDK's endpoint event", "event: endpoint\ndata: /sse?sessionid=ABCDEF234567\n\n", "ABCDEF234567", true},
		{"an absolute endpoint", "event: endpoint\ndata: http://127.0.0.1:9/sse?sessionid=x_y-z\n\n", "x_y-z", true},
		{"not yet the whole line", "event: endpoint\ndata: /sse?sessionid=ABC", "", false},
		{"nothing yet", "event: endp", "", false},
		{"no sessionid", "event: endpoint\ndata: /sse\n\n", "", true},
		{"an id with odd characters is not kept", "event: endpoint\ndata: /sse?sessionid=a%22b%0A\n\n", "", true},
		{"an ANSI escape is not kept", "event: endpoint\ndata: /sse?sessionid=%1B%5B31m\n\n", "", true},
		{"an overlong id is not kept", "event: endpoint\ndata: /sse?sessionid=" + strings.Repeat("a", 200) + "\n\n", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, complete := sseSessionID([]byte(tt.head))
			if got != tt.want || complete != tt.wantComplete {
				t.Errorf("sseSessionID(%q) = %q, %v; want %q, %v", tt.head, got, complete, tt.want, tt.wantComplete)
			}
		})
	}
}

// The id is read from the stream as the SDK writes it, in pieces, and the
// stream reaches the client unchanged and flushed.
func TestSSEIDWriterReadsTheEndpointEvent(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	w := &sseIDWriter{ResponseWriter: rec}
	stream := "event: endpoint\ndata: /sse?sessionid=QWERTY234\n\nevent: message\ndata: {}\n\n"
	for _, piece := range []string{stream[:10], stream[10:30], stream[30:]} {
		if _, err := w.Write([]byte(piece)); err != nil {
			t.Fatal(err)
		}
		w.Flush()
	}
	if got := w.sessionID(); got != "QWERTY234" {
		t.Errorf("session id = %q, want QWERTY234", got)
	}
	if got := rec.Body.String(); got != stream {
		t.Errorf("the client got %q, want %q", got, stream)
	}
	if !rec.Flushed {
		t.Error("the stream was not flushed")
	}
	if w.head != nil {
		t.Errorf("the writer still holds %d bytes of the stream", len(w.head))
	}
	var _ http.Flusher = w
}

// A stream that never announces an endpoint costs at most the scan bound.
func TestSSEIDWriterGivesUpAfterItsBound(t *testing.T) {
	t.Parallel()
	w := &sseIDWriter{ResponseWriter: httptest.NewRecorder()}
	chunk := bytes.Repeat([]byte("x"), 1000)
	for range 10 {
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if w.sessionID() != "" || !w.done || w.head != nil {
		t.Errorf("after 10,000 bytes without an endpoint: id %q, done %v, holding %d bytes", w.sessionID(), w.done, len(w.head))
	}
}
