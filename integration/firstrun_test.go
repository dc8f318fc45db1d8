package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// Go 1.24 and later cache a `go run` binary in the build cache
// (GOCACHE/xx/<hash>-d/wraptool), which the cache cleaner removes: the
// stdio entry `up` prints must name the wraptool `go install` puts in
// GOBIN instead, and say to run that install first.
func TestUpUnderGoRunCacheNamesTheInstalledBinary(t *testing.T) {
	slow(t, "the stdio entry of a go run build")
	t.Parallel()
	dir := t.TempDir()
	cache := filepath.Join(dir, "gocache")
	exe := filepath.Join(cache, "10", strings.Repeat("ab", 32)+"-d", "wraptool")
	copyProgram(t, wraptoolBin, exe)
	gobin := filepath.Join(dir, "gobin")
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"GOCACHE names the cache", []string{"GOCACHE=" + cache, "GOBIN=" + gobin}},
		{"the cache entry's shape alone, as when go env -w set GOCACHE", []string{"GOBIN=" + gobin}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfgPath := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(cfgPath, []byte(serverConfig(t, dir, "")), 0o600); err != nil {
				t.Fatal(err)
			}
			out := startProgram(t, exe, append([]string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}, tc.env...), "--config", cfgPath, "up")
			stdout := waitStdout(t, out, "connect\"\n")
			want := `"command": "` + filepath.Join(gobin, "wraptool") + `"`
			if !strings.Contains(stdout, want) || strings.Contains(stdout, exe) {
				t.Errorf("stdio entry does not name %s (and not the cached %s):\n%s", want, exe, stdout)
			}
			if !strings.Contains(stdout, "run `go install ./cmd/wraptool` first") {
				t.Errorf("up does not say to run go install first:\n%s", stdout)
			}
		})
	}
}

// startProgram starts the wraptool binary at bin with args and exactly env,
// waits (bounded) until it serves or exits, stops it when the test ends
// (SIGTERM, then kill) and returns its stdout.
func startProgram(t *testing.T, bin string, env []string, args ...string) *logBuffer {
	t.Helper()
	stdout, stderr, exited := startBinary(t, bin, env, args...)
	select {
	case <-exited:
		t.Fatalf("%s %q exited:\n%s", bin, args, stderr)
	default:
	}
	return stdout
}

// A call that names no cwd, on a server with mcp.allowed_cwd_roots and no
// working_dir, runs in the first root: never in the folder the server was
// started from, which lies outside the roots.
func TestCallWithoutCwdRunsInTheFirstRoot(t *testing.T) {
	slow(t, "the default cwd under allowed_cwd_roots")
	t.Parallel()
	dir := t.TempDir()
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The server starts in the test's own folder (integration/), outside
	// the root serverConfig sets.
	s := startServerIn(t, dir, serverConfig(t, dir, toolsPullPush))
	c := s.Connect(t, "/mcp")
	res := c.Call(t, "fake_pull", map[string]any{})
	text := toolsettest.ResultText(t, res)
	if res.IsError {
		t.Fatalf("refused: %s", text)
	}
	var r toolsettest.Report
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		t.Fatalf("not fakecli's report: %q", text)
	}
	if r.Cwd != root {
		t.Errorf("the call ran in %q, want the first root %q", r.Cwd, root)
	}
}

// unknownToolCall calls name, which the server does not expose, and fails
// unless the answer is the tool error naming the discover and request
// tools (not a protocol error).
func unknownToolCall(t *testing.T, c *mcpClient, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("call %s: protocol error %v, want a tool error", name, err)
	}
	text := toolsettest.ResultText(t, res)
	if !res.IsError || !strings.HasPrefix(text, "UNKNOWN TOOL: ") ||
		!strings.Contains(text, "'wraptool_discover'") || !strings.Contains(text, "'wraptool_request_capability'") {
		t.Errorf("call %s: isError %v, text:\n%s\nwant the unknown-tool error naming wraptool_discover and wraptool_request_capability", name, res.IsError, text)
	}
}

