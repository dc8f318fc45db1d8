package edit

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

func TestStarterGolden(t *testing.T) {
	cases := []struct {
		name, git, golden string
	}{
		{"with git installed", "/usr/bin/git", "testdata/starter-git.yaml"},
		{"without git", "", "testdata/starter-nogit.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Starter(tc.git)
			if *update {
				if err := os.WriteFile(tc.golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(tc.golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("starter differs from %s (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", tc.golden, got, want)
			}
		})
	}
}

// The starter validates on any machine: with git at a real executable, and
// without git at all.
func TestStarterValidates(t *testing.T) {
	t.Parallel()
	dir := configtest.ApplyFixture(t)
	for _, git := range []string{filepath.Join(dir, "bin/git"), ""} {
		c, err := config.Parse(filepath.Join(dir, "config.yaml"), Starter(git), &config.Options{Home: dir, Getenv: func(string) string { return "" }})
		if err != nil {
			t.Fatalf("starter with git %q: %v", git, err)
		}
		wantTools := 1
		if git == "" {
			wantTools = 0
		}
		if len(c.Tools) != wantTools {
			t.Errorf("starter with git %q has %d tools, want %d", git, len(c.Tools), wantTools)
		}
		if want := filepath.Join(dir, ".config/wraptool/mcp-token"); c.MCP.AuthTokenFile != want {
			t.Errorf("auth_token_file = %q, want %q", c.MCP.AuthTokenFile, want)
		}
	}
}

func TestScaffold(t *testing.T) {
	t.Parallel()
	noGit := &ScaffoldOptions{LookGit: func() (string, error) { return "", errors.New("not found") }}
	withGit := &ScaffoldOptions{LookGit: func() (string, error) { return "/opt/git/bin/git", nil }}

	t.Run("it writes the starter with mode 0600 in a new 0700 folder", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "a", "wraptool", "config.yaml")
		created, err := Scaffold(path, withGit)
		if err != nil || !created {
			t.Fatalf("Scaffold = %v, %v; want true, nil", created, err)
		}
		assertMode(t, path, 0o600)
		assertMode(t, filepath.Dir(path), 0o700|os.ModeDir)
		got, _ := os.ReadFile(path)
		if !bytes.Equal(got, Starter("/opt/git/bin/git")) {
			t.Errorf("file is not the starter for the injected git:\n%s", got)
		}
		leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*"))
		if len(leftovers) > 0 {
			t.Errorf("temporary files left behind: %q", leftovers)
		}
	})
	t.Run("it writes the commented-out rule when git is missing", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "config.yaml")
		if _, err := Scaffold(path, noGit); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		if !bytes.Equal(got, Starter("")) {
			t.Errorf("file is not the git-less starter:\n%s", got)
		}
	})
	t.Run("it never overwrites an existing file", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte("mine\n"), 0o640); err != nil {
			t.Fatal(err)
		}
		created, err := Scaffold(path, withGit)
		if err != nil || created {
			t.Fatalf("Scaffold = %v, %v; want false, nil", created, err)
		}
		got, _ := os.ReadFile(path)
		if string(got) != "mine\n" {
			t.Errorf("existing file changed to %q", got)
		}
		assertMode(t, path, 0o640)
	})
	t.Run("it never replaces a dangling symlink", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		path := filepath.Join(dir, "config.yaml")
		if err := os.Symlink(filepath.Join(dir, "elsewhere.yaml"), path); err != nil {
			t.Fatal(err)
		}
		created, err := Scaffold(path, withGit)
		if err != nil || created {
			t.Fatalf("Scaffold = %v, %v; want false, nil", created, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "elsewhere.yaml")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the symlink's target was written: %v", err)
		}
	})
	t.Run("it keeps the mode of an existing folder", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "shared")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := Scaffold(filepath.Join(dir, "config.yaml"), noGit); err != nil {
			t.Fatal(err)
		}
		assertMode(t, dir, 0o755|os.ModeDir)
	})
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode() & (os.ModePerm | os.ModeDir); got != want {
		t.Errorf("%s mode = %v, want %v", path, got, want)
	}
}
