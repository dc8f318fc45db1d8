package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

// grantConfig wraps the fake CLI with one narrow rule and a deny rule.
const grantConfig = `  fake:
    binary: $FAKECLI
    allow:
      - subcommand: [status]
        flags: ["--verbose"]
    deny:
      - subcommand: [secret]
`

// operatorCLI runs wraptool's CLI on s's config.
func operatorCLI(t *testing.T, s *server) func(args ...string) (string, string, int) {
	return func(args ...string) (string, string, int) {
		t.Helper()
		return runWraptool(t, []string{"HOME=" + filepath.Join(s.Dir, "home")}, append([]string{"--config", s.ConfigPath}, args...)...)
	}
}

// listed is a request as `requests list --json` prints it.
type listed struct {
	ID     string
	Status string
	Grant  *struct {
		Once   bool
		Until  time.Time
		UsedAt *time.Time `json:"used_at"`
		Exact  bool
		Config string
	}
	Call *struct {
		Command []string
	}
}

func listJSON(t *testing.T, cli func(...string) (string, string, int), id string) listed {
	t.Helper()
	out, stderr, code := cli("requests", "list", "--status", "all", "--json")
	if code != 0 {
		t.Fatalf("requests list --json: exit %d, %s", code, stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var l listed
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("requests list --json line %q: %v", line, err)
		}
		if l.ID == id {
			return l
		}
	}
	t.Fatalf("request %s is not listed:\n%s", id, out)
	return listed{}
}

// runs reports whether a call ran (and its argv, as the fake CLI prints it)
// or was denied.
// runsOnceInForce calls tool until the call runs, within eventTimeout: an
// exact-call grant sends no list_changed, and its "grant in force" line is
// logged just before the policy holder swaps the snapshot, so the first
// call after the line may still meet the old policy. A denied call consumes
// nothing, so retrying is safe.
func runsOnceInForce(t *testing.T, c *mcpClient, tool string, args map[string]any) (ran bool, text string) {
	t.Helper()
	// An exact grant rings no bell: poll the server; on timeout the last
	// answer is returned for the caller to judge.
	waittest.Within(eventTimeout, func() error {
		if ran, text = runs(t, c, tool, args); !ran {
			return errors.New(text)
		}
		return nil
	})
	return ran, text
}

func runs(t *testing.T, c *mcpClient, tool string, args map[string]any) (ran bool, text string) {
	t.Helper()
	res := c.Call(t, tool, args)
	text = toolsettest.ResultText(t, res)
	if strings.HasPrefix(text, "DENIED: ") {
		return false, text
	}
	if res.IsError {
		t.Fatalf("%s(%v) failed without a denial: %s", tool, args, text)
	}
	return true, text
}

// TestGrantOnce shows `requests approve --once`: the capability appears
// (one list_changed), one call runs, the next is denied, and the grant's
// use takes it away again (one list_changed); the config never changes.
func TestGrantOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, grantConfig))
	before := configtest.ReadFile(t, s.ConfigPath)
	c := s.Connect(t, "/mcp")
	cli := operatorCLI(t, s)
	call := map[string]any{"depth": "3"}
	if ran, text := runs(t, c, "fake_status", call); ran {
		t.Fatalf("ran before any grant: %s", text)
	}
	id := request(t, c, askFor("fake", []string{"status"}, []string{"--depth"}, "look at three commits", ""))

	out, stderr, code := cli("requests", "approve", id, "--once")
	if code != 0 || !strings.Contains(out, "approved "+id+" once") || !strings.Contains(out, "the config is not changed") {
		t.Fatalf("approve --once: exit %d\n%s\n%s", code, out, stderr)
	}
	waitListChanged(t, s, c, "the once-grant came into force")
	if ran, text := runs(t, c, "fake_status", call); !ran || !strings.Contains(text, `"--depth=3"`) {
		t.Fatalf("the granted call did not run: %s", text)
	}
	if ran, text := runs(t, c, "fake_status", call); ran {
		t.Errorf("a second call ran on a once-grant: %s", text)
	}
	waitListChanged(t, s, c, "the used once-grant left")
	if got := listJSON(t, cli, id); got.Grant == nil || !got.Grant.Once || got.Grant.UsedAt == nil {
		t.Errorf("the grant is not recorded as used: %+v", got)
	}
	if out, _, _ := cli("requests", "list", "--status", "approved"); !strings.Contains(out, "approved once, used") {
		t.Errorf("requests list does not show the used grant:\n%s", out)
	}
	if st := statusOf(t, c, id); st["grant"] == nil {
		t.Errorf("wraptool_request_status does not show the grant: %+v", st)
	}
	if !bytes.Equal(configtest.ReadFile(t, s.ConfigPath), before) {
		t.Errorf("the config changed")
	}
}

