package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// auditConfig wraps the fake CLI with a redacted --token, a patterned
// --name, a 1 s timeout for sleep, and a deny rule.
const auditConfig = `  fake:
    binary: $FAKECLI
    timeout: 1s
    allow:
      - subcommand: [status]
        flags: ["--verbose", "--token", "--name"]
        flag_constraints:
          "--token": {type: string, redact: true}
          "--name": {pattern: "[a-z]+"}
      - subcommand: [sleep]
        arg_constraints: {positional_max: 1}
    deny:
      - subcommand: [secret]
`

// auditLine is an audit-log line, call or policy.
type auditLine struct {
	Event        string
	Time         time.Time
	Session      string
	Client       string
	Tool         string
	Decision     string
	Reason       string
	Argv         []string
	Cwd          string
	ExitCode     *int   `json:"exit_code"`
	DurationMS   *int64 `json:"duration_ms"`
	StdoutBytes  int    `json:"stdout_bytes"`
	TimedOut     bool   `json:"timed_out"`
	Policy       string
	Grant        string
	Grants       []string
	GrantOnce    bool `json:"grant_once"`
	Cause        string
	Outcome      string
	Error        string
	Old, New     string
	ToolsAdded   []string            `json:"tools_added"`
	ToolsRemoved []string            `json:"tools_removed"`
	FlagsAdded   map[string][]string `json:"flags_added"`
	FlagsRemoved map[string][]string `json:"flags_removed"`
}

// readAudit parses every line of the audit log at path.
func readAudit(t *testing.T, path string) []auditLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []auditLine
	for _, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var a auditLine
		if err := json.Unmarshal(l, &a); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		out = append(out, a)
	}
	return out
}

// waitAudit polls (bounded) the audit log until a line matches; the writer
// appends asynchronously and there is no event to wait on.
func waitAudit(t *testing.T, s *server, what string, match func(auditLine) bool) auditLine {
	t.Helper()
	return nextAudit(t, filepath.Join(s.Dir, "audit.jsonl"), 0, what, match)
}

// nextAudit polls (bounded) the audit log at path until a line after the
// first after lines matches, and returns it: waitAudit's search, for a
// line that must be new.
func nextAudit(t *testing.T, path string, after int, what string, match func(auditLine) bool) auditLine {
	t.Helper()
	var found auditLine
	waittest.Until(t, eventTimeout, func() error {
		if lines := readAudit(t, path); len(lines) > after {
			for _, l := range lines[after:] {
				if match(l) {
					found = l
					return nil
				}
			}
		}
		data, _ := os.ReadFile(path)
		return fmt.Errorf("no new audit line for %s:\n%s", what, data)
	})
	return found
}

