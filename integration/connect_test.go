package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// connectStart is connect's bound on waiting for a server at start
// (bridge.StartTimeout); connectHeadroom is what a loaded machine may add to it.
const (
	connectStart    = 5 * time.Second
	connectHeadroom = 4 * time.Second
)

// connectCommand is `wraptool --config cfg --log-level debug connect
// extra…` in the environment runWraptool gives: a fresh HOME, the
// parent's PATH.
func connectCommand(t *testing.T, cfg string, extra ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(wraptoolBin, append([]string{"--config", cfg, "--log-level", "debug", "connect"}, extra...)...)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	return cmd
}

// stdioClient is a go-sdk session through `wraptool connect`, which the
// go-sdk starts and stops itself (mcp.CommandTransport); changedAt gets the
// time of each tools/list_changed.
type stdioClient struct {
	*mcpClient
	stderr    *logBuffer
	changedAt chan time.Time
}

// connectThrough opens a session with opts (its list_changed handler is
// replaced) through `wraptool connect` on cfg, closed when the test ends.
func connectThrough(t *testing.T, cfg string, opts *mcp.ClientOptions, extra ...string) *stdioClient {
	t.Helper()
	c := &stdioClient{mcpClient: &mcpClient{ListChanged: make(chan struct{}, 64), name: "wraptool connect"},
		stderr: &logBuffer{}, changedAt: make(chan time.Time, 64)}
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case c.ListChanged <- struct{}{}:
		default:
		}
		select {
		case c.changedAt <- time.Now():
		default:
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "wraptool-integration-stdio", Version: "1"}, opts)
	cmd := connectCommand(t, cfg, extra...)
	cmd.Stderr = c.stderr
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect through wraptool connect: %v\n--- connect's log:\n%s", err, c.stderr.String())
	}
	t.Cleanup(func() { session.Close() })
	c.ClientSession = session
	return c
}

// TestConnectGoSDK runs the go-sdk's stdio client against `wraptool
// connect`: list, a call that runs, a denial with its text and
// structuredContent, and the list_changed a config edit causes, over TCP
// with the MCP token and over the unix socket.
func TestConnectGoSDK(t *testing.T) {
	slow(t, "connect with the go-sdk stdio client")
	t.Parallel()
	for _, tc := range []struct {
		name     string
		unix     bool
		wildcard bool
	}{
		{name: "over TCP with the token"},
		{name: "over TCP to a listener on 0.0.0.0 dialled at 127.0.0.1", wildcard: true}, // no comma: the name becomes a path in a YAML list
		{name: "over the unix socket", unix: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cfg := serverConfig(t, dir, toolsPull)
			switch {
			case tc.unix:
				cfg = unixServerConfig(dir, filepath.Join(shortTempDir(t), "wraptool.sock"), toolsPull)
			case tc.wildcard:
				// The owner check finds the wildcard LISTEN row in
				// /proc/net/tcp for a dial to 127.0.0.1.
				cfg = strings.Replace(cfg, "listen: 127.0.0.1:", "listen: 0.0.0.0:", 1)
			}
			s := startServerIn(t, dir, cfg)
			c := connectThrough(t, s.ConfigPath, nil)

			if got, want := c.WrappedTools(t), []string{"fake_pull"}; !slices.Equal(got, want) {
				t.Errorf("tools = %q, want %q", got, want)
			}
			res := c.Call(t, "fake_pull", map[string]any{"args": []string{"origin"}})
			var out runOutput
			structured(t, res, &out)
			var report fakeReport
			if res.IsError || out.ExitCode == nil || *out.ExitCode != 0 || json.Unmarshal([]byte(out.Stdout), &report) != nil ||
				!slices.Equal(report.Argv, []string{fakecli, "pull", "origin"}) {
				t.Errorf("fake_pull = isError %v, %+v; want a run of [%s pull origin]", res.IsError, out, fakecli)
			}
			_, command := denialOf(t, c.mcpClient, "fake_pull", map[string]any{"rebase": true})
			if !slices.Equal(command, []string{"fake", "pull", "--rebase"}) {
				t.Errorf("denied command %q, want fake pull --rebase", command)
			}
			text := toolsettest.ResultText(t, c.Call(t, "fake_pull", map[string]any{"rebase": true}))
			if !strings.HasPrefix(text, "DENIED: 'fake pull --rebase' is not permitted.") {
				t.Errorf("denial text %q, want the DENIED text", text)
			}

			writeInPlace(t, s.ConfigPath, withTools(cfg, toolsPullPush))
			expectOneListChanged(t, s, c.mcpClient)
			if got, want := c.WrappedTools(t), []string{"fake_pull", "fake_push"}; !slices.Equal(got, want) {
				t.Errorf("tools after the edit = %q, want %q", got, want)
			}
		})
	}
}

