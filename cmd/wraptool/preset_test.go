package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
)

// TestPresetsPassTheirOwnPolicyTests adds each preset with config add, as
// an operator would, and runs its tests file through check --tests: the
// command lines it means allowed, and every hostile one (at least five per
// preset) refused. The config validates without a warning.
func TestPresetsPassTheirOwnPolicyTests(t *testing.T) {
	t.Parallel()
	presets := config.Presets()
	if len(presets) < 6 {
		t.Fatalf("%d presets, want gh, gcloud, kubectl, aws and git read, and git push-to-branch", len(presets))
	}
	for _, p := range presets {
		t.Run(p.CLI+"-"+p.Name, func(t *testing.T) {
			t.Parallel()
			dir := configtest.NewFixture(t, map[string]string{
				"config.yaml": "mcp:\n  listen: 127.0.0.1:8717\n  request_log: $DIR/requests.jsonl\ntools: {}\n",
			})
			// The preset runs nothing, so any executable stands in for the
			// tool; one that leaves a mark proves nothing ran.
			bin := filepath.Join(dir, "bin", p.CLI)
			configtest.WriteFile(t, bin, configtest.Expand(recorder, dir), 0o755)
			env := map[string]string{"HOME": filepath.Join(dir, "home")}
			cfg := filepath.Join(dir, "config.yaml")
			stdout, stderr, code := run(t, env, "--config", cfg, "config", "add", p.CLI, "--binary", bin, "--preset", p.Name)
			if code != 0 || !strings.HasPrefix(stdout, "added tool "+p.CLI+" ("+bin+"): preset "+p.Name+" for "+p.CLI+", ") {
				t.Fatalf("config add: exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
			}
			if _, stderr, code := run(t, env, "--config", cfg, "config", "validate"); code != 0 || strings.Contains(stderr, "warning:") {
				t.Errorf("config validate: exit %d, stderr:\n%s", code, stderr)
			}
			if denies := strings.Count(string(p.Tests), "want: deny"); denies < 5 {
				t.Errorf("%d hostile command lines, want at least 5", denies)
			}
			tests := filepath.Join(dir, "preset.tests.yaml")
			if err := os.WriteFile(tests, p.Tests, 0o600); err != nil {
				t.Fatal(err)
			}
			if stdout, stderr, code := run(t, env, "--config", cfg, "check", "--tests", tests); code != 0 {
				t.Errorf("check --tests: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
				t.Errorf("the preset ran the tool")
			}
		})
	}
	t.Run("an unknown preset is a usage error naming the presets there are", func(t *testing.T) {
		t.Parallel()
		dir := configtest.NewFixture(t, map[string]string{"config.yaml": "mcp:\n  listen: 127.0.0.1:8717\ntools: {}\n"})
		cfg := filepath.Join(dir, "config.yaml")
		before, _ := os.ReadFile(cfg)
		_, stderr, code := run(t, map[string]string{"HOME": dir}, "--config", cfg, "config", "add", "git", "--binary", "/usr/bin/git", "--preset", "write\u202e")
		if code != 2 || !strings.Contains(stderr, "its presets: push-to-branch, read") || strings.Contains(stderr, "\u202e") {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
		if after, _ := os.ReadFile(cfg); string(after) != string(before) {
			t.Errorf("the config changed:\n%s", after)
		}
	})
}
