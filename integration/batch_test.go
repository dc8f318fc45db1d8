package integration

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/integration/waittest"
)

// batchRefusal is the hub's answer to a JSON-RPC batch.
const batchRefusal = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"JSON-RPC batches are not supported: send each message in a request of its own"}}` + "\n"

// With the real binary, a JSON-RPC batch gets 400 with a JSON-RPC -32600
// error, and none of its messages runs: an [initialize, tools/call] batch
// without a session (which once ran the tool before the client's
// notifications/initialized), a batch on an initialised session of either
// protocol version the SDK would batch for or not, and a batch to the
// legacy SSE message endpoint. The audit log, which records every call
// that runs, shows none of them.
func TestBatchesAreRefused(t *testing.T) {
	slow(t, "JSON-RPC batches refused")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, toolsPull))
	w := newWire(t, s)
	call := func(id int, marker string) string {
		body, err := jsonCall(id, "tools/call", map[string]any{"name": "fake_pull", "arguments": map[string]any{"args": []string{marker}}})
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	oldInit := strings.Replace(initializeBody, "2025-06-18", "2025-03-26", 1)
	onNew := w.session(s.Token, initializeBody)
	onOld := w.session(s.Token, oldInit)
	onSSE := w.sse(s.Token)

	tests := []struct {
		name, path, session, body string
	}{
		{"[initialize, tools/call] without a session", "/mcp", "", "[" + initializeBody + "," + call(2, "batch-marker") + "]"},
		{"[initialize, initialized, tools/call] without a session", "/mcp", "",
			"[" + oldInit + `,{"jsonrpc":"2.0","method":"notifications/initialized"},` + call(2, "batch-marker") + "]"},
		{"a batch on a 2025-06-18 session", "/mcp", onNew, "[" + call(3, "batch-marker") + "]"},
		{"a batch on a 2025-03-26 session", "/mcp", onOld, "[" + call(4, "batch-marker") + "," + pingBody + "]"},
		{"a batch after whitespace", "/mcp", onOld, "\r\n [" + call(5, "batch-marker") + "]"},
		{"a batch to the SSE message endpoint", "/sse?sessionid=" + onSSE, "", "[" + oldInit + "," + call(6, "batch-marker") + "]"},
	}
	for _, tt := range tests {
		status, hdr, body := w.send(http.MethodPost, tt.path, s.Token, tt.session, tt.body)
		if status != http.StatusBadRequest || body != batchRefusal || hdr.Get("Content-Type") != "application/json" {
			t.Errorf("%s = %d (%s) %q, want 400 with %q", tt.name, status, hdr.Get("Content-Type"), body, batchRefusal)
		}
		if id := hdr.Get("Mcp-Session-Id"); id != "" {
			t.Errorf("%s created session %q", tt.name, id)
		}
	}

	// One message at a time goes on working, and its call is audited;
	// the batches' calls are not.
	if status, _, body := w.send(http.MethodPost, "/mcp", s.Token, onOld, call(9, "after-marker")); status != 200 || !strings.Contains(body, "after-marker") {
		t.Errorf("a single call after the batches = %d %q", status, body)
	}
	audit := filepath.Join(s.Dir, "audit.jsonl")
	waittest.Until(t, eventTimeout, func() error {
		if data, _ := os.ReadFile(audit); !bytes.Contains(data, []byte("after-marker")) {
			return fmt.Errorf("the single call audited:\n%s", s.Log())
		}
		return nil
	})
	if data, _ := os.ReadFile(audit); bytes.Contains(data, []byte("batch-marker")) {
		t.Errorf("a call in a refused batch ran:\n%s", data)
	}
	expectStillServing(t, s)
}
