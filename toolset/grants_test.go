package toolset

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// grantFixture is a State whose config allows `fake report` with no flags,
// and a grant policy that adds --depth.
type grantFixture struct {
	dir   string
	base  *policy.Policy
	grant *policy.Policy
	log   *requests.Log
	path  string
}

func newGrantFixture(t *testing.T) *grantFixture {
	t.Helper()
	dir := t.TempDir()
	rule := func(flags ...string) []*policy.AllowRule {
		return []*policy.AllowRule{{Subcommand: []string{"report"}, Flags: append(flags, help()...)}}
	}
	f := &grantFixture{dir: dir, path: filepath.Join(dir, "requests.jsonl"),
		base:  newPolicy(t, policy.Tool{Name: "fake", Binary: fakecli, Allow: rule()}),
		grant: newPolicy(t, policy.Tool{Name: "fake", Binary: fakecli, Allow: rule("--depth")}),
	}
	f.log = requests.Open(f.path)
	return f
}

// decide files a request and approves it with g; it returns the id.
func (f *grantFixture) decide(t *testing.T, req requests.Request, g requests.Grant) string {
	t.Helper()
	ctx := context.Background()
	req.Rationale = "test"
	s, err := f.log.Submit(ctx, req, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	g.Config = "/etc/wraptool/config.yaml"
	if err := f.log.Decide(ctx, s.ID, requests.Decision{Status: requests.StatusApproved, DecidedBy: "cli", Grant: &g}, time.Now()); err != nil {
		t.Fatal(err)
	}
	return s.ID
}

func (f *grantFixture) state(g *Grants) *State {
	return &State{Policy: f.grant, Base: f.base, Grants: g, PolicyHash: "hash-1", Denials: NewDenials(),
		Runtimes: map[string]Runtime{"fake": {WorkingDir: f.dir, Env: []string{}, Timeout: time.Minute}},
		UseGrant: func(ctx context.Context, id string) error {
			_, err := requests.Open(f.path).UseGrant(ctx, id, time.Now())
			return err
		}}
}

func callHandler(t *testing.T, st *State, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	raw, _ := json.Marshal(args)
	h := NewHandler("fake", []string{"report"}, func() *State { return st }, context.Background(), discard)
	res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "fake_report", Arguments: raw}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func ran(t *testing.T, res *mcp.CallToolResult) bool {
	t.Helper()
	return !strings.HasPrefix(toolsettest.ResultText(t, res), "DENIED: ")
}

// TestOnceGrantRunsExactlyOnce has 50 calls that only a once-grant allows
// race for it: exactly one runs, the others get the config's denial, and
// the log records one use.
func TestOnceGrantRunsExactlyOnce(t *testing.T) {
	t.Parallel()
	f := newGrantFixture(t)
	id := f.decide(t, requests.Request{Tool: "fake", Subcommand: []string{"report"}, Flags: []string{"--depth"}},
		requests.Grant{Once: true, Until: time.Now().Add(time.Hour)})
	st := f.state(&Grants{Capability: []CapabilityGrant{{ID: id, Once: true, Until: time.Now().Add(time.Hour),
		Tool: "fake", Subcommand: []string{"report"}, Policy: f.grant}}})
	var runs, denials atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := callHandler(t, st, map[string]any{"depth": "2"})
			text := toolsettest.ResultText(t, res)
			switch {
			case ran(t, res):
				runs.Add(1)
			case strings.Contains(text, "flag '--depth' is not in the allowlist for 'fake report'"):
				denials.Add(1)
			default:
				t.Errorf("unexpected answer: %s", text)
			}
		}()
	}
	wg.Wait()
	if runs.Load() != 1 || denials.Load() != 49 {
		t.Errorf("%d ran and %d were denied, want 1 and 49", runs.Load(), denials.Load())
	}
	data, _ := os.ReadFile(f.path)
	if n := strings.Count(string(data), `"used_at"`); n != 1 {
		t.Errorf("the log records %d uses, want 1", n)
	}
}

