package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReplace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		old  string // "" for no file yet
		mode os.FileMode
	}{
		{"a new file, private", "", 0o600},
		{"over an old file, readable", "old bytes that are longer than the new", 0o644},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "f.json")
			if tc.old != "" {
				if err := os.WriteFile(path, []byte(tc.old), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := Replace(path, []byte("new"), tc.mode); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			info, serr := os.Stat(path)
			if err != nil || serr != nil || string(data) != "new" || info.Mode().Perm() != tc.mode {
				t.Errorf("after Replace: %q (%v), mode %v (%v); want \"new\", %v", data, err, info.Mode().Perm(), serr, tc.mode)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".f.json.tmp*")); len(left) != 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}

// A folder that cannot take the temporary file leaves the old file as it
// was and says why.
func TestReplaceFailsWithoutTouchingTheFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "missing", "f.json")
	if err := Replace(path, []byte("new"), 0o600); err == nil {
		t.Fatal("Replace into a missing folder succeeded")
	}
}
