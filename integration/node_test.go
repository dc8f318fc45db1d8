package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNodeClient runs the list/call/list_changed flow with a client that is
// not ours: the official TypeScript SDK (integration/node/client.mjs), over
// Streamable HTTP at /mcp and legacy SSE at /sse. The script lists and calls,
// prints "ready", and the test then rewrites the config; both sessions must
// see exactly one notifications/tools/list_changed and the new tool list.
//
// It needs node (>= 18) and integration/node/node_modules; when the modules
// are missing it runs `npm ci --omit=dev` there. Without node it skips, except
// under CI=true, where .ci/run installs node and a skip would hide the test.
func TestNodeClient(t *testing.T) {
	slow(t, "the TypeScript SDK client over HTTP")
	t.Parallel()
	node, dir := nodeSetup(t)

	const tools = "  fake:\n    binary: $FAKECLI\n    allow:\n      - subcommand: [pull]\n"
	srvDir := t.TempDir()
	cfg := serverConfig(t, srvDir, tools)
	s := startServerIn(t, srvDir, cfg)
	if s.Token == "" {
		t.Fatal("the server created no MCP token; the test needs one to check the 401")
	}

	ctx, cancel := context.WithTimeout(t.Context(), nodeRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs",
		"--url", s.URL, "--tool", "fake_pull", "--args", "origin",
		"--wait-ms", strconv.Itoa(int(nodeNotifyWait/time.Millisecond)))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WRAPTOOL_TOKEN="+s.Token)
	events, exited, stderr := startNodeEvents(t, ctx, cancel, cmd)

	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format+"\n--- node stderr:\n%s\n--- server log:\n%s", append(args, stderr.String(), s.Log())...)
	}
	var seen []nodeEvent
	// next returns the next event, failing on an error event, the end of the
	// output, or the deadline.
	next := func() nodeEvent {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				fail("node client ended its output early; events so far: %+v", seen)
			}
			if ev.Event == "error" || ev.Event == "unparsed" {
				fail("node client reported %s (at %q): %s", ev.Event, ev.Where, ev.Message)
			}
			seen = append(seen, ev)
			return ev
		case <-ctx.Done():
			fail("node client gave no further output within %v; events so far: %+v", nodeRunTimeout, seen)
		}
		return nodeEvent{}
	}
	// Before the reload: the 401, then list and call on each transport.
	ev := next()
	if ev.Event != "unauthorized" || ev.Status != 401 {
		fail("first event %+v, want an unauthorized connect with status 401", ev)
	}
	for _, transport := range []string{"sse", "streamable"} {
		ev = next()
		if ev.Event != "tools" || ev.Transport != transport || ev.Phase != "before" {
			fail("event %+v, want the %s tool list", ev, transport)
		}
		if !slices.Contains(ev.Names, "fake_pull") || !slices.Contains(ev.Names, "wraptool_request_capability") || slices.Contains(ev.Names, "fake_push") {
			fail("%s tools %q, want fake_pull and wraptool_request_capability and no fake_push", transport, ev.Names)
		}
		ev = next()
		if ev.Event != "call" || ev.Transport != transport {
			fail("event %+v, want the %s call", ev, transport)
		}
		nodeCheckCall(t, ev, fail)
	}
	if ev = next(); ev.Event != "ready" {
		fail("event %+v, want ready", ev)
	}

	// Reload by an in-place write that adds a rule.
	if err := os.WriteFile(s.ConfigPath, []byte(cfg+"      - subcommand: [push]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for range 2 {
		ev = next()
		if ev.Event != "list_changed" {
			fail("event %+v, want list_changed", ev)
		}
		counts[ev.Transport] = ev.Count
	}
	if counts["streamable"] != 1 || counts["sse"] != 1 {
		fail("tools/list_changed notifications seen per session %v, want exactly 1 on streamable and on sse", counts)
	}
	ev = next()
	if ev.Event != "tools" || ev.Phase != "after" {
		fail("event %+v, want the tool list after the reload", ev)
	}
	for _, want := range []string{"fake_pull", "fake_push", "wraptool_request_capability"} {
		if !slices.Contains(ev.Names, want) {
			fail("tools after the reload %q, want %s among them", ev.Names, want)
		}
	}
	if ev = next(); ev.Event != "done" {
		fail("event %+v, want done", ev)
	}
	s.WaitLog(t, "config reloaded", 1, 10*time.Second)

	select {
	case ev, ok := <-events:
		if ok {
			fail("node client printed %+v after done", ev)
		}
	case <-ctx.Done():
		fail("node client did not end its output after done")
	}
	select {
	case err := <-exited:
		if err != nil {
			fail("node client exited with %v", err)
		}
	case <-ctx.Done():
		fail("node client did not exit after done")
	}
}

