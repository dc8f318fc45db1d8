package integration

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/wraptool/wraptool/integration/waittest"
)

// TestConnectHoldsCallsDuringARestart: three tools/call sent through
// `wraptool connect` right after the server is killed, before it is
// started again on the same config and port, all get results from the new
// server, not errors asking to retry: connect holds them while it
// reconnects and sends them on the new session.
func TestConnectHoldsCallsDuringARestart(t *testing.T) {
	slow(t, "connect holding calls during a server restart")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, toolsPullWait))
	c := connectThrough(t, s.ConfigPath, nil)
	c.WrappedTools(t) // the session is up and initialized

	s.Signal(t, syscall.SIGKILL)
	s.Wait(t, eventTimeout)
	killed := time.Now()
	var calls []<-chan callResult
	for range 3 {
		calls = append(calls, startCall(c.mcpClient, "fake_pull", nil))
	}
	startServerIn(t, dir, "")
	t.Logf("the server answered again %v after the kill", time.Since(killed).Round(time.Millisecond))
	for i, done := range calls {
		select {
		case r := <-done:
			if r.err != nil {
				t.Errorf("call %d sent during the restart: %v, want a result", i, r.err)
				continue
			}
			var out runOutput
			structured(t, r.res, &out)
			if r.res.IsError || out.ExitCode == nil || *out.ExitCode != 0 {
				t.Errorf("call %d sent during the restart = isError %v, %+v; want a run", i, r.res.IsError, out)
			}
		case <-time.After(eventTimeout):
			t.Fatalf("call %d got no answer within %v of the restart:\n%s", i, eventTimeout, c.stderr.String())
		}
	}
	t.Logf("all three answered %v after the kill", time.Since(killed).Round(time.Millisecond))
	// Each ran once: none was sent twice.
	isPull := func(l auditLine) bool { return l.Event == "call" && l.Tool == "fake_pull" }
	waittest.Until(t, eventTimeout, func() error {
		if n := len(slices.DeleteFunc(readAudit(t, filepath.Join(dir, "audit.jsonl")), func(l auditLine) bool { return !isPull(l) })); n < 3 {
			return fmt.Errorf("the audit log has %d runs of fake_pull, want 3", n)
		}
		return nil
	})
	if n := len(slices.DeleteFunc(readAudit(t, filepath.Join(dir, "audit.jsonl")), func(l auditLine) bool { return !isPull(l) })); n != 3 {
		t.Errorf("the audit log has %d runs of fake_pull, want 3 (no call sent twice)", n)
	}
}

// TestConnectHeldCallsFailWhenTheServerStaysDown: calls sent through
// `wraptool connect` after the server died, with no server coming back,
// each get a JSON-RPC error naming the address within connect's 5 s bound
// (never silence).
func TestConnectHeldCallsFailWhenTheServerStaysDown(t *testing.T) {
	slow(t, "connect ending held calls when the server stays down")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, toolsPullWait))
	addr := listenAddress(t, s.ConfigPath)
	c := connectThrough(t, s.ConfigPath, nil)
	c.WrappedTools(t)

	s.Signal(t, syscall.SIGKILL)
	s.Wait(t, eventTimeout)
	start := time.Now()
	var calls []<-chan callResult
	for range 3 {
		calls = append(calls, startCall(c.mcpClient, "fake_pull", nil))
	}
	for i, done := range calls {
		select {
		case r := <-done:
			var werr *jsonrpc.Error
			if !errors.As(r.err, &werr) || werr.Code != -32000 || !strings.Contains(werr.Message, addr) {
				t.Errorf("call %d = %+v, %v; want a JSON-RPC error -32000 naming %s\n%s", i, r.res, r.err, addr, c.stderr.String())
			}
		case <-time.After(connectStart + connectHeadroom):
			t.Fatalf("call %d got no answer within %v of the server's death:\n%s", i, connectStart+connectHeadroom, c.stderr.String())
		}
	}
	if took := time.Since(start); took < connectStart-time.Second {
		t.Errorf("the held calls failed after %v, want them held for connect's %v bound", took, connectStart)
	}
}
