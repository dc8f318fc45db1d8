package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// startTimeout bounds how long a server may take to answer /healthz.
const startTimeout = 30 * time.Second

// slow skips t under -short, the edit loop. -short keeps one end-to-end
// test of the real binary per surface: TestServeSmoke and
// TestServeListAndCall (serve and an MCP call), TestServeDenialText (a
// denial), TestRequestToolRecordsAndDeduplicates (a request),
// TestOperatorLoop and TestGrantOnce (deny, request, approve and the call
// then running), TestServeReload (a reload), TestConfigValidate and
// TestVersion (the CLI). Every other test calls slow, naming what it
// covers, so the skip message says what the short run left out.
func slow(t *testing.T, covers string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short skips " + covers + "; go test without -short runs it")
	}
}

// server is a running `wraptool serve` started by startServer.
type server struct {
	Dir        string // the temp folder holding config.yaml, tokens, logs
	ConfigPath string
	URL        string // http://127.0.0.1:PORT (empty for unix transport)
	Socket     string // unix socket path (unix transport only)
	Token      string // MCP bearer token ("" when the config names none)
	RequestLog string
	cmd        *exec.Cmd
	stderr     *logBuffer
	exited     chan struct{}
	exitErr    error
}

// serverConfig returns a config for a server in dir: loopback listener on a
// free port, token and request log inside dir, and tools as given (YAML for
// the tools: section, with $FAKECLI replaced by the fixture's path).
func serverConfig(t *testing.T, dir, tools string) string {
	t.Helper()
	port := freePort(t)
	cfg := fmt.Sprintf("mcp:\n  listen: 127.0.0.1:%d\n  auth_token_file: %s\n  request_log: %s\n  allowed_cwd_roots: [%s]\n",
		port, filepath.Join(dir, "mcp-token"), filepath.Join(dir, "requests.jsonl"), dir)
	if tools != "" {
		cfg += "tools:\n" + strings.ReplaceAll(tools, "$FAKECLI", fakecli)
	}
	return cfg
}

// startServerIn writes cfg to dir/config.yaml (unless cfg is empty) and
// starts `wraptool serve` on it, waiting (bounded) for /healthz or the
// socket. The server is stopped with SIGTERM, then killed, when the test
// ends.
func startServerIn(t *testing.T, dir, cfg string, env ...string) *server {
	t.Helper()
	s := &server{Dir: dir, ConfigPath: filepath.Join(dir, "config.yaml"), stderr: &logBuffer{}, exited: make(chan struct{})}
	if cfg != "" {
		if err := os.WriteFile(s.ConfigPath, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Debug logs help a failing test; a caller that passes its own
	// WRAPTOOL_LOG_LEVEL (the benchmark) gets that level instead.
	args := []string{"--config", s.ConfigPath, "--log-level", "debug", "serve"}
	for _, e := range env {
		if strings.HasPrefix(e, "WRAPTOOL_LOG_LEVEL=") {
			args = []string{"--config", s.ConfigPath, "serve"}
		}
	}
	s.cmd = exec.Command(wraptoolBin, args...)
	s.cmd.Env = append([]string{"HOME=" + filepath.Join(dir, "home"), "PATH=" + os.Getenv("PATH")}, env...)
	s.cmd.Stdout = io.Discard
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.exitErr = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() { s.stop(t) })

	waittest.Until(t, startTimeout, func() error {
		if addr := s.stderr.find(`msg="serving MCP"`, "address="); addr != "" {
			if strings.HasPrefix(addr, "/") {
				s.Socket = addr
			} else {
				s.URL = "http://" + addr
			}
			return nil
		}
		select {
		case <-s.exited:
			t.Fatalf("wraptool serve exited during start-up (%v):\n%s", s.exitErr, s.stderr.String())
		default:
		}
		return fmt.Errorf("wraptool serve did not start:\n%s", s.stderr.String())
	})
	if slices.Contains(args, "debug") {
		// The watcher's first ring after its watches are in place: from
		// here on every edit the test makes is seen.
		s.WaitLog(t, `msg="reload skipped"`, 1, startTimeout)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "mcp-token")); err == nil {
		s.Token = strings.TrimSpace(string(data))
	}
	s.RequestLog = filepath.Join(dir, "requests.jsonl")
	if s.URL != "" {
		waitHealthy(t, s.URL)
	}
	return s
}

// stop sends SIGTERM and waits (bounded) for exit, then kills.
func (s *server) stop(t *testing.T) {
	select {
	case <-s.exited:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
		t.Errorf("wraptool serve did not stop within 20s of SIGTERM:\n%s", s.stderr.String())
	}
}

