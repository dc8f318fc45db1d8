package edit

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
)

// These tests hold the grant overlay (config.Loaded.Overlay) to the files
// ApplyRequest writes: one merge, so a grant puts in force exactly what
// applying the same request would.

func loadFor(t *testing.T, path, dir string) *config.Loaded {
	t.Helper()
	l, err := config.LoadFile(context.Background(), path, &config.LoadOptions{Paths: applyOptions(dir), Tokens: config.TokensOptional})
	if err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	return l
}

// TestOverlayMergesAsApplyRequestDoes runs every golden apply case as
// grants: the overlay's policy is the policy of the file ApplyRequest
// writes, whether the requests are granted for a while or once, and the
// config file is not touched.
func TestOverlayMergesAsApplyRequestDoes(t *testing.T) {
	t.Parallel()
	for _, tc := range applyGolden {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := configtest.ApplyFixture(t)
			in := configtest.ReadFile(t, filepath.Join("testdata/apply", tc.name+".in.yaml"))
			cfg := configtest.WriteConfig(t, dir, "config.yaml", string(in), 0o600)
			want := configtest.WriteConfig(t, dir, "want.yaml", string(configtest.ReadFile(t, filepath.Join("testdata/apply", tc.name+".want.yaml"))), 0o600)
			wantRules := configtest.RulesOf(loadFor(t, want, dir).Policy)

			var grants []config.GrantSpec
			for i, r := range tc.reqs {
				grants = append(grants, config.GrantSpec{ID: fmt.Sprintf("req_%08d", i), Tool: r.tool, Subcommand: r.sub, Flags: r.flags})
			}
			l := loadFor(t, cfg, dir)
			before := configtest.RulesOf(l.Policy)
			timed := l.Overlay(grants, nil)
			if len(timed.Dormant) > 0 {
				t.Fatalf("dormant: %v", timed.Dormant)
			}
			if got := configtest.RulesOf(timed.Policy); !slices.Equal(got, wantRules) {
				t.Errorf("timed overlay:\n got %q\nwant %q", got, wantRules)
			}
			if got := configtest.RulesOf(timed.Timed); !slices.Equal(got, wantRules) {
				t.Errorf("timed overlay's Timed differs from its Policy")
			}
			once := l.Overlay(nil, grants)
			if got := configtest.RulesOf(once.Policy); !slices.Equal(got, wantRules) {
				t.Errorf("once overlay:\n got %q\nwant %q", got, wantRules)
			}
			if got := configtest.RulesOf(once.Timed); !slices.Equal(got, before) {
				t.Errorf("once overlay's Timed is not the config alone")
			}
			if len(once.Each) != len(grants) {
				t.Errorf("policies for %d of %d grants", len(once.Each), len(grants))
			}
			if got := configtest.RulesOf(l.Policy); !slices.Equal(got, before) {
				t.Errorf("the overlay changed the loaded policy")
			}
			if !bytes.Equal(configtest.ReadFile(t, cfg), []byte(strings.ReplaceAll(string(in), "$DIR", dir))) {
				t.Errorf("the overlay wrote the config")
			}
		})
	}
}

// TestOverlayRefusesAsApplyRequestDoes runs ApplyRequest's refusal cases
// (those on a config that loads) as grants: each is dormant with the very
// error ApplyRequest gives, and the other grants still merge.
func TestOverlayRefusesAsApplyRequestDoes(t *testing.T) {
	t.Parallel()
	for _, tc := range applyRefusals() {
		if tc.setup != nil || strings.Contains(tc.msg, "does not load") {
			continue // about the file, not the merge
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := configtest.ApplyFixture(t)
			body := tc.config
			if body == "" {
				body = configtest.RefusalConfig
			}
			cfg := configtest.WriteConfig(t, dir, "config.yaml", body, 0o600)
			l := loadFor(t, cfg, dir)
			good := config.GrantSpec{ID: "req_good", Tool: "git", Subcommand: []string{"status"}, Flags: []string{"--short"}}
			bad := config.GrantSpec{ID: "req_bad", Tool: tc.tool, Subcommand: tc.sub, Flags: tc.flags}
			o := l.Overlay([]config.GrantSpec{bad, good}, nil)
			msg := strings.NewReplacer("$CFG", cfg, "$DIR", dir).Replace(tc.msg)
			if err := o.Dormant["req_bad"]; err == nil || err.Error() != msg {
				t.Errorf("dormant error:\n got %v\nwant %s", err, msg)
			}
			if err := l.Overlay(nil, []config.GrantSpec{bad}).Dormant["req_bad"]; err == nil || err.Error() != msg {
				t.Errorf("dormant once-grant error:\n got %v\nwant %s", err, msg)
			}
			if _, ok := o.Dormant["req_good"]; ok {
				t.Errorf("a good grant went dormant beside a bad one: %v", o.Dormant["req_good"])
			}
			if _, ok := o.Policy.Rule("git_status"); !ok {
				t.Errorf("the good grant is not in force")
			}
			if _, ok := l.Overlay(nil, []config.GrantSpec{bad}).Each["req_bad"]; ok {
				t.Errorf("a refused once-grant has a policy")
			}
		})
	}
}
