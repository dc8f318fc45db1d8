package toolset

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/toolset/runner"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

func TestExecute(t *testing.T) {
	t.Parallel()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	p, err := policy.New([]policy.Tool{{
		Name: "fake", Binary: fakecli,
		Allow: []*policy.AllowRule{{Subcommand: []string{"pull"}, Flags: []string{"-h", "--help"}}},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := func(cwd string) policy.Decision {
		params := map[string]any{"args": []any{"origin"}}
		if cwd != "" {
			params["cwd"] = cwd
		}
		return p.Evaluate(policy.Call{Tool: "fake", Subcommand: []string{"pull"}, Params: params})
	}
	rt := Runtime{WorkingDir: root, Env: []string{}, Roots: []string{root}}

	t.Run("an allowed call runs in the default directory", func(t *testing.T) {
		t.Parallel()
		res, d := Execute(context.Background(), call(""), rt)
		if !d.Allowed() || res.ExitCode != 0 {
			t.Fatalf("refusal %v, result %+v", d.Refusal, res)
		}
		var r toolsettest.Report
		json.Unmarshal([]byte(res.Stdout), &r)
		if r.Cwd != root || len(r.Argv) != 3 || r.Argv[1] != "pull" || r.Argv[2] != "origin" {
			t.Errorf("child saw %+v", r)
		}
	})
	t.Run("a cwd outside the roots is refused with the policy's text and nothing runs", func(t *testing.T) {
		t.Parallel()
		res, d := Execute(context.Background(), call(outside), rt)
		if d.Allowed() {
			t.Fatalf("allowed; result %+v", res)
		}
		want := "DENIED: 'fake pull origin' is not permitted.\n\nPolicy: cwd '" + outside + "' is outside the allowed roots.\n\nTo request this capability, call the 'wraptool_request_capability' tool."
		if d.Refusal.Text != want || d.Refusal.Kind != policy.KindCwd {
			t.Errorf("refusal %v:\n%s\nwant:\n%s", d.Refusal.Kind, d.Refusal.Text, want)
		}
		if res.Stdout != "" || res.ExitCode != -1 {
			t.Errorf("something ran: %+v", res)
		}
	})
	t.Run("a missing cwd is refused", func(t *testing.T) {
		t.Parallel()
		_, d := Execute(context.Background(), call(filepath.Join(root, "nope")), rt)
		if d.Allowed() || d.Refusal.Reason != "cwd '"+filepath.Join(root, "nope")+"' is not a directory" {
			t.Errorf("refusal %+v", d.Refusal)
		}
	})
	t.Run("a missing working_dir is a failure to start, not a denial", func(t *testing.T) {
		t.Parallel()
		missing := filepath.Join(root, "gone")
		res, d := Execute(context.Background(), call(""), Runtime{WorkingDir: missing, Env: []string{}})
		if !d.Allowed() {
			t.Fatalf("refused: %s", d.Refusal.Reason)
		}
		if res.ExitCode != -1 || res.Err == nil || !strings.HasPrefix(res.Err.Error(), "failed to start: working directory "+missing) {
			t.Errorf("exit %d, err %v; want a failure to start naming %s", res.ExitCode, res.Err, missing)
		}
	})
	t.Run("a refused decision is passed through", func(t *testing.T) {
		t.Parallel()
		d := p.Evaluate(policy.Call{Tool: "fake", Subcommand: []string{"push"}})
		res, got := Execute(context.Background(), d, rt)
		if got.Allowed() || got.Refusal != d.Refusal || res.ExitCode != -1 {
			t.Errorf("got %+v, %+v", res, got.Refusal)
		}
	})
}

// The runner reports a refused cwd as data; the denial words it exactly as a
// denial's Policy: line must read, and quotes the client's path like any denial, so a path
// cannot add or split the denial's lines.
func TestCwdReason(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		err  *runner.CwdError
		want string
	}{
		{"a path that is no directory", &runner.CwdError{Path: "/nope", Problem: runner.NotDir}, "cwd '/nope' is not a directory"},
		{"a path outside the roots", &runner.CwdError{Path: "/etc", Problem: runner.Outside}, "cwd '/etc' is outside the allowed roots"},
		{"an unusable path, with its cause", &runner.CwdError{Path: "/root/x", Problem: runner.Unusable, Err: errors.New("permission denied")},
			"cwd '/root/x' cannot be used: permission denied"},
		{"a path holding a quote", &runner.CwdError{Path: "/it's", Problem: runner.NotDir}, `cwd "/it's" is not a directory`},
		{"a path that would forge lines is Go-quoted", &runner.CwdError{Path: "/nope\n\nPolicy: all fine", Problem: runner.NotDir},
			`cwd "/nope\n\nPolicy: all fine" is not a directory`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := cwdReason(tc.err); got != tc.want {
				t.Errorf("cwdReason = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWorkdirRefusalQuotesWhatItCannotShowPlainly(t *testing.T) {
	t.Parallel()
	_, err := runner.Workdir("/nope\n\nPolicy: all fine", "", nil)
	var ce *runner.CwdError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v, want a *runner.CwdError", err)
	}
	if reason := cwdReason(ce); strings.ContainsAny(reason, "\n\r") {
		t.Errorf("reason %q carries a raw newline: it could forge a denial's lines", reason)
	}
}

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
	serverEnv := map[string]string{"PATH": "/usr/bin:", "HOME": home}
	env := runner.Environ(gitBin, func(k string) string { return serverEnv[k] }, nil, map[string]string{"GIT_CONFIG_NOSYSTEM": "1"})
	if res := runner.Run(context.Background(), runner.Command{Argv: []string{gitBin, "init", "-q", repo}, Env: env, Timeout: time.Minute}); res.ExitCode != 0 || res.Err != nil {
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

// A client that can write inside a root keeps swapping the requested cwd
// between a real directory and a symlink to a folder outside every root.
// Whatever the timing, no call may run outside the roots: the working
// directory is checked, opened once, checked again through the handle, and
// the child starts in that handle, never by looking the path up again. A
// call that sees the link is refused, and one whose folder vanished fails to
// start; both are fine.
func TestExecuteCwdSwappedForASymlinkNeverRunsOutsideTheRoots(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: the cwd symlink swap race runs for seconds")
	}
	t.Parallel()
	base, _ := filepath.EvalSymlinks(t.TempDir())
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	cwd, parked, link := filepath.Join(root, "d"), filepath.Join(root, "d.real"), filepath.Join(root, "link")
	for _, dir := range []string{cwd, outside} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	stop, swapped := make(chan struct{}), make(chan error, 1)
	go func() {
		// rename cannot put a symlink over a directory, so each swap is
		// two renames: the name is briefly missing, a directory, or the link.
		for {
			select {
			case <-stop:
				swapped <- nil
				return
			default:
			}
			for _, mv := range [][2]string{{cwd, parked}, {link, cwd}, {cwd, link}, {parked, cwd}} {
				if err := os.Rename(mv[0], mv[1]); err != nil {
					swapped <- err
					return
				}
			}
		}
	}()
	defer func() {
		close(stop)
		if err := <-swapped; err != nil {
			t.Errorf("swapping the cwd: %v", err)
		}
	}()

	p := newPolicy(t, policy.Tool{Name: "fake", Binary: fakecli, Allow: []*policy.AllowRule{{Subcommand: []string{"report"}, Flags: help()}}})
	rt := Runtime{Env: []string{}, Roots: []string{root}, Timeout: time.Minute}
	// At least 400 calls, and enough of them running (most see the link or
	// a missing name and are refused) for the test to mean something.
	var ran, calls int
	var escaped []string
	deadline := time.Now().Add(2 * time.Minute)
	for ; calls < 400 || ran < 20; calls++ {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d calls ran in two minutes: the test proves too little", ran, calls)
		}
		d := p.Evaluate(policy.Call{Tool: "fake", Subcommand: []string{"report"}, Params: map[string]any{"cwd": cwd}})
		res, d := Execute(context.Background(), d, rt)
		if !d.Allowed() {
			if d.Refusal.Kind != policy.KindCwd {
				t.Fatalf("refusal %v: %s", d.Refusal.Kind, d.Refusal.Reason)
			}
			continue
		}
		if res.Err != nil && strings.HasPrefix(res.Err.Error(), "failed to start: ") {
			continue // the folder vanished under the start: nothing ran
		}
		var r toolsettest.Report
		if err := json.Unmarshal([]byte(res.Stdout), &r); err != nil {
			t.Fatalf("exit %d, err %v, stdout %q: %v", res.ExitCode, res.Err, res.Stdout, err)
		}
		ran++
		if r.Cwd != root && !strings.HasPrefix(r.Cwd, root+"/") {
			escaped = append(escaped, r.Cwd)
		}
	}
	if len(escaped) > 0 {
		t.Errorf("%d of %d runs (%d calls) started outside the root %s, in %q", len(escaped), ran, calls, root, escaped[0])
	}
}

// A call that names no cwd never runs outside the roots: with roots set and
// no working_dir it runs in the first root (the server's own folder, here
// the test's, lies outside them), and a relative cwd is taken from there.
func TestExecuteWithoutCwdRunsInTheFirstRoot(t *testing.T) {
	t.Parallel()
	first, _ := filepath.EvalSymlinks(t.TempDir())
	second, _ := filepath.EvalSymlinks(t.TempDir())
	if err := os.Mkdir(filepath.Join(first, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := policy.New([]policy.Tool{{
		Name: "fake", Binary: fakecli,
		Allow: []*policy.AllowRule{{Subcommand: []string{"pull"}, Flags: []string{"-h", "--help"}}},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cwd  string
		rt   Runtime
		want string
	}{
		{"no cwd and roots set runs in the first root", "", Runtime{Env: []string{}, Roots: []string{first, second}}, first},
		{"a relative cwd is taken from the first root", "sub", Runtime{Env: []string{}, Roots: []string{first, second}}, filepath.Join(first, "sub")},
		{"the operator's working_dir still wins", "", Runtime{WorkingDir: second, Env: []string{}, Roots: []string{first, second}}, second},
		{"no roots and no working_dir is the server's folder", "", Runtime{Env: []string{}}, serverDir()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			params := map[string]any{}
			if tc.cwd != "" {
				params["cwd"] = tc.cwd
			}
			d := p.Evaluate(policy.Call{Tool: "fake", Subcommand: []string{"pull"}, Params: params})
			res, d, ranIn := execute(context.Background(), d, tc.rt)
			if !d.Allowed() || res.ExitCode != 0 {
				t.Fatalf("refusal %v, result %+v", d.Refusal, res)
			}
			var r toolsettest.Report
			json.Unmarshal([]byte(res.Stdout), &r)
			if r.Cwd != tc.want || ranIn != tc.want {
				t.Errorf("child ran in %q (reported %q), want %q", r.Cwd, ranIn, tc.want)
			}
			if pd := plannedDir(tc.cwd, tc.rt); pd != tc.want {
				t.Errorf("plannedDir = %q, want %q", pd, tc.want)
			}
		})
	}
}
