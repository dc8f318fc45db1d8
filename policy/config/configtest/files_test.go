package configtest

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFile(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// before prepares dir and returns the path to write.
		before func(t *testing.T, dir string) string
		mode   os.FileMode
	}{
		{"a new file in a missing folder gets the folder and the mode",
			func(t *testing.T, dir string) string { return filepath.Join(dir, "a", "b", "config.yaml") }, 0o600},
		{"a mode the umask would narrow is set whole",
			func(t *testing.T, dir string) string { return filepath.Join(dir, "open") }, 0o666},
		{"an existing file with another mode takes the new one",
			func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "tool")
				if err := os.WriteFile(p, []byte("old and longer\n"), 0o755); err != nil {
					t.Fatal(err)
				}
				return p
			}, 0o600},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := tc.before(t, t.TempDir())
			if got := WriteFile(t, path, "new\n", tc.mode); got != path {
				t.Errorf("WriteFile returned %q, want %q", got, path)
			}
			if got := string(ReadFile(t, path)); got != "new\n" {
				t.Errorf("content = %q, want %q", got, "new\n")
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != tc.mode {
				t.Errorf("mode = %04o, want %04o", fi.Mode().Perm(), tc.mode)
			}
		})
	}
}

func TestWriteAndRenameLeavesNoSwapFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := WriteFile(t, filepath.Join(dir, "config.yaml"), "old\n", 0o600)
	ReplaceFile(t, path, "new\n")
	if got := string(ReadFile(t, path)); got != "new\n" {
		t.Errorf("content = %q, want %q", got, "new\n")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("the folder holds %d entries, want only the config", len(entries))
	}
	if err := WriteAndRename(filepath.Join(dir, "missing", "config.yaml"), "x"); err == nil {
		t.Error("WriteAndRename into a missing folder = nil, want an error")
	}
}
