package toolset

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/toolset/runner"
)

// Runtime is what running a wrapped tool needs beyond its rules: where, with
// which environment, for how long, and which paths it must not name.
type Runtime struct {
	// WorkingDir is the default working directory; "" means the first of
	// Roots, or the server's own when there are none (see defaultDir).
	WorkingDir string
	// Env is the child's complete environment (see runner.Environ).
	Env []string
	// Timeout bounds one call, the wait for a free slot included; zero
	// means no limit beyond the call's context.
	Timeout time.Duration
	// OutputCap bounds each stream; zero means runner.DefaultOutputCap.
	OutputCap int
	// Roots confine a client-supplied cwd; empty means any directory.
	Roots []string
	// Protected are the absolute paths of wraptool's own files (the
	// config, token files, env files, overrides files, the request log, the
	// grants key, the audit log); a flag value or positional argument naming
	// one of them or its folder is refused, and so is a client-supplied cwd
	// that is one of those folders. Nil means none.
	Protected *ProtectedFiles
	// Home is the server's HOME, which "~" in a path argument stands for
	// (besides the child's HOME in Env when that differs); "" means the
	// child's alone.
	Home string
	// Sandbox confines the child and all it starts, so no path, link or
	// race reaches wraptool's own files; nil means none (confinement off).
	Sandbox *runner.Sandbox

	// slots and reaper are the State's, set by the handler (see
	// State.runtime); a Runtime built by hand runs without either.
	slots  *Slots
	reaper *runner.Reaper
	// admit, when set (a call a grant allows), is asked once the call has
	// its slot and its pinned working directory, just before the child
	// starts; an error means nothing runs and is the Result's Err.
	admit func(dir *os.File) error
}

// Execute runs an allowed decision. Before anything starts it checks the
// working directory (and pins it, see runner.OpenWorkdir), then the paths the
// client chose against Runtime.Protected; a refusal comes back as a refused
// decision with the policy's denial text, and nothing runs. A run then waits
// for a free slot within the timeout; the Result's Duration counts only the
// run.
func Execute(ctx context.Context, d policy.Decision, rt Runtime) (runner.Result, policy.Decision) {
	res, d, _ := execute(ctx, d, rt)
	return res, d
}

// execute is Execute, also naming the directory the child ran in (or,
// refused, would have): the checked working directory as the pinned handle
// resolves, else the server's own, resolved (see serverDir). It is ""
// when the check failed before any directory was settled (a refused or
// unusable cwd).
func execute(ctx context.Context, d policy.Decision, rt Runtime) (runner.Result, policy.Decision, string) {
	if !d.Allowed() {
		return runner.Result{ExitCode: -1}, d, ""
	}
	dir, real, err := runner.OpenWorkdir(d.Cwd, rt.defaultDir(), rt.Roots)
	if err != nil {
		var ce *runner.CwdError
		if errors.As(err, &ce) {
			return runner.Result{ExitCode: -1}, d.Refuse(policy.KindCwd, cwdReason(ce)), ""
		}
		// The operator's working_dir is unusable: a failure, not a denial.
		return runner.Result{ExitCode: -1, Err: fmt.Errorf("failed to start: %w", err)}, d, ""
	}
	if dir != nil {
		defer dir.Close() // Run closes it once the child started; this covers the rest
	}
	ranIn := real
	if dir == nil {
		ranIn = serverDir()
	}
	if reason := protectedReason(d, rt, dir, real); reason != "" {
		return runner.Result{ExitCode: -1}, d.Refuse(policy.KindProtected, reason), ranIn
	}
	c := runner.Command{Argv: d.Argv, DirFile: dir, Env: rt.Env, Timeout: rt.Timeout, OutputCap: rt.OutputCap, Reaper: rt.reaper, Sandbox: rt.Sandbox}
	var admit func() error
	if rt.admit != nil {
		admit = func() error { return rt.admit(dir) }
	}
	return runInSlot(ctx, c, rt.slots, admit), d, ranIn
}

// defaultDir is where a call that names no cwd runs (and what a relative
// cwd is taken from): the tool's working_dir; else, when cwd roots are set,
// the first root, since the server's own folder may lie outside every root
// and a call must never run outside them; else "" (the server's own).
func (rt Runtime) defaultDir() string {
	if rt.WorkingDir == "" && len(rt.Roots) > 0 {
		return rt.Roots[0]
	}
	return rt.WorkingDir
}