// TestConnectNodeClient runs the official TypeScript SDK's
// StdioClientTransport (integration/node/connect.mjs) against `wraptool
// connect`: list, call, and exactly one list_changed after the test edits
// the config.
func TestConnectNodeClient(t *testing.T) {
	slow(t, "connect with the TypeScript SDK stdio client")
	t.Parallel()
	node, nodeDir := nodeSetup(t)
	dir := t.TempDir()
	cfg := serverConfig(t, dir, toolsPull)
	s := startServerIn(t, dir, cfg)

	ctx, cancel := context.WithTimeout(t.Context(), nodeRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "connect.mjs", "--command", wraptoolBin, "--config", s.ConfigPath,
		"--tool", "fake_pull", "--args", "origin", "--wait-ms", strconv.Itoa(int(nodeNotifyWait/time.Millisecond)))
	cmd.Dir = nodeDir
	events, exited, stderr := startNodeEvents(t, ctx, cancel, cmd)
	r := &nodeReader{t: t, ctx: ctx, events: events, stderr: stderr, servers: []*server{s}}
	fail, next := r.fail, r.next
	ev := next("tools")
	if !slices.Contains(ev.Names, "fake_pull") || !slices.Contains(ev.Names, "wraptool_request_capability") || slices.Contains(ev.Names, "fake_push") {
		fail("tools %q, want fake_pull and wraptool_request_capability and no fake_push", ev.Names)
	}
	nodeCheckCall(t, next("call"), fail)
	next("ready")
	writeInPlace(t, s.ConfigPath, withTools(cfg, toolsPullPush))
	if ev := next("list_changed"); ev.Count != 1 {
		fail("tools/list_changed seen %d times, want exactly 1", ev.Count)
	}
	if ev := next("tools"); !slices.Contains(ev.Names, "fake_push") {
		fail("tools after the edit %q, want fake_push among them", ev.Names)
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
	// The client closed connect's stdin: its session ended on the server.
	id := connectSessionID(t, stderr.String())
	s.WaitLog(t, `msg="server session disconnected" component=mcp session_id=`+id, 1, eventTimeout)
}

// TestConnectWithoutAServer: connect waits 5 s for a server still starting,
// then exits 1 naming the address and writes nothing on stdout, whether its
// client keeps stdin open or has closed it (exit 1 still wins).
func TestConnectWithoutAServer(t *testing.T) {
	slow(t, "connect waiting for a server that never comes")
	t.Parallel()
	for _, tc := range []struct {
		name      string
		holdStdin bool
	}{
		{name: "with the client waiting on stdin", holdStdin: true},
		{name: "with stdin already closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cfg := filepath.Join(dir, "config.yaml")
			if err := os.WriteFile(cfg, []byte(serverConfig(t, dir, toolsPull)), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "mcp-token"), []byte("a-token-no-server-has\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			addr := listenAddress(t, cfg)
			cmd := connectCommand(t, cfg)
			var stdout, stderr logBuffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if tc.holdStdin {
				// A client that sent its initialize and waits: the message
				// waits for a server too, unanswered.
				stdin, err := cmd.StdinPipe()
				if err != nil {
					t.Fatal(err)
				}
				defer stdin.Close()
				go stdin.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n"))
			}
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(connectStart + connectHeadroom):
				cmd.Process.Kill()
				<-done
				t.Fatalf("connect still running %v after start with no server:\n%s", connectStart+connectHeadroom, stderr.String())
			}
			took := time.Since(start)
			var exitErr *exec.ExitError
			if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 {
				t.Errorf("exit %v, want status 1", err)
			}
			if took < connectStart {
				t.Errorf("gave up after %v, want after connect's %v", took, connectStart)
			}
			if !strings.Contains(stderr.String(), addr) || !strings.Contains(stderr.String(), "no wraptool server answers") {
				t.Errorf("stderr %q, want it to say no server answers at %s", stderr.String(), addr)
			}
			if stdout.String() != "" {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
			t.Logf("no server: exit 1 after %v", took.Round(time.Millisecond))
		})
	}
}

// listenAddress is the mcp.listen of a config serverConfig wrote.
func listenAddress(t *testing.T, cfg string) string {
	t.Helper()
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(data), "listen: ")
	addr, _, _ := strings.Cut(rest, "\n")
	return addr
}

