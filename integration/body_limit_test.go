package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/actors"
)

// tooLarge is the guard's 413 body for the MCP listener's limit: the
// answer names the limit, so the test also knows the guard gave it (the
// MCP SDK, behind the guard, has a limit of its own that a body the guard
// let through never reaches).
var tooLarge = fmt.Sprintf("request body too large: the limit is %d bytes\n", actors.MaxBodyBytes)

// A client with the token that sends a tool argument over the 4 MiB limit
// learns why: the go-sdk client's call fails with the 413's status, not
// with a connection reset, and a client that reads only once it has sent
// everything reads the 413 and its reason. A tool call on a new
// connection then works. A body of exactly the limit is served, so the
// SDK's own limit never answers for the guard.
func TestOversizedToolArgumentGets413(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, toolsPull))
	huge := strings.Repeat("A", 5_000_000)

	t.Run("the go-sdk client's call fails with the 413", func(t *testing.T) {
		c := s.Connect(t, "/mcp")
		ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
		defer cancel()
		_, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "fake_pull", Arguments: map[string]any{"args": []string{huge}}})
		if err == nil || !strings.Contains(err.Error(), http.StatusText(http.StatusRequestEntityTooLarge)) {
			t.Fatalf("call with a 5 MB argument: %v, want an error saying %q", err, http.StatusText(http.StatusRequestEntityTooLarge))
		}
		// A new session, on a new connection, calls as before.
		if res := s.Connect(t, "/mcp").Call(t, "fake_pull", nil); res.IsError {
			t.Errorf("the call afterwards failed: %+v", res.Content)
		}
	})

	t.Run("a client that reads after sending reads the 413", func(t *testing.T) {
		raw := openRawMCP(t, s)
		call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fake_pull","arguments":{"args":["` + huge + `"]}}}`
		status, answer := sendWholeThenRead(t, s, raw.session, call)
		if status != http.StatusRequestEntityTooLarge || answer != tooLarge {
			t.Fatalf("got %d %q, want 413 %q", status, answer, tooLarge)
		}
		if status, _, answer, err := raw.post([]byte(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"fake_pull","arguments":{}}}`)); err != nil || status != 200 || !strings.Contains(answer, `"result"`) {
			t.Errorf("the call afterwards = %d %.300q, %v", status, answer, err)
		}
	})

	t.Run("a body of exactly the limit is served, one byte more is the guard's 413", func(t *testing.T) {
		raw := openRawMCP(t, s)
		ping := `{"jsonrpc":"2.0","id":9,"method":"ping"}`
		exact := ping + strings.Repeat(" ", int(actors.MaxBodyBytes)-len(ping))
		if status, _, answer, err := raw.post([]byte(exact)); err != nil || status != 200 || !strings.Contains(answer, `"result"`) {
			t.Errorf("a ping padded to %d bytes = %d %.300q, %v; want it served", len(exact), status, answer, err)
		}
		if status, answer := sendWholeThenRead(t, s, raw.session, exact+" "); status != http.StatusRequestEntityTooLarge || answer != tooLarge {
			t.Errorf("one byte more: %d %q, want 413 %q", status, answer, tooLarge)
		}
	})
}

// sendWholeThenRead POSTs body to s's /mcp on session on a connection of
// its own, writing all of it before reading the answer, as a simple client
// does; a server that closes while the client still sends makes the write
// fail or the answer vanish.
func sendWholeThenRead(t *testing.T, s *server, session, body string) (int, string) {
	t.Helper()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", u.Host, eventTimeout)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(eventTimeout))
	var msg bytes.Buffer
	fmt.Fprintf(&msg, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-06-18\r\nContent-Length: %d\r\n\r\n%s",
		u.Host, s.Token, session, len(body), body)
	if _, err := c.Write(msg.Bytes()); err != nil {
		t.Fatalf("write %d bytes: %v, want the server to take the whole body", msg.Len(), err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	answer, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read the answer's body: %v", err)
	}
	return res.StatusCode, string(answer)
}
