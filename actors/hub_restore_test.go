package actors

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/actors/sessionstore"
)

// restoreHarness is a hub whose session table keeps its sessions in a file
// and chooses the SDK's ids, as wire.go wires them.
type restoreHarness struct {
	*hubHarness
	sessions *Sessions
	path     string
}

// startRestoreHub runs a hub on token (and elicitToken, client "phone")
// whose stored sessions file already
// holds records.
func startRestoreHub(t *testing.T, token string, records []sessionstore.Record) *restoreHarness {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sessions.json")
	if records != nil {
		if err := sessionstore.Write(path, sessionstore.Encode(records)); err != nil {
			t.Fatal(err)
		}
	}
	log, sink := newTestLogger()
	var sessions *Sessions
	server := mcp.NewServer(&mcp.Implementation{Name: "wraptool-test", Version: "v0"},
		&mcp.ServerOptions{Logger: log, GetSessionID: func() string { return sessions.NextID() }})
	server.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	sessions = NewSessions(SessionsOptions{Server: server, Path: path, Log: log})
	snaps := newTestSnapshots(bindingSnapshot(token, map[string]string{elicitToken: "phone"}))
	hub := NewHub(server, HubOptions{Transport: "sse", Listen: "127.0.0.1:0", Snapshots: snaps, Sessions: sessions}, log)
	if err := hub.Listen(); err != nil {
		t.Fatal(err)
	}
	h := &hubHarness{hub: hub, server: server, snaps: snaps, sink: sink,
		client: &http.Client{Timeout: wait, Transport: &http.Transport{}}}
	t.Cleanup(h.client.CloseIdleConnections)
	h.stop = start(t, hub)
	return &restoreHarness{hubHarness: h, sessions: sessions, path: path}
}

