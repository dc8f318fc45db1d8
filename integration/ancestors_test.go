package integration

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// nobodyUID is the uid of the attacker: another local user.
const nobodyUID = 65534

// copyProgram copies the executable src to dst (mode 0755), making dst's
// folders 0755 so that other users may reach it.
func copyProgram(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// chmodT is os.Chmod, failing the test on error.
func chmodT(t *testing.T, path string, mode fs.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// validateFails runs `config validate` on cfg written to dir/name and
// returns its stderr, failing unless it exits 1 naming each of wants.
func validateFails(t *testing.T, dir, name, cfg string, wants ...string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runWraptool(t, nil, "config", "validate", path)
	if code != 1 {
		t.Fatalf("config validate %s exited %d, want 1 (stderr %q)", path, code, stderr)
	}
	for _, want := range append([]string{path + ":"}, wants...) {
		if !strings.Contains(stderr, want) {
			t.Errorf("config validate: stderr %q\nlacks %q", stderr, want)
		}
	}
	return stderr
}

// TestAncestorSwapIsRefused is the attack: another user (nobody) renames a
// subfolder of a world-writable folder above a tool's binary and drops its
// own program where the binary was, so that the next call would run it as
// the operator with the tool's secrets. Such a layout is refused at load;
// a folder made world-writable while the server runs is caught just before
// the next start, and the dropped program never runs.
func TestAncestorSwapIsRefused(t *testing.T) {
	slow(t, "another user swapping a folder above a tool's binary")
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("skipped: the swap is made by another user (uid 65534), which needs root to arrange")
	}
	dir := t.TempDir()
	// nobody must reach dir to attack below it; nothing here is
	// writable by it until the test opens "tools".
	chmodT(t, filepath.Dir(dir), 0o755)
	chmodT(t, dir, 0o755)
	tools := filepath.Join(dir, "tools")
	binary := filepath.Join(tools, "sub", "fake")
	copyProgram(t, fakecli, binary)
	cfg := serverConfig(t, dir, strings.ReplaceAll(toolsPull, "$FAKECLI", binary))

	// At load: the layout the attack needs is refused.
	chmodT(t, tools, 0o777)
	validateFails(t, dir, "open.yaml", cfg, "tools.fake.binary:", binary+" is under "+tools+", which group or others may write",
		"fix with: chmod go-w "+tools)
	chmodT(t, tools, 0o755)

	s := startServerIn(t, dir, cfg)
	c := s.Connect(t, "/mcp")
	if res := c.Call(t, "fake_pull", map[string]any{"args": []string{"origin"}}); res.IsError {
		t.Fatalf("the call in the safe layout failed: %s", toolsettest.ResultText(t, res))
	}

	// While it serves, the folder above the binary becomes world-writable,
	// and nobody swaps the subfolder for its own.
	chmodT(t, tools, 0o777)
	// Where the dropped program would leave its mark: a folder it could
	// write had it run.
	drop := filepath.Join(dir, "drop")
	if err := os.Mkdir(drop, 0o700); err != nil {
		t.Fatal(err)
	}
	chmodT(t, drop, 0o777)
	pwned := filepath.Join(drop, "PWNED")
	swap := "mv sub sub.old && mkdir sub && printf '#!/bin/sh\\ntouch " + pwned + "\\n' > sub/fake && chmod 755 sub/fake"
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	attacker := exec.CommandContext(ctx, "/bin/sh", "-c", swap)
	attacker.Dir = tools
	attacker.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyUID, Gid: nobodyUID}}
	if out, err := attacker.CombinedOutput(); err != nil {
		t.Fatalf("the swap as uid %d failed: %v\n%s", nobodyUID, err, out)
	}

	res := c.Call(t, "fake_pull", map[string]any{"args": []string{"origin"}})
	text := toolsettest.ResultText(t, res)
	if _, err := os.Stat(pwned); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dropped program ran: %s exists (%v)", pwned, err)
	}
	if !res.IsError {
		t.Fatalf("the call after the swap succeeded: %q", text)
	}
	for _, want := range []string{"refused to start " + binary, "is under " + tools + ", which group or others may write", "chmod go-w " + tools} {
		if !strings.Contains(text, want) {
			t.Errorf("the refused call says %q\nwant it to hold %q", text, want)
		}
	}
	t.Logf("the call after the swap: %s", text)
}

