package configtest

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile writes content to path with mode, making its folder (0700) when
// it is missing, and returns path so a table can name the file it wrote.
// The mode is set even where the umask would narrow it or the file already
// had another, but only when it differs: a chmod is an event of its own to
// a watcher.
func WriteFile(t testing.TB, path, content string, mode os.FileMode) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != mode.Perm() {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// ReplaceFile is WriteAndRename failing t on an error.
func ReplaceFile(t testing.TB, path, content string) {
	t.Helper()
	if err := WriteAndRename(path, content); err != nil {
		t.Fatal(err)
	}
}

// WriteAndRename replaces path (mode 0600) by renaming a new file over it,
// as editors save, so a concurrent reader sees the old bytes or the new
// ones, never a partial file. The new file is a dot-file in the same
// folder, as an editor's swap file is. It returns its error rather than
// failing a test, for goroutines that must not call t.Fatal.
func WriteAndRename(path, content string) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".swp")
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadFile is path's content, failing t when it cannot be read.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
