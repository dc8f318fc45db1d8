package toolset

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
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

// TestGrantAttribution shows which grant a call is credited to, and so
// which its audit line names: the grant whose capability covers what the
// config alone refused, not the first grant on the rule; a call that
// needs two grants names the one approved last and lists both, allowed
// until the first of their untils; a timed grant before a once-grant;
// among once-grants the oldest.
func TestGrantAttribution(t *testing.T) {
	t.Parallel()
	rules := func(log []string, flags ...string) policy.Tool {
		switches := map[string]*policy.Constraint{}
		for _, f := range append(append([]string{"--oneline"}, flags...), log...) {
			switches[f] = &policy.Constraint{Type: "boolean"}
		}
		allow := []*policy.AllowRule{{Subcommand: []string{"report"}, Flags: append([]string{"--oneline"}, flags...), FlagConstraints: switches}}
		if log != nil {
			allow = append(allow, &policy.AllowRule{Subcommand: []string{"log"}, Flags: log, FlagConstraints: switches,
				ArgConstraints: policy.ArgConstraints{PositionalMax: intp(0)}})
		}
		return policy.Tool{Name: "fake", Binary: fakecli, Allow: allow}
	}
	base := newPolicy(t, rules(nil))
	reverse := newPolicy(t, rules(nil, "--reverse"))
	graph := newPolicy(t, rules(nil, "--graph"))
	both := newPolicy(t, rules(nil, "--reverse", "--graph"))
	logGraph := newPolicy(t, rules([]string{"--graph"}))
	logReverse := newPolicy(t, rules([]string{"--reverse"}))
	logBoth := newPolicy(t, rules([]string{"--graph", "--reverse"}))
	now := time.Now()
	hour, twoHours := now.Add(time.Hour), now.Add(2*time.Hour)
	grant := func(id string, once bool, until time.Time, sub string, p *policy.Policy) CapabilityGrant {
		return CapabilityGrant{ID: id, Once: once, Until: until, Tool: "fake", Subcommand: []string{sub}, Policy: p}
	}
	timedPair := &Grants{Timed: both, TimedUntil: hour, Capability: []CapabilityGrant{
		grant("req_reverse0", false, twoHours, "report", reverse), grant("req_graph000", false, hour, "report", graph)}}
	for _, tc := range []struct {
		name   string
		grants *Grants
		sub    string
		params map[string]any
		id     string
		all    []string
		until  time.Time
	}{
		{"a call using only the second grant's flag names the second grant", timedPair, "report",
			map[string]any{"oneline": true, "graph": true}, "req_graph000", nil, hour},
		{"a call using only the first grant's flag names the first grant", timedPair, "report",
			map[string]any{"reverse": true}, "req_reverse0", nil, twoHours},
		{"a call needing both names the one approved last and lists both", timedPair, "report",
			map[string]any{"reverse": true, "graph": true}, "req_graph000", []string{"req_reverse0", "req_graph000"}, hour},
		{"a rule made by one grant and widened by another needs both", &Grants{Timed: logBoth, TimedUntil: hour, Capability: []CapabilityGrant{
			grant("req_loggraph", false, hour, "log", logGraph), grant("req_logrev00", false, twoHours, "log", logReverse)}}, "log",
			map[string]any{"graph": true, "reverse": true}, "req_logrev00", []string{"req_loggraph", "req_logrev00"}, hour},
		{"a timed grant is used before an older once-grant", &Grants{Timed: graph, TimedUntil: hour, Capability: []CapabilityGrant{
			grant("req_timed000", false, hour, "report", graph), grant("req_once0000", true, twoHours, "report", graph)}}, "report",
			map[string]any{"graph": true}, "req_timed000", nil, hour},
		{"among once-grants the oldest", &Grants{Capability: []CapabilityGrant{
			grant("req_oldonce0", true, hour, "report", graph), grant("req_newonce0", true, twoHours, "report", graph)}}, "report",
			map[string]any{"graph": true}, "req_oldonce0", nil, hour},
		{"an expired grant in the merged policy leaves the other alone", &Grants{Timed: both, TimedUntil: now.Add(-time.Second), Capability: []CapabilityGrant{
			grant("req_expired0", false, now.Add(-time.Second), "report", reverse), grant("req_graph000", false, hour, "report", graph)}}, "report",
			map[string]any{"graph": true}, "req_graph000", nil, hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := &State{Policy: both, Base: base, Grants: tc.grants}
			call := policy.Call{Tool: "fake", Subcommand: []string{tc.sub}, Params: tc.params}
			if st.base().Evaluate(call).Allowed() {
				t.Fatalf("the config alone allows the call")
			}
			d, u := st.grantFor(policy.ToolName("fake", []string{tc.sub}), call, nil, now)
			if u == nil || !d.Allowed() {
				t.Fatalf("no grant allows the call")
			}
			if u.id != tc.id || !slices.Equal(u.all, tc.all) || !u.until.Equal(tc.until) {
				t.Errorf("credited %s %v until %s; want %s %v until %s", u.id, u.all, u.until.Format(time.TimeOnly),
					tc.id, tc.all, tc.until.Format(time.TimeOnly))
			}
		})
	}
}