// storedRecord is a record of session id on token, last used idle ago.
func storedRecord(id, token string, idle time.Duration, streamed bool) sessionstore.Record {
	now := time.Now()
	return sessionstore.Record{ID: id, Protocol: "2025-06-18",
		Params: json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"kept","version":"v1"}}`),
		Role:   roleMain, Digest: sessionstore.TokenDigest(sha256.Sum256([]byte(token))),
		Created: now.Add(-time.Hour), LastUsed: now.Add(-idle), Streamed: streamed}
}

const listTools = `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`

// TestHubRestoresAStoredSessionOnItsTokenOnly shows the decisions on a
// request naming a session the server does not know: a fresh record on
// the same token is restored under its id and answers; on another token
// the answer is 403; a record idle past its kind's timeout, or no record,
// is the SDK's 404.
func TestHubRestoresAStoredSessionOnItsTokenOnly(t *testing.T) {
	t.Parallel()
	const token, other, gone = "the-token", elicitToken, "a-rotated-out-token"
	roleChanged := storedRecord("KEPT9", token, time.Minute, false)
	roleChanged.Role = roleElicit + "phone"
	tests := []struct {
		name       string
		record     sessionstore.Record
		ask        string // the id the request names
		sendToken  string
		wantStatus int
		wantLive   bool
	}{
		{"a fresh record on its own token is restored", storedRecord("KEPT1", token, time.Minute, false), "KEPT1", token, 200, true},
		{"a streamed record idle ten minutes is restored", storedRecord("KEPT2", token, 10*time.Minute, true), "KEPT2", token, 200, true},
		{"a record on another token is refused", storedRecord("KEPT3", other, time.Minute, false), "KEPT3", token, 403, false},
		{"a record of another role on the same token is refused", roleChanged, "KEPT9", token, 403, false},
		{"a record on a token the config no longer holds is not found", storedRecord("KEPT8", gone, time.Minute, false), "KEPT8", token, 404, false},
		{"a streamless record idle past five minutes is not restored", storedRecord("KEPT4", token, 6*time.Minute, false), "KEPT4", token, 404, false},
		{"a streamed record idle past thirty minutes is not restored", storedRecord("KEPT5", token, 31*time.Minute, true), "KEPT5", token, 404, false},
		{"an id no record has is not found", storedRecord("KEPT6", token, time.Minute, false), "OTHER", token, 404, false},
		{"a record used in the future is not restored", storedRecord("KEPT7", token, -time.Hour, false), "KEPT7", token, 404, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := startRestoreHub(t, token, []sessionstore.Record{tt.record})
			res := h.do(t, hubRequest{method: http.MethodPost, path: "/mcp", token: tt.sendToken, session: tt.ask, body: listTools})
			if res.status != tt.wantStatus {
				t.Fatalf("status = %d (%q), want %d\n%s", res.status, res.body, tt.wantStatus, h.sink)
			}
			if got := h.hasSession(tt.ask); got != tt.wantLive {
				t.Errorf("server holds session %s = %v, want %v", tt.ask, got, tt.wantLive)
			}
			if tt.wantLive {
				if !strings.Contains(res.body, `"echo"`) {
					t.Errorf("tools/list on the restored session = %q, want the tools", res.body)
				}
				for ss := range h.server.Sessions() {
					if ss.ID() == tt.ask && ss.InitializeParams().ClientInfo.Name != "kept" {
						t.Errorf("restored session's client = %+v, want the stored one", ss.InitializeParams().ClientInfo)
					}
				}
			}
			if tt.wantStatus == 403 {
				// The refusal leaves the record for its own token.
				h.sessions.mu.Lock()
				_, kept := h.sessions.stored[tt.ask]
				h.sessions.mu.Unlock()
				if !kept {
					t.Errorf("the record was dropped on a refusal; its own token must still get it back")
				}
			}
		})
	}
}

// TestSessionsKeepsWhatARestartNeeds shows the file the session table
// writes: a new session is kept (its id, its initialize, no token), mode
// 0600, and a DELETE drops it at the next flush.
func TestSessionsKeepsWhatARestartNeeds(t *testing.T) {
	t.Parallel()
	const token = "a-secret-token-value"
	h := startRestoreHub(t, token, nil)
	id := h.rawSession(t)
	h.sessions.flush(time.Now())
	data, err := os.ReadFile(h.path)
	if err != nil {
		t.Fatal(err)
	}
	records, skipped, err := sessionstore.Parse(data, MaxSessions)
	if err != nil || skipped != 0 || len(records) != 1 || records[0].ID != id || records[0].Role != roleMain ||
		!records[0].Matches(sha256.Sum256([]byte(token))) || !strings.Contains(string(records[0].Params), `"test"`) {
		t.Fatalf("stored = %+v, %d skipped, %v; want session %s on the token with its initialize", records, skipped, err, id)
	}
	if strings.Contains(string(data), token) {
		t.Errorf("the sessions file holds the token:\n%s", data)
	}
	if info, err := os.Stat(h.path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v (%v), want 0600", info.Mode().Perm(), err)
	}
	if res := h.do(t, hubRequest{method: http.MethodDelete, path: "/mcp", token: token, session: id}); res.status != http.StatusNoContent {
		t.Fatalf("DELETE = %d %q, want 204", res.status, res.body)
	}
	h.sessions.flush(time.Now())
	data, _ = os.ReadFile(h.path)
	if strings.Contains(string(data), id) {
		t.Errorf("a session its client ended is still kept:\n%s", data)
	}
}

// TestRestoreGivesTheStoredIDToItsSessionOnly races new sessions against
// a restore: the stored id goes to the restored session (with the stored
// client) and to no new one, every new session gets an id of its own, and
// the hub still stops at once (the replay leaves no call counted).
func TestRestoreGivesTheStoredIDToItsSessionOnly(t *testing.T) {
	t.Parallel()
	const token, n = "the-token", 12
	h := startRestoreHub(t, token, []sessionstore.Record{storedRecord("KEPTRACE", token, time.Minute, false)})
	begin := make(chan struct{})
	ids := make(chan string, n)
	restored := make(chan int, 1)
	for range n {
		go func() {
			<-begin
			res, _, err := h.tryPost("", initializeBody)
			if err != nil {
				ids <- "error: " + err.Error()
				return
			}
			ids <- res.Header.Get("Mcp-Session-Id")
		}()
	}
	go func() {
		<-begin
		res, _, err := h.tryPost("KEPTRACE", listTools)
		if err != nil {
			restored <- 0
			return
		}
		restored <- res.StatusCode
	}()
	close(begin)
	seen := map[string]bool{}
	for range n {
		id := receive(t, ids, "a new session's id")
		if id == "" || id == "KEPTRACE" || seen[id] {
			t.Errorf("a new session got id %q (seen before: %v); want a fresh one of its own", id, seen[id])
		}
		seen[id] = true
	}
	if status := receive(t, restored, "the restore's answer"); status != http.StatusOK {
		t.Fatalf("restore answered %d, want 200\n%s", status, h.sink)
	}
	found := 0
	for ss := range h.server.Sessions() {
		if ss.ID() == "KEPTRACE" {
			found++
			if p := ss.InitializeParams(); p == nil || p.ClientInfo.Name != "kept" {
				t.Errorf("session KEPTRACE's initialize = %+v, want the stored client's", p)
			}
		}
	}
	if found != 1 {
		t.Errorf("sessions with the stored id = %d, want 1", found)
	}
	// Connections the racing client dialled and never used would hold
	// net/http's Shutdown for 5 s (a new connection counts as idle only
	// then); they are the client's, not the hub's.
	h.client.CloseIdleConnections()
	stopped := time.Now()
	if err := h.stop(); err != nil {
		t.Errorf("Run = %v", err)
	}
	if took := time.Since(stopped); took > ShutdownGrace/2 {
		t.Errorf("the hub took %v to stop after a restore; the replay must not be counted as a call in flight\n%s", took, h.sink)
	}
}

// TestSessionsDoesNotKeepAHugeInitialize opens a session whose client
// name alone is 20 KiB: it works, but is not kept for a restart (nor held
// a second time by the table), while a normal session beside it is.
func TestSessionsDoesNotKeepAHugeInitialize(t *testing.T) {
	t.Parallel()
	h := startRestoreHub(t, "the-token", nil)
	normal := h.rawSession(t)
	huge := strings.Replace(initializeBody, `"name":"test"`, `"name":"`+strings.Repeat("n", 20<<10)+`"`, 1)
	res, body := h.post(t, "", huge)
	hugeID := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || hugeID == "" {
		t.Fatalf("initialize with a 20 KiB name = %d %q, want a session", res.StatusCode, body)
	}
	h.sessions.flush(time.Now())
	data, err := os.ReadFile(h.path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), normal) || strings.Contains(string(data), hugeID) {
		t.Errorf("stored %d bytes; want session %s kept and %s not", len(data), normal, hugeID)
	}
	h.sessions.mu.Lock()
	kept := len(h.sessions.sessions[hugeID].params)
	h.sessions.mu.Unlock()
	if kept != 0 {
		t.Errorf("the table holds %d bytes of the huge initialize, want none", kept)
	}
}

// TestSessionsFileIsNotRewrittenWhileACallRuns shows a session with a
// request in flight (a long tool call) stored with its last use kept to
// the half minute, so the file is not rewritten and synced at every flush
// while the call runs. Before, its last use was the flush's own time, and
// every flush wrote the file anew.
func TestSessionsFileIsNotRewrittenWhileACallRuns(t *testing.T) {
	t.Parallel()
	const token = "a-secret-token-value"
	h := startRestoreHub(t, token, nil)
	id := h.rawSession(t)
	h.sessions.mu.Lock()
	h.sessions.sessions[id].active++ // a call in flight
	h.sessions.mu.Unlock()
	t0 := time.Now().Truncate(lastUsedGrain)
	h.sessions.flush(t0)
	first, err := os.ReadFile(h.path)
	if err != nil {
		t.Fatal(err)
	}
	for _, later := range []time.Duration{3 * time.Second, 9 * time.Second, 27 * time.Second} {
		h.sessions.flush(t0.Add(later))
		if data, _ := os.ReadFile(h.path); !bytes.Equal(data, first) {
			t.Errorf("the file changed at the flush %v later while the call ran", later)
		}
	}
	h.sessions.flush(t0.Add(lastUsedGrain))
	if data, _ := os.ReadFile(h.path); bytes.Equal(data, first) {
		t.Error("the file still holds the last use of a half minute ago")
	}
}
