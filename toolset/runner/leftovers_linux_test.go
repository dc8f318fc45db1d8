//go:build linux

package runner

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// TestRunSweepsByTheProcessTableWithoutASubreaper runs, on Linux, the path
// macOS takes for want of a child subreaper: a Reaper sweeping each call's
// leftovers by the process table (this test process is no subreaper, so
// nothing else would end them). A daemon that left the call's group with
// setsid is killed as the call ends, whether the call timed out (its whole
// tree alive) or exited while a member of its group still held the daemon.
func TestRunSweepsByTheProcessTableWithoutASubreaper(t *testing.T) {
	t.Parallel()
	if isSubreaper() {
		t.Skip("this test process is a subreaper; the table sweep would not be what ends the daemon")
	}
	daemon := `setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > "$1"`
	tests := []struct {
		name    string
		script  string
		timeout time.Duration
	}{
		{"a call that times out while its daemon's parent lives", daemon + `; exec sleep 300`, time.Second},
		{"a call that exits while a member of its group holds the daemon",
			`( ` + daemon + `; exec sleep 300 </dev/null >/dev/null 2>&1 ) &
			while [ ! -s "$1" ]; do sleep 0.01; done; exit 0`, 30 * time.Second},
	}
	for _, tc := range tests {
		for _, byTable := range []bool{true, false} {
			t.Run(tc.name+"/byTable="+strconv.FormatBool(byTable), func(t *testing.T) {
				t.Parallel()
				pidfile := filepath.Join(t.TempDir(), "daemon.pid")
				r := NewReaper(nil)
				r.byTable = byTable
				res := Run(context.Background(), Command{Argv: []string{"/bin/sh", "-c", tc.script, "sh", pidfile},
					Env: []string{"PATH=/usr/bin:/bin"}, Timeout: tc.timeout, Reaper: r})
				pid := toolsettest.WaitForPID(t, pidfile)
				// Whatever the outcome, the daemon ends with the test.
				t.Cleanup(func() {
					if pid > 1 {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				})
				if res.Err != nil && !res.TimedOut {
					t.Fatalf("Run: %v", res.Err)
				}
				if !byTable {
					// Without the sweep the daemon outlives the call: what
					// the sweep is for.
					if _, state := waittest.State(pid); state == "" || state == "Z" {
						t.Fatalf("without the table sweep the daemon %d is gone already; the test proves nothing", pid)
					}
					return
				}
				waittest.Gone(t, 10*time.Second, pid)
			})
		}
	}
}

// TestAwaitExitLeavesTheChildUnreaped: after awaitExit the child has exited
// but is still a zombie of ours, so its pid and group id stay taken while
// the sweep runs.
func TestAwaitExitLeavesTheChildUnreaped(t *testing.T) {
	t.Parallel()
	p, err := os.StartProcess("/bin/sh", []string{"sh", "-c", "exit 3"}, &os.ProcAttr{Sys: &syscall.SysProcAttr{Setpgid: true}})
	if err != nil {
		t.Fatal(err)
	}
	if !awaitExit(p.Pid) {
		t.Fatal("awaitExit could not tell that the child exited")
	}
	if _, state := waittest.State(p.Pid); state != "Z" {
		t.Errorf("after awaitExit the child is %q, want a zombie (exited, unreaped)", state)
	}
	st, err := p.Wait()
	if err != nil || st.ExitCode() != 3 {
		t.Errorf("Wait after awaitExit = %v, %v; want exit 3 (the status kept for os/exec)", st, err)
	}
	if strings.Contains(st.String(), "signal") {
		t.Errorf("the child was signalled: %v", st)
	}
}
