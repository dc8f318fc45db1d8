package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long a server may take to answer /healthz.
const startTimeout = 30 * time.Second

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

// startServer writes cfg to a fresh folder's config.yaml and starts `wraptool
// serve` on it, waiting (bounded) for /healthz or the socket. The server is
// stopped with SIGTERM, then killed, when the test ends.
func startServer(t *testing.T, cfg string, env ...string) *server {
	t.Helper()
	dir := t.TempDir()
	return startServerIn(t, dir, strings.ReplaceAll(cfg, "$DIR", dir), env...)
}

// startServerIn is startServer with the folder chosen by the caller (cfg is
// written to dir/config.yaml unless cfg is empty).
func startServerIn(t *testing.T, dir, cfg string, env ...string) *server {
	t.Helper()
	s := &server{Dir: dir, ConfigPath: filepath.Join(dir, "config.yaml"), stderr: &logBuffer{}, exited: make(chan struct{})}
	if cfg != "" {
		if err := os.WriteFile(s.ConfigPath, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s.cmd = exec.Command(wraptoolBin, "--config", s.ConfigPath, "--log-level", "debug", "serve")
	s.cmd.Env = append([]string{"HOME=" + filepath.Join(dir, "home"), "PATH=" + os.Getenv("PATH")}, env...)
	s.cmd.Stdout = io.Discard
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.exitErr = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() { s.stop(t) })

	deadline := time.Now().Add(startTimeout)
	for {
		if addr := s.stderr.find(`msg="serving MCP"`, "address="); addr != "" {
			if strings.HasPrefix(addr, "/") {
				s.Socket = addr
			} else {
				s.URL = "http://" + addr
			}
			break
		}
		select {
		case <-s.exited:
			t.Fatalf("wraptool serve exited during start-up (%v):\n%s", s.exitErr, s.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("wraptool serve did not start within %v:\n%s", startTimeout, s.stderr.String())
		}
		time.Sleep(20 * time.Millisecond) // polling the log: no event to wait on
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
	deadline := time.Now().Add(within)
	for {
		log := s.stderr.String()
		if strings.Count(log, substr) >= n {
			return log
		}
		if time.Now().After(deadline) {
			t.Fatalf("server log has %d lines with %q after %v, want %d:\n%s", strings.Count(log, substr), substr, within, n, log)
		}
		time.Sleep(20 * time.Millisecond) // polling the log: no event to wait on
	}
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
	deadline := time.Now().Add(startTimeout)
	for {
		resp, err := http.Get(url + "/healthz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && string(body) == "ok" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/healthz did not answer ok within %v (last error %v)", url, startTimeout, err)
		}
		time.Sleep(20 * time.Millisecond) // polling the endpoint: no event to wait on
	}
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
