package runner

import (
	"syscall"

	"github.com/wraptool/wraptool/toolset/runner/proctree"
)

// Where the kernel offers no child subreaper (macOS), a process that left a
// call's process group (a daemon that called setsid) is never re-parented
// to wraptool, so the Reaper's sweep cannot find it. There Run sweeps the
// process table itself as each call ends: the call's descendants by parent
// pid and its group's members with theirs (package proctree), frozen, then
// killed, each checked against a fresh read so that a reused pid is never
// signalled. It must run while the parents still live, or at least before
// the call's own process is reaped: a process whose parent exits is handed
// to launchd at once, out of any walk's reach, and a reaped leader's pid,
// and with it the group id, may be taken by an unrelated process. So Run
// sweeps from the timeout's kill (the whole tree is alive then) and, on a
// normal exit, after the process has exited but before it is reaped
// (awaitExit waits without reaping). Linux, a subreaper, runs the same
// code in its tests (the Reaper's byTable), the kernel's waitid standing in
// for macOS's kqueue.

// sweepsByTable reports whether r sweeps a call's leftovers by the process
// table when the call ends.
func (r *Reaper) sweepsByTable() bool { return r != nil && r.byTable }

// sweepCall kills what the call whose process is pid left behind: its
// descendants and the members of its process group (pid leads it) with
// theirs. Logged, never fatal: a table that cannot be read leaves only the
// group kill.
func (r *Reaper) sweepCall(pid int) {
	if !r.sweepsByTable() {
		return
	}
	killed, err := proctree.Sweep([]int{pid}, pid, nil)
	if err != nil {
		r.log.Warn("cannot read the process table to end what a call left behind", "error", err)
		return
	}
	for _, p := range killed {
		if p.PID != pid && p.PGID != pid {
			r.log.Info("killed a process that outlived its call", "pid", p.PID)
		}
	}
}

// EndGroup ends what a process wraptool started and tracks outside Run (an
// upstream MCP server) left behind once it exits, as Run does for a call:
// it waits until the process pid has exited, and while it is exited but not
// yet reaped (its pid, and so its group id, still its own) it calls gone,
// sweeps its leftovers by the process table where there is no subreaper,
// and kills its group. It reports false when it could not tell that the
// process exited; the caller then kills the group only after the reap, as
// before. The caller reaps (cmd.Wait) after it returns.
func (r *Reaper) EndGroup(pid int, gone func()) bool {
	if !awaitExit(pid) {
		return false
	}
	gone()
	r.sweepCall(pid)
	syscall.Kill(-pid, syscall.SIGKILL)
	return true
}
