package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"
)

// DefaultOutputCap bounds each of stdout and stderr when a Command sets no
// cap (1 MiB): a chatty child must not fill the server's memory.
const DefaultOutputCap = 1 << 20

// waitDelay bounds how long Run waits for output pipes after the child has
// exited (or been killed) when something outside its process group still
// holds them open.
const waitDelay = 2 * time.Second

// Command is one allowed command, ready to run.
type Command struct {
	// Argv is the binary and its arguments; no shell is involved.
	Argv []string
	// Dir is the working directory; "" means the server's own. The child
	// looks the path up again when it starts; a checked directory is passed
	// as DirFile instead.
	Dir string
	// DirFile is an opened working directory, which wins over Dir: the child
	// starts in the handle itself (/proc/self/fd/N, entered in the child
	// between fork and exec, where the descriptor is still open; through
	// the launcher, which inherits it and fchdir()s to it before its exec),
	// so a symlink swapped into the path after the check cannot move it. Run
	// closes it once the child has started or failed to. Nil means Dir.
	DirFile *os.File
	// Env is the complete environment (see Environ).
	Env []string
	// Stdin is what the child reads on its standard input, then end of
	// file; nil means /dev/null. A child that exits without reading it all
	// is not an error.
	Stdin []byte
	// Timeout bounds the run; zero means no limit beyond ctx.
	Timeout time.Duration
	// OutputCap bounds each stream in bytes; zero means DefaultOutputCap.
	OutputCap int
	// Reaper tracks the child while it runs, so a sweep never takes it for
	// a stray; nil means no tracking.
	Reaper *Reaper
	// Sandbox confines the child and all it starts; nil means none (a
	// server whose confinement is off, and tests).
	Sandbox *Sandbox
}

// Result is what a run produced.
type Result struct {
	// ExitCode is the exit status, or -1 when the process has none (it
	// timed out, was killed by a signal, or never started).
	ExitCode int
	// Stdout and Stderr are the captured streams, each cut at the cap with
	// a marker line saying how much was dropped.
	Stdout, Stderr string
	// Truncated reports whether either stream was cut.
	Truncated bool
	// Duration is the wall time from start to exit.
	Duration time.Duration
	// TimedOut reports that the timeout killed the process group.
	TimedOut bool
	// Err says why the run failed outright ("timed out after 30s", a start
	// failure, a cancelled context); nil when the process ran to its exit,
	// whatever its status.
	Err error
}

