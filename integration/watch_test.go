package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// watchPrompt is what `requests watch` asks in a terminal.
const watchPrompt = "[o]nce  [h]our  [d]eny  [s]kip, or type apply⏎"

// watchKeyGuard is how long after a request is shown watch ignores keys.
const watchKeyGuard = time.Second

// watchProcess is a running `wraptool requests watch`, in a pseudo-terminal
// (under script(1)) or on plain pipes.
type watchProcess struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *watchOutput
	stderr *logBuffer
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

// watchOutput collects a process's stdout and rings a doorbell on each
// write, so that a test waits on output without polling.
type watchOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
	// ring: one slot; the writer rings without blocking, the waiting test
	// receives and looks at the whole output again.
	ring chan struct{}
}

func (o *watchOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	o.buf.Write(p)
	o.mu.Unlock()
	select {
	case o.ring <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (o *watchOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// shellQuote quotes argv for sh, which script(1) runs its command with.
func shellQuote(argv ...string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// startWatchProcess starts `wraptool --config <s's> requests watch args…`:
// in a pseudo-terminal when pty (script -qfec, with a pipe as script's
// stdin), else on pipes. It is interrupted, then killed, when the test
// ends.
func startWatchProcess(t *testing.T, s *server, pty bool, args ...string) *watchProcess {
	t.Helper()
	return startOperatorProcess(t, s, pty, append([]string{"requests", "watch"}, args...)...)
}

// startOperatorProcess runs the wraptool command args on s's config, in a
// pseudo-terminal when pty is set, as an operator at a terminal would.
func startOperatorProcess(t *testing.T, s *server, pty bool, args ...string) *watchProcess {
	t.Helper()
	argv := append([]string{wraptoolBin, "--config", s.ConfigPath}, args...)
	if pty {
		script, err := exec.LookPath("script")
		if err != nil {
			msg := "script(1) is not installed (Debian: the bsdutils package, from util-linux): it gives requests watch a pseudo-terminal"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg + " (CI=true: .ci/run should have installed it)")
			}
			t.Skip(msg)
		}
		argv = []string{script, "-qfec", shellQuote(argv...), "/dev/null"}
	}
	w := &watchProcess{cmd: exec.Command(argv[0], argv[1:]...), out: &watchOutput{ring: make(chan struct{}, 1)},
		stderr: &logBuffer{}, exited: make(chan struct{})}
	w.cmd.Env = []string{"HOME=" + filepath.Join(s.Dir, "home"), "PATH=" + os.Getenv("PATH")}
	stdin, err := w.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	w.stdin = stdin
	w.cmd.Stdout, w.cmd.Stderr = w.out, w.stderr
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.err = w.cmd.Wait(); close(w.exited) }()
	t.Cleanup(func() {
		select {
		case <-w.exited:
			return
		default:
		}
		w.cmd.Process.Signal(syscall.SIGTERM)
		timer := time.NewTimer(10 * time.Second)
		defer timer.Stop()
		select {
		case <-w.exited:
		case <-timer.C:
			w.cmd.Process.Kill()
			<-w.exited
		}
		stdin.Close()
	})
	return w
}

// waitFor waits (bounded) until stdout holds n occurrences of substr, and
// returns it.
func (w *watchProcess) waitFor(t *testing.T, substr string, n int) string {
	t.Helper()
	timer := time.NewTimer(eventTimeout)
	defer timer.Stop()
	for {
		out := w.out.String()
		if strings.Count(out, substr) >= n {
			return out
		}
		select {
		case <-w.out.ring:
		case <-w.exited:
			if out := w.out.String(); strings.Count(out, substr) >= n {
				return out
			}
			t.Fatalf("requests watch exited (%v) before printing %q %d times:\n%s\nstderr:\n%s", w.err, substr, n, w.out.String(), w.stderr)
		case <-timer.C:
			t.Fatalf("requests watch did not print %q %d times within %v:\n%s\nstderr:\n%s", substr, n, eventTimeout, w.out.String(), w.stderr)
		}
	}
}

// lines waits (bounded) until stdout holds n complete lines, and returns
// them.
func (w *watchProcess) lines(t *testing.T, n int) []string {
	t.Helper()
	out := w.waitFor(t, "\n", n)
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// typeKeys writes keys to the process's stdin (through script, to the
// terminal).
func (w *watchProcess) typeKeys(t *testing.T, keys string) {
	t.Helper()
	if _, err := io.WriteString(w.stdin, keys); err != nil {
		t.Fatalf("type %q: %v", keys, err)
	}
}

// exitCode waits (bounded) for the process to end and returns its status.
func (w *watchProcess) exitCode(t *testing.T) int {
	t.Helper()
	timer := time.NewTimer(eventTimeout)
	defer timer.Stop()
	select {
	case <-w.exited:
	case <-timer.C:
		t.Fatalf("requests watch still runs %v after it was told to end:\n%s", eventTimeout, w.out.String())
	}
	if w.err == nil {
		return 0
	}
	var exitErr *exec.ExitError
	if !errors.As(w.err, &exitErr) {
		t.Fatalf("requests watch: %v", w.err)
	}
	return exitErr.ExitCode()
}

// watchDecision is the decision `requests list --json` shows for id.
func watchDecision(t *testing.T, s *server, id string) map[string]any {
	t.Helper()
	out, stderr, code := operatorCLI(t, s)("requests", "list", "--status", "all", "--json")
	if code != 0 {
		t.Fatalf("requests list --json: exit %d, %s", code, stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("requests list --json line %q: %v", line, err)
		}
		if m["id"] == id {
			return m
		}
	}
	t.Fatalf("request %s is not listed:\n%s", id, out)
	return nil
}

// In a terminal, watch shows each request with its effect last above the
// prompt, ignores a key typed in the request's first second, and records
// what the operator chose with decided_by "watch": here a once-grant the
// server then honours. A request line that something else wrote into the
// log cannot repaint the terminal. Ctrl-C ends it with status 0.
func TestWatchInATerminal(t *testing.T) {
	slow(t, "requests watch in a terminal")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, grantConfig))
	c := s.Connect(t, "/mcp")
	w := startWatchProcess(t, s, true)
	w.waitFor(t, "waiting for requests", 1)

	// A line written into the log by anything but wraptool: the request
	// tool refuses such text, the log's readers must still escape it.
	hostile := `{"id":"req_0000beef","created_at":"2025-01-02T03:04:05Z","tool":"fake","subcommand":["status"],"flags":["--verbose"],` +
		`"rationale":"fine\u001b[2J\u001b[H\u001b]0;pwned\u0007\u202eapproved req_00000000 once","enables":"","status":"pending"}` + "\n"
	f, err := os.OpenFile(s.RequestLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(hostile)
	f.Close()
	w.waitFor(t, watchPrompt, 1)
	time.Sleep(watchKeyGuard + 300*time.Millisecond) // the documented first second, measured from the prompt
	w.typeKeys(t, "s")
	w.waitFor(t, "skipped req_0000beef", 1)

	id := request(t, c, askFor("fake", []string{"status"}, []string{"--depth"}, "look at three commits,\nnot the whole history", ""))
	w.waitFor(t, watchPrompt, 2)
	seen := time.Now()
	// Within the first second: ignored. Were it taken, watch would ask
	// for a reason, the o below would be its text, and nothing would be
	// approved.
	w.typeKeys(t, "d")
	if late := time.Since(seen); late > watchKeyGuard/2 {
		t.Logf("the key meant to be ignored was typed %v after the prompt was seen", late)
	}
	time.Sleep(time.Until(seen.Add(watchKeyGuard + 300*time.Millisecond))) // past the first second
	w.typeKeys(t, "o")
	out := w.waitFor(t, "approved "+id+" once (within 24h)", 1)

	// The request, then its effect, last, just above the prompt.
	shown := out[strings.LastIndex(out, "Request "+id):]
	for _, want := range []string{"asks for:  fake status --depth", "rationale: look at three commits, not the whole history",
		"Approving grants fake status, as the rule will stand:", "--depth", "plus -h and --help, each run alone\r\n" + watchPrompt + " o\r\n"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the request as shown lacks %q:\n%s", want, shown)
		}
	}
	if strings.Contains(shown, "reason") {
		t.Errorf("the d typed in the first second was taken:\n%s", shown)
	}
	if strings.ContainsAny(out, "\x1b\x07\u202e") {
		t.Errorf("a raw control character from the log reached the terminal:\n%q", out)
	}
	if !strings.Contains(out, `rationale: fine\x1b[2J\x1b[H\x1b]0;pwned\a\u202eapproved req_00000000 once`) {
		t.Errorf("the hostile rationale is not shown escaped:\n%s", out)
	}

	d := watchDecision(t, s, id)
	grant, _ := d["grant"].(map[string]any)
	if d["status"] != "approved" || d["decided_by"] != "watch" || d["applied"] != false || grant == nil || grant["once"] != true {
		t.Errorf("the decision watch recorded: %v", d)
	}
	if d := watchDecision(t, s, "req_0000beef"); d["status"] != "pending" {
		t.Errorf("the skipped request is %v, want pending", d["status"])
	}
	waitListChanged(t, s, c, "the once-grant recorded by watch came into force")
	if ran, text := runs(t, c, "fake_status", map[string]any{"depth": "3"}); !ran {
		t.Errorf("the call the operator granted once in watch did not run: %s", text)
	}

	w.typeKeys(t, "\x03")
	if code := w.exitCode(t); code != 0 {
		t.Errorf("exit status %d after Ctrl-C, want 0:\n%s", code, w.stderr)
	}
}

