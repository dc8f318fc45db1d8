package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/toolset/runner"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// The tool sections the serve tests switch between ($FAKECLI is the
// fixture). fakecli treats its first argument as a mode: pull, push and
// fetch print argv/env/cwd as JSON; sleep D sleeps.
const (
	toolsPull = `  fake:
    binary: $FAKECLI
    allow:
      - subcommand: [pull]
`
	toolsPullPush = `  fake:
    binary: $FAKECLI
    allow:
      - subcommand: [pull]
      - subcommand: [push]
        flags: ["--set-upstream"]
        flag_constraints:
          "--set-upstream": {type: boolean}
`
	toolsFetch = `  fake:
    binary: $FAKECLI
    allow:
      - subcommand: [fetch]
`
	toolsPullRebase = `  fake:
    binary: $FAKECLI
    allow:
      - subcommand: [pull]
        flags: ["--rebase"]
`
	// toolsPullWait's waitfor rule runs a call that ends only when the
	// test creates the file it names, so ordering never rests on timing.
	toolsPullWait = `  fake:
    binary: $FAKECLI
    allow:
      - subcommand: [pull]
      - subcommand: [waitfor]
`
)

// fakeReport is what fakecli prints in its default mode.
type fakeReport struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Cwd  string   `json:"cwd"`
}

