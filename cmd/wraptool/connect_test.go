package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
)

func TestConnectEndpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		mcp       config.MCP
		address   string
		url       string
		wantError string
	}{
		{"a loopback listener is dialled as it is", config.MCP{Transport: "sse", Listen: "127.0.0.1:8717"}, "127.0.0.1:8717", "http://127.0.0.1:8717/mcp", ""},
		{"0.0.0.0 is reached through 127.0.0.1", config.MCP{Transport: "sse", Listen: "0.0.0.0:8717"}, "127.0.0.1:8717", "http://127.0.0.1:8717/mcp", ""},
		{"an empty host is reached through 127.0.0.1", config.MCP{Transport: "sse", Listen: ":8717"}, "127.0.0.1:8717", "http://127.0.0.1:8717/mcp", ""},
		{"[::] is reached through 127.0.0.1, as the hub's URL says", config.MCP{Transport: "sse", Listen: "[::]:8717"}, "127.0.0.1:8717", "http://127.0.0.1:8717/mcp", ""},
		{"[::1] is dialled as it is", config.MCP{Transport: "sse", Listen: "[::1]:8717"}, "[::1]:8717", "http://[::1]:8717/mcp", ""},
		{"localhost is dialled by name", config.MCP{Transport: "sse", Listen: "localhost:8717"}, "localhost:8717", "http://localhost:8717/mcp", ""},
		{"a unix socket is dialled at its path", config.MCP{Transport: "unix", Listen: "/run/user/1000/wraptool.sock"}, "/run/user/1000/wraptool.sock", "http://localhost/mcp", ""},
		{"port 0 cannot be found", config.MCP{Transport: "sse", Listen: "127.0.0.1:0"}, "", "", "port 0"},
		{"a listen address without a port is refused", config.MCP{Transport: "sse", Listen: "127.0.0.1"}, "", "", "mcp.listen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ep, err := connectEndpoint(tt.mcp)
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Errorf("connectEndpoint = %+v, %v; want an error about %s", ep, err, tt.wantError)
				}
				return
			}
			if err != nil || ep.address != tt.address || ep.dial != tt.address || ep.url != tt.url {
				t.Errorf("connectEndpoint = %+v, %v; want address %s, url %s", ep, err, tt.address, tt.url)
			}
		})
	}
}

func TestReadPrivateToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// make creates what path names inside dir and returns path.
		make      func(t *testing.T, dir string) string
		want      string
		wantError string
	}{
		{"a private file gives its token, without surrounding space", func(t *testing.T, dir string) string {
			return configtest.WriteFile(t, filepath.Join(dir, "tok"), "  secret\n", 0o600)
		}, "secret", ""},
		{"a file others may read is refused with the fix", func(t *testing.T, dir string) string {
			return configtest.WriteFile(t, filepath.Join(dir, "tok"), "secret", 0o644)
		}, "", "readable by group or others, and it holds a secret; fix with: chmod 600"},
		{"a file the group may read is refused", func(t *testing.T, dir string) string {
			return configtest.WriteFile(t, filepath.Join(dir, "tok"), "secret", 0o640)
		}, "", "chmod 600"},
		{"a file others may write is refused", func(t *testing.T, dir string) string {
			return configtest.WriteFile(t, filepath.Join(dir, "tok"), "secret", 0o602)
		}, "", "writable by group or others"},
		{"a file in a folder others may write is refused", func(t *testing.T, dir string) string {
			open := filepath.Join(dir, "open")
			mkdir(t, open, 0o777)
			return configtest.WriteFile(t, filepath.Join(open, "tok"), "secret", 0o600)
		}, "", "which group or others may write, so they could replace it; fix with: chmod go-w"},
		{"a file in a sticky folder others may write passes, as in /tmp", func(t *testing.T, dir string) string {
			sticky := filepath.Join(dir, "sticky")
			mkdir(t, sticky, 0o777|os.ModeSticky)
			return configtest.WriteFile(t, filepath.Join(sticky, "tok"), "secret", 0o600)
		}, "secret", ""},
		{"a link to a file in a folder others may write is refused", func(t *testing.T, dir string) string {
			open := filepath.Join(dir, "open")
			mkdir(t, open, 0o777)
			target := configtest.WriteFile(t, filepath.Join(open, "tok"), "secret", 0o600)
			link := filepath.Join(dir, "link")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			return link
		}, "", "chmod go-w " + "OPEN"},
		{"an empty file is refused", func(t *testing.T, dir string) string {
			return configtest.WriteFile(t, filepath.Join(dir, "tok"), " \n", 0o600)
		}, "", "is empty"},
		{"a file over 64 KiB is refused", func(t *testing.T, dir string) string {
			return configtest.WriteFile(t, filepath.Join(dir, "tok"), strings.Repeat("a", 65<<10), 0o600)
		}, "", "at most 65536"},
		{"a folder is refused", func(t *testing.T, dir string) string {
			d := filepath.Join(dir, "d")
			mkdir(t, d, 0o700)
			return d
		}, "", "is a directory"},
		{"a named pipe is refused without blocking", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "fifo")
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Skip(err)
			}
			return p
		}, "", "not a regular file"},
		{"a missing file says so", func(t *testing.T, dir string) string { return filepath.Join(dir, "missing") }, "", "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := tt.make(t, dir)
			got, err := readPrivateToken(path)
			want := strings.ReplaceAll(tt.wantError, "OPEN", filepath.Join(dir, "open"))
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("readPrivateToken = %q, %v; want an error containing %q", got, err, want)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("readPrivateToken = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func mkdir(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// connectConfig writes a config for dir whose MCP listener is listen.
func connectConfig(t *testing.T, dir, listen string, extra string) string {
	t.Helper()
	path := filepath.Join(dir, "config.yaml")
	configtest.ReplaceFile(t, path, fmt.Sprintf("mcp:\n  listen: %s\n  auth_token_file: %s\n  request_log: %s\n%s",
		listen, filepath.Join(dir, "mcp-token"), filepath.Join(dir, "requests.jsonl"), extra))
	configtest.WriteFile(t, filepath.Join(dir, "mcp-token"), "token-of-the-test\n", 0o600)
	return path
}

func TestConnectCommandLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := map[string]string{"HOME": filepath.Join(dir, "home")}
	good := connectConfig(t, dir, "127.0.0.1:1", "")
	zeroDir := t.TempDir()
	zero := connectConfig(t, zeroDir, "127.0.0.1:0", "")
	open := configtest.WriteFile(t, filepath.Join(dir, "open-token"), "x", 0o644)
	tests := []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"an argument is a usage error", []string{"--config", good, "connect", "extra"}, 2, "connect takes no arguments"},
		{"an unknown flag is a usage error", []string{"--config", good, "connect", "--bogus"}, 2, "bogus"},
		{"a listener on port 0 cannot be found", []string{"--config", zero, "connect"}, 1, "port 0"},
		{"a missing --token-file is refused", []string{"--config", good, "connect", "--token-file", filepath.Join(dir, "nope")}, 1, "--token-file"},
		{"a --token-file others may read is refused", []string{"--config", good, "connect", "--token-file", open}, 1, "chmod 600 " + open},
		{"a missing config is refused", []string{"--config", filepath.Join(dir, "none.yaml"), "connect"}, 1, "none.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := run(t, env, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.inStderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q in stderr", code, stderr, tt.code, tt.inStderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing: it belongs to JSON-RPC", stdout)
			}
		})
	}
}

// pinnedLoad is the load path with the MCP listener moved to listen: the
// in-process server binds a port chosen now, and connect, loading the same
// file through it, finds that port.
func pinnedLoad(listen string) func(ctx context.Context, path string, o *config.LoadOptions) (*config.Loaded, error) {
	return func(ctx context.Context, path string, o *config.LoadOptions) (*config.Loaded, error) {
		l, err := config.LoadFile(ctx, path, o)
		if err == nil {
			l.Config.MCP.Listen = listen
		}
		return l, err
	}
}