// TestGrantFor shows `--for 3s`: the capability runs until the deadline and
// is denied from then on, whether or not a notification reached the client
// by then; the expiry then sends a list_changed.
func TestGrantFor(t *testing.T) {
	slow(t, "approve --for and its deadline")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, grantConfig))
	before := configtest.ReadFile(t, s.ConfigPath)
	c := s.Connect(t, "/mcp")
	cli := operatorCLI(t, s)
	id := request(t, c, askFor("fake", []string{"status"}, []string{"--depth"}, "a few calls", ""))
	if out, stderr, code := cli("requests", "approve", "--for", "3s", id); code != 0 || !strings.Contains(out, "approved "+id+" until ") {
		t.Fatalf("approve --for 3s: exit %d\n%s\n%s", code, out, stderr)
	}
	until := listJSON(t, cli, id).Grant.Until
	waitListChanged(t, s, c, "the timed grant came into force")
	for i := range 3 {
		if ran, text := runs(t, c, "fake_status", map[string]any{"depth": "3"}); !ran {
			t.Fatalf("call %d under the grant was denied: %s", i, text)
		}
	}
	// The deadline itself is what is tested: wait for the clock.
	time.Sleep(time.Until(until))
	if ran, text := runs(t, c, "fake_status", map[string]any{"depth": "3"}); ran {
		t.Errorf("a call ran after the grant's until (%s): %s", until, text)
	}
	select {
	case <-c.ListChanged:
	case <-time.After(3 * time.Second):
		t.Errorf("no list_changed within 3s of the grant's expiry")
	}
	if out, _, _ := cli("requests", "list", "--status", "approved"); !strings.Contains(out, ", expired") {
		t.Errorf("requests list does not show the grant expired:\n%s", out)
	}
	if !bytes.Equal(configtest.ReadFile(t, s.ConfigPath), before) {
		t.Errorf("the config changed")
	}
}

// TestGrantSurvivesRestart shows a timed grant in force again after the
// server restarts: the first client of the new server sees and uses it.
func TestGrantSurvivesRestart(t *testing.T) {
	slow(t, "a timed grant across a restart")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, grantConfig))
	c := s.Connect(t, "/mcp")
	cli := operatorCLI(t, s)
	id := request(t, c, askFor("fake", []string{"status"}, []string{"--depth"}, "read the history", ""))
	if _, stderr, code := cli("requests", "approve", id, "--for", "1h"); code != 0 {
		t.Fatalf("approve --for 1h: %s", stderr)
	}
	waitListChanged(t, s, c, "the grant came into force")
	s.stop(t)

	s2 := startServerIn(t, dir, "")
	c2 := s2.Connect(t, "/mcp")
	checkSchemaProperty(t, c2, "fake_status", "depth")
	if ran, text := runs(t, c2, "fake_status", map[string]any{"depth": "2"}); !ran {
		t.Errorf("after a restart the grant does not allow the call: %s", text)
	}
}