// runOutput is a run's structuredContent.
type runOutput struct {
	ExitCode   *int   `json:"exit_code"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	DurationMS *int64 `json:"duration_ms"`
	Truncated  *bool  `json:"truncated"`
}

func TestServeListAndCall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		unix     bool
		endpoint string
	}{
		{name: "Streamable HTTP at /mcp on TCP lists and runs the tools", endpoint: "/mcp"},
		{name: "legacy SSE at /sse on TCP lists and runs the tools", endpoint: "/sse"},
		{name: "Streamable HTTP at /mcp on the unix socket lists and runs the tools", unix: true, endpoint: "/mcp"},
		{name: "legacy SSE at /sse on the unix socket lists and runs the tools", unix: true, endpoint: "/sse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			var s *server
			if tt.unix {
				socket := filepath.Join(shortTempDir(t), "wraptool.sock")
				s = startServerIn(t, dir, unixServerConfig(dir, socket, toolsPullPush))
				// The log names the listener's temporary path, not the
				// socket (TestServeUnixSocketLogsItsPath): dial the socket.
				s.Socket = socket
				info, err := os.Stat(socket)
				if err != nil {
					t.Fatal(err)
				}
				if info.Mode().Type() != os.ModeSocket || info.Mode().Perm() != 0o600 {
					t.Errorf("socket mode = %v, want a socket with mode 0600", info.Mode())
				}
			} else {
				s = startServerIn(t, dir, serverConfig(t, dir, toolsPullPush))
			}
			c := s.Connect(t, tt.endpoint)

			ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
			defer cancel()
			list, err := c.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
				if tool.Description == "" {
					t.Errorf("tool %s has an empty description", tool.Name)
				}
				schema, _ := tool.InputSchema.(map[string]any)
				if schema["type"] != "object" {
					t.Errorf("tool %s has inputSchema %v, want type object", tool.Name, tool.InputSchema)
				}
			}
			slices.Sort(names)
			if want := []string{"fake_pull", "fake_push", "wraptool_discover", "wraptool_request_capability", "wraptool_request_status"}; !slices.Equal(names, want) {
				t.Errorf("tools = %q, want %q", names, want)
			}

			res := c.Call(t, "fake_push", map[string]any{"set-upstream": true, "args": []string{"origin", "main"}})
			text := toolsettest.ResultText(t, res)
			if res.IsError {
				t.Fatalf("fake_push is an error: %s", text)
			}
			var report fakeReport
			if err := json.Unmarshal([]byte(text), &report); err != nil {
				t.Fatalf("result text %q is not fakecli's report: %v", text, err)
			}
			if want := []string{fakecli, "push", "--set-upstream", "origin", "main"}; !slices.Equal(report.Argv, want) {
				t.Errorf("argv = %q, want %q", report.Argv, want)
			}
			var out runOutput
			structured(t, res, &out)
			if out.ExitCode == nil || *out.ExitCode != 0 || out.Stdout != text || out.DurationMS == nil || out.Truncated == nil || *out.Truncated {
				t.Errorf("structuredContent = %+v, want exit_code 0, stdout the text, duration_ms, truncated false", res.StructuredContent)
			}
		})
	}
}

// The "serving MCP" line names the socket clients dial (the harness reads
// it).
func TestServeUnixSocketLogsItsPath(t *testing.T) {
	slow(t, "the unix socket's logged path")
	t.Parallel()
	dir := t.TempDir()
	socket := filepath.Join(shortTempDir(t), "wraptool.sock")
	s := startServerIn(t, dir, unixServerConfig(dir, socket, toolsPull))
	if s.Socket != socket {
		t.Errorf("the log names the socket %q, want %q", s.Socket, socket)
	}
}

// initializeBody is a Streamable HTTP initialize request.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// rawRequest is one HTTP request against a server, made without the MCP
// client so the test controls every header.
type rawRequest struct {
	method, path string
	host         string // "" for the URL's
	origin       string // "" for none
	token        string // "" for no Authorization header
}

// do sends r and returns the status, the WWW-Authenticate header and (for
// answers that are not a stream) the body.
func (r rawRequest) do(t *testing.T, s *server) (status int, authenticate, body string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	var reqBody io.Reader
	if r.method == http.MethodPost {
		reqBody = strings.NewReader(initializeBody)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, s.BaseURL()+r.path, reqBody)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if reqBody != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.host != "" {
		req.Host = r.host
	}
	if r.origin != "" {
		req.Header.Set("Origin", r.origin)
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	// An SSE answer is a stream that does not end: read none of it.
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data, _ := io.ReadAll(resp.Body)
		body = string(data)
	}
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body
}

func TestServeAuth(t *testing.T) {
	slow(t, "bearer token checks")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, toolsPull))
	const wrong = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		name       string
		req        rawRequest
		wantStatus int
		wantBody   string // exact when set
	}{
		{name: "/mcp without a token is 401", req: rawRequest{method: "POST", path: "/mcp"}, wantStatus: 401},
		{name: "/mcp with a wrong token is 401", req: rawRequest{method: "POST", path: "/mcp", token: wrong}, wantStatus: 401},
		{name: "/mcp with the token is served", req: rawRequest{method: "POST", path: "/mcp", token: "$TOKEN"}, wantStatus: 200},
		{name: "/sse without a token is 401", req: rawRequest{method: "GET", path: "/sse"}, wantStatus: 401},
		{name: "/sse with a wrong token is 401", req: rawRequest{method: "GET", path: "/sse", token: wrong}, wantStatus: 401},
		{name: "/sse with the token is served", req: rawRequest{method: "GET", path: "/sse", token: "$TOKEN"}, wantStatus: 200},
		{name: "/healthz answers ok without a token", req: rawRequest{method: "GET", path: "/healthz"}, wantStatus: 200, wantBody: "ok\nconfinement: " + runner.Probe(nil).String() + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.req.token == "$TOKEN" {
				tt.req.token = s.Token
			}
			status, authenticate, body := tt.req.do(t, s)
			if status != tt.wantStatus {
				t.Errorf("status = %d, want %d (body %q)", status, tt.wantStatus, body)
			}
			if tt.wantBody != "" && body != tt.wantBody {
				t.Errorf("body = %q, want %q", body, tt.wantBody)
			}
			switch {
			case status == 401 && !strings.HasPrefix(authenticate, "Bearer"):
				t.Errorf("WWW-Authenticate = %q, want a Bearer challenge", authenticate)
			case status != 401 && authenticate != "":
				t.Errorf("WWW-Authenticate = %q on a %d, want none", authenticate, status)
			}
		})
	}
}

func TestServeDNSRebindingProtection(t *testing.T) {
	slow(t, "DNS rebinding protection")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, toolsPull))
	port := s.URL[strings.LastIndexByte(s.URL, ':')+1:]
	tests := []struct {
		name       string
		host       string
		origin     string
		wantStatus int
	}{
		{name: "a foreign Host is refused", host: "attacker.example:" + port, wantStatus: 403},
		{name: "a foreign Host without a port is refused", host: "attacker.example", wantStatus: 403},
		{name: "a foreign Origin is refused", origin: "http://attacker.example:" + port, wantStatus: 403},
		{name: "an Origin on another loopback port is refused", origin: "http://localhost:1", wantStatus: 403},
		{name: "Host localhost with the port is accepted", host: "localhost:" + port, wantStatus: 200},
		{name: "Host [::1] with the port is accepted", host: "[::1]:" + port, wantStatus: 200},
		{name: "Origin http://localhost with the port is accepted", origin: "http://localhost:" + port, wantStatus: 200},
		{name: "Origin http://127.0.0.1 with the port is accepted", origin: "http://127.0.0.1:" + port, wantStatus: 200},
	}
	for _, tt := range tests {
		for _, path := range []string{"/mcp", "/sse"} {
			t.Run(path+": "+tt.name, func(t *testing.T) {
				t.Parallel()
				method := http.MethodPost
				if path == "/sse" {
					method = http.MethodGet
				}
				req := rawRequest{method: method, path: path, host: tt.host, origin: tt.origin, token: s.Token}
				if status, _, body := req.do(t, s); status != tt.wantStatus {
					t.Errorf("status = %d, want %d (body %q)", status, tt.wantStatus, body)
				}
			})
		}
	}
}

func TestServeDenialText(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, toolsPullPush+`  bare:
    binary: $FAKECLI
    allow:
      - subcommand: []
    deny:
      - subcommand: [auth]
`))
	c := s.Connect(t, "/mcp")
	tests := []struct {
		name string
		tool string
		args map[string]any
		want string
	}{
		{
			name: "a flag not in the allowlist",
			tool: "fake_push",
			args: map[string]any{"force": true, "args": []string{"origin", "main"}},
			want: "DENIED: 'fake push --force origin main' is not permitted.\n" +
				"\n" +
				"Policy: flag '--force' is not in the allowlist for 'fake push'.\n" +
				"Allowed flags for 'fake push': --set-upstream\n" +
				"\n" +
				"To request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name: "a flag not in the allowlist of a rule without flags",
			tool: "fake_pull",
			args: map[string]any{"rebase": true},
			want: "DENIED: 'fake pull --rebase' is not permitted.\n" +
				"\n" +
				"Policy: flag '--rebase' is not in the allowlist for 'fake pull'.\n" +
				"Allowed flags for 'fake pull': (none)\n" +
				"\n" +
				"To request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name: "a positional argument that looks like a flag",
			tool: "fake_push",
			args: map[string]any{"args": []string{"-rf"}},
			want: "DENIED: 'fake push -rf' is not permitted.\n" +
				"\n" +
				"Policy: positional argument '-rf' looks like a flag; pass flags as named parameters.\n" +
				"\n" +
				"To request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name: "a deny rule matched by the positional arguments of a bare-tool rule",
			tool: "bare",
			args: map[string]any{"args": []string{"auth", "login"}},
			want: "DENIED: 'bare auth login' is not permitted.\n" +
				"\n" +
				"Policy: subcommand 'auth' is denied for 'bare'.\n" +
				"\n" +
				"To request this capability, call the 'wraptool_request_capability' tool.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is refused with the documented text", func(t *testing.T) {
			t.Parallel()
			res := c.Call(t, tt.tool, tt.args)
			if !res.IsError {
				t.Errorf("isError = false, want true")
			}
			if got := toolsettest.ResultText(t, res); got != tt.want {
				t.Errorf("text:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// writeInPlace rewrites path's contents without replacing the file.
func writeInPlace(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// logLines returns the lines of log that contain every one of substrs.
func logLines(log string, substrs ...string) []string {
	var out []string
	for line := range strings.Lines(log) {
		if !slices.ContainsFunc(substrs, func(s string) bool { return !strings.Contains(line, s) }) {
			out = append(out, strings.TrimSuffix(line, "\n"))
		}
	}
	return out
}

func TestServeReload(t *testing.T) {
	t.Parallel()
	const (
		reloaded = `msg="config reloaded"`
		rejected = `msg="config rejected"`
	)
	tests := []struct {
		name string
		// symlink makes config.yaml a symlink into a sub-folder the
		// watcher does not watch, so an edit there is seen only by SIGHUP.
		symlink bool
		// edit changes the config (cfg is the running one); nil for none.
		edit func(t *testing.T, s *server, cfg string)
		// sighup sends SIGHUP after the edit.
		sighup bool
		// wantLog is the one reload line expected ("" for no line), with
		// wantCause its cause.
		wantLog, wantCause string
		// orWatchToo accepts a second reload line, caused by the watcher,
		// besides wantLog's: the edit is seen by both.
		orWatchToo bool
		// wantTools is the wrapped tool list afterwards; a change from
		// toolsPull must bring exactly one list_changed, no change none.
		wantTools  []string
		wantChange bool
		// wantSchemaFlag, when set, is a property fake_pull's schema must
		// have afterwards.
		wantSchemaFlag string
		// wantSkip expects the loader's debug line "reload skipped": the
		// proof that the reload ran and found nothing to do, so the test
		// waits for it instead of sleeping.
		wantSkip bool
	}{
		{
			name: "an in-place write that adds a rule",
			edit: func(t *testing.T, s *server, cfg string) {
				writeInPlace(t, s.ConfigPath, withTools(cfg, toolsPullPush))
			},
			wantLog: reloaded, wantCause: "cause=file",
			wantTools: []string{"fake_pull", "fake_push"}, wantChange: true,
		},
		{
			name: "a temp file renamed over the config that replaces a rule",
			edit: func(t *testing.T, s *server, cfg string) {
				configtest.ReplaceFile(t, s.ConfigPath, withTools(cfg, toolsFetch))
			},
			wantLog: reloaded, wantCause: "cause=file",
			wantTools: []string{"fake_fetch"}, wantChange: true,
		},
		{
			name: "an in-place write that changes only a schema",
			edit: func(t *testing.T, s *server, cfg string) {
				writeInPlace(t, s.ConfigPath, withTools(cfg, toolsPullRebase))
			},
			wantLog: reloaded, wantCause: "cause=file",
			wantTools: []string{"fake_pull"}, wantChange: true, wantSchemaFlag: "rebase",
		},
		{
			name:    "a SIGHUP after an edit the watcher cannot see",
			symlink: true,
			edit: func(t *testing.T, s *server, cfg string) {
				writeInPlace(t, filepath.Join(s.Dir, "real", "config.yaml"), withTools(cfg, toolsPullPush))
			},
			sighup:  true,
			wantLog: reloaded, wantCause: "cause=SIGHUP",
			wantTools: []string{"fake_pull", "fake_push"}, wantChange: true,
		},
		{
			name: "a SIGHUP right after an edit the watcher sees too",
			edit: func(t *testing.T, s *server, cfg string) {
				writeInPlace(t, s.ConfigPath, withTools(cfg, toolsPullPush))
			},
			sighup:  true,
			wantLog: reloaded, wantCause: "cause=SIGHUP", orWatchToo: true,
			wantTools: []string{"fake_pull", "fake_push"}, wantChange: true,
		},
		{
			name: "an invalid config keeps the old tools",
			edit: func(t *testing.T, s *server, cfg string) {
				writeInPlace(t, s.ConfigPath, strings.Replace(cfg, "mcp:\n", "mcp:\n  transprot: sse\n", 1))
			},
			wantLog: rejected, wantCause: "cause=file",
			wantTools: []string{"fake_pull"},
		},
		{
			name: "a rewrite with the same bytes",
			edit: func(t *testing.T, s *server, cfg string) {
				writeInPlace(t, s.ConfigPath, cfg)
			},
			wantTools: []string{"fake_pull"}, wantSkip: true,
		},
		{
			name:    "a SIGHUP with unchanged bytes",
			sighup:  true,
			wantLog: reloaded, wantCause: "cause=SIGHUP",
			wantTools: []string{"fake_pull"},
		},
	}
	for _, tt := range tests {
		verdict := "sends no list_changed"
		if tt.wantChange {
			verdict = "sends one list_changed and the new tool list"
		}
		t.Run(tt.name+" "+verdict, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cfg := serverConfig(t, dir, toolsPull)
			if tt.symlink {
				if err := os.Mkdir(filepath.Join(dir, "real"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join("real", "config.yaml"), filepath.Join(dir, "config.yaml")); err != nil {
					t.Fatal(err)
				}
			}
			s := startServerIn(t, dir, cfg)
			clients := []*mcpClient{s.Connect(t, "/mcp"), s.Connect(t, "/sse")}
			for _, c := range clients {
				if got, want := c.WrappedTools(t), []string{"fake_pull"}; !slices.Equal(got, want) {
					t.Fatalf("%s: tools before = %q, want %q", c.name, got, want)
				}
			}
			before := len(s.Log())

			if tt.edit != nil {
				tt.edit(t, s, cfg)
			}
			if tt.sighup {
				s.Signal(t, syscall.SIGHUP)
			}
			if tt.wantLog != "" {
				s.WaitLog(t, tt.wantLog, 1, eventTimeout)
			}
			switch {
			case tt.wantChange:
				expectOneListChanged(t, s, clients...)
			case tt.wantSkip:
				// The reload has run and found nothing: nothing rang the
				// registry, so no list_changed can follow.
				s.WaitLog(t, `msg="reload skipped"`, 1+strings.Count(s.Log()[:before], `msg="reload skipped"`), eventTimeout)
				for _, c := range clients {
					if n := len(c.ListChanged); n > 0 {
						t.Errorf("%s: got %d tools/list_changed, want none", c.name, n)
					}
				}
			default:
				expectNoListChanged(t, clients...)
			}

			log := s.Log()
			newLog := log[before:]
			switch lines := logLines(newLog, "msg=\"config re"); {
			case tt.wantLog == "" && len(lines) > 0:
				t.Errorf("log has %q, want no reload line", lines)
			case tt.wantLog == "":
				// A skipped reload logs nothing at all: only the SDK's own
				// (demoted) records may appear.
				for line := range strings.Lines(newLog) {
					if !strings.Contains(line, "component=mcp") && !strings.Contains(line, `level=DEBUG msg="reload skipped"`) {
						t.Errorf("log line %q after a no-op rewrite, want none", strings.TrimSpace(line))
					}
				}
			case tt.orWatchToo:
				// Whichever reload comes first makes the change; the other
				// finds nothing to do (and may or may not log).
				caused := logLines(newLog, tt.wantLog, tt.wantCause)
				if len(caused) != 1 || len(lines) > 2 || len(logLines(newLog, tt.wantLog)) != len(lines) {
					t.Errorf("reload lines = %q, want one %s with %s and at most one more with cause=file", lines, tt.wantLog, tt.wantCause)
				}
			case len(lines) != 1 || !strings.Contains(lines[0], tt.wantLog) || !strings.Contains(lines[0], tt.wantCause):
				t.Errorf("reload lines = %q, want one %s with %s", lines, tt.wantLog, tt.wantCause)
			}
			for _, c := range clients {
				if got := c.WrappedTools(t); !slices.Equal(got, tt.wantTools) {
					t.Errorf("%s: tools after = %q, want %q", c.name, got, tt.wantTools)
				}
			}
			if tt.wantSchemaFlag != "" {
				checkSchemaProperty(t, clients[0], "fake_pull", tt.wantSchemaFlag)
			}
			if slices.Contains(tt.wantTools, "fake_pull") {
				if res := clients[0].Call(t, "fake_pull", nil); res.IsError {
					t.Errorf("fake_pull after the reload is an error: %s", toolsettest.ResultText(t, res))
				}
			}

			if tt.wantLog == rejected {
				// Fixing the config then reloads it (valid → invalid → valid).
				writeInPlace(t, s.ConfigPath, withTools(cfg, toolsPullPush))
				s.WaitLog(t, reloaded, 1, eventTimeout)
				expectOneListChanged(t, s, clients...)
				for _, c := range clients {
					if got, want := c.WrappedTools(t), []string{"fake_pull", "fake_push"}; !slices.Equal(got, want) {
						t.Errorf("%s: tools after the fix = %q, want %q", c.name, got, want)
					}
				}
			}
		})
	}
}

// checkSchemaProperty fails unless tool's input schema has property.
func checkSchemaProperty(t *testing.T, c *mcpClient, tool, property string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	res, err := c.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if tl.Name != tool {
			continue
		}
		schema, _ := tl.InputSchema.(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		if _, ok := props[property]; !ok {
			t.Errorf("%s's schema properties = %v, want %q among them", tool, props, property)
		}
		return
	}
	t.Errorf("no tool %s", tool)
}

// callResult is a tool call's outcome, from a goroutine.
type callResult struct {
	res *mcp.CallToolResult
	err error
}

// startCall calls tool in the background; the result arrives on the
// channel.
func startCall(c *mcpClient, tool string, args map[string]any) <-chan callResult {
	done := make(chan callResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*eventTimeout)
		defer cancel()
		res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		done <- callResult{res, err}
	}()
	return done
}

func TestServeCallInFlightDuringReloadThatRemovesItsRule(t *testing.T) {
	slow(t, "a call in flight while a reload removes its rule")
	t.Parallel()
	dir := t.TempDir()
	cfg := serverConfig(t, dir, toolsPullWait)
	s := startServerIn(t, dir, cfg)
	c := s.Connect(t, "/mcp")

	release := filepath.Join(dir, "release")
	done := startCall(c, "fake_waitfor", map[string]any{"args": []string{release}})
	waitChild(t, s, fakecli, "waitfor", release)
	writeInPlace(t, s.ConfigPath, withTools(cfg, toolsPull))
	expectOneListChanged(t, s, c)
	if got, want := c.WrappedTools(t), []string{"fake_pull"}; !slices.Equal(got, want) {
		t.Errorf("tools after the reload = %q, want %q", got, want)
	}
	// The call is still running: only now may it end.
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	expectReleasedResult(t, s, done)

	// A new call to the removed rule is not served.
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	if res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "fake_waitfor", Arguments: map[string]any{"args": []string{release}}}); err == nil && !res.IsError {
		t.Errorf("a new call to the removed fake_waitfor succeeded, want an error")
	}
}

// expectReleasedResult waits (bounded) for a `fakecli waitfor` call's
// result and checks it is a clean run that printed "released".
func expectReleasedResult(t *testing.T, s *server, done <-chan callResult) {
	t.Helper()
	select {
	case r := <-done:
		if r.err != nil {
			t.Errorf("the call in flight failed: %v\n%s", r.err, s.Log())
			return
		}
		var out runOutput
		structured(t, r.res, &out)
		if r.res.IsError || out.ExitCode == nil || *out.ExitCode != 0 || out.Stdout != "released\n" {
			t.Errorf("the call in flight = isError %v, %+v; want exit_code 0 and stdout \"released\"", r.res.IsError, out)
		}
	case <-time.After(2 * eventTimeout):
		t.Fatalf("the call in flight did not return within %v:\n%s", 2*eventTimeout, s.Log())
	}
}

func TestServeSIGTERMLetsCallInFlightFinish(t *testing.T) {
	slow(t, "SIGTERM letting a call in flight finish")
	t.Parallel()
	for _, endpoint := range []string{"/mcp", "/sse"} {
		t.Run(fmt.Sprintf("over %s the client gets the result and the server exits 0", endpoint), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := startServerIn(t, dir, serverConfig(t, dir, toolsPullWait))
			c := s.Connect(t, endpoint)

			release := filepath.Join(dir, "release")
			done := startCall(c, "fake_waitfor", map[string]any{"args": []string{release}})
			waitChild(t, s, fakecli, "waitfor", release)
			s.Signal(t, syscall.SIGTERM)
			s.WaitLog(t, `msg=stopping`, 1, eventTimeout)
			// The server is stopping and the call still runs: end it now,
			// well within the grace period.
			if err := os.WriteFile(release, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			expectReleasedResult(t, s, done)
			if err := s.Wait(t, 2*eventTimeout); err != nil {
				t.Errorf("exit = %v, want status 0:\n%s", err, s.Log())
			}
		})
	}
}