// Run starts the command in its own process group with stdin on /dev/null
// (or fed Command.Stdin), captures both streams up to the cap, and waits. On timeout, or when ctx is
// done, the whole group is killed with SIGKILL, so grandchildren die too;
// whatever the child left in its group is killed once it exits. A process
// that left the group (setsid) is the Reaper's to end.
func Run(ctx context.Context, c Command) Result {
	limit := c.OutputCap
	if limit <= 0 {
		limit = DefaultOutputCap
	}
	if c.DirFile != nil {
		defer c.DirFile.Close() // on every path; closing twice is harmless
	}
	if len(c.Argv) == 0 {
		return Result{ExitCode: -1, Err: errors.New("failed to start: empty command")}
	}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if c.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, c.Timeout)
	}
	defer cancel()

	stdout, stderr := &capped{limit: limit}, &capped{limit: limit}
	cmd := exec.CommandContext(runCtx, c.Argv[0], c.Argv[1:]...)
	cmd.Dir = c.Dir
	if c.DirFile != nil {
		cmd.Dir = fdPath(c.DirFile) // where the program check looks
		if launcherFor(c.Sandbox) {
			// The launcher inherits the handle and enters it itself.
			cmd.ExtraFiles = []*os.File{c.DirFile}
		}
	}
	cmd.Env = c.Env
	if cmd.Env == nil {
		cmd.Env = []string{} // never inherit the server's environment
	}
	cmd.Stdin = nil // reads from /dev/null
	if c.Stdin != nil {
		// os/exec feeds it through a pipe and ignores EPIPE: a child that
		// does not read it all still exits as it chooses.
		cmd.Stdin = bytes.NewReader(c.Stdin)
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var killed atomic.Bool // the timeout or ctx really stopped the child
	// exited is set, under exitMu, once the child has exited and before it
	// is reaped; Cancel holds exitMu across its check and its kill, so it
	// never signals a group id the child's reaped pid could have passed to
	// another process (another call's, even).
	var exitMu sync.Mutex
	exited := false
	cmd.Cancel = func() error {
		exitMu.Lock()
		defer exitMu.Unlock()
		if exited {
			return os.ErrProcessDone
		}
		// The child leads its own group; kill every member. Without a
		// subreaper, what left the group is found first, while the whole
		// tree still lives.
		killed.Store(true)
		c.Reaper.sweepCall(cmd.Process.Pid)
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = waitDelay

	start := time.Now()
	done, err := c.Reaper.Start(cmd, c.Sandbox)
	if c.DirFile != nil {
		c.DirFile.Close() // the child holds its cwd now
	}
	if err != nil {
		switch {
		case errors.Is(err, ErrNoConfinement), errors.Is(err, ErrUntrusted):
			// Already says what could not be done, and why.
		case ctx.Err() != nil:
			err = fmt.Errorf("cancelled: %w", ctx.Err())
		default:
			err = fmt.Errorf("failed to start: %w", err)
		}
		return Result{ExitCode: -1, Duration: time.Since(start), Err: err}
	}
	// Whatever the child left running in its group (a backgrounded helper
	// holding the operator's credentials) ends with the call, and, without
	// a subreaper, what left the group too: killed while the exited child,
	// not yet reaped, still holds its pid and so its group id.
	if c.Reaper.EndGroup(cmd.Process.Pid, func() {
		exitMu.Lock()
		exited = true
		exitMu.Unlock()
	}) {
		err = cmd.Wait()
	} else {
		// Not known to have exited: the kill waits for the reap, as the
		// group id stays taken while any member lives.
		err = cmd.Wait()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	done() // reaped: a process left behind outside the group is a stray now
	r := Result{
		ExitCode: -1,
		Duration: time.Since(start),
		Stdout:   stdout.String(),
		Stderr:   stderr.String(),
	}
	r.Truncated = stdout.dropped > 0 || stderr.dropped > 0
	if cmd.ProcessState != nil {
		r.ExitCode = cmd.ProcessState.ExitCode()
	}
	switch {
	case killed.Load() && ctx.Err() == nil:
		r.ExitCode, r.TimedOut = -1, true
		r.Err = fmt.Errorf("timed out after %s", c.Timeout)
	case killed.Load():
		r.ExitCode = -1
		r.Err = fmt.Errorf("cancelled: %w", ctx.Err())
	case err != nil && !isExitError(err):
		// The process exited but its output pipes stayed open past
		// waitDelay (a descendant left its group), or Wait failed.
		r.Err = err
	}
	return r
}

func isExitError(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}

// capped keeps the first limit bytes written and counts the rest. It never
// fails a write, so a chatty child is drained rather than blocked.
type capped struct {
	limit   int
	buf     []byte
	dropped int64
}

func (w *capped) Write(p []byte) (int, error) {
	room := w.limit - len(w.buf)
	if room >= len(p) {
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	if room > 0 {
		w.buf = append(w.buf, p[:room]...)
	}
	w.dropped += int64(len(p) - max(room, 0))
	return len(p), nil
}

// String returns the kept bytes; when some were dropped, the cut is moved
// back to a character boundary and a marker line says how much is missing.
func (w *capped) String() string {
	if w.dropped == 0 {
		return string(w.buf)
	}
	kept, dropped := w.buf, w.dropped
	// Drop a character the cap split in two.
	for i := len(kept) - 1; i >= 0 && i >= len(kept)-utf8.UTFMax; i-- {
		if utf8.RuneStart(kept[i]) {
			if !utf8.FullRune(kept[i:]) {
				dropped += int64(len(kept) - i)
				kept = kept[:i]
			}
			break
		}
	}
	return string(kept) + "\n[wraptool: output truncated at " + strconv.Itoa(w.limit) + " bytes; " +
		strconv.FormatInt(dropped, 10) + " more bytes not shown]\n"
}