// TestUpstreamAndHookProgramsAreChecked shows the same check on an
// upstream's command and script argument and on the hook's command: refused
// at load when a folder above them is world-writable, and, when a folder
// becomes so while the server runs, refused at the next start: the
// upstream's restart fails with the reason (and backs off), the hook's
// failure is logged, and neither program runs.
func TestUpstreamAndHookProgramsAreChecked(t *testing.T) {
	slow(t, "the ownership check on upstream and hook programs")
	t.Parallel()
	dir := t.TempDir()
	up := filepath.Join(dir, "up")
	upstream := filepath.Join(up, "sub", "fakeupstream")
	copyProgram(t, fakeupstream, upstream)
	scripts := filepath.Join(dir, "scripts")
	script := filepath.Join(scripts, "sub", "server.js")
	copyProgram(t, "/dev/null", script)
	hooks := filepath.Join(dir, "hooks")
	hook := filepath.Join(hooks, "sub", "notify")
	copyProgram(t, fakecli, hook)
	rec := filepath.Join(dir, "rec")
	if err := os.Mkdir(rec, 0o700); err != nil {
		t.Fatal(err)
	}
	servers := "  fake:\n    command: " + upstream + "\n    args: [-marks, $DIR/work/marks]\n    allow: [{tool: crash}, {tool: echo}]\n"
	withScript := "  js:\n    command: /bin/sh\n    args: [sub/server.js]\n    working_dir: " + scripts + "\n"

	// At load.
	chmodT(t, up, 0o777)
	validateFails(t, dir, "up.yaml", serversConfig(t, dir, servers), "mcp_servers.fake.command:", upstream+" is under "+up, "chmod go-w "+up)
	chmodT(t, up, 0o755)
	chmodT(t, scripts, 0o777)
	validateFails(t, dir, "script.yaml", serversConfig(t, dir, withScript), "mcp_servers.js.args[0]:", script+" is under "+scripts)
	chmodT(t, scripts, 0o755)
	chmodT(t, hooks, 0o777)
	validateFails(t, dir, "hook.yaml", hookConfig(t, dir, hook, "record", rec, "{id}"), "mcp.on_request[0]:", hook+" is under "+hooks)
	chmodT(t, hooks, 0o755)

	// At start.
	cfg := strings.Replace(serversConfig(t, dir, servers), "mcp:\n", "mcp:\n  on_request: ["+hook+", record, "+rec+", \"{id}\"]\n", 1)
	cfg = strings.Replace(cfg, "mcp_servers:\n", "tools:\n"+strings.ReplaceAll(toolsPull, "$FAKECLI", fakecli)+"mcp_servers:\n", 1)
	s := startServerIn(t, dir, cfg)
	c := s.Connect(t, "/mcp")
	first := request(t, c, askFor("fake", []string{"push"}, nil, "the hook runs in the safe layout", ""))
	waitHookRecord(t, s, rec, first)
	s.WaitLog(t, `msg="upstream server ready"`, 1, eventTimeout)

	chmodT(t, up, 0o777)
	chmodT(t, hooks, 0o777)
	c.Call(t, "fake_crash", nil) // the restart that follows is checked
	log := s.WaitLog(t, `msg="upstream server failed; its tools are withdrawn until it restarts"`, 2, eventTimeout)
	line := logLines(log, "upstream server failed")[1]
	for _, want := range []string{"refused to start " + upstream, "is under " + up, "chmod go-w " + up, "restart_in="} {
		if !strings.Contains(line, want) {
			t.Errorf("the failed restart's line %q\nlacks %q", line, want)
		}
	}
	if n := strings.Count(log, `msg="upstream server ready"`); n != 1 {
		t.Errorf("the upstream was ready %d times, want once: the restart must not run it", n)
	}

	second := request(t, c, askFor("fake", []string{"fetch"}, nil, "the hook is refused now", ""))
	log = s.WaitLog(t, `msg="on_request hook failed"`, 1, eventTimeout)
	hline := logLineWith(log, `msg="on_request hook failed"`, "id="+second)
	for _, want := range []string{"refused to start " + hook, "is under " + hooks, "chmod go-w " + hooks} {
		if !strings.Contains(hline, want) {
			t.Errorf("the hook's failure line %q\nlacks %q", hline, want)
		}
	}
	if got := hookRecords(t, rec); len(got) != 1 {
		t.Errorf("the hook ran %d times, want once (the refused run must not start): %+v", len(got), got)
	}
}
