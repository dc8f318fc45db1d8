//go:build linux

package runner

import (
	"errors"

	"golang.org/x/sys/unix"
)

// sweepByTableDefault is false: Linux has a child subreaper, and the
// Reaper's own sweep ends what leaves a call's group.
const sweepByTableDefault = false

// awaitExit waits until the child pid has exited, leaving it unreaped
// (waitid with WNOWAIT), so its pid and its process group id stay taken
// while the call's leftovers are swept. ok is false when it cannot tell
// (then nothing is swept: a sweep while the call still runs would end it).
func awaitExit(pid int) (ok bool) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err == nil
		}
	}
}