const (
	// nodeRunTimeout bounds the whole node client run.
	nodeRunTimeout = 2 * time.Minute
	// nodeNotifyWait bounds the client's wait for list_changed.
	nodeNotifyWait = 20 * time.Second
	// nodeInstallTimeout bounds `npm ci`.
	nodeInstallTimeout = 5 * time.Minute
	// nodeMinMajor is the oldest Node.js the TypeScript SDK supports.
	nodeMinMajor = 18
)

// nodeEvent is one JSON line of client.mjs.
type nodeEvent struct {
	Event             string         `json:"event"`
	Transport         string         `json:"transport"`
	Phase             string         `json:"phase"`
	Names             []string       `json:"names"`
	Tool              string         `json:"tool"`
	IsError           bool           `json:"isError"`
	Text              string         `json:"text"`
	ContentItems      int            `json:"contentItems"`
	StructuredContent map[string]any `json:"structuredContent"`
	Count             int            `json:"count"`
	Status            int            `json:"status"`
	Where             string         `json:"where"`
	Message           string         `json:"message"`
}

// nodeCheckCall checks a fake_pull call with args [origin]: one text item
// holding fakecli's report, and the structured result of a run.
func nodeCheckCall(t *testing.T, ev nodeEvent, fail func(string, ...any)) {
	t.Helper()
	if ev.IsError || ev.ContentItems != 1 {
		fail("%s call: isError %v with %d content items, want a success with one: %+v", ev.Transport, ev.IsError, ev.ContentItems, ev)
	}
	sc := ev.StructuredContent
	if code, ok := sc["exit_code"].(float64); !ok || code != 0 {
		fail("%s call: structuredContent %v, want exit_code 0", ev.Transport, sc)
	}
	for _, key := range []string{"stdout", "stderr", "duration_ms", "truncated"} {
		if _, ok := sc[key]; !ok {
			fail("%s call: structuredContent %v lacks %q", ev.Transport, sc, key)
		}
	}
	stdout, _ := sc["stdout"].(string)
	if ev.Text != stdout {
		fail("%s call: text %q, want stdout %q", ev.Transport, ev.Text, stdout)
	}
	var report struct{ Argv []string }
	if err := json.Unmarshal([]byte(stdout), &report); err != nil {
		fail("%s call: stdout is not fakecli's report: %v: %q", ev.Transport, err, stdout)
	}
	if len(report.Argv) != 3 || report.Argv[0] != fakecli || report.Argv[1] != "pull" || report.Argv[2] != "origin" {
		fail("%s call ran %q, want [%s pull origin]", ev.Transport, report.Argv, fakecli)
	}
}

// nodeSetup finds node and makes sure integration/node has the modules the
// tests use (nodeRequired), running `npm ci --omit=dev` when any is missing:
// checking one package alone would miss a lock that gained a dependency since
// the last install. It skips (fails under CI=true) when that cannot be done,
// and returns node's path and the folder.
func nodeSetup(t *testing.T) (node, dir string) {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...) + "; the Node.js tests need Node.js >= 18 and npm (`cd integration/node && npm ci`)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: .ci/run should have installed them)")
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable("node is not on PATH")
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		unavailable("node --version: %v", err)
	}
	version := strings.TrimSpace(string(out))
	major, _, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	if n, err := strconv.Atoi(major); err != nil || n < nodeMinMajor {
		unavailable("node %s is too old", version)
	}
	dir, err = filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	missing := nodeMissing(dir, nodeRequired...)
	if len(missing) == 0 {
		return node, dir
	}
	if err := npmCI(t.Context(), dir, "--omit=dev"); err != nil {
		unavailable("integration/node/node_modules lacks %s: %v", strings.Join(missing, ", "), err)
	}
	if missing := nodeMissing(dir, nodeRequired...); len(missing) > 0 {
		unavailable("npm ci in integration/node did not install %s", strings.Join(missing, ", "))
	}
	return node, dir
}

// nodeRequired lists the packages (regular dependencies, so `npm ci
// --omit=dev` installs them) that the Node.js tests load: the SDK for
// client.mjs, and server-everything as an upstream MCP server.
var nodeRequired = []string{"@modelcontextprotocol/sdk", "@modelcontextprotocol/server-everything"}

// nodeMissing returns those of pkgs that have no package.json under
// dir/node_modules, the cheapest sign that an install is needed.
func nodeMissing(dir string, pkgs ...string) []string {
	var missing []string
	for _, pkg := range pkgs {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json")); err != nil {
			missing = append(missing, pkg)
		}
	}
	return missing
}

