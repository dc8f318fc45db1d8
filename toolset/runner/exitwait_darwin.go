//go:build darwin

package runner

import (
	"errors"

	"golang.org/x/sys/unix"
)

// sweepByTableDefault is true: macOS has no child subreaper, so Run ends
// what a call left behind by the process table (leftovers.go).
const sweepByTableDefault = true

// awaitExit waits until the child pid has exited, leaving it unreaped: a
// kqueue's EVFILT_PROC NOTE_EXIT fires on the exit itself, while the
// process stays a zombie (its pid and its group id stay taken) until
// os/exec reaps it. A process already gone from the kernel's list answers
// the registration with ESRCH, which means the same. ok is false when it
// cannot tell (then nothing is swept: a sweep while the call still runs
// would end it).
func awaitExit(pid int) (ok bool) {
	kq, err := unix.Kqueue()
	if err != nil {
		return false
	}
	defer unix.Close(kq)
	var ev unix.Kevent_t
	unix.SetKevent(&ev, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	ev.Fflags = unix.NOTE_EXIT
	out := make([]unix.Kevent_t, 1)
	for {
		n, err := unix.Kevent(kq, []unix.Kevent_t{ev}, out, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ESRCH):
			return true
		case err != nil:
			return false
		case n == 1 && out[0].Flags&unix.EV_ERROR != 0:
			return unix.Errno(out[0].Data) == unix.ESRCH
		case n == 1:
			return out[0].Fflags&unix.NOTE_EXIT != 0
		}
	}
}
