//go:build linux || darwin

package proctree

import (
	"fmt"
	"syscall"
)

// send is the default Sender: kill(2) to one process, never a group (a pid
// below 2 would mean the caller's group, every process, or init).
func send(pid int, sig Signal) error {
	if pid < 2 {
		return fmt.Errorf("refuse to signal pid %d", pid)
	}
	switch sig {
	case Stop:
		return syscall.Kill(pid, syscall.SIGSTOP)
	case KillSignal:
		return syscall.Kill(pid, syscall.SIGKILL)
	}
	return fmt.Errorf("unknown signal %d", sig)
}
