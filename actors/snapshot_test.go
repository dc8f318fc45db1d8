package actors

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/toolset"
)

// TestNewSnapshot builds a snapshot from a config naming a token file, an
// env file and an overrides file: each is a file a reload reads, so the
// watcher must watch it, and one of wraptool's own files, so a tool must not
// be pointed at it.
func TestNewSnapshot(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	envFile := filepath.Join(f.dir, "fake.env")
	overrides := filepath.Join(f.dir, "overrides.yaml")
	configtest.WriteFile(t, envFile, "FROM_ENV_FILE=yes\n", 0o600)
	configtest.WriteFile(t, overrides, "{}\n", 0o600)
	body := strings.Replace(f.config(t, "info", "--short"), "    allow:\n",
		"    env_files: [fake.env]\n    introspection:\n      overrides_file: overrides.yaml\n    allow:\n", 1)
	configtest.WriteFile(t, f.path, body, 0o600)
	l := f.load(t)
	getenv := func(k string) string {
		return map[string]string{"HOME": "/home/operator", "PATH": "/usr/bin:/bin"}[k]
	}
	slots := toolset.NewSlots(1)
	s := NewSnapshot(l, nil, Shared{Slots: slots}, getenv)

	checks := []struct {
		name      string
		got, want any
	}{
		{"Policy", s.Policy, l.Policy},
		{"Config", s.Config, l.Config},
		{"MCPToken", s.MCPToken, "first-token"},
		{"Hash", s.Hash, l.Hash},
		{"Slots", s.Slots, slots},
		{"Runtimes[fake].Home", s.Runtimes["fake"].Home, "/home/operator"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if got, want := s.WatchPaths(), []string{f.path, f.token, envFile, overrides}; !slices.Equal(got, want) {
		t.Errorf("WatchPaths() = %q, want %q", got, want)
	}
	rt := s.Runtimes["fake"]
	for _, own := range []string{f.path, f.token, envFile, overrides, filepath.Join(f.dir, "requests.jsonl")} {
		if !slices.Contains(rt.Protected.Paths(), own) {
			t.Errorf("Runtimes[fake].Protected = %q, want %s among them", rt.Protected.Paths(), own)
		}
	}
	if !slices.Contains(rt.Env, "FROM_ENV_FILE=yes") {
		t.Errorf("Runtimes[fake].Env = %q, want FROM_ENV_FILE=yes from the env file", rt.Env)
	}
}
