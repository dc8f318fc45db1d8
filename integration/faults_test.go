package integration

// Fault tests: the files, clients, signals and upstreams a running server
// depends on fail under it, and each test checks the documented answer:
// the old policy stays, errors name the file, nothing is half-written,
// processes are reaped and stops stay prompt.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// stopBound is how long a server may take to exit after SIGTERM: the 10 s
// grace for calls in flight plus headroom for a loaded machine.
const stopBound = 10*time.Second + 5*time.Second

// skipIfRoot skips a test whose fault rests on file permissions, which
// root bypasses.
func skipIfRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		t.Skip("running as root: permission bits do not stop root")
	}
}

// waitReaped polls (bounded) until pid is gone from /proc: killed and
// reaped. A zombie still there at the deadline fails the test as one.
func waitReaped(t *testing.T, s *server, pid int) {
	t.Helper()
	var ppid int
	var state string
	err := waittest.Within(eventTimeout, func() error {
		if ppid, state = waittest.State(pid); ppid != 0 {
			return fmt.Errorf("process %d (state %s, parent %d) is still there after its call ended:\n%s", pid, state, ppid, s.Log())
		}
		return nil
	})
	if err == nil {
		return
	}
	if state == "Z" {
		t.Fatalf("process %d is a zombie (parent %d) %v after its call ended:\n%s", pid, ppid, eventTimeout, s.Log())
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("process %d (state %s) still runs %v after its call ended:\n%s", pid, state, eventTimeout, s.Log())
}

// expectTools fails unless c's wrapped tools are want.
func expectTools(t *testing.T, c *mcpClient, want ...string) {
	t.Helper()
	if got := c.WrappedTools(t); !slices.Equal(got, want) {
		t.Errorf("tools = %q, want %q", got, want)
	}
}

// stopPromptly sends SIGTERM and fails unless the server exits with status
// 0 within bound; it returns how long the stop took.
func stopPromptly(t *testing.T, s *server, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	s.Signal(t, syscall.SIGTERM)
	err := s.Wait(t, bound)
	took := time.Since(start)
	if err != nil {
		t.Errorf("serve exited with %v after %v, want status 0:\n%s", err, took, s.Log())
	}
	return took
}

// TestFaultConfigBrokenKeepsOldPolicy breaks the config file under a
// running server in four ways. Each time the reload is rejected with a log
// line naming the file, the old policy stays (same tools, a call still
// runs, no list_changed), and a good config written afterwards is picked
// up again.
func TestFaultConfigBrokenKeepsOldPolicy(t *testing.T) {
	slow(t, "a config broken four ways under a running server")
	t.Parallel()
	tests := []struct {
		name string
		root bool // the fault holds for root too
		// breakIt breaks the running config; cfg is its text.
		breakIt func(t *testing.T, s *server, cfg string)
		// mend undoes what breakIt did to the path, before the good
		// config is written.
		mend func(t *testing.T, s *server)
		// wantErr is in the rejection line.
		wantErr string
	}{
		{
			name: "deleted", root: true,
			breakIt: func(t *testing.T, s *server, _ string) {
				if err := os.Remove(s.ConfigPath); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "no such file",
		},
		{
			name: "replaced by a folder", root: true,
			breakIt: func(t *testing.T, s *server, _ string) {
				if err := os.Remove(s.ConfigPath); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(s.ConfigPath, 0o700); err != nil {
					t.Fatal(err)
				}
			},
			mend: func(t *testing.T, s *server) {
				if err := os.Remove(s.ConfigPath); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "directory",
		},
		{
			name: "made unreadable",
			breakIt: func(t *testing.T, s *server, _ string) {
				if err := os.Chmod(s.ConfigPath, 0); err != nil {
					t.Fatal(err)
				}
			},
			mend: func(t *testing.T, s *server) {
				if err := os.Chmod(s.ConfigPath, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "permission denied",
		},
		{
			// An editor that died half-way through an in-place save: the
			// new config's first half. The cut falls inside the flow
			// sequence "[push]", so the half is never valid YAML by chance
			// (a cut inside the mcp: section could leave a valid config
			// with no tools, which is then rightly accepted).
			name: "truncated mid-write", root: true,
			breakIt: func(t *testing.T, s *server, cfg string) {
				next := withTools(cfg, toolsPullPush)
				cut := strings.Index(next, "[push") + len("[pu")
				writeInPlace(t, s.ConfigPath, next[:cut])
			},
			wantErr: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if !tt.root {
				skipIfRoot(t)
			}
			dir := t.TempDir()
			cfg := serverConfig(t, dir, toolsPull)
			s := startServerIn(t, dir, cfg)
			c := s.Connect(t, "/mcp")
			expectTools(t, c, "fake_pull")

			tt.breakIt(t, s, cfg)
			log := s.WaitLog(t, `msg="config rejected"`, 1, eventTimeout)
			lines := logLines(log, `msg="config rejected"`)
			if !strings.Contains(lines[0], s.ConfigPath) || !strings.Contains(lines[0], tt.wantErr) {
				t.Errorf("rejection %q: want it to name %s and say %q", lines[0], s.ConfigPath, tt.wantErr)
			}
			// The rejection has happened: the old policy serves on.
			expectTools(t, c, "fake_pull")
			if res := c.Call(t, "fake_pull", nil); res.IsError {
				t.Errorf("fake_pull under the broken config: %s", toolsettest.ResultText(t, res))
			}
			if n := len(c.ListChanged); n > 0 {
				t.Errorf("%d tools/list_changed after a rejected reload, want none", n)
			}

			if tt.mend != nil {
				tt.mend(t, s)
			}
			before := strings.Count(s.Log(), `msg="config reloaded"`)
			if err := os.WriteFile(s.ConfigPath, []byte(withTools(cfg, toolsPullPush)), 0o600); err != nil {
				t.Fatal(err)
			}
			s.WaitLog(t, `msg="config reloaded"`, before+1, eventTimeout)
			// The loader logs the reload as it hands the policy on; the
			// registry swaps the tools after it, then tells the client.
			waitListChanged(t, s, c, "the mended config added fake_push")
			expectTools(t, c, "fake_pull", "fake_push")
		})
	}
}

// TestFaultLogsUnwritable makes the request log and the audit log
// unwritable under a running server. A request answers with an error
// naming the request log and writes nothing; a call whose audit line
// cannot be written still answers, and the loss is logged naming the file
// (the audit log records, it does not gate). In every case SIGTERM stops
// the server promptly with status 0.
func TestFaultLogsUnwritable(t *testing.T) {
	slow(t, "unwritable request and audit logs")
	t.Parallel()
	const tools = `  fake:
    binary: $FAKECLI
    allow:
      - subcommand: [pull]
`
	t.Run("request log replaced by a folder", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		s := startServerIn(t, dir, serverConfig(t, dir, tools))
		if err := os.Mkdir(s.RequestLog, 0o700); err != nil {
			t.Fatal(err)
		}
		c := s.Connect(t, "/mcp")
		res := c.Call(t, requestTool, askFor("fake", []string{"push"}, nil, "log is a folder", ""))
		expectNotRecorded(t, s, res, s.RequestLog)
		if entries, _ := os.ReadDir(s.RequestLog); len(entries) > 0 {
			t.Errorf("the writer created %v inside the folder", entries)
		}
		t.Logf("stopped in %v", stopPromptly(t, s, stopBound))
	})
	t.Run("request log folder read-only", func(t *testing.T) {
		t.Parallel()
		skipIfRoot(t)
		dir := t.TempDir()
		logs := filepath.Join(dir, "logs")
		if err := os.Mkdir(logs, 0o700); err != nil {
			t.Fatal(err)
		}
		cfg := strings.Replace(serverConfig(t, dir, tools), filepath.Join(dir, "requests.jsonl"), filepath.Join(logs, "requests.jsonl"), 1)
		s := startServerIn(t, dir, cfg)
		reqLog := filepath.Join(logs, "requests.jsonl")
		if err := os.Chmod(logs, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(logs, 0o700) })
		c := s.Connect(t, "/mcp")
		res := c.Call(t, requestTool, askFor("fake", []string{"push"}, nil, "folder read-only", ""))
		expectNotRecorded(t, s, res, reqLog)
		if _, err := os.Stat(reqLog); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("request log after a failed write: %v, want none", err)
		}
		t.Logf("stopped in %v", stopPromptly(t, s, stopBound))
	})
	t.Run("audit log replaced by a folder", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		s := startServerIn(t, dir, serverConfig(t, dir, tools))
		audit := filepath.Join(dir, "audit.jsonl")
		os.Remove(audit)
		if err := os.Mkdir(audit, 0o700); err != nil {
			t.Fatal(err)
		}
		c := s.Connect(t, "/mcp")
		if res := c.Call(t, "fake_pull", nil); res.IsError {
			t.Errorf("fake_pull with the audit log unwritable: %s", toolsettest.ResultText(t, res))
		}
		log := s.WaitLog(t, `msg="audit lines lost: the audit log could not be written"`, 1, eventTimeout)
		if line := logLines(log, "audit lines lost")[0]; !strings.Contains(line, "file="+audit) {
			t.Errorf("loss line %q does not name %s", line, audit)
		}
		t.Logf("stopped in %v", stopPromptly(t, s, stopBound))
	})
	t.Run("audit log locked by another process", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		s := startServerIn(t, dir, serverConfig(t, dir, tools))
		c := s.Connect(t, "/mcp")
		audit := filepath.Join(dir, "audit.jsonl")
		if res := c.Call(t, "fake_pull", nil); res.IsError {
			t.Fatalf("fake_pull: %s", toolsettest.ResultText(t, res))
		}
		// The first call's line is in: take the lock, as a stuck writer would.
		waittest.Until(t, eventTimeout, func() error {
			if len(readAuditBytes(audit)) == 0 {
				return fmt.Errorf("no audit line:\n%s", s.Log())
			}
			return nil
		})
		holdLock(t, audit)
		before := readAuditBytes(audit)
		start := time.Now()
		if res := c.Call(t, "fake_pull", nil); res.IsError {
			t.Errorf("fake_pull with the audit log locked: %s", toolsettest.ResultText(t, res))
		}
		if took := time.Since(start); took >= 4*time.Second {
			t.Errorf("the call took %v: it waited on the audit lock", took)
		}
		s.WaitLog(t, `msg="the audit log is locked by another process; waiting" component=audit file=`+audit, 1, eventTimeout)
		// A stop waits on no lock.
		if took := stopPromptly(t, s, stopBound); took >= 4*time.Second {
			t.Errorf("serve took %v to stop, as if it waited for the audit lock", took)
		} else {
			t.Logf("stopped in %v with the audit lock held", took)
		}
		if after := readAuditBytes(audit); !bytes.Equal(after, before) {
			t.Errorf("audit log changed under a held lock:\nbefore %q\nafter  %q", before, after)
		}
	})
}

