package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// A reload that reads a named pipe where an env file belongs used to block
// the loader for ever; SIGHUP then blocked the signals actor, which never
// read the SIGTERM that followed. Now a load reads only regular files, a
// SIGHUP is a doorbell, and the server stops.
func TestStopsAfterAReloadMeetsANamedPipe(t *testing.T) {
	slow(t, "a reload meeting a named pipe")
	t.Parallel()
	dir := t.TempDir()
	env := filepath.Join(dir, "fake.env")
	if err := os.WriteFile(env, []byte("A=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServerIn(t, dir, serverConfig(t, dir, `  fake:
    binary: $FAKECLI
    env_files: [`+env+`]
    allow:
      - subcommand: [status]
`))
	if err := os.Remove(env); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(env, 0o600); err != nil {
		t.Fatal(err)
	}
	s.Signal(t, syscall.SIGHUP)
	s.WaitLog(t, "is not a regular file but a named pipe", 1, eventTimeout)
	s.Signal(t, syscall.SIGHUP)
	s.Signal(t, syscall.SIGTERM)
	if err := s.Wait(t, eventTimeout); err != nil {
		t.Errorf("serve exited with %v, want status 0", err)
	}
}

// A request log locked by another process (the CLI, an editor, a backup
// tool) must not keep a request waiting for ever, nor the server from
// stopping: the writer gives up after 5 s with an error naming the file.
func TestHeldRequestLogLock(t *testing.T) {
	slow(t, "a request log locked by another process")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, ""))
	c := s.Connect(t, "/mcp")
	request(t, c, askFor("git", []string{"push"}, nil, "create the log", ""))
	f, err := os.OpenFile(s.RequestLog, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}

	// The request gives up after the 5 s bound, naming the file; allow 3×.
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*5*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: requestTool, Arguments: askFor("git", []string{"fetch"}, nil, "while locked", "")})
	if err != nil {
		t.Fatalf("request while the log is locked: %v", err)
	}
	took := time.Since(start)
	text := toolsettest.ResultText(t, res)
	if !res.IsError || !strings.Contains(text, s.RequestLog) || !strings.Contains(text, "locked") {
		t.Errorf("answer after %v: isError %v, %q; want an error naming %s and the lock", took, res.IsError, text, s.RequestLog)
	}
	if took < 5*time.Second {
		t.Errorf("gave up after %v, before the 5 s bound", took)
	}

	// A stop while a request waits on the lock: the wait ends at once, and
	// the server stops with status 0.
	go c.CallTool(context.Background(), &mcp.CallToolParams{Name: requestTool, Arguments: askFor("git", []string{"pull"}, nil, "at the stop", "")})
	s.WaitLog(t, "the request log is locked by another process", 2, eventTimeout)
	stop := time.Now()
	s.Signal(t, syscall.SIGTERM)
	if err := s.Wait(t, 3*5*time.Second); err != nil {
		t.Errorf("serve exited with %v, want status 0", err)
	}
	// A stop waits on no lock: well under the 5 s a wait would take.
	if took := time.Since(stop); took >= 4*time.Second {
		t.Errorf("serve took %v to stop, as if it waited for the lock", took)
	}
}
