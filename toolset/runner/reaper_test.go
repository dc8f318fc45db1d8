package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// reaperHelperEnv marks the subprocess TestReaperInASubreaper starts: a
// re-run of this test binary that becomes a subreaper. Sweeping in the main
// test process would kill the children of every other test running in
// parallel.
const reaperHelperEnv = "WRAPTOOL_RUNNER_REAPER_HELPER"

func TestReaperInASubreaper(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: the subreaper re-runs the test binary and waits out orphans")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestReaperHelper$", "-test.v", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), reaperHelperEnv+"=1", toolsettest.FakeCLIEnv+"="+fakecli)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the subreaper helper failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestReaperHelper") {
		t.Fatalf("the subreaper helper did not run its test:\n%s", out)
	}
	t.Logf("helper output:\n%s", out)
}

// TestReaperHelper is TestReaperInASubreaper's subprocess. Its subtests run
// one after another: they share the process's children.
func TestReaperHelper(t *testing.T) {
	if os.Getenv(reaperHelperEnv) == "" {
		t.Skip("runs only in TestReaperInASubreaper's subprocess")
	}
	if isSubreaper() {
		t.Fatal("the helper is a subreaper before asking to be")
	}

	t.Run("a sweep in a process that is no subreaper kills nothing", func(t *testing.T) {
		pid := startStray(t)
		NewReaper(nil).sweep()
		if !toolsettest.Alive(pid) {
			t.Fatalf("the sweep killed untracked child %d, though this process is no subreaper", pid)
		}
	})

	if err := BecomeSubreaper(); err != nil {
		t.Fatalf("BecomeSubreaper: %v", err)
	}
	if !isSubreaper() {
		t.Fatal("PR_GET_CHILD_SUBREAPER says no after BecomeSubreaper")
	}

	t.Run("an untracked child is killed and reaped", func(t *testing.T) {
		pid := startStray(t)
		r := NewReaper(nil)
		// No Run loop here: each poll sweeps again, and the sweep after
		// the kill reaps the zombie.
		waitGone(t, pid, r.sweep)
	})

	t.Run("a setsid grandchild is gone soon after its call exits", func(t *testing.T) {
		r := runReaper(t)
		pidfile := filepath.Join(t.TempDir(), "grandchild.pid")
		res := Run(context.Background(), Command{Argv: []string{fakecli, "setsid", pidfile}, Env: []string{}, Timeout: time.Minute, Reaper: r})
		if res.ExitCode != 0 || res.Err != nil {
			t.Fatalf("exit %d, err %v, stderr %q", res.ExitCode, res.Err, res.Stderr)
		}
		pid := readPID(t, pidfile)
		r.Sweep()
		waitGone(t, pid, nil)
	})

	t.Run("a setsid grandchild is gone soon after its call times out", func(t *testing.T) {
		r := runReaper(t)
		// The timeout may come before the grandchild has written its pid;
		// then try again with a longer one.
		for _, timeout := range []time.Duration{500 * time.Millisecond, 2 * time.Second, 8 * time.Second} {
			pidfile := filepath.Join(t.TempDir(), "grandchild.pid")
			res := Run(context.Background(), Command{Argv: []string{fakecli, "setsid", pidfile, "hang"}, Env: []string{}, Timeout: timeout, Reaper: r})
			if !res.TimedOut {
				t.Fatalf("exit %d, err %v; want a timeout", res.ExitCode, res.Err)
			}
			data, err := os.ReadFile(pidfile)
			if err != nil || len(data) == 0 {
				continue
			}
			r.Sweep()
			waitGone(t, readPID(t, pidfile), nil)
			return
		}
		t.Fatal("the grandchild never started before the timeout, even at 8s")
	})

	t.Run("tracked children survive sweeps running alongside", func(t *testing.T) {
		r := runReaper(t)
		stop := make(chan struct{})
		var sweeps sync.WaitGroup
		for range 2 {
			sweeps.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
						r.sweep()
					}
				}
			})
		}
		var calls sync.WaitGroup
		failures := make(chan string, 400)
		for range 8 {
			calls.Go(func() {
				for range 50 {
					res := Run(context.Background(), Command{Argv: []string{fakecli, "exit", "0"}, Env: []string{}, Timeout: time.Minute, Reaper: r})
					if res.ExitCode != 0 || res.Err != nil {
						failures <- "exit " + strconv.Itoa(res.ExitCode) + ", err " + fmt.Sprint(res.Err)
					}
				}
			})
		}
		calls.Wait()
		close(stop)
		sweeps.Wait()
		close(failures)
		var got []string
		for f := range failures {
			got = append(got, f)
		}
		if len(got) > 0 {
			t.Errorf("%d of 400 tracked runs were disturbed by a sweep; first: %s", len(got), got[0])
		}
	})
}

// runReaper runs a Reaper until the test ends.
func runReaper(t *testing.T) *Reaper {
	t.Helper()
	r := NewReaper(nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Reaper.Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Reaper.Run did not return after its context ended")
		}
	})
	return r
}

// startStray starts a child of this process without a Reaper, and makes sure
// it is gone when the test ends.
func startStray(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(fakecli, "sleep", "1h")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil) // ECHILD once a sweep reaped it
	})
	return pid
}

// readPID reads the fixture's pidfile and makes sure that process is gone
// when the test ends.
func readPID(t *testing.T, pidfile string) int {
	t.Helper()
	data, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(data))
	if err != nil {
		t.Fatalf("pidfile %q: %v", data, err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// waitGone polls until pid no longer exists at all (killed and reaped:
// kill(pid, 0) fails with ESRCH), calling each before every poll when set.
func waitGone(t *testing.T, pid int, each func()) {
	t.Helper()
	waittest.Until(t, 10*time.Second, func() error {
		if each != nil {
			each()
		}
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			return nil
		}
		state := "running"
		if !toolsettest.Alive(pid) {
			state = "a zombie nobody reaped"
		}
		return fmt.Errorf("process %d is still there (%s) after its call ended", pid, state)
	})
}

func TestSweepNeverBlocks(t *testing.T) {
	t.Parallel()
	r := NewReaper(nil) // no Run loop: nobody empties the doorbell
	done := make(chan struct{})
	go func() {
		for range 1000 {
			r.Sweep()
		}
		var none *Reaper
		none.Sweep()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Sweep blocked")
	}
}

func TestParseStat(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, stat string
		want       proc
		ppid       int
	}{
		{"a plain line", "42 (git) S 7 42 42 0 -1", proc{pgid: 42, comm: "git"}, 7},
		{"a command with spaces and parentheses", "43 (a) b (c)) Z 1 9 9 0", proc{pgid: 9, comm: "a) b (c)", zombie: true}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := parseStat(tc.stat)
			if !ok || got != tc.want {
				t.Errorf("parseStat = %+v, %v; want %+v", got, ok, tc.want)
			}
			if ppid, ok := parentOf(tc.stat); !ok || ppid != tc.ppid {
				t.Errorf("parentOf = %d, %v; want %d", ppid, ok, tc.ppid)
			}
		})
	}
}