// expectNotRecorded checks the request tool's answer to a write that
// failed for a reason other than a held lock: an error that says the
// request was not recorded and points to the server log (the client is not
// told local paths), and a server log line naming the file.
func expectNotRecorded(t *testing.T, s *server, res *mcp.CallToolResult, path string) {
	t.Helper()
	const want = "The request was not recorded: wraptool could not write its request log; the operator can see why in the server log."
	if text := toolsettest.ResultText(t, res); !res.IsError || text != want {
		t.Errorf("request: isError %v, %q; want the error %q", res.IsError, text, want)
	}
	log := s.WaitLog(t, `msg="capability request not recorded"`, 1, eventTimeout)
	if line := logLines(log, `msg="capability request not recorded"`)[0]; !strings.Contains(line, path) {
		t.Errorf("log line %q does not name %s", line, path)
	}
}

// holdLock takes the exclusive flock on the existing file at path, as a
// stuck writer would, and keeps it until the test ends. The server may be
// appending at that moment: the attempt is repeated (bounded) while the
// server's own short hold lasts.
func holdLock(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	// flock has no timed wait: try without blocking until the bound.
	waittest.Until(t, eventTimeout, func() error {
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			return fmt.Errorf("hold the lock on %s: %w", path, err)
		}
		return nil
	})
}

