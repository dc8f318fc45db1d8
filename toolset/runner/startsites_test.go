package runner

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestEveryStartGoesThroughTheSandbox keeps confinement total: outside this
// package no code of wraptool's starts a process itself (exec.Cmd.Start or
// Run, os.StartProcess, syscall.ForkExec or Exec), so every child reaches
// Reaper.Start, which confines it. Tests and test fixtures are exempt.
func TestEveryStartGoesThroughTheSandbox(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// In a file that imports os/exec, any call of a method named as
	// exec.Cmd's starting ones; anywhere, the lower-level starts.
	cmdStarts := regexp.MustCompile(`\.(Start|Run|Output|CombinedOutput)\(\)`)
	rawStarts := regexp.MustCompile(`os\.StartProcess|syscall\.(ForkExec|Exec|RawSyscall\(syscall\.SYS_(FORK|VFORK|CLONE|EXECVE))\b`)
	var found []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && rel != "." ||
				rel == filepath.Join("toolset", "runner") || strings.HasSuffix(d.Name(), "test") && rel != "integration" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasPrefix(rel, "integration") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		usesExec := strings.Contains(string(data), `"os/exec"`)
		for i, line := range strings.Split(string(data), "\n") {
			code, _, _ := strings.Cut(line, "//")
			if rawStarts.MatchString(code) || usesExec && cmdStarts.MatchString(code) {
				found = append(found, rel+":"+strconv.Itoa(i+1)+": "+strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("a process started outside toolset/runner, unconfined: %s", f)
	}
}
