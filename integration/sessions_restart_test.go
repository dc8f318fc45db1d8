package integration

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wraptool/wraptool/integration/waittest"
)

// TestStreamableSessionSurvivesRestart restarts the server under a go-sdk
// client on /mcp: the client keeps its session id, a tool call works on
// the new server, and the next tools/list_changed reaches it on its
// reopened GET stream. The file that kept the session holds no token.
func TestStreamableSessionSurvivesRestart(t *testing.T) {
	slow(t, "Streamable HTTP sessions kept across a restart")
	t.Parallel()
	dir := t.TempDir()
	cfg := serverConfig(t, dir, toolsPull)
	s := startServerIn(t, dir, cfg)
	c := s.Connect(t, "/mcp")
	id := c.ID()
	if got, want := c.WrappedTools(t), []string{"fake_pull"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %q, want %q", got, want)
	}
	s.stop(t)

	stored := filepath.Join(dir, "sessions.json")
	data, err := os.ReadFile(stored)
	if err != nil {
		t.Fatalf("the stopped server kept no sessions file: %v\n%s", err, s.Log())
	}
	if !bytes.Contains(data, []byte(id)) {
		t.Errorf("sessions file %s does not name session %s:\n%s", stored, id, data)
	}
	if bytes.Contains(data, []byte(s.Token)) {
		t.Errorf("sessions file holds the token:\n%s", data)
	}
	if info, err := os.Stat(stored); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("sessions file mode = %v (%v), want 0600", info.Mode().Perm(), err)
	}

	s2 := startServerIn(t, dir, "")
	if s2.URL != s.URL {
		t.Fatalf("restarted on %s, want %s", s2.URL, s.URL)
	}
	res := c.Call(t, "fake_pull", map[string]any{"args": []string{"origin"}})
	if res.IsError {
		t.Errorf("call after the restart is an error: %+v\n%s", res.Content, s2.Log())
	}
	if c.ID() != id {
		t.Errorf("session id after the restart = %s, want %s", c.ID(), id)
	}
	if !strings.Contains(s2.Log(), "restored a session kept from the last run") {
		t.Errorf("the new server restored no session:\n%s", s2.Log())
	}
	// The client reopens its GET stream with backoff; the restored session
	// must be told of the next change on it.
	waitStream(t, s2)
	writeInPlace(t, s2.ConfigPath, withTools(cfg, toolsPullPush))
	expectOneListChanged(t, s2, c)
	if got, want := c.WrappedTools(t), []string{"fake_pull", "fake_push"}; !slices.Equal(got, want) {
		t.Errorf("tools after the edit = %q, want %q", got, want)
	}
}

// TestRestoredSessionOnAnotherToken shows that a session kept from the
// last run belongs to its token: after a restart, a request naming it with
// another valid token (an elicitation client's) is refused with 403, and
// one without the session's role is not restored either; the session's
// own token then gets it back.
func TestRestoredSessionOnAnotherToken(t *testing.T) {
	slow(t, "a stored session refused on another token")
	t.Parallel()
	dir := t.TempDir()
	other := filepath.Join(dir, "other-token")
	if err := os.WriteFile(other, []byte(strings.Repeat("b", 64)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := serverConfig(t, dir, toolsPull)
	cfg = strings.Replace(cfg, "mcp:\n", "mcp:\n  elicit_clients:\n    - {name: phone, token_file: "+other+"}\n", 1)
	s := startServerIn(t, dir, cfg)
	c := s.Connect(t, "/mcp")
	id := c.ID()
	s.stop(t)
	c.Close()
	s2 := startServerIn(t, dir, "")

	post := func(token string) (int, string) {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`
		req, _ := http.NewRequest(http.MethodPost, s2.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		req.Header.Set("Authorization", "Bearer "+token)
		ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, body := post(strings.Repeat("b", 64)); code != http.StatusForbidden {
		t.Errorf("another token's request on the stored session = %d %q, want 403", code, body)
	}
	if code, body := post(s2.Token); code != http.StatusOK || !strings.Contains(body, "fake_pull") {
		t.Errorf("the session's own token after a refusal = %d %q, want 200 with the tools\n%s", code, body, s2.Log())
	}
}

// waitStream waits until a session opened its GET stream on s.
func waitStream(t *testing.T, s *server) {
	t.Helper()
	waittest.Until(t, 30*time.Second, func() error {
		if strings.Contains(s.Log(), "a session opened its stream") {
			return nil
		}
		return errors.New("no session opened its stream yet")
	})
}

// TestNodeClientSurvivesRestart runs the official TypeScript SDK on
// Streamable HTTP, with its default reconnection options, across a restart
// of the server: its next call works on the same session id, and the next
// tools/list_changed reaches it. Before sessions were kept, that SDK stayed
// on "404 session not found" until restarted.
func TestNodeClientSurvivesRestart(t *testing.T) {
	slow(t, "the TypeScript SDK client across a restart")
	t.Parallel()
	node, nodeDir := nodeSetup(t)
	dir := t.TempDir()
	cfg := serverConfig(t, dir, toolsPull)
	s := startServerIn(t, dir, cfg)

	ctx, cancel := context.WithTimeout(t.Context(), nodeRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "restart.mjs", "--url", s.URL, "--tool", "fake_pull",
		"--wait-ms", strconv.Itoa(int(nodeNotifyWait/time.Millisecond)))
	cmd.Dir = nodeDir
	cmd.Env = append(os.Environ(), "WRAPTOOL_TOKEN="+s.Token)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	events, exited, stderr := startNodeEvents(t, ctx, cancel, cmd)
	r := &nodeReader{t: t, ctx: ctx, events: events, stderr: stderr, servers: []*server{s}}
	next := r.next
	id := next("ready").Text
	s.stop(t)
	s2 := startServerIn(t, dir, "")
	r.servers = append(r.servers, s2)
	if _, err := stdin.Write([]byte("restarted\n")); err != nil {
		t.Fatal(err)
	}
	if ev := next("call"); ev.IsError || ev.Text != id {
		t.Errorf("call after the restart: isError %v on session %q; want a result on session %q\n%s", ev.IsError, ev.Text, id, s2.Log())
	}
	next("called")
	waitStream(t, s2)
	writeInPlace(t, s2.ConfigPath, withTools(cfg, toolsPullPush))
	if ev := next("list_changed"); ev.Count != 1 {
		t.Errorf("tools/list_changed after the restart: %d, want 1\n%s", ev.Count, s2.Log())
	}
	next("done")
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("node client exited with %v\n%s", err, stderr)
		}
	case <-ctx.Done():
		t.Error("node client did not exit after done")
	}
}