// readAuditBytes is the file's bytes, nil when it cannot be read.
func readAuditBytes(path string) []byte {
	data, _ := os.ReadFile(path)
	return data
}

// TestFaultClientGoneMidCall makes a client go away while the wrapped
// tool runs, by the means a client has: cancelling the call
// (notifications/cancelled), ending its Streamable HTTP session (DELETE),
// and dropping its connections (for legacy SSE the stream is the session).
// Each time the child is killed and reaped (gone from /proc, not left a
// zombie) well before the call's own timeout, and the server serves on.
//
// (The go-sdk client's ClientSession.Close waits for its calls in flight
// to finish before it closes anything, so it cannot show a disconnect: the
// test cuts the connections under it.)
func TestFaultClientGoneMidCall(t *testing.T) {
	slow(t, "a client gone mid-call")
	t.Parallel()
	tests := []struct {
		how, endpoint string
	}{
		{"cancel the call", "/mcp"},
		{"cancel the call", "/sse"},
		{"end the session", "/mcp"},
		{"drop the connections", "/sse"},
	}
	for _, tt := range tests {
		t.Run(tt.how+" over "+tt.endpoint, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := startServerIn(t, dir, serverConfig(t, dir, toolsPullWait))
			c, drop := connectDroppable(t, s, tt.endpoint)
			never := filepath.Join(dir, "never-created")
			ctx, cancel := context.WithTimeout(context.Background(), 2*eventTimeout)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "fake_waitfor", Arguments: map[string]any{"args": []string{never}}})
				done <- err
			}()
			pid := waitChild(t, s, fakecli, "waitfor", never)
			gone := time.Now()
			switch tt.how {
			case "cancel the call":
				cancel()
			case "end the session":
				endSession(t, s, c.ID())
				drop()
			case "drop the connections":
				drop()
			}
			select {
			case <-done:
			case <-time.After(eventTimeout):
				t.Fatalf("CallTool did not return %v after the client went away", eventTimeout)
			}
			// The call's timeout is 30 s: a kill well before it is the
			// server's answer to the client going away.
			waitReaped(t, s, pid)
			t.Logf("child reaped %v after the client went away", time.Since(gone))

			other := s.Connect(t, "/mcp")
			if res := other.Call(t, "fake_pull", nil); res.IsError {
				t.Errorf("a later call: %s", toolsettest.ResultText(t, res))
			}
		})
	}
}

