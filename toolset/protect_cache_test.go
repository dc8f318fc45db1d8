package toolset

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wraptool/wraptool/policy/config/configtest"
)

// The kept set is used only while every protected file and folder is the
// one it was: each change below would let a stale set miss a path that
// names a protected file, and each must be refused after it.
func TestProtectedFilesFollowChanges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// change alters the files after the first check, and returns a
		// path that now names a protected file.
		change func(t *testing.T, dir, cfg, log string) string
	}{
		{"a protected file that did not exist yet appears; a hard link to it", func(t *testing.T, dir, _, log string) string {
			configtest.WriteFile(t, log, "{}\n", 0o600)
			link := filepath.Join(dir, "elsewhere", "innocent")
			must(t, os.Link(log, link))
			return link
		}},
		{"a protected file is replaced by rename; a hard link to the new one", func(t *testing.T, dir, cfg, _ string) string {
			next := filepath.Join(filepath.Dir(cfg), ".config.yaml.tmp")
			configtest.WriteFile(t, next, "tools: {}\n", 0o600)
			must(t, os.Rename(next, cfg))
			link := filepath.Join(dir, "elsewhere", "innocent")
			must(t, os.Link(cfg, link))
			return link
		}},
		{"a protected folder is replaced by a symlink to another folder holding another config", func(t *testing.T, dir, cfg, _ string) string {
			other := filepath.Join(dir, "other")
			must(t, os.MkdirAll(other, 0o700))
			configtest.WriteFile(t, filepath.Join(other, "config.yaml"), "tools: {}\n", 0o600)
			must(t, os.Rename(filepath.Dir(cfg), filepath.Join(dir, "old")))
			must(t, os.Symlink(other, filepath.Dir(cfg)))
			return filepath.Join(other, "config.yaml")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cfg := filepath.Join(dir, "etc", "config.yaml")
			log := filepath.Join(dir, "state", "requests.jsonl")
			must(t, os.MkdirAll(filepath.Dir(cfg), 0o700))
			must(t, os.MkdirAll(filepath.Dir(log), 0o700))
			must(t, os.MkdirAll(filepath.Join(dir, "elsewhere"), 0o700))
			configtest.WriteFile(t, cfg, "tools: {}\n", 0o600)
			p := NewProtectedFiles([]string{cfg, log})
			first := p.current()
			if again := p.current(); again != first {
				t.Fatal("the set was resolved again although nothing changed")
			}
			path := tt.change(t, dir, cfg, log)
			if first.names(path) {
				t.Fatalf("test setup: the old set already refuses %s", path)
			}
			if !p.current().names(path) {
				t.Errorf("after the change %s is not refused", path)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
