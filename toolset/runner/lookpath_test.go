package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLookPath shows an upstream's command found the way the child's own
// PATH would find it: only absolute entries, only executable regular files.
//
// Not parallel: it works in a changed working directory, so that relative
// PATH entries ("c", ".") would find a file if they were searched.
func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	mk := func(rel string, mode os.FileMode) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := mk("a/srv", 0o600)                                             // not executable
	if err := os.MkdirAll(filepath.Join(dir, "b/srv"), 0o700); err != nil { // a folder
		t.Fatal(err)
	}
	found := mk("c/srv", 0o700)
	mk("d/other", 0o700)
	t.Chdir(dir)
	mk("srv", 0o700) // in the working directory: never found through PATH

	path := "PATH=" + strings.Join([]string{filepath.Join(dir, "a"), filepath.Join(dir, "b"), "", ".", "c", filepath.Join(dir, "c")}, ":")
	cases := []struct {
		name, file string
		env        []string
		want       string // "" means an error
	}{
		{"the first executable regular file in an absolute entry", "srv", []string{"HOME=/h", path}, found},
		{"a name with a slash is taken as written", "./x/srv", []string{path}, "./x/srv"},
		{"an absolute path is taken as written", plain, []string{path}, plain},
		{"not found names the PATH searched", "nosuch", []string{path}, ""},
		{"relative entries alone find nothing", "srv", []string{"PATH=.:c:"}, ""},
		{"no PATH means the fallback", "sh", nil, "/usr/bin/sh"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LookPath(tc.file, tc.env)
			switch {
			case tc.want == "" && err == nil:
				t.Errorf("found %q, want an error", got)
			case tc.want == "" && !strings.Contains(err.Error(), "not found in PATH"):
				t.Errorf("error %q does not say where it looked", err)
			case tc.want != "" && (err != nil || got != tc.want):
				if tc.file == "sh" && err == nil && got == "/bin/sh" {
					return // a system without /usr/bin/sh
				}
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