// connectDroppable opens an MCP session on s like Connect, over
// connections the test can cut at once with drop.
func connectDroppable(t *testing.T, s *server, endpoint string) (session *mcp.ClientSession, drop func()) {
	t.Helper()
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	dialer := &net.Dialer{}
	base := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dialer.DialContext(ctx, network, addr)
		if err == nil {
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}
		return conn, err
	}}
	drop = func() {
		mu.Lock()
		defer mu.Unlock()
		for _, conn := range conns {
			conn.Close()
		}
		base.CloseIdleConnections()
	}
	httpClient := &http.Client{Transport: toolsettest.Bearer{Token: s.Token, Base: base}}
	var transport mcp.Transport = &mcp.StreamableClientTransport{Endpoint: s.URL + endpoint, HTTPClient: httpClient}
	if endpoint == "/sse" {
		transport = &mcp.SSEClientTransport{Endpoint: s.URL + endpoint, HTTPClient: httpClient}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	timer := time.AfterFunc(eventTimeout, cancel)
	client := mcp.NewClient(&mcp.Implementation{Name: "wraptool-faults", Version: "1"}, nil)
	session, err := client.Connect(ctx, transport, nil)
	timer.Stop()
	if err != nil {
		t.Fatalf("connect to %s%s: %v\n%s", s.URL, endpoint, err, s.Log())
	}
	t.Cleanup(func() { drop(); session.Close() })
	return session, drop
}

