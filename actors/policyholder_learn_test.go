package actors

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
)

// learnConfig has fake with one rule (status) and a deny rule (danger): a
// request's subcommand is one of them or one no rule names.
const learnConfig = `mcp:
  listen: 127.0.0.1:8717
  auth_token_file: mcp-token
  request_log: requests.jsonl
tools:
  fake:
    binary: %s
    allow:
      - subcommand: [status]
        flags: [--short]
    deny:
      - subcommand: [danger]
`

// learnRuns is an introspect step that knows the help of every rule of the
// config it is given, except "broken", and records which subcommands each
// run saw; a run that sees "commit" waits for hold to be closed.
type learnRuns struct {
	hold chan struct{}
	mu   sync.Mutex
	runs [][]string // each run's subcommands beyond status, joined
}

func (r *learnRuns) introspect(ctx context.Context, c *config.Config, _ bool) (policy.Helps, error) {
	var h commitHelps
	var extra []string
	for _, rule := range c.Tools["fake"].Allow {
		sub := strings.Join(rule.Subcommand, " ")
		if sub != "broken" {
			h.subs = append(h.subs, rule.Subcommand)
		}
		if sub != "status" {
			extra = append(extra, sub)
		}
	}
	if len(extra) > 0 {
		r.mu.Lock()
		r.runs = append(r.runs, extra)
		r.mu.Unlock()
	}
	if slices.Contains(extra, "commit") {
		select {
		case <-r.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return h, nil
}

// ran lists the subcommands beyond the config's that help runs have seen.
func (r *learnRuns) ran() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.runs)
}

// TestHolderLearnsARequestedSubcommandsHelp shows the policy holder learn
// the help of a subcommand a request names and no rule does, when a screen
// asks (LearnHelps): the ask is answered once the snapshot in service knows
// that help, which exposes nothing new; an ask for what is known, for a tool
// the config does not have, or for a subcommand a deny rule covers is
// answered at once and runs nothing; a help that cannot be learned is
// tried once per load; what was learned survives a change of grants and is
// learned again after a reload; a stopped holder answers ErrStopped. Before,
// nothing on the server learned a request's subcommand: the review page,
// the admin API and elicitation showed HELP UNKNOWN.
func TestHolderLearnsARequestedSubcommandsHelp(t *testing.T) {
	f := newConfigFixture(t)
	configtest.ReplaceFile(t, f.path, strings.ReplaceAll(learnConfig, "%s", f.tool()))
	runs := &learnRuns{hold: make(chan struct{})}
	l, err := config.LoadFile(t.Context(), f.path, &config.LoadOptions{Paths: f.opts, Introspect: runs.introspect})
	if err != nil {
		t.Fatal(err)
	}
	loaded := make(chan messages.ConfigLoaded)
	grants := make(chan messages.GrantsChanged)
	learns := make(chan messages.LearnHelps)
	stopped := make(chan struct{})
	toolsetChanged := make(messages.Doorbell, 1)
	getenv := func(string) string { return "" }
	h := NewPolicyHolder(PolicyHolderOptions{Initial: NewSnapshot(l, nil, Shared{}, getenv), Getenv: getenv,
		Loaded: loaded, Grants: grants, Learns: learns, Stopped: stopped, ToolsetChanged: toolsetChanged})
	stop := start(t, h)
	links := messages.HelpLinks{Learns: learns, Stopped: stopped}
	learn := func(tool string, sub ...string) error {
		ctx, cancel := context.WithTimeout(t.Context(), wait)
		defer cancel()
		return links.Learn(ctx, []config.GrantSpec{{Tool: tool, Subcommand: sub, Flags: []string{"-m"}}})
	}
	knows := func(sub ...string) bool { return config.HelpKnown(h.Current().Helps, "fake", sub) }
	if knows("commit") {
		t.Fatal("the load already knows commit's help")
	}

	answered := make(chan error, 1)
	go func() { answered <- learn("fake", "commit") }()
	waitUntil(t, "commit's help is being learned", func() bool { return len(runs.ran()) == 1 })
	select {
	case err := <-answered:
		t.Fatalf("the ask was answered (%v) before the help was learned", err)
	default:
	}
	close(runs.hold)
	if err := <-answered; err != nil {
		t.Fatalf("learning commit: %v", err)
	}
	if !knows("commit") {
		t.Fatal("the ask was answered, but the snapshot in service does not know commit's help")
	}
	if _, exposed := h.Current().Policy.Rule("fake_commit"); exposed {
		t.Error("learning a requested subcommand's help exposed a tool for it")
	}

	for _, c := range []struct {
		name string
		tool string
		sub  []string
	}{
		{"known", "fake", []string{"commit"}},
		{"a tool the config does not have", "nope", []string{"commit"}},
		{"a subcommand a deny rule covers", "fake", []string{"danger"}},
		{"below a denied subcommand", "fake", []string{"danger", "now"}},
	} {
		if err := learn(c.tool, c.sub...); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if err := learn("fake", "broken"); err != nil {
		t.Errorf("broken: %v", err)
	}
	if knows("broken") {
		t.Error("a help that could not be learned is known")
	}
	if err := learn("fake", "broken"); err != nil {
		t.Errorf("broken again: %v", err)
	}
	want := [][]string{{"commit"}, {"commit", "broken"}}
	if got := runs.ran(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("help runs saw %q, want %q (nothing run for a known help, another tool, a denied subcommand, "+
			"or a help tried under this load)", got, want)
	}

	select { // the ring of the snapshots before (rung before each answer)
	case <-toolsetChanged:
	default:
	}
	select {
	case grants <- messages.GrantsChanged{Cause: "grant"}:
	case <-t.Context().Done():
	}
	receive(t, toolsetChanged, "the snapshot after the grants changed")
	if !knows("commit") {
		t.Error("a change of grants forgot commit's help")
	}
	l2, err := config.LoadFile(t.Context(), f.path, &config.LoadOptions{Paths: f.opts, Introspect: runs.introspect})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case loaded <- messages.ConfigLoaded{Loaded: l2, Cause: "file"}:
	case <-t.Context().Done():
	}
	waitUntil(t, "commit's help is learned again after the reload", func() bool { return h.Current().Loaded == l2 && knows("commit") })

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := learn("fake", "log"); !errors.Is(err, messages.ErrStopped) {
		t.Errorf("an ask to a stopped holder: %v, want %v", err, messages.ErrStopped)
	}
}

// TestHolderKeepsAtMostMaxWantedSubcommands shows the requested
// subcommands the holder keeps learning bounded: the assistant chooses
// them, one ask can name many, and the oldest fall out first.
func TestHolderKeepsAtMostMaxWantedSubcommands(t *testing.T) {
	h := &PolicyHolder{}
	for i := range maxWanted + 10 {
		h.want(config.GrantSpec{Tool: "fake", Subcommand: []string{"s" + strings.Repeat("x", i)}})
		h.want(config.GrantSpec{Tool: "fake", Subcommand: []string{"s" + strings.Repeat("x", i)}})
	}
	if len(h.wanted) != maxWanted {
		t.Fatalf("wanted holds %d, want %d", len(h.wanted), maxWanted)
	}
	if got := h.wanted[0].Subcommand[0]; got != "s"+strings.Repeat("x", 10) {
		t.Errorf("the oldest kept is %q, want the 11th asked for", got)
	}
}