// TestAuditLog drives calls of every kind through a real server and reads
// the audit log: allowed, denied, timed out, and allowed by a once-grant
// each get their line; a redacted value reaches the tool but never the
// audit log, the server's debug log or a denial; and a reload writes a
// policy line with both hashes and the change.
func TestAuditLog(t *testing.T) {
	slow(t, "the audit log for every kind of call")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, auditConfig))
	c := s.Connect(t, "/mcp")
	cli := operatorCLI(t, s)
	const secret = "s3cr3t-VALUE-do-not-log"
	auditPath := filepath.Join(dir, "audit.jsonl")

	start := waitAudit(t, s, "the start", func(l auditLine) bool { return l.Event == "policy" && l.Cause == "start" })
	if start.New == "" || !slices.Contains(start.ToolsAdded, "fake_status") {
		t.Errorf("start line: %+v", start)
	}

	t.Run("an allowed call is audited with its argv redacted, and the tool gets the value", func(t *testing.T) {
		res := c.Call(t, "fake_status", map[string]any{"token": secret, "verbose": true})
		text := toolsettest.ResultText(t, res)
		if res.IsError || !strings.Contains(text, `"--token=`+secret+`"`) {
			t.Fatalf("the tool did not get the real value: %s", text)
		}
		l := waitAudit(t, s, "the allowed call", func(l auditLine) bool {
			return l.Event == "call" && l.Decision == "allowed" && l.Tool == "fake_status"
		})
		if want := []string{fakecli, "status", "--verbose", "--token=***"}; !slices.Equal(l.Argv, want) {
			t.Errorf("argv: got %q, want %q", l.Argv, want)
		}
		if l.ExitCode == nil || *l.ExitCode != 0 || l.StdoutBytes == 0 || l.Session == "" ||
			l.Policy != start.New || l.Grant != "" || l.Time.IsZero() || l.DurationMS == nil {
			t.Errorf("allowed line: %+v", l)
		}
	})

	t.Run("a denied call is audited with its reason, and its denial hides the value", func(t *testing.T) {
		res := c.Call(t, "fake_status", map[string]any{"token": secret, "force": true})
		text := toolsettest.ResultText(t, res)
		if !strings.HasPrefix(text, "DENIED: 'fake status '--token=***' --force' is not permitted.") || strings.Contains(text, secret) {
			t.Fatalf("denial: %s", text)
		}
		var d struct {
			CallID  string `json:"call_id"`
			Command []string
		}
		structured(t, res, &d)
		if d.CallID != "" || !slices.Contains(d.Command, "--token=***") || strings.Contains(fmt.Sprint(d.Command), secret) {
			t.Errorf("denial's structuredContent: %+v (no call_id for a redacted call, *** in command)", d)
		}
		l := waitAudit(t, s, "the denied call", func(l auditLine) bool { return l.Event == "call" && l.Decision == "denied" })
		if l.Reason != "flag '--force' is not in the allowlist for 'fake status'" || l.ExitCode != nil ||
			!slices.Contains(l.Argv, "--token=***") {
			t.Errorf("denied line: %+v", l)
		}
	})

	t.Run("a value refused by its pattern is audited as denied", func(t *testing.T) {
		c.Call(t, "fake_status", map[string]any{"name": "BAD1"})
		waitAudit(t, s, "the pattern denial", func(l auditLine) bool {
			return l.Decision == "denied" && l.Reason == "value of '--name' does not match pattern '[a-z]+'"
		})
	})

	t.Run("a timed-out call is audited with exit_code -1", func(t *testing.T) {
		res := c.Call(t, "fake_sleep", map[string]any{"args": []string{"10s"}})
		if !res.IsError {
			t.Fatalf("sleep 10s with a 1s timeout did not fail")
		}
		l := waitAudit(t, s, "the timeout", func(l auditLine) bool { return l.Tool == "fake_sleep" })
		if l.Decision != "allowed" || !l.TimedOut || l.ExitCode == nil || *l.ExitCode != -1 || !strings.Contains(l.Error, "timed out") {
			t.Errorf("timeout line: %+v", l)
		}
	})

	t.Run("a call allowed by a once-grant names the grant, and grant changes are policy lines", func(t *testing.T) {
		id := request(t, c, askFor("fake", []string{"status"}, []string{"--depth"}, "look at three commits", ""))
		if out, stderr, code := cli("requests", "approve", id, "--once"); code != 0 {
			t.Fatalf("approve --once: exit %d\n%s\n%s", code, out, stderr)
		}
		waitListChanged(t, s, c, "the once-grant came into force")
		granted := waitAudit(t, s, "the grant", func(l auditLine) bool { return l.Event == "policy" && l.Cause == "grant" })
		if granted.Old == granted.New || len(granted.FlagsAdded["fake_status"]) == 0 {
			t.Errorf("grant line: %+v", granted)
		}
		if ran, text := runs(t, c, "fake_status", map[string]any{"depth": "3"}); !ran {
			t.Fatalf("the granted call did not run: %s", text)
		}
		l := waitAudit(t, s, "the granted call", func(l auditLine) bool { return l.Grant != "" })
		if l.Grant != id || !l.GrantOnce || l.Decision != "allowed" || l.Policy != granted.New {
			t.Errorf("granted line: %+v (want grant %s, policy %s)", l, id, granted.New)
		}
		waitAudit(t, s, "the grant's use", func(l auditLine) bool { return l.Event == "policy" && l.Cause == "grant_used" })
	})

	t.Run("a reload writes old and new hashes and the change", func(t *testing.T) {
		cfg := configtest.ReadFile(t, s.ConfigPath)
		edited := bytes.Replace(cfg, []byte(`flags: ["--verbose", "--token", "--name"]`), []byte(`flags: ["--verbose", "--token", "--name", "--quiet"]`), 1)
		if err := os.WriteFile(s.ConfigPath, edited, 0o600); err != nil {
			t.Fatal(err)
		}
		l := waitAudit(t, s, "the reload", func(l auditLine) bool { return l.Event == "policy" && l.Cause == "file" })
		if l.Old == "" || l.New == "" || l.Old == l.New || !slices.Equal(l.FlagsAdded["fake_status"], []string{"--quiet"}) ||
			l.Outcome != "applied" {
			t.Errorf("reload line: %+v", l)
		}
		if err := os.WriteFile(s.ConfigPath, append(edited, []byte("bogus: 1\n")...), 0o600); err != nil {
			t.Fatal(err)
		}
		r := waitAudit(t, s, "the rejected reload", func(l auditLine) bool { return l.Outcome == "rejected" })
		if r.Old != l.New || !strings.Contains(r.Error, "bogus") {
			t.Errorf("rejected line: %+v", r)
		}
	})

	t.Run("the secret appears nowhere but in the tool's output", func(t *testing.T) {
		if data := configtest.ReadFile(t, auditPath); bytes.Contains(data, []byte(secret)) {
			t.Errorf("the audit log holds the secret:\n%s", data)
		}
		if strings.Contains(s.Log(), secret) {
			t.Errorf("the server's debug log holds the secret:\n%s", s.Log())
		}
		if !strings.Contains(s.Log(), `--token=***`) {
			t.Errorf("the debug log does not show the redacted argv:\n%s", s.Log())
		}
		info, err := os.Stat(auditPath)
		if err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("audit log mode: %v, %v", info, err)
		}
	})
}