// Among once-grants the oldest is used whichever its kind: an exact-call
// once-grant approved before a capability once-grant that also allows the
// call is the one consumed, and the reverse.
func TestOnceGrantsOldestOfEitherKind(t *testing.T) {
	t.Parallel()
	switches := map[string]*policy.Constraint{"--graph": {Type: "boolean"}}
	rule := func(flags ...string) *policy.Policy {
		return newPolicy(t, policy.Tool{Name: "fake", Binary: fakecli, Allow: []*policy.AllowRule{{Subcommand: []string{"report"},
			Flags: flags, FlagConstraints: switches}}})
	}
	base, graph := rule(), rule("--graph")
	call := policy.Call{Tool: "fake", Subcommand: []string{"report"}, Params: map[string]any{"graph": true}}
	command, ok := base.Command(call)
	if !ok {
		t.Fatal("no command for the call")
	}
	canonical := json.RawMessage(`{"graph":true}`)
	now := time.Now()
	older, newer := now.Add(-2*time.Minute), now.Add(-time.Minute)
	capability := func(approved time.Time) CapabilityGrant {
		return CapabilityGrant{ID: "req_capabil0", Once: true, Until: now.Add(time.Hour), Approved: approved,
			Tool: "fake", Subcommand: []string{"report"}, Policy: graph}
	}
	exact := func(approved time.Time) ExactGrant {
		return ExactGrant{ID: "req_exact000", Once: true, Until: now.Add(time.Hour), Approved: approved,
			Call: requests.Call{Tool: "fake_report", Arguments: canonical, Command: command, Policy: "hash"}}
	}
	for _, tc := range []struct {
		name       string
		cap, exact time.Time
		want       string
	}{
		{"the exact-call grant is older", newer, older, "req_exact000"},
		{"the capability grant is older", older, newer, "req_capabil0"},
		{"approved at the same instant, capability first", older, older, "req_capabil0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := &State{Policy: graph, Base: base, PolicyHash: "hash", Grants: &Grants{
				Capability: []CapabilityGrant{capability(tc.cap)}, Exact: []ExactGrant{exact(tc.exact)}}}
			d, u := st.grantFor("fake_report", call, canonical, now)
			if u == nil || !d.Allowed() {
				t.Fatal("no grant allows the call")
			}
			if u.id != tc.want {
				t.Errorf("credited %s, want %s", u.id, tc.want)
			}
		})
	}
}

// The audit line of a call that needed two grants names the one approved
// last and lists both; one that needed only the second names it alone.
func TestAuditNamesTheGrantsACallUsed(t *testing.T) {
	t.Parallel()
	rules := func(flags ...string) policy.Tool {
		switches := map[string]*policy.Constraint{}
		for _, f := range append([]string{"--oneline"}, flags...) {
			switches[f] = &policy.Constraint{Type: "boolean"}
		}
		return policy.Tool{Name: "fake", Binary: fakecli, Allow: []*policy.AllowRule{{Subcommand: []string{"report"},
			Flags: append([]string{"--oneline"}, flags...), FlagConstraints: switches}}}
	}
	base, both := newPolicy(t, rules()), newPolicy(t, rules("--reverse", "--graph"))
	until := time.Now().Add(time.Hour)
	g := &Grants{Timed: both, TimedUntil: until, Capability: []CapabilityGrant{
		{ID: "req_reverse0", Until: until, Tool: "fake", Subcommand: []string{"report"}, Policy: newPolicy(t, rules("--reverse"))},
		{ID: "req_graph000", Until: until, Tool: "fake", Subcommand: []string{"report"}, Policy: newPolicy(t, rules("--graph"))}}}
	for _, tc := range []struct {
		name   string
		params map[string]any
		grant  string
		grants []string
	}{
		{"only the second grant's flag", map[string]any{"oneline": true, "graph": true}, "req_graph000", nil},
		{"a flag of each", map[string]any{"reverse": true, "graph": true}, "req_graph000", []string{"req_reverse0", "req_graph000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			st := &State{Policy: both, Base: base, Grants: g, Audit: rec.record,
				Runtimes: map[string]Runtime{"fake": {WorkingDir: t.TempDir(), Env: []string{}, Timeout: time.Minute}}}
			if res := callHandler(t, st, tc.params); !ran(t, res) {
				t.Fatalf("denied: %s", toolsettest.ResultText(t, res))
			}
			if len(rec.lines) != 1 {
				t.Fatalf("%d audit lines, want 1", len(rec.lines))
			}
			if l := rec.lines[0]; l.Grant != tc.grant || !slices.Equal(l.Grants, tc.grants) {
				t.Errorf("line names grant %q and grants %v; want %q and %v", l.Grant, l.Grants, tc.grant, tc.grants)
			}
		})
	}
}