// serverDir is the server's own working directory, which a child given no
// directory inherits, with symlinks resolved (os.Getwd may answer with
// $PWD's spelling); "" when it cannot be named (it was removed).
func serverDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(wd); err == nil {
		return real
	}
	return wd
}

// plannedDir is the directory a refused call would have run in, for its
// audit line: the client's cwd when it passes the check, else the tool's
// default, resolved; "" when neither can be named. Nothing is opened.
func plannedDir(requested string, rt Runtime) string {
	if requested != "" {
		if dir, err := runner.Workdir(requested, rt.defaultDir(), rt.Roots); err == nil {
			return dir
		}
	}
	def := rt.defaultDir()
	if def == "" {
		return serverDir()
	}
	real, err := filepath.EvalSymlinks(def)
	if err != nil {
		return ""
	}
	return real
}

// cwdReason words a refused working directory for the denial's Policy:
// line, the client's path quoted as every denial quotes it.
func cwdReason(e *runner.CwdError) string {
	cwd := "cwd " + policy.Quote(e.Path)
	switch e.Problem {
	case runner.Outside:
		return cwd + " is outside the allowed roots"
	case runner.Unusable:
		return cwd + " cannot be used: " + e.Err.Error()
	}
	return cwd + " is not a directory"
}

// protectedReason is the refusal reason when the client-supplied cwd is a
// protected folder, or one of d.Paths names a protected file or folder; ""
// when none does. dir and real are the checked working directory's handle
// and resolved path (nil and "" for the server's own), the base of relative
// paths.
func protectedReason(d policy.Decision, rt Runtime, dir *os.File, real string) string {
	ps := rt.Protected.current()
	if ps == nil {
		return ""
	}
	if d.Cwd != "" && dir != nil {
		if info, err := dir.Stat(); err == nil && ps.isFolder(real, info) {
			return "cwd " + policy.Quote(d.Cwd) + " names a folder wraptool protects"
		}
	}
	if len(d.Paths) == 0 {
		return ""
	}
	base := real
	if base == "" {
		// The child inherits the server's directory. If it cannot be named
		// (it was removed), nothing can be created in it either, and
		// relative paths are skipped.
		base, _ = os.Getwd()
	}
	h := homes(rt)
	for _, pa := range d.Paths {
		for _, p := range candidates(pa.Value, base, h) {
			if ps.names(p) {
				return pa.Subject() + " names a file wraptool protects"
			}
		}
	}
	return ""
}

// runInSlot runs c once a slot is free. The wait counts against c.Timeout:
// a wait that uses it up is a timeout with nothing run, and the run gets
// what is left.
func runInSlot(ctx context.Context, c runner.Command, slots *Slots, admit func() error) runner.Result {
	notAdmitted := func(err error) runner.Result {
		if c.DirFile != nil {
			c.DirFile.Close()
		}
		return runner.Result{ExitCode: -1, Err: err}
	}
	if slots == nil {
		if admit != nil {
			if err := admit(); err != nil {
				return notAdmitted(err)
			}
		}
		return runner.Run(ctx, c)
	}
	full := c.Timeout
	waitCtx, cancel := ctx, context.CancelFunc(func() {})
	if full > 0 {
		waitCtx, cancel = context.WithTimeout(ctx, full)
	}
	start := time.Now()
	err := slots.Acquire(waitCtx)
	cancel()
	waited := time.Since(start)
	timedOut := func() runner.Result {
		return runner.Result{ExitCode: -1, TimedOut: true,
			Err: fmt.Errorf("timed out after %s waiting for a free slot (%d running)", full, slots.Running())}
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return runner.Result{ExitCode: -1, Err: fmt.Errorf("cancelled: %w", ctx.Err())}
	case err != nil:
		return timedOut()
	}
	defer slots.Release()
	if full > 0 {
		if c.Timeout = full - waited; c.Timeout <= 0 {
			return timedOut()
		}
	}
	if admit != nil {
		if err := admit(); err != nil {
			return notAdmitted(err)
		}
	}
	res := runner.Run(ctx, c)
	if res.TimedOut {
		res.Err = fmt.Errorf("timed out after %s", full)
		if waited >= time.Millisecond {
			res.Err = fmt.Errorf("timed out after %s (%s of it waiting for a free slot)", full, waited.Round(time.Millisecond))
		}
	}
	return res
}