// With --json watch prints only JSON lines: the pending requests, then each
// one filed while it runs, also after the operator rotated the log (renamed
// it away; the server starts a new one). SIGINT ends it with status 0.
func TestWatchJSONFollowsTheLog(t *testing.T) {
	slow(t, "requests watch --json following the log")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, grantConfig))
	c := s.Connect(t, "/mcp")
	before := request(t, c, askFor("fake", []string{"status"}, []string{"--depth"}, "filed before", ""))
	w := startWatchProcess(t, s, false, "--json")
	w.lines(t, 1)

	during := request(t, c, askFor("fake", []string{"status"}, []string{"--author"}, "filed while it runs", ""))
	w.lines(t, 2)
	if err := os.Rename(s.RequestLog, s.RequestLog+".1"); err != nil {
		t.Fatal(err)
	}
	rotated := request(t, c, askFor("fake", []string{"status"}, []string{"--since"}, "filed after the rotation", ""))
	w.lines(t, 3)

	w.cmd.Process.Signal(syscall.SIGINT)
	if code := w.exitCode(t); code != 0 {
		t.Errorf("exit status %d after SIGINT, want 0:\n%s", code, w.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(w.out.String(), "\n"), "\n")
	var ids []string
	for _, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdout line %q is not JSON: %v", line, err)
		}
		ids = append(ids, fmt.Sprint(m["id"]))
		if m["status"] != "pending" {
			t.Errorf("a new request printed as %v", m["status"])
		}
	}
	if want := []string{before, during, rotated}; strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Errorf("printed %q, want %q, each once", ids, want)
	}
}
