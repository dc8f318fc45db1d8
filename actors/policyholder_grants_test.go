package actors

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/toolset"
)

// commitHelps is a help that knows every subcommand of the config it was
// learned for, and says of "commit" what git's help says: -m takes a value.
type commitHelps struct{ subs [][]string }

func (h commitHelps) knows(sub []string) bool {
	return slices.ContainsFunc(h.subs, func(s []string) bool { return slices.Equal(s, sub) }) || len(sub) == 0
}

func (h commitHelps) Flag(tool string, sub []string, flag string) (policy.FlagHelp, bool) {
	if h.knows(sub) && slices.Equal(sub, []string{"commit"}) && flag == "-m" {
		return policy.FlagHelp{Type: policy.TypeString, Description: "commit message"}, true
	}
	return policy.FlagHelp{}, false
}
func (h commitHelps) Description(string, []string) string  { return "" }
func (h commitHelps) ShortHelpTaken(string, []string) bool { return false }
func (h commitHelps) Subcommands(tool string, sub []string) (map[string]string, bool) {
	return map[string]string{}, h.knows(sub)
}

// TestGrantIsIntrospectedBeforeItIsInForce shows a grant's merged rule
// learned like a config rule before the grant is in force: while its help is
// being learned the grant is not in force (the holder's loop still answers),
// and once learned its -m takes a value as git's help says, so
// commit -m x runs under positional_max 0. Before, the merged rule was
// compiled with the load's help alone, which had never seen commit: -m was
// unproven and its value counted as a positional argument.
func TestGrantIsIntrospectedBeforeItIsInForce(t *testing.T) {
	f := newConfigFixture(t)
	release := make(chan struct{})
	var runs atomic.Int32
	introspect := func(ctx context.Context, c *config.Config, _ bool) (policy.Helps, error) {
		var h commitHelps
		for _, r := range c.Tools["fake"].Allow {
			h.subs = append(h.subs, r.Subcommand)
		}
		if slices.ContainsFunc(h.subs, func(s []string) bool { return slices.Equal(s, []string{"commit"}) }) {
			runs.Add(1)
			select { // a help run, held until the test lets it end
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return h, nil
	}
	l, err := config.LoadFile(t.Context(), f.path, &config.LoadOptions{Paths: f.opts, Introspect: introspect})
	if err != nil {
		t.Fatal(err)
	}
	grants := make(chan messages.GrantsChanged)
	toolsetChanged := make(messages.Doorbell, 1)
	getenv := func(string) string { return "" }
	h := NewPolicyHolder(PolicyHolderOptions{Initial: NewSnapshot(l, nil, Shared{}, getenv), Getenv: getenv,
		Loaded: make(chan messages.ConfigLoaded), Grants: grants, ToolsetChanged: toolsetChanged})
	start(t, h)

	now := time.Now()
	g := &requests.Record{ID: "req_0000c0de", Tool: "fake", Subcommand: []string{"commit"}, Flags: []string{"-m"},
		Status: requests.StatusApproved, DecidedAt: &now,
		Grant: &requests.Grant{Until: now.Add(time.Hour), Config: config.CanonicalPath(f.path)}}
	select {
	case grants <- messages.GrantsChanged{Grants: []*requests.Record{g}, Cause: "grant"}:
	case <-time.After(wait):
		t.Fatal("the holder did not take the grant")
	}
	receive(t, toolsetChanged, "the snapshot with the grant learning")
	call := policy.Call{Tool: "fake", Subcommand: []string{"commit"}, Params: map[string]any{"m": "x"}}
	snap := h.Current()
	if err := snap.Dormant[g.ID]; !errors.Is(err, toolset.ErrLearningHelp) {
		t.Errorf("while its help is learned, the grant's state = %v, want %v", err, toolset.ErrLearningHelp)
	}
	if d := snap.Policy.Evaluate(call); d.Allowed() {
		t.Errorf("commit -m x is allowed before the grant's help is learned")
	}
	waitUntil(t, "the grant's help is being learned", func() bool { return runs.Load() == 1 })
	close(release)
	receive(t, toolsetChanged, "the snapshot with the grant in force")
	snap = h.Current()
	if d := snap.Policy.Evaluate(call); !d.Allowed() {
		t.Fatalf("commit -m x under the learned grant: %s", d.Refusal.Text)
	}
	if _, dormant := snap.Dormant[g.ID]; dormant {
		t.Errorf("the grant is still dormant: %v", snap.Dormant[g.ID])
	}
	if _, ok := snap.Helps.Flag("fake", []string{"commit"}, "-m"); !ok {
		t.Errorf("the snapshot's help does not include the learned one: %+v", snap.Helps)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("help runs for the grant = %d, want 1 (a learned grant is not learned again)", n)
	}
}
