package connect

import (
	"fmt"
	"net"
	"syscall"
)

// Check refuses a connection whose listening end does not belong to o.UID
// (ErrForeignOwner) or whose owner cannot be found (ErrOwnerUnknown). It
// sends nothing on c.
func (o Owner) Check(c net.Conn) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return o.checkTCP(c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrOwnerUnknown, err)
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return fmt.Errorf("%w: %v", ErrOwnerUnknown, err)
	}
	if credErr != nil {
		return fmt.Errorf("%w: SO_PEERCRED: %v", ErrOwnerUnknown, credErr)
	}
	if int(cred.Uid) != o.UID {
		return fmt.Errorf("%w: the process listening on %s (pid %d) runs as uid %d, not as you (uid %d)",
			ErrForeignOwner, uc.RemoteAddr(), cred.Pid, cred.Uid, o.UID)
	}
	return nil
}
