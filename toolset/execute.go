package toolset

import (
	"context"
	"errors"
	"time"

	"github.com/wraptool/wraptool/policy"
)

// Runtime is what running a wrapped tool needs beyond its rules: where, with
// which environment, for how long.
type Runtime struct {
	// WorkingDir is the default working directory; "" means the server's.
	WorkingDir string
	// Env is the child's complete environment (see Environ).
	Env []string
	// Timeout bounds one call.
	Timeout time.Duration
	// OutputCap bounds each stream; zero means DefaultOutputCap.
	OutputCap int
	// Roots confine a client-supplied cwd; empty means any directory.
	Roots []string
}

// Execute runs an allowed decision. The working directory is checked first,
// before anything starts; a refused one comes back as a refusal with the
// policy's denial text, and nothing runs.
func Execute(ctx context.Context, d policy.Decision, rt Runtime) (Result, policy.Decision) {
	if !d.Allowed() {
		return Result{ExitCode: -1}, d
	}
	dir, err := Workdir(d.Cwd, rt.WorkingDir, rt.Roots)
	if err != nil {
		reason := err.Error()
		var ce *CwdError
		if !errors.As(err, &ce) {
			reason = "cwd " + policy.Quote(d.Cwd) + " cannot be used: " + reason
		}
		return Result{ExitCode: -1}, d.Refuse(policy.KindCwd, reason)
	}
	return Run(ctx, Command{Argv: d.Argv, Dir: dir, Env: rt.Env, Timeout: rt.Timeout, OutputCap: rt.OutputCap}), d
}
