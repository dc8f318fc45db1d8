package toolset

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/requests"
)

// TestOverlayGrantsExact shows which exact-call grants come into force: only
// those approved under the served config and the policy the load has, timed
// ones first; a record that names no grant, another config, a stale policy
// or no call never allows anything.
func TestOverlayGrantsExact(t *testing.T) {
	t.Parallel()
	served := filepath.Join(t.TempDir(), "wraptool.yaml")
	l := &config.Loaded{Config: &config.Config{File: served}, Policy: &policy.Policy{}}
	until := time.Now().Add(time.Hour)
	exact := func(id, cfg, hash string, once bool) *requests.Record {
		return &requests.Record{ID: id, Tool: "git", Call: &requests.Call{Policy: hash},
			Grant: &requests.Grant{Exact: true, Once: once, Until: until, Config: cfg}}
	}
	noCall := exact("no-call", config.CanonicalPath(served), "h1", false)
	noCall.Call = nil
	tests := []struct {
		name        string
		grants      []*requests.Record
		wantExact   []string
		wantDormant []string
	}{
		{"no grants leave the load's policy and no grants in force", nil, nil, nil},
		{"a once-grant comes after a timed one, whatever the order given", []*requests.Record{
			exact("once", config.CanonicalPath(served), "h1", true),
			exact("timed", config.CanonicalPath(served), "h1", false),
		}, []string{"timed", "once"}, nil},
		{"a grant approved under another config is left out, not dormant", []*requests.Record{
			exact("other", "/elsewhere/wraptool.yaml", "h1", false),
		}, []string{}, nil},
		{"a grant approved under another policy is dormant", []*requests.Record{
			exact("stale", config.CanonicalPath(served), "h0", false),
		}, []string{}, []string{"stale"}},
		{"an exact grant without its call is dormant", []*requests.Record{noCall}, []string{}, []string{"no-call"}},
		{"a record without a grant is left out", []*requests.Record{{ID: "pending", Tool: "git"}}, []string{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := OverlayGrants(l, tt.grants, "h1", GrantHelps{})
			if o.Policy != l.Policy {
				t.Errorf("Policy = %p, want the load's %p (no capability grant)", o.Policy, l.Policy)
			}
			if tt.wantExact == nil {
				if o.Grants != nil {
					t.Errorf("Grants = %+v, want nil", o.Grants)
				}
			} else {
				var got []string
				for _, g := range o.Grants.Exact {
					got = append(got, g.ID)
				}
				if !slices.Equal(got, tt.wantExact) {
					t.Errorf("exact grants in force = %q, want %q", got, tt.wantExact)
				}
			}
			var dormant []string
			for id, err := range o.Dormant {
				dormant = append(dormant, id)
				if !errors.Is(err, ErrPolicyChanged) {
					t.Errorf("Dormant[%s] = %v, want ErrPolicyChanged", id, err)
				}
			}
			if !slices.Equal(dormant, tt.wantDormant) {
				t.Errorf("dormant = %q, want %q", dormant, tt.wantDormant)
			}
		})
	}
}
