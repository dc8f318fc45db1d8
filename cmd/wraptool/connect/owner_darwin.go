//go:build darwin

package connect

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// Check refuses a unix-socket connection whose listening end does not
// belong to o.UID (ErrForeignOwner), by the peer credentials macOS records
// for it (LOCAL_PEERCRED), or whose owner cannot be read (ErrOwnerUnknown).
// It sends nothing on c.
//
// A TCP connection passes: macOS offers no table of who owns a listening
// socket that a process may read for another user's sockets (lsof reads
// each process's descriptors, and another user's are closed to it), so on
// macOS the listener's proof that it holds the token (Prove), which every
// connection carrying the token must pass, is what keeps the token from an
// impostor.
func (o Owner) Check(c net.Conn) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrOwnerUnknown, err)
	}
	var cred *unix.Xucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	}); err != nil {
		return fmt.Errorf("%w: %v", ErrOwnerUnknown, err)
	}
	if credErr != nil {
		return fmt.Errorf("%w: LOCAL_PEERCRED: %v", ErrOwnerUnknown, credErr)
	}
	if int(cred.Uid) != o.UID {
		return fmt.Errorf("%w: the process listening on %s runs as uid %d, not as you (uid %d)",
			ErrForeignOwner, uc.RemoteAddr(), cred.Uid, o.UID)
	}
	return nil
}