// endSession sends the DELETE that ends Streamable HTTP session id, as a
// client that shuts down does, and fails unless the server answers it
// (bounded).
func endSession(t *testing.T, s *server, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.URL+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.Token)
	req.Header.Set("Mcp-Session-Id", id)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("DELETE /mcp after %v: %v\n%s", time.Since(start), err, s.Log())
	}
	resp.Body.Close()
	t.Logf("DELETE /mcp: %s after %v", resp.Status, time.Since(start))
}

// TestFaultSIGTERMUnderLoad has 16 clients call a tool that sleeps, each
// in a loop, and sends SIGTERM while they do: the server exits with status
// 0 within the 10 s grace plus headroom, every client's call in flight
// ends, and no child outlives the server.
func TestFaultSIGTERMUnderLoad(t *testing.T) {
	slow(t, "SIGTERM under load")
	t.Parallel()
	const clients = 16
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, `  fake:
    binary: $FAKECLI
    allow:
      - subcommand: [sleep]
`))
	var (
		calls atomic.Int64
		wg    sync.WaitGroup
	)
	sessions := make([]*mcpClient, clients)
	for i := range sessions {
		endpoint := "/mcp"
		if i%4 == 3 {
			endpoint = "/sse"
		}
		sessions[i] = s.Connect(t, endpoint)
	}
	for _, c := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 2*stopBound)
				res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "fake_sleep", Arguments: map[string]any{"args": []string{"300ms"}}})
				cancel()
				if err != nil || res.IsError {
					return // the server is stopping or gone
				}
				calls.Add(1)
			}
		}()
	}
	// Every client has had calls answered: the server is under load.
	waittest.Until(t, eventTimeout, func() error {
		if n := calls.Load(); n < 2*clients {
			return fmt.Errorf("only %d calls answered:\n%s", n, s.Log())
		}
		return nil
	})
	took := stopPromptly(t, s, stopBound)
	t.Logf("%d calls answered; stopped under load of %d clients in %v", calls.Load(), clients, took)

	ended := make(chan struct{})
	go func() { wg.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(eventTimeout):
		t.Errorf("client loops still running %v after the server exited", eventTimeout)
	}
	// The server is gone: a sleep child it left would now be re-parented.
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if waittest.Cmdline(pid) == fakecli+"\x00sleep\x00300ms\x00" {
			if _, state := waittest.State(pid); state != "Z" {
				t.Errorf("fakecli sleep (pid %d) outlived the server", pid)
			}
		}
	}
}

