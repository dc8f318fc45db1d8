package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestConfigAddRefusedLeavesNoStarter: a run that scaffolded the starter
// config and was then refused removes it again.
func TestConfigAddRefusedLeavesNoStarter(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"a binary that does not exist", []string{"x", "--binary", "/nonexistent/x"}},
		{"a tool not on PATH", []string{"nothere"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			env := addEnv(t, dir, filepath.Join(dir, "bin"))
			_, stderr, code := run(t, env, append([]string{"config", "add"}, tt.args...)...)
			if code != 1 {
				t.Errorf("exit %d, want 1 (stderr %q)", code, stderr)
			}
			if _, err := os.Lstat(env["WRAPTOOL_CONFIG"]); !os.IsNotExist(err) {
				t.Errorf("the starter config is left behind (%v); stderr %q", err, stderr)
			}
		})
	}
}