// npmCI runs `npm ci` in dir with extra flags, bounded by
// nodeInstallTimeout, so a test can install integration/node's locked
// packages itself instead of asking the developer to; its error carries
// npm's output.
func npmCI(ctx context.Context, dir string, flags ...string) error {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return errors.New("npm is not on PATH")
	}
	ctx, cancel := context.WithTimeout(ctx, nodeInstallTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, append([]string{"ci", "--no-audit", "--no-fund"}, flags...)...)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = errors.Join(err, ctx.Err())
		}
		return fmt.Errorf("npm ci %s in integration/node: %w\n%s", strings.Join(flags, " "), err, output.String())
	}
	return nil
}

// everythingCommand returns the argv that starts the reference MCP server
// @modelcontextprotocol/server-everything over stdio with node, for tests
// that need a third-party upstream: its package.json's bin names the entry
// point, whose first argument picks the transport ("stdio", the default,
// written out so a changed default cannot switch it to HTTP). Like
// nodeSetup, it skips when node or the modules are unavailable.
func everythingCommand(t *testing.T) []string {
	t.Helper()
	node, dir := nodeSetup(t)
	entry, err := packageBin(dir, "@modelcontextprotocol/server-everything", "mcp-server-everything")
	if err != nil {
		t.Fatal(err)
	}
	return []string{node, entry, "stdio"}
}

// packageBin returns the absolute path of the script that an installed
// package's package.json names as its command name in "bin", so tests run
// it with the node they checked rather than through a node_modules/.bin
// shim and its #! line.
func packageBin(dir, pkg, name string) (string, error) {
	pkgDir := filepath.Join(dir, "node_modules", filepath.FromSlash(pkg))
	data, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		return "", err
	}
	var manifest struct {
		Bin json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(data, &manifest); err != nil {
		return "", fmt.Errorf("%s's package.json: %w", pkg, err)
	}
	// bin is either one path (the command is the package's name) or a map
	// from command name to path.
	var entry string
	if err := json.Unmarshal(manifest.Bin, &entry); err != nil {
		var bins map[string]string
		if err := json.Unmarshal(manifest.Bin, &bins); err != nil {
			return "", fmt.Errorf("%s's package.json bin %s: %w", pkg, manifest.Bin, err)
		}
		entry = bins[name]
	}
	if entry == "" {
		return "", fmt.Errorf("%s's package.json bin %s names no %s", pkg, manifest.Bin, name)
	}
	entry = filepath.Join(pkgDir, filepath.FromSlash(entry))
	if _, err := os.Stat(entry); err != nil {
		return "", fmt.Errorf("%s's %s: %w", pkg, name, err)
	}
	return entry, nil
}

// startNodeEvents starts cmd, a Node.js script made with
// exec.CommandContext(ctx, …) that prints one JSON event per line, in a
// process group of its own that ctx's end (cancel) kills whole, so nothing
// it started holds its pipes open. One goroutine reads the events, then
// reaps the process (Wait only after the last read): exited yields Wait's
// result once, then is closed. When the test ends the process is killed
// and waited for, bounded.
func startNodeEvents(t *testing.T, ctx context.Context, cancel context.CancelFunc, cmd *exec.Cmd) (<-chan nodeEvent, <-chan error, *logBuffer) {
	t.Helper()
	cmd.WaitDelay = 5 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stderr := &logBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	events := make(chan nodeEvent)
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	read:
		for sc.Scan() {
			var ev nodeEvent
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				ev = nodeEvent{Event: "unparsed", Message: sc.Text()}
			}
			select {
			case events <- ev:
			case <-ctx.Done():
				break read
			}
		}
		close(events)
		exited <- cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			t.Errorf("node client did not exit within 15s of being killed")
		}
	})
	return events, exited, stderr
}

// nodeReader reads a node client's events in order. fail and next end the
// test with the client's stderr and the log of every server it met (a
// restart test starts more than one), so a failure says what both sides
// saw.
type nodeReader struct {
	t      *testing.T
	ctx    context.Context
	events <-chan nodeEvent
	stderr *logBuffer
	// servers are the servers the client has met so far, oldest first.
	servers []*server
}

// fail ends the test with format, the client's stderr and the servers'
// logs.
func (n *nodeReader) fail(format string, args ...any) {
	n.t.Helper()
	var log strings.Builder
	for i, srv := range n.servers {
		log.WriteString("--- server log " + strconv.Itoa(i+1) + ":\n" + srv.Log())
	}
	n.t.Fatalf(format+"\n--- node stderr:\n%s\n%s", append(args, n.stderr.String(), log.String())...)
}

// next is the client's next event, which must be want, within the
// client's context.
func (n *nodeReader) next(want string) nodeEvent {
	n.t.Helper()
	select {
	case ev, ok := <-n.events:
		if !ok {
			n.fail("node client ended its output before %s", want)
		}
		if ev.Event != want {
			n.fail("node client printed %+v, want %s", ev, want)
		}
		return ev
	case <-n.ctx.Done():
		n.fail("no %s from the node client within %v", want, nodeRunTimeout)
	}
	return nodeEvent{}
}
