package integration

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNodeSSESurvivesRestart: the TypeScript SDK's legacy SSE client
// (integration/node/sse_restart.mjs) calls a tool, the server restarts on
// the same port, the client's EventSource reconnects into a new session
// without initializing again, and its next call works: the hub initialised
// the session on its behalf. Neither server logs an ERROR, and the new
// session still gets list_changed.
func TestNodeSSESurvivesRestart(t *testing.T) {
	slow(t, "the TypeScript SDK's SSE client across a server restart")
	t.Parallel()
	node, dir := nodeSetup(t)

	const tools = "  fake:\n    binary: $FAKECLI\n    allow:\n      - subcommand: [pull]\n"
	srvDir := t.TempDir()
	cfg := serverConfig(t, srvDir, tools)
	s := startServerIn(t, srvDir, cfg)

	ctx, cancel := context.WithTimeout(t.Context(), nodeRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "sse_restart.mjs", "--url", s.URL, "--tool", "fake_pull", "--args", "origin",
		"--wait-ms", strconv.Itoa(int(nodeNotifyWait/time.Millisecond)))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WRAPTOOL_TOKEN="+s.Token)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	events, exited, stderr := startNodeEvents(t, ctx, cancel, cmd)
	r := &nodeReader{t: t, ctx: ctx, events: events, stderr: stderr, servers: []*server{s}}
	fail, next := r.fail, r.next
	called := func(phase string) {
		t.Helper()
		if ev := next("call"); ev.Phase != phase || ev.IsError || !strings.Contains(ev.Text, "fakecli") {
			fail("the call %s the restart: %+v, want fakecli's run", phase, ev)
		}
	}

	called("before")
	next("ready")
	s.Signal(t, syscall.SIGTERM)
	s.Wait(t, eventTimeout)
	s = startServerIn(t, srvDir, "")
	r.servers = append(r.servers, s)
	if _, err := stdin.Write([]byte("restarted\n")); err != nil {
		t.Fatal(err)
	}
	next("reconnected")
	called("after")

	if err := os.WriteFile(s.ConfigPath, []byte(cfg+"      - subcommand: [push]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.WaitLog(t, "config reloaded", 1, eventTimeout)
	if _, err := stdin.Write([]byte("reloaded\n")); err != nil {
		t.Fatal(err)
	}
	if ev := next("list_changed"); ev.Count < 1 {
		fail("the reconnected session saw %d list_changed, want at least 1", ev.Count)
	}
	next("done")
	select {
	case err := <-exited:
		if err != nil {
			fail("node client exited with %v", err)
		}
	case <-ctx.Done():
		fail("node client did not exit after done")
	}
	for i, srv := range r.servers {
		for _, bad := range []string{"level=ERROR", "invalid during session initialization"} {
			if strings.Contains(srv.Log(), bad) {
				fail("server %d logged %q", i+1, bad)
			}
		}
	}
	if !strings.Contains(s.Log(), "initialising a legacy SSE session on its client's behalf") {
		fail("the restarted server did not say it initialised the reconnected session")
	}
}