// TestConnectInProcess runs serve and connect in this process, with the
// go-sdk client on connect's stdio: list, call, a config edit's
// list_changed, and the end of stdin (exit 0, the session ended on the
// server).
func TestConnectInProcess(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	load := pinnedLoad(listen)
	p := startServe(t, []string{"status"}, load)
	p.waitLog(t, `msg="reload skipped"`, 1) // the watcher is in place

	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	var stderr syncBuffer
	env := map[string]string{"HOME": filepath.Join(p.dir, "home"), "PATH": os.Getenv("PATH")}
	a := newApp(func(k string) string { return env[k] }, stdoutW, &stderr)
	a.stdin = stdinR
	a.load = load
	a.notify = func(chan<- os.Signal, ...os.Signal) {}
	a.stopNotify = func(chan<- os.Signal) {}
	done := make(chan error, 1)
	go func() {
		err := a.exec(context.Background(), []string{"--config", p.config, "--log-level", "debug", "connect"})
		stdoutW.Close()
		done <- err
	}()
	t.Cleanup(func() {
		stdinW.Close()
		select {
		case <-done:
		case <-time.After(bound):
			t.Errorf("connect did not return within %v of the end of stdin", bound)
		}
	})

	changed := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "connect-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.IOTransport{Reader: stdoutR, Writer: stdinW}, nil)
	if err != nil {
		t.Fatalf("connect through wraptool connect: %v\n--- connect:\n%s\n--- serve:\n%s", err, stderr.String(), p.log)
	}
	if got, want := tools(t, session), []string{"fake_status"}; !slices.Equal(got, want) {
		t.Errorf("tools = %q, want %q", got, want)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "fake_status", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("call fake_status = %+v, %v; want a run", res, err)
	}
	configtest.ReplaceFile(t, p.config, serveConfig(p.dir, "status", "push"))
	select {
	case <-changed:
	case <-time.After(bound):
		t.Fatalf("no tools/list_changed through connect within %v\n%s", bound, p.log)
	}
	if got, want := tools(t, session), []string{"fake_push", "fake_status"}; !slices.Equal(got, want) {
		t.Errorf("tools after the edit = %q, want %q", got, want)
	}

	id := sessionID(t, stderr.String())
	session.Close() // closes connect's stdin
	select {
	case err := <-done:
		done <- err
		if code := exitCode(err, &bytes.Buffer{}); code != 0 {
			t.Errorf("connect exited %d (%v), want 0 once stdin ended", code, err)
		}
	case <-time.After(bound):
		t.Fatalf("connect still running %v after stdin ended", bound)
	}
	p.waitLog(t, `msg="server session disconnected" component=mcp session_id=`+id, 1)
}

// sessionID is the session connect logged (at debug) it started.
func sessionID(t *testing.T, log string) string {
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

// TestConnectNeedsATokenWhereNothingElseVouches: on macOS a TCP listener's
// owner cannot be read, so connect without a token to be proved refuses
// rather than bridge to whoever holds the port; elsewhere, or with a
// token, or on a unix socket, it goes on.
func TestConnectNeedsATokenWhereNothingElseVouches(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		goos, network string
		token, ok     bool
	}{
		{"darwin", "tcp", false, false},
		{"darwin", "tcp", true, true},
		{"darwin", "unix", false, true},
		{"linux", "tcp", false, true},
	} {
		err := vouchable(tc.goos, tc.network, tc.token)
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), "mcp.auth_token_file")) {
			t.Errorf("vouchable(%s, %s, token %v) = %v; want ok %v, a refusal naming mcp.auth_token_file", tc.goos, tc.network, tc.token, err, tc.ok)
		}
	}
}