// TestConnectSurvivesServerRestarts: a server killed with a call in flight
// (the call gets a JSON-RPC error), started again on the same config and
// port (one list_changed, calls work), then stopped with SIGTERM and
// started again (the same). The new session and its list_changed come
// within 5 s of the server answering again, as connect promises.
func TestConnectSurvivesServerRestarts(t *testing.T) {
	slow(t, "connect across server restarts")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, toolsPullWait))
	c := connectThrough(t, s.ConfigPath, nil)
	if got, want := c.WrappedTools(t), []string{"fake_pull", "fake_waitfor"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %q, want %q", got, want)
	}

	release := filepath.Join(dir, "release")
	defer os.WriteFile(release, nil, 0o600) // frees the orphaned call whatever happens
	done := startCall(c.mcpClient, "fake_waitfor", map[string]any{"args": []string{release}})
	waitChild(t, s, fakecli, "waitfor", release)
	s.Signal(t, syscall.SIGKILL)
	s.Wait(t, eventTimeout)
	select {
	case r := <-done:
		var werr *jsonrpc.Error
		if !errors.As(r.err, &werr) || werr.Code != -32000 || !strings.Contains(werr.Message, "wraptool connect") {
			t.Errorf("the call in flight when the server died = %+v, %v; want a JSON-RPC error -32000 from wraptool connect", r.res, r.err)
		} else {
			t.Logf("the call in flight got: %v", werr.Message)
		}
	case <-time.After(eventTimeout):
		t.Fatalf("the call in flight got no answer within %v of the server's death:\n%s", eventTimeout, c.stderr.String())
	}
	os.WriteFile(release, nil, 0o600)

	for round, stop := range []func(*server){
		nil, // the killed server above
		func(s *server) { s.Signal(t, syscall.SIGTERM); s.Wait(t, eventTimeout) },
	} {
		if stop != nil {
			stop(s)
		}
		s = startServerIn(t, dir, "")
		answering := time.Now() // /healthz answers: the server answers again
		select {
		case at := <-c.changedAt:
			if late := at.Sub(answering); late > connectStart {
				t.Errorf("round %d: list_changed %v after the server answered again, want within %v", round, late, connectStart)
			}
			t.Logf("round %d: list_changed %v after /healthz answered (negative: before)", round, at.Sub(answering).Round(time.Millisecond))
		case <-time.After(eventTimeout):
			t.Fatalf("round %d: no list_changed within %v of the restart:\n%s", round, eventTimeout, c.stderr.String())
		}
		time.Sleep(settle) // waiting for the absence of a second one
		if n := len(c.changedAt); n > 0 {
			t.Errorf("round %d: %d more list_changed, want exactly one", round, n)
		}
		for range len(c.ListChanged) {
			<-c.ListChanged
		}
		res := c.Call(t, "fake_pull", nil)
		var out runOutput
		structured(t, res, &out)
		if res.IsError || out.ExitCode == nil || *out.ExitCode != 0 {
			t.Errorf("round %d: fake_pull after the restart = isError %v, %+v; want a run", round, res.IsError, out)
		}
	}
}

