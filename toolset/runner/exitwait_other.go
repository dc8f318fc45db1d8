//go:build !linux && !darwin

package runner

// sweepByTableDefault is false: there is no process table reader here.
const sweepByTableDefault = false

// awaitExit cannot tell here; nothing is swept.
func awaitExit(pid int) bool { return false }