// TestAuditOff shows audit_log: off writes no audit log.
func TestAuditOff(t *testing.T) {
	slow(t, "audit_log: off")
	t.Parallel()
	dir := t.TempDir()
	cfg := strings.Replace(serverConfig(t, dir, auditConfig), "mcp:\n", "mcp:\n  audit_log: \"off\"\n", 1)
	s := startServerIn(t, dir, cfg)
	c := s.Connect(t, "/mcp")
	if ran, text := runs(t, c, "fake_status", map[string]any{"verbose": true}); !ran {
		t.Fatalf("call: %s", text)
	}
	s.stop(t)
	if _, err := os.Stat(filepath.Join(dir, "audit.jsonl")); !os.IsNotExist(err) {
		t.Errorf("audit_log: off still wrote audit.jsonl (%v)", err)
	}
}

// TestAuditShutdownGrace shows a call answered during the shutdown grace
// is audited: the writer outlives the hub.
func TestAuditShutdownGrace(t *testing.T) {
	slow(t, "auditing a call answered during the shutdown grace")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, `  fake:
    binary: $FAKECLI
    allow:
      - subcommand: [sleep]
`))
	c := s.Connect(t, "/mcp")
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.CallTool(bounded(t), &mcp.CallToolParams{Name: "fake_sleep", Arguments: map[string]any{"args": []string{"1s"}}})
	}()
	waitChild(t, s, fakecli, "sleep", "1s")
	s.Signal(t, os.Interrupt)
	<-done
	if err := s.Wait(t, eventTimeout); err != nil {
		t.Logf("exit: %v", err)
	}
	found := false
	for _, l := range readAudit(t, filepath.Join(dir, "audit.jsonl")) {
		if l.Tool == "fake_sleep" && l.Decision == "allowed" {
			found = true
		}
	}
	if !found {
		t.Errorf("the call answered in the grace period has no audit line:\n%s", configtest.ReadFile(t, filepath.Join(dir, "audit.jsonl")))
	}
}