// TestConnectEndsItsSession: when its client closes stdin, or it gets
// SIGTERM, connect ends its session on the server (DELETE, which the
// server logs) and exits 0; stdout held only JSON-RPC lines.
func TestConnectEndsItsSession(t *testing.T) {
	slow(t, "connect ending its session")
	t.Parallel()
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, cmd *exec.Cmd, stdin interface{ Close() error })
	}{
		{"when stdin closes", func(t *testing.T, _ *exec.Cmd, stdin interface{ Close() error }) { stdin.Close() }},
		{"on SIGTERM", func(t *testing.T, cmd *exec.Cmd, _ interface{ Close() error }) { cmd.Process.Signal(syscall.SIGTERM) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := startServerIn(t, dir, serverConfig(t, dir, toolsPull))
			cmd := connectCommand(t, s.ConfigPath)
			var stderr logBuffer
			cmd.Stderr = &stderr
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := make(chan string, 16)
			exited := make(chan error, 1)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
				exited <- cmd.Wait()
				close(exited) // later receivers (the cleanup) find it closed
			}()
			t.Cleanup(func() {
				cmd.Process.Kill()
				// Drain what is left, so the reader reaches Wait.
				deadline := time.After(eventTimeout)
				for {
					select {
					case <-lines:
						continue
					case <-exited:
					case <-deadline:
						t.Errorf("connect did not exit within %v of being killed", eventTimeout)
					}
					return
				}
			})
			for _, line := range []string{
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
				`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
			} {
				if _, err := stdin.Write([]byte(line + "\n")); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			for len(got) < 2 {
				select {
				case line, ok := <-lines:
					if !ok {
						t.Fatalf("stdout ended after %q:\n%s", got, stderr.String())
					}
					var m map[string]any
					if err := json.Unmarshal([]byte(line), &m); err != nil || m["jsonrpc"] != "2.0" {
						t.Fatalf("stdout line %q is not JSON-RPC", line)
					}
					got = append(got, line)
				case <-time.After(eventTimeout):
					t.Fatalf("no answers within %v:\n%s", eventTimeout, stderr.String())
				}
			}
			id := connectSessionID(t, stderr.String())
			tc.end(t, cmd, stdin)
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("connect exited with %v, want status 0:\n%s", err, stderr.String())
				}
			case <-time.After(eventTimeout):
				t.Fatalf("connect still running %v later:\n%s", eventTimeout, stderr.String())
			}
			for line := range lines {
				t.Errorf("stdout after the end: %q", line)
			}
			s.WaitLog(t, `msg="server session disconnected" component=mcp session_id=`+id, 1, eventTimeout)
		})
	}
}

// connectSessionID is the session connect logged (at debug) it started.
func connectSessionID(t *testing.T, log string) string {
	t.Helper()
	for line := range strings.Lines(log) {
		if strings.Contains(line, `msg="session started"`) {
			_, rest, _ := strings.Cut(line, "session_id=")
			id, _, _ := strings.Cut(rest, " ")
			return strings.TrimSpace(id)
		}
	}
	t.Fatalf("connect logged no session:\n%s", log)
	return ""
}

// TestConnectElicitation: with --token-file naming an mcp.elicit_clients
// token, the stdio client is asked (elicitation/create through the bridge)
// and its answer decides the request; with the MCP token it is never asked.
func TestConnectElicitation(t *testing.T) {
	slow(t, "elicitation through connect")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, elicitConfig(t, dir))
	elicitToken := filepath.Join(dir, "elicit-token")

	t.Run("an elicitation client's token: asked, and the answer decides", func(t *testing.T) {
		a := &asker{action: "accept", decision: "once"}
		c := connectThrough(t, s.ConfigPath, &mcp.ClientOptions{ElicitationHandler: a.answer}, "--token-file", elicitToken)
		res, err := c.CallTool(bounded(t), &mcp.CallToolParams{Name: requestTool,
			Arguments: askFor("fake", []string{"status"}, []string{"--depth"}, "through connect", "")})
		if err != nil {
			t.Fatal(err)
		}
		var w waited
		structured(t, res, &w)
		if w.Status != "approved" || w.Grant == nil || !w.Grant.Once {
			t.Errorf("result %+v, want approved once", w)
		}
		if q := a.questions(); len(q) != 1 || !strings.HasPrefix(q[0].Message, "Test Desktop: the assistant asks to run 'fake status' with --depth") {
			t.Errorf("questions %+v, want one from Test Desktop", q)
		}
		assertDecidedBy(t, s, w.ID, "client", "Test Desktop")
	})
	t.Run("the MCP token: never asked", func(t *testing.T) {
		a := &asker{action: "accept", decision: "once"}
		c := connectThrough(t, s.ConfigPath, &mcp.ClientOptions{ElicitationHandler: a.answer})
		res, err := c.CallTool(bounded(t), &mcp.CallToolParams{Name: requestTool,
			Arguments: askFor("fake", []string{"status"}, []string{"--color"}, "through connect, main token", "")})
		if err != nil {
			t.Fatal(err)
		}
		var w waited
		structured(t, res, &w)
		if w.Status != "pending" || len(a.questions()) != 0 {
			t.Errorf("result %+v after %d questions, want pending and never asked", w, len(a.questions()))
		}
	})
}
