//go:build darwin

package runner

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// NotDumpable refuses every debugger attach to this process for its
// whole life, ptrace(PT_DENY_ATTACH): macOS's counterpart of Linux's
// non-dumpable flag, which keeps a process of the same user, a confined
// child included, from reading wraptool's memory through a debugger. It
// also makes the process crash rather than run under a debugger that
// attached before the call, which is what a gate holding tokens wants.
func NotDumpable() error {
	if err := unix.PtraceDenyAttach(); err != nil {
		return os.NewSyscallError("ptrace PT_DENY_ATTACH", err)
	}
	return nil
}

// ScrubEnviron is not done on macOS: the environment block another
// process of the user reads through sysctl kern.procargs2 (as `ps eww`
// does) lies in the start-up area of this process's stack, which Go
// gives no supported way to find, and overwriting memory by a guess of
// its layout, untested on a Mac, could corrupt what the runtime still
// uses. wraptool reads its tokens and env_files from files, never from its
// environment; the caller logs this error once.
func ScrubEnviron() error {
	return errors.New("the environment block is left as it is on macOS (readable by processes of the same user through sysctl kern.procargs2); wraptool keeps no token in its environment")
}