// TestGrantChoice shows which grant a call uses: none when the config
// allows it; a timed grant before a once-grant (which is kept); none once
// its until has passed, even if the snapshot still carries it.
func TestGrantChoice(t *testing.T) {
	t.Parallel()
	f := newGrantFixture(t)
	req := requests.Request{Tool: "fake", Subcommand: []string{"report"}, Flags: []string{"--depth"}}
	onceID := f.decide(t, req, requests.Grant{Once: true, Until: time.Now().Add(time.Hour)})
	once := CapabilityGrant{ID: onceID, Once: true, Until: time.Now().Add(time.Hour), Tool: "fake", Subcommand: []string{"report"}, Policy: f.grant}
	timed := CapabilityGrant{ID: "req_timed000", Until: time.Now().Add(time.Hour), Tool: "fake", Subcommand: []string{"report"}, Policy: f.grant}
	used := 0
	count := func(st *State) *State {
		use := st.UseGrant
		st.UseGrant = func(ctx context.Context, id string) error { used++; return use(ctx, id) }
		return st
	}

	st := count(f.state(&Grants{Capability: []CapabilityGrant{once}}))
	if !ran(t, callHandler(t, st, map[string]any{})) || used != 0 {
		t.Errorf("a call the config allows used a grant (%d uses)", used)
	}
	st = count(f.state(&Grants{Timed: f.grant, TimedUntil: timed.Until, Capability: []CapabilityGrant{timed, once}}))
	if !ran(t, callHandler(t, st, map[string]any{"depth": "1"})) || used != 0 {
		t.Errorf("a timed grant did not take precedence (%d once uses)", used)
	}
	expired := timed
	expired.Until = time.Now().Add(-time.Second)
	st = f.state(&Grants{Timed: f.grant, TimedUntil: expired.Until, Capability: []CapabilityGrant{expired}})
	if res := callHandler(t, st, map[string]any{"depth": "1"}); ran(t, res) {
		t.Errorf("an expired grant still allowed a call: %s", toolsettest.ResultText(t, res))
	}
}

// TestExactGrant shows an exact-call grant allowing exactly its call: the
// same arguments, the same command, the same directory (device and inode),
// the same policy hash; and the denial that named it.
func TestExactGrant(t *testing.T) {
	t.Parallel()
	f := newGrantFixture(t)
	work := filepath.Join(f.dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"depth": "3", "cwd": work}
	st := f.state(nil)
	st.Policy = st.Base // no capability grant
	res := callHandler(t, st, args)
	var d Denial
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, &d); err != nil || !d.Denied || !strings.HasPrefix(d.CallID, "call_") {
		t.Fatalf("denial %s", data)
	}
	denied, ok := st.Denials.Get(d.CallID, time.Now())
	if !ok || denied.Call.Cwd != work || denied.Call.Policy != "hash-1" || denied.Tool != "fake" || len(denied.Flags) != 1 {
		t.Fatalf("remembered %+v", denied)
	}
	exact := func(call requests.Call) *State {
		s := f.state(&Grants{Exact: []ExactGrant{{ID: "req_exact000", Until: time.Now().Add(time.Hour), Call: call}}})
		s.Policy = s.Base
		return s
	}
	if res := callHandler(t, exact(denied.Call), args); !ran(t, res) || !strings.Contains(toolsettest.ResultText(t, res), `"--depth=3"`) {
		t.Errorf("the exact call did not run: %s", toolsettest.ResultText(t, res))
	}
	for _, tc := range []struct {
		name string
		st   *State
		args map[string]any
	}{
		{"other arguments", exact(denied.Call), map[string]any{"depth": "4", "cwd": work}},
		{"another directory", exact(denied.Call), map[string]any{"depth": "3", "cwd": f.dir}},
		{"another policy", func() *State { s := exact(denied.Call); s.PolicyHash = "hash-2"; return s }(), args},
	} {
		if res := callHandler(t, tc.st, tc.args); ran(t, res) {
			t.Errorf("%s: ran", tc.name)
		}
	}
	// The same path, another directory: the approved one was replaced.
	if err := os.Rename(work, work+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if res := callHandler(t, exact(denied.Call), args); ran(t, res) {
		t.Errorf("the exact call ran in a directory that replaced the approved one")
	}
}

// TestDenialsMemory shows the denial memory's bounds: the last MaxDenials,
// each for DenialTTL.
func TestDenialsMemory(t *testing.T) {
	t.Parallel()
	m := NewDenials()
	start := time.Now()
	var ids []string
	for i := range MaxDenials + 5 {
		id, err := m.Add(DeniedCall{Tool: "t", At: start.Add(time.Duration(i) * time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if _, ok := m.Get(ids[0], start); ok {
		t.Errorf("the oldest of %d is still remembered", MaxDenials+5)
	}
	if _, ok := m.Get(ids[len(ids)-1], start.Add(time.Second)); !ok {
		t.Errorf("the newest is forgotten")
	}
	if _, ok := m.Get(ids[len(ids)-1], start.Add(DenialTTL+time.Minute)); ok {
		t.Errorf("a denial older than %s is still remembered", DenialTTL)
	}
	var nilMemory *Denials
	if _, err := nilMemory.Add(DeniedCall{}); err == nil {
		t.Errorf("a nil memory issued a call_id")
	}
}

// TestAdmitRefusesAnExpiredGrant shows the last check before a start: a
// grant whose until passed while the call waited is not used.
func TestAdmitRefusesAnExpiredGrant(t *testing.T) {
	t.Parallel()
	st := &State{}
	err := st.admit(context.Background(), &grantUse{id: "req_x", until: time.Now().Add(-time.Millisecond)})(nil)
	if !errors.Is(err, requests.ErrGrantExpired) {
		t.Errorf("admit: %v, want ErrGrantExpired", err)
	}
}
