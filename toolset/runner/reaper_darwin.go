//go:build darwin

package runner

import "errors"

// BecomeSubreaper reports that macOS has no child subreaper. What leaves a
// call's process group is found instead by the process table as the call
// ends (leftovers.go), which misses only a process whose parent had already
// exited (launchd adopts it at once); serve logs this once.
func BecomeSubreaper() error {
	return errors.New("macOS has no child subreaper: what leaves a call's process group is found by the process table as the call ends, except a process whose parent exited first (launchd adopts it)")
}

// isSubreaper is false: the Reaper's own sweep never runs on macOS.
func isSubreaper() bool { return false }
