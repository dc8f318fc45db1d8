//go:build linux

package runner

import (
	"os"
	"syscall"
	"unsafe"
)

// prctl options (linux/prctl.h).
const (
	prSetChildSubreaper = 36
	prGetChildSubreaper = 37
)

// BecomeSubreaper marks wraptool as a child subreaper: an orphaned
// descendant (a daemon a wrapped tool left behind with setsid, out of reach
// of the process-group kill) is re-parented to wraptool instead of init, so
// a Reaper can kill and reap it. main calls it once, before starting
// anything; tests must not (see Reaper).
func BecomeSubreaper() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return os.NewSyscallError("prctl PR_SET_CHILD_SUBREAPER", errno)
	}
	return nil
}

// isSubreaper reports whether this process is a child subreaper.
func isSubreaper() bool {
	var v int32
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetChildSubreaper, uintptr(unsafe.Pointer(&v)), 0)
	return errno == 0 && v != 0
}
