package config

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config/configtest"
)

func loadFor(t *testing.T, path, dir string) *Loaded {
	t.Helper()
	l, err := LoadFile(context.Background(), path, &LoadOptions{Paths: applyOptions(dir), Tokens: TokensOptional})
	if err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	return l
}

// TestOverlayEachGrantStandsApart shows that each grant's own policy holds
// that grant alone, so a call is credited to the grant that really allows
// it, while Timed holds every timed grant and Policy every grant.
func TestOverlayEachGrantStandsApart(t *testing.T) {
	t.Parallel()
	dir := configtest.ApplyFixture(t)
	cfg := configtest.WriteConfig(t, dir, "config.yaml", configtest.RefusalConfig, 0o600)
	l := loadFor(t, cfg, dir)
	o := l.Overlay(
		[]GrantSpec{{ID: "t1", Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--atomic"}}},
		[]GrantSpec{
			{ID: "o1", Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--dry-run"}},
			{ID: "o2", Tool: "git", Subcommand: []string{"fetch"}},
		})
	flags := func(p *policy.Policy, name string) []string {
		r, ok := p.Rule(name)
		if !ok {
			return nil
		}
		var out []string
		for _, f := range r.Flags() {
			if !f.Help {
				out = append(out, f.Flag)
			}
		}
		return out
	}
	for _, c := range []struct {
		what string
		p    *policy.Policy
		want []string
	}{
		{"Timed", o.Timed, []string{"--atomic"}},
		{"t1", o.Each["t1"], []string{"--atomic"}},
		{"o1", o.Each["o1"], []string{"--dry-run"}},
		{"o2", o.Each["o2"], nil},
		{"Policy", o.Policy, []string{"--atomic", "--dry-run"}},
	} {
		if got := flags(c.p, "git_push"); !slices.Equal(got, c.want) {
			t.Errorf("%s: git_push flags %v, want %v", c.what, got, c.want)
		}
	}
	if _, ok := o.Each["o1"].Rule("git_fetch"); ok {
		t.Errorf("o1's policy holds o2's rule")
	}
	if _, ok := o.Policy.Rule("git_fetch"); !ok {
		t.Errorf("the served policy lacks o2's rule")
	}
	r, ok := o.Each["o2"].Rule("git_fetch")
	if !ok {
		t.Fatal("o2's policy lacks its rule")
	}
	if n, limited := r.PositionalMax(); !limited || n != 0 {
		t.Errorf("a rule from a grant allows %d positionals (limited %v), want 0", n, limited)
	}
}

// TestPolicyHash shows the hash covers the config, env and overrides files
// but not the token files.
func TestPolicyHash(t *testing.T) {
	t.Parallel()
	dir := configtest.ApplyFixture(t)
	configtest.WriteConfig(t, dir, "tok", "t0k3n-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n", 0o600)
	configtest.WriteConfig(t, dir, "env", "A=1\n", 0o600)
	cfg := configtest.WriteConfig(t, dir, "config.yaml", `mcp:
  listen: 127.0.0.1:8717
  auth_token_file: $DIR/tok
tools:
  git:
    binary: $DIR/bin/git
    env_files: [$DIR/env]
`, 0o600)
	h0 := loadFor(t, cfg, dir).PolicyHash()
	configtest.WriteConfig(t, dir, "tok", "an0ther-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n", 0o600)
	if h := loadFor(t, cfg, dir).PolicyHash(); h != h0 {
		t.Errorf("a token change changed the policy hash")
	}
	configtest.WriteConfig(t, dir, "env", "A=2\n", 0o600)
	h1 := loadFor(t, cfg, dir).PolicyHash()
	if h1 == h0 {
		t.Errorf("an env file change kept the policy hash")
	}
	configtest.WriteConfig(t, dir, "config.yaml", strings.ReplaceAll(string(configtest.ReadFile(t, cfg)), "8717", "8718"), 0o600)
	if h := loadFor(t, cfg, dir).PolicyHash(); h == h1 {
		t.Errorf("a config change kept the policy hash")
	}
}

// TestCanonicalPath shows the one spelling a grant records: absolute, with
// symlinks resolved, so a grant approved through a link applies to the
// server serving the file.
func TestCanonicalPath(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := configtest.WriteConfig(t, dir, "config.yaml", "mcp: {}\n", 0o600)
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{real, link, filepath.Join(dir, ".", "sub", "..", "link.yaml")} {
		if got := CanonicalPath(p); got != real {
			t.Errorf("CanonicalPath(%s) = %s, want %s", p, got, real)
		}
	}
	if got := CanonicalPath(filepath.Join(dir, "missing.yaml")); got != filepath.Join(dir, "missing.yaml") {
		t.Errorf("a missing file: %s", got)
	}
}

// TestPolicyHashSameWithOrWithoutIntrospection shows the CLI (which may not
// introspect) and the server (which does, reading the overrides files)
// agree on the policy hash, overrides file included.
func TestPolicyHashSameWithOrWithoutIntrospection(t *testing.T) {
	t.Parallel()
	dir := configtest.ApplyFixture(t)
	configtest.WriteConfig(t, dir, "overrides.yaml", "{}\n", 0o600)
	cfg := configtest.WriteConfig(t, dir, "config.yaml", `mcp:
  listen: 127.0.0.1:8717
tools:
  git:
    binary: $DIR/bin/git
    introspection: {overrides_file: $DIR/overrides.yaml}
`, 0o600)
	plain := loadFor(t, cfg, dir).PolicyHash()
	introspected, err := LoadFile(context.Background(), cfg, &LoadOptions{Paths: applyOptions(dir), Tokens: TokensOptional,
		Introspect: func(_ context.Context, c *Config, _ bool) (policy.Helps, error) {
			_, err := c.ReadOverrides("git")
			return nil, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	if introspected.PolicyHash() != plain {
		t.Errorf("the policy hash depends on whether the load introspected")
	}
	configtest.WriteConfig(t, dir, "overrides.yaml", "{git: {}}\n", 0o600)
	if loadFor(t, cfg, dir).PolicyHash() == plain {
		t.Errorf("an overrides change kept the policy hash")
	}
}