// Signal sends sig to the server process.
func (s *server) Signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// Wait waits (bounded) for the server to exit and returns its exit error.
func (s *server) Wait(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case <-s.exited:
		return s.exitErr
	case <-time.After(within):
		t.Fatalf("wraptool serve still running after %v:\n%s", within, s.stderr.String())
		return nil
	}
}

// Log returns everything the server wrote to stderr so far.
func (s *server) Log() string { return s.stderr.String() }

// WaitLog polls (bounded) until the server's log holds n lines containing
// substr, and returns the log.
func (s *server) WaitLog(t *testing.T, substr string, n int, within time.Duration) string {
	t.Helper()
	var log string
	waittest.Until(t, within, func() error {
		if log = s.stderr.String(); strings.Count(log, substr) < n {
			return fmt.Errorf("server log has %d lines with %q, want %d:\n%s", strings.Count(log, substr), substr, n, log)
		}
		return nil
	})
	return log
}

// HTTPClient returns a client for the server: plain for TCP, dialing the
// socket for the unix transport.
func (s *server) HTTPClient() *http.Client {
	if s.Socket == "" {
		return &http.Client{Timeout: 60 * time.Second}
	}
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", s.Socket)
		},
	}}
}

// BaseURL is the URL to address: the TCP URL, or http://localhost for the
// socket (the host is ignored by the dialer).
func (s *server) BaseURL() string {
	if s.Socket != "" {
		return "http://localhost"
	}
	return s.URL
}

func waitHealthy(t *testing.T, url string) {
	t.Helper()
	waittest.Until(t, startTimeout, func() error {
		resp, err := http.Get(url + "/healthz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && healthzOK(string(body)) {
				return nil
			}
		}
		return fmt.Errorf("%s/healthz did not answer ok (last error %v)", url, err)
	})
}

// freePort asks the kernel for a free loopback port. Another process could
// take it before the server binds; tests that see a bind error retry.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// logBuffer collects a process's stderr, safe for concurrent reads.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// find returns the value of key= on the first line containing marker.
func (b *logBuffer) find(marker, key string) string {
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, marker) {
			continue
		}
		_, rest, ok := strings.Cut(line, " "+key)
		if !ok {
			continue
		}
		v, _, _ := strings.Cut(rest, " ")
		return strings.Trim(v, `"`)
	}
	return ""
}

// settle is how long a test waits, after the first tools/list_changed, for a
// second one that must not come: longer than the 200 ms reload debounce plus
// the SDK's 10 ms notification delay.
const settle = 500 * time.Millisecond

// quiet is how long a test waits for a notification that must not come at
// all, once the server has logged what it did (or, for a reload that logs
// nothing, from the change): several debounce periods.
const quiet = time.Second

// eventTimeout bounds waits for something that must happen (a notification,
// a log line, a call's result).
const eventTimeout = 15 * time.Second

// unixServerConfig is serverConfig for the unix transport: the socket is at
// socket (keep its path short: unix socket paths are limited to ~100 bytes),
// the token and request log inside dir.
func unixServerConfig(dir, socket, tools string) string {
	cfg := fmt.Sprintf("mcp:\n  transport: unix\n  listen: %s\n  auth_token_file: %s\n  request_log: %s\n  allowed_cwd_roots: [%s]\n",
		socket, filepath.Join(dir, "mcp-token"), filepath.Join(dir, "requests.jsonl"), dir)
	if tools != "" {
		cfg += "tools:\n" + strings.ReplaceAll(tools, "$FAKECLI", fakecli)
	}
	return cfg
}

// shortTempDir makes a folder with a short path, for unix sockets, removed
// when the test ends (after the server, whose cleanup is registered later).
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "wt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// withTools replaces the tools: section of a config made by serverConfig or
// unixServerConfig, keeping its mcp: section (and so its port).
func withTools(cfg, tools string) string {
	head, _, _ := strings.Cut(cfg, "tools:\n")
	return head + "tools:\n" + strings.ReplaceAll(tools, "$FAKECLI", fakecli)
}

// PID is the server's process id.
func (s *server) PID() int { return s.cmd.Process.Pid }

// mcpClient is a go-sdk client session on a server that counts the
// notifications/tools/list_changed it receives.
type mcpClient struct {
	*mcp.ClientSession
	// ListChanged receives one value per tools/list_changed.
	ListChanged chan struct{}
	name        string
}

