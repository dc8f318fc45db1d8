// Package introspecttest builds the savedhelp fixture (a CLI answering with
// saved help texts) for tests of introspection in other packages.
package introspecttest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// BuildSavedHelp builds introspect/testdata/savedhelp into dir and returns
// its path. Build it once (TestMain) and install copies with Install.
func BuildSavedHelp(ctx context.Context, dir string) (string, error) {
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "testdata", "savedhelp")
	out := filepath.Join(dir, "savedhelp")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
	cmd.Dir = src
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build savedhelp: %v\n%s", err, b)
	}
	return out, nil
}

// Install links the built fixture as dir/name (same file system) and saves texts
// beside it: each key is an argument list as introspection runs it, with
// spaces ("pr list --help"), each value the text printed for it. It
// returns the installed binary's path; the fixture logs its argument lists
// to that path + ".log".
func Install(built, dir, name string, texts map[string]string) (string, error) {
	path := filepath.Join(dir, name)
	// A hard link, not a copy: writing an executable while another
	// goroutine forks can leave a write descriptor open in a child, and
	// exec then fails with "text file busy".
	if err := os.Link(built, path); err != nil {
		return "", err
	}
	if err := os.Mkdir(path+".help", 0o755); err != nil {
		return "", err
	}
	for args, text := range texts {
		f := filepath.Join(path+".help", strings.ReplaceAll(args, " ", "_")+".txt")
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			return "", err
		}
	}
	return path, nil
}
