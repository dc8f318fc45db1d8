package toolset

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy"
)

// An empty PATH entry means the current directory, which the client picks
// with cwd. With the server's PATH ending in ':', `git pull evil::x` would
// run ./git-remote-evil from a repository the client wrote: the real git
// must not find it.
func TestGitDoesNotRunAHelperFromTheClientsCwd(t *testing.T) {
	t.Parallel()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("git is not installed, and CI must run this test: %v", err)
		}
		t.Skipf("git is not installed: %v", err)
	}
	base, _ := filepath.EvalSymlinks(t.TempDir())
	repo, home, marker := filepath.Join(base, "repo"), filepath.Join(base, "home"), filepath.Join(base, "helper-ran")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	serverEnv := fakeEnv(map[string]string{"PATH": "/usr/bin:", "HOME": home})
	env := Environ(gitBin, serverEnv, nil, map[string]string{"GIT_CONFIG_NOSYSTEM": "1"})
	if res := Run(context.Background(), Command{Argv: []string{gitBin, "init", "-q", repo}, Env: env, Timeout: time.Minute}); res.ExitCode != 0 || res.Err != nil {
		t.Fatalf("git init: exit %d, err %v, stderr %q", res.ExitCode, res.Err, res.Stderr)
	}
	helper := "#!/bin/sh\ntouch '" + marker + "'\nexit 1\n"
	if err := os.WriteFile(filepath.Join(repo, "git-remote-evil"), []byte(helper), 0o755); err != nil {
		t.Fatal(err)
	}

	p := newPolicy(t, policy.Tool{Name: "git", Binary: gitBin, Allow: []*policy.AllowRule{{Subcommand: []string{"pull"}, Flags: help()}}})
	d := p.Evaluate(policy.Call{Tool: "git", Subcommand: []string{"pull"}, Params: map[string]any{"args": []any{"evil::x"}, "cwd": repo}})
	res, d := Execute(context.Background(), d, Runtime{Env: env, Roots: []string{repo}, Timeout: time.Minute})
	if !d.Allowed() {
		t.Fatalf("refused: %s", d.Refusal.Text)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("git ran ./git-remote-evil from the client's cwd (exit %d, stderr %q)", res.ExitCode, res.Stderr)
	}
	if res.ExitCode == 0 {
		t.Errorf("git pull evil::x succeeded; want a failure to find the helper (stderr %q)", res.Stderr)
	}
}