// A tool the server does not expose (git_push, where only fake_pull and
// fake_push are) is answered, over the wire, with a tool error that says what to
// call next; the server's own tools still answer.
func TestUnknownToolSaysWhatToCall(t *testing.T) {
	slow(t, "the unknown-tool answer")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, toolsPullPush))
	c := s.Connect(t, "/mcp")
	unknownToolCall(t, c, "git_push")
	res := c.Call(t, "fake_pull", map[string]any{})
	if res.IsError {
		t.Fatalf("a known tool failed: %s", toolsettest.ResultText(t, res))
	}
}

// `check` speaks to the operator: a line with an option before the
// subcommand (`fake -c core.pager=sh commit`, where only `fake commit` has
// a rule) names the rule it came closest to, and the denial ends with the
// operator's next step instead of the assistant's request tool.
func TestCheckNamesTheClosestRuleAndTheOperatorsNextStep(t *testing.T) {
	slow(t, "check's operator wording")
	t.Parallel()
	dir, env := checkSetup(t)
	cfg := filepath.Join(dir, "config.yaml")
	stdout, stderr, code := runWraptool(t, env, "--config", cfg, "check", "--", "fake", "-c", "core.pager=sh", "commit")
	if code != 3 {
		t.Fatalf("exit status = %d, want 3 (stderr %q)", code, stderr)
	}
	want := "DENIED: 'fake -c core.pager=sh commit' is not permitted.\n\n" +
		"Policy: no rule matches; the closest is 'fake commit', whose subcommand must come first (no rule allows '-c' before it).\n\n" +
		"Next step: if the assistant asked for this, approve its request (wraptool requests list); else add an allow rule for 'fake' to tools.fake.allow.\n"
	if stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
	}
	if strings.Contains(stdout, "wraptool_request_capability") {
		t.Errorf("check tells the operator to call the assistant's tool:\n%s", stdout)
	}
}

// Enabling admin: on a running server: the reload creates the missing admin
// token file as start-up does (before, the reload was rejected), says that
// the new admin.listen needs a restart, and the rest of the reload takes
// effect. A config broken and then fixed ends with "config accepted".
func TestReloadEnablingAdminAndAcceptingAFix(t *testing.T) {
	slow(t, "reloads that enable admin: and fix a rejection")
	t.Parallel()
	dir := t.TempDir()
	cfg := serverConfig(t, dir, toolsPullPush)
	s := startServerIn(t, dir, cfg)
	adminToken := filepath.Join(dir, "admin-token")
	withAdmin := cfg + fmt.Sprintf("admin:\n  listen: 127.0.0.1:%d\n  auth_token_file: %s\n", freePort(t), adminToken)
	if err := os.WriteFile(s.ConfigPath, []byte(withAdmin), 0o600); err != nil {
		t.Fatal(err)
	}
	log := s.WaitLog(t, `msg="config reloaded"`, 1, eventTimeout)
	if strings.Contains(log, `msg="config rejected"`) {
		t.Errorf("enabling admin: was rejected:\n%s", log)
	}
	info, err := os.Stat(adminToken)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("admin token file: %v (mode %v), want one created with mode 0600", err, info)
	}
	if !strings.Contains(log, `msg="listener settings changed; they take effect after a restart"`) || !strings.Contains(log, `msg="created token file" component=loader path=`+adminToken) {
		t.Errorf("the reload does not say the admin token was created and admin.listen needs a restart:\n%s", log)
	}

	// Broken, then fixed: the last word is not the ERROR.
	if err := os.WriteFile(s.ConfigPath, []byte(withAdmin+"bogus: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.WaitLog(t, `msg="config rejected"`, 1, eventTimeout)
	if err := os.WriteFile(s.ConfigPath, []byte(withAdmin), 0o600); err != nil {
		t.Fatal(err)
	}
	s.WaitLog(t, `msg="config accepted"`, 1, eventTimeout)
}
