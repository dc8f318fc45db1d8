//go:build !linux && !darwin

package connect

import (
	"fmt"
	"net"
	"runtime"
)

// Check refuses every connection: the owner check reads Linux's
// SO_PEERCRED and /proc/net/tcp, and connect must not hand its token to a
// listener it cannot vouch for.
func (o Owner) Check(c net.Conn) error {
	return fmt.Errorf("%w: connect checks the listener's owner through Linux's SO_PEERCRED and /proc/net/tcp, which %s does not have",
		ErrOwnerUnknown, runtime.GOOS)
}