// TestGrantRefusals shows what approve refuses: usage errors exit 2, a
// grant that could not be merged exits 1 and leaves the request pending.
func TestGrantRefusals(t *testing.T) {
	slow(t, "what approve refuses")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, grantConfig))
	before := configtest.ReadFile(t, s.ConfigPath)
	c := s.Connect(t, "/mcp")
	cli := operatorCLI(t, s)
	unknown := request(t, c, askFor("nosuch", []string{"run"}, nil, "a tool the config lacks", ""))
	denied := request(t, c, askFor("fake", []string{"secret"}, nil, "a deny rule covers it", ""))
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--once", "--for", "1h", unknown}, 2, "--once and --for do not combine"},
		{[]string{"--apply", "--once", unknown}, 2, "--apply does not combine"},
		{[]string{"--for", "200h", unknown}, 2, "at most 168h0m0s"},
		{[]string{"--for", "-1m", unknown}, 2, "must be positive"},
		{[]string{"--for", "soon", unknown}, 2, "is not a duration"},
		{[]string{"--once", unknown}, 1, "tool 'nosuch' is not in the config"},
		{[]string{"--for", "1h", denied}, 1, "covers fake secret"},
	} {
		_, stderr, code := cli(append([]string{"requests", "approve", "--yes"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("approve %q: exit %d, %q; want %d with %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	for _, id := range []string{unknown, denied} {
		if st := listJSON(t, cli, id).Status; st != "pending" {
			t.Errorf("%s is %s after a refused grant, want pending", id, st)
		}
	}
	if !bytes.Equal(configtest.ReadFile(t, s.ConfigPath), before) {
		t.Errorf("the config changed")
	}
}

// denialOf calls a tool that must be refused and returns its denial's
// structuredContent.
func denialOf(t *testing.T, c *mcpClient, tool string, args map[string]any) (callID string, command []string) {
	t.Helper()
	res := c.Call(t, tool, args)
	if !res.IsError {
		t.Fatalf("%s(%v) ran; want a denial", tool, args)
	}
	var d struct {
		Denied  bool
		CallID  string `json:"call_id"`
		Command []string
		Reason  string
	}
	structured(t, res, &d)
	if !d.Denied || d.Reason == "" || len(d.Command) == 0 {
		t.Fatalf("denial structuredContent %+v", res.StructuredContent)
	}
	return d.CallID, d.Command
}

// TestExactCallGrant shows an exact-call request: the denial names the call,
// the request asks for it by call_id, and approving it once allows exactly
// that call — not the same call with other arguments, and not twice — with
// no change to the tools list; a grant for a while is voided by a change of
// the config.
func TestExactCallGrant(t *testing.T) {
	slow(t, "exact-call requests and grants")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, grantConfig))
	c := s.Connect(t, "/mcp")
	cli := operatorCLI(t, s)
	call := map[string]any{"depth": "3", "args": []string{"main"}}

	callID, command := denialOf(t, c, "fake_status", call)
	if !strings.HasPrefix(callID, "call_") || !slices.Equal(command, []string{"fake", "status", "--depth=3", "main"}) {
		t.Fatalf("call_id %q, command %q", callID, command)
	}
	id := request(t, c, map[string]any{"call_id": callID, "rationale": "just this once"})
	if out, _, _ := cli("requests", "list"); !strings.Contains(out, "exactly: fake status --depth=3 main") {
		t.Errorf("requests list does not show the exact command:\n%s", out)
	}
	if got := listJSON(t, cli, id); got.Call == nil || !slices.Equal(got.Call.Command, command) {
		t.Errorf("the request line does not carry the call: %+v", got)
	}
	grants := strings.Count(s.Log(), `msg="grant in force"`)
	out, stderr, code := cli("requests", "approve", "--once", id)
	if code != 0 || !strings.Contains(out, "exactly this call") || !strings.Contains(out, "fake status --depth=3 main") {
		t.Fatalf("approve --once: exit %d\n%s\n%s", code, out, stderr)
	}
	s.WaitLog(t, `msg="grant in force"`, grants+1, eventTimeout)
	if ran, text := runs(t, c, "fake_status", map[string]any{"depth": "4", "args": []string{"main"}}); ran {
		t.Errorf("other arguments ran on an exact grant: %s", text)
	}
	if ran, text := runs(t, c, "fake_status", map[string]any{"depth": "3", "args": []string{"dev"}}); ran {
		t.Errorf("another positional ran on an exact grant: %s", text)
	}
	if ran, text := runsOnceInForce(t, c, "fake_status", call); !ran || !strings.Contains(text, `"--depth=3","main"`) {
		t.Fatalf("the approved call did not run: %s", text)
	}
	if ran, text := runs(t, c, "fake_status", call); ran {
		t.Errorf("the exact call ran twice on a once-grant: %s", text)
	}
	expectNoListChanged(t, c)

	// A timed exact grant, voided by a config change.
	callID, _ = denialOf(t, c, "fake_status", call)
	id2 := request(t, c, map[string]any{"call_id": callID, "rationale": "for a while"})
	if _, stderr, code := cli("requests", "approve", "--for", "1h", id2); code != 0 {
		t.Fatalf("approve --for: %s", stderr)
	}
	s.WaitLog(t, `msg="grant in force"`, grants+2, eventTimeout)
	if ran, text := runsOnceInForce(t, c, "fake_status", call); !ran {
		t.Fatalf("the timed exact grant does not allow the call: %s", text)
	}
	reloads := strings.Count(s.Log(), `msg="config reloaded"`)
	configtest.ReplaceFile(t, s.ConfigPath, string(configtest.ReadFile(t, s.ConfigPath))+"# a comment changes the policy hash\n")
	s.WaitLog(t, `msg="config reloaded"`, reloads+1, eventTimeout)
	if ran, text := runs(t, c, "fake_status", call); ran {
		t.Errorf("the exact grant survived a config change: %s", text)
	}
	if !strings.Contains(s.Log(), `msg="grant dormant: not in force with this config" component=policy id=`+id2) {
		t.Errorf("the voided grant is not logged:\n%s", s.Log())
	}
	// And approving after the change is refused.
	callID, _ = denialOf(t, c, "fake_status", call)
	id3 := request(t, c, map[string]any{"call_id": callID, "rationale": "again"})
	configtest.ReplaceFile(t, s.ConfigPath, string(configtest.ReadFile(t, s.ConfigPath))+"# another\n")
	s.WaitLog(t, `msg="config reloaded"`, reloads+2, eventTimeout)
	if _, stderr, code := cli("requests", "approve", "--once", id3); code != 1 || !strings.Contains(stderr, "changed since the call was refused") {
		t.Errorf("approving after a config change: exit %d, %q", code, stderr)
	}
}

// TestExactCallNeverLiftsDenyRules shows an exact call refused for a reason
// no grant lifts: its request can be filed, but approving it for now is
// refused.
func TestExactCallNeverLiftsDenyRules(t *testing.T) {
	slow(t, "exact calls and deny rules")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, grantConfig))
	c := s.Connect(t, "/mcp")
	cli := operatorCLI(t, s)
	callID, _ := denialOf(t, c, "fake_status", map[string]any{"args": []string{"-rf"}, "depth": "1"})
	id := request(t, c, map[string]any{"call_id": callID, "rationale": "a positional that looks like a flag"})
	if _, stderr, code := cli("requests", "approve", "--once", id); code != 1 || !strings.Contains(stderr, "no grant can allow it") {
		t.Errorf("approve: exit %d, %q", code, stderr)
	}
}

// TestExactCallIDs shows the call_id's bounds: unknown ids are a tool error.
func TestExactCallIDs(t *testing.T) {
	slow(t, "call_id bounds")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, grantConfig))
	c := s.Connect(t, "/mcp")
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: requestTool, Arguments: map[string]any{"call_id": "call_00000000", "rationale": "r"}})
	if err != nil || !res.IsError || !strings.Contains(toolsettest.ResultText(t, res), "call_id call_00000000 is unknown or expired") {
		t.Errorf("an unknown call_id: %v %v", err, res)
	}
}