// TestFaultApplyWriteFails makes `requests approve ID --apply` fail while
// it writes the new config: the file system refuses the temp file (a file
// size limit, as a full disk would; or a read-only folder). The CLI exits
// 1 with an error, the config stays byte-identical with no temp file left
// beside it, and the request stays pending.
func TestFaultApplyWriteFails(t *testing.T) {
	slow(t, "a failing --apply write")
	t.Parallel()
	tests := []struct {
		name string
		root bool
		// run runs the CLI with the fault in place.
		run func(t *testing.T, s *server, args ...string) (string, string, int)
	}{
		{
			// RLIMIT_FSIZE: a write past the limit fails with EFBIG (Go
			// ignores SIGXFSZ), which is what a full disk looks like to
			// the writer, and needs no mount.
			name: "file size limit", root: true,
			run: func(t *testing.T, s *server, args ...string) (string, string, int) {
				prlimit, err := exec.LookPath("prlimit")
				if err != nil {
					t.Skip("no prlimit")
				}
				info, err := os.Stat(s.ConfigPath)
				if err != nil {
					t.Fatal(err)
				}
				limit := strconv.FormatInt(info.Size()/2, 10)
				return runCommandIn(t, "", append([]string{prlimit, "--fsize=" + limit, wraptoolBin, "--config", s.ConfigPath}, args...),
					"HOME="+filepath.Join(s.Dir, "home"))
			},
		},
		{
			name: "read-only folder",
			run: func(t *testing.T, s *server, args ...string) (string, string, int) {
				if err := os.Chmod(s.Dir, 0o500); err != nil {
					t.Fatal(err)
				}
				defer os.Chmod(s.Dir, 0o700)
				return operatorCLI(t, s)(args...)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if !tt.root {
				skipIfRoot(t)
			}
			dir := t.TempDir()
			s := startServerIn(t, dir, serverConfig(t, dir, `  fake:
    binary: $FAKECLI
    allow:
      # the operator's comment
      - subcommand: [status]
`))
			c := s.Connect(t, "/mcp")
			id := request(t, c, askFor("fake", []string{"status"}, []string{"--depth"}, "limit the history", "shallow status"))
			cfgBefore := configtest.ReadFile(t, s.ConfigPath)
			logBefore := configtest.ReadFile(t, s.RequestLog)
			entriesBefore := dirNames(t, dir)

			out, stderr, code := tt.run(t, s, "requests", "approve", id, "--apply")
			if code != 1 || stderr == "" {
				t.Errorf("requests approve --apply: exit %d, want 1 with an error:\nstdout %s\nstderr %s", code, out, stderr)
			}
			t.Logf("the CLI said: %s", strings.TrimSpace(stderr))
			if got := configtest.ReadFile(t, s.ConfigPath); !bytes.Equal(got, cfgBefore) {
				t.Errorf("config changed:\n%s\nwant byte-identical:\n%s", got, cfgBefore)
			}
			if got := dirNames(t, dir); !slices.Equal(got, entriesBefore) {
				t.Errorf("folder entries %q after the failed apply, want %q (no temp file left)", got, entriesBefore)
			}
			if got := configtest.ReadFile(t, s.RequestLog); !bytes.Equal(got, logBefore) {
				t.Errorf("request log changed by a failed apply:\n%s", got[len(logBefore):])
			}
			if got := listJSON(t, operatorCLI(t, s), id); got.Status != "pending" {
				t.Errorf("request %s is %q after the failed apply, want pending", id, got.Status)
			}
			expectTools(t, c, "fake_status")
		})
	}
}

// dirNames lists dir's entries by name, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// restartIn matches a failure line's delay.
var restartIn = regexp.MustCompile(`restart_in=(\S+)`)

// TestFaultUpstreamCrashLoop configures an upstream whose command exits at
// once (/bin/false): each failure is logged with a restart delay that
// doubles (1s, 2s, 4s), and the failures are spaced by at least those
// delays, so a crash loop never becomes a busy loop. (The 60 s cap is
// reached only after a minute; actors' unit tests show it.)
func TestFaultUpstreamCrashLoop(t *testing.T) {
	slow(t, "an upstream's crash loop and backoff")
	t.Parallel()
	falseBin, err := exec.LookPath("false")
	if err != nil {
		t.Skip("no false command")
	}
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, "")+"mcp_servers:\n  crashy:\n    command: "+falseBin+"\n")
	log := s.WaitLog(t, "server=crashy error=", 3, 3*eventTimeout)
	lines := logLines(log, "server=crashy error=")
	var (
		delays []time.Duration
		times  []time.Time
	)
	for _, line := range lines[:3] {
		m := restartIn.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("failure line without restart_in: %s", line)
		}
		d, err := time.ParseDuration(m[1])
		if err != nil {
			t.Fatal(err)
		}
		delays = append(delays, d)
		ts, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(strings.Fields(line)[0], "time="))
		if err != nil {
			t.Fatalf("line time: %v in %s", err, line)
		}
		times = append(times, ts)
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}; !slices.Equal(delays, want) {
		t.Errorf("restart delays %v, want %v:\n%s", delays, want, strings.Join(lines, "\n"))
	}
	for i := 1; i < len(times); i++ {
		// Log times have millisecond precision: allow for rounding.
		if gap := times[i].Sub(times[i-1]); gap < delays[i-1]-10*time.Millisecond {
			t.Errorf("failure %d came %v after the one before, sooner than its %v backoff", i+1, gap, delays[i-1])
		}
	}
	t.Logf("failures: %s", strings.Join(lines[:3], "\n"))
}