// Connect opens an MCP session on s at endpoint ("/mcp" for Streamable
// HTTP, "/sse" for legacy SSE), sending the server's token. The session is
// closed when the test ends.
func (s *server) Connect(t *testing.T, endpoint string) *mcpClient {
	t.Helper()
	c := &mcpClient{ListChanged: make(chan struct{}, 64), name: endpoint}
	client := mcp.NewClient(&mcp.Implementation{Name: "wraptool-integration", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case c.ListChanged <- struct{}{}:
			default: // more than the buffer holds: the count is wrong anyway
			}
		},
	})
	base := http.DefaultTransport
	if s.Socket != "" {
		base = s.HTTPClient().Transport
	}
	// No overall timeout: the SSE streams live as long as the session.
	httpClient := &http.Client{Transport: toolsettest.Bearer{Token: s.Token, Base: base}}
	var transport mcp.Transport
	switch endpoint {
	case "/mcp":
		transport = &mcp.StreamableClientTransport{Endpoint: s.BaseURL() + endpoint, HTTPClient: httpClient}
	case "/sse":
		transport = &mcp.SSEClientTransport{Endpoint: s.BaseURL() + endpoint, HTTPClient: httpClient}
	default:
		t.Fatalf("Connect: unknown endpoint %q", endpoint)
	}
	// The legacy SSE transport ties its stream to the context given to
	// Connect, so it lives until the test ends; a timer bounds the connect.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	timer := time.AfterFunc(eventTimeout, cancel)
	session, err := client.Connect(ctx, transport, nil)
	if !timer.Stop() {
		t.Fatalf("connect to %s%s: not connected within %v (%v)\n%s", s.BaseURL(), endpoint, eventTimeout, err, s.Log())
	}
	if err != nil {
		t.Fatalf("connect to %s%s: %v\n%s", s.BaseURL(), endpoint, err, s.Log())
	}
	t.Cleanup(func() { session.Close() })
	c.ClientSession = session
	return c
}

// WrappedTools lists the session's tools, sorted, leaving out wraptool's
// own built-in ones.
func (c *mcpClient) WrappedTools(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	res, err := c.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("%s: tools/list: %v", c.name, err)
	}
	var names []string
	for _, tool := range res.Tools {
		if !strings.HasPrefix(tool.Name, "wraptool_") {
			names = append(names, tool.Name)
		}
	}
	slices.Sort(names)
	return names
}

// Call calls a tool, bounded by eventTimeout.
func (c *mcpClient) Call(t *testing.T, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: call %s: %v", c.name, name, err)
	}
	return res
}

// expectOneListChanged waits (bounded) for each client's first
// tools/list_changed, then a further settle period, and fails if any
// client got a second one.
func expectOneListChanged(t *testing.T, s *server, clients ...*mcpClient) {
	t.Helper()
	for _, c := range clients {
		select {
		case <-c.ListChanged:
		case <-time.After(eventTimeout):
			t.Fatalf("%s: no tools/list_changed within %v:\n%s", c.name, eventTimeout, s.Log())
		}
	}
	time.Sleep(settle) // waiting for the absence of an event
	for _, c := range clients {
		if n := len(c.ListChanged); n > 0 {
			t.Errorf("%s: got %d tools/list_changed, want exactly 1", c.name, 1+n)
		}
	}
}

// expectNoListChanged waits quiet and fails if any client got a
// tools/list_changed.
func expectNoListChanged(t *testing.T, clients ...*mcpClient) {
	t.Helper()
	time.Sleep(quiet) // waiting for the absence of an event
	for _, c := range clients {
		if n := len(c.ListChanged); n > 0 {
			t.Errorf("%s: got %d tools/list_changed, want none", c.name, n)
		}
	}
}

// structured decodes a result's structuredContent into v.
func structured(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("structuredContent %s: %v", data, err)
	}
}

// waitChild polls (bounded) until the server has a child process running
// argv, so a test knows a tool call is in flight, and returns its pid.
// There is no event for it.
func waitChild(t *testing.T, s *server, argv ...string) int {
	t.Helper()
	want := strings.Join(argv, "\x00") + "\x00"
	var found int
	waittest.Until(t, eventTimeout, func() error {
		for _, pid := range waittest.Children(s.PID()) {
			if waittest.Cmdline(pid) == want {
				found = pid
				return nil
			}
		}
		return fmt.Errorf("no child of the server runs %q:\n%s", argv, s.Log())
	})
	return found
}

// healthzOK reports whether a /healthz body says the server is up: "ok",
// then the line saying which confinement is in force.
func healthzOK(body string) bool {
	first, rest, _ := strings.Cut(body, "\n")
	return first == "ok" && strings.HasPrefix(rest, "confinement: ")
}

// scratch is dir/work, made if need be: where a fixture started by the
// server writes what it records. The folder holding wraptool's own files
// (dir itself, in these tests) takes no new entries from a confined
// process, so the fixtures write in a folder of their own.
func scratch(t *testing.T, dir string) string {
	t.Helper()
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	return work
}
