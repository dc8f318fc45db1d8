//go:build !linux

package runner

// helperChild is never a helper off Linux: the one test that starts the
// binary as a child (TestNoThreadKeepsTheRestriction) needs Landlock.
func helperChild() (code int, ok bool) { return 0, false }
