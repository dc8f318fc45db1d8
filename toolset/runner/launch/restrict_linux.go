//go:build linux

package launch

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// childDrops are the capabilities no confined process keeps: with either,
// the kernel lets a process read another's /proc/PID/environ and maps past
// Landlock's ptrace scoping (seen on 6.18). Mounting is refused to a
// confined process anyway.
var childDrops = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_PERFMON}

// RestrictThread restricts the calling OS thread alone: no_new_privs; the
// capabilities of childDrops out of its ambient, inheritable and bounding
// sets (an execve by root gets back whatever the bounding set keeps; all
// three sets are per thread); then the Landlock rules.
func RestrictThread(fd int) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl PR_SET_NO_NEW_PRIVS: %w", err)
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0); e != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", e)
	}
	return nil
}

// dropCapabilities takes childDrops out of the calling thread's ambient
// and inheritable sets and, for root, its bounding set: an execve by root
// gets back whatever the bounding set holds, while any other user's
// execve gains nothing from it under no_new_privs (which also ignores file
// capabilities). Lowering the bounding set needs CAP_SETPCAP; root without
// it is refused only when a capability to drop is there.
func dropCapabilities() error {
	// Clearing the ambient set needs no privilege.
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("prctl PR_CAP_AMBIENT_CLEAR_ALL: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	lowered := false
	for _, c := range childDrops {
		if data[c/32].Inheritable&(1<<(c%32)) != 0 {
			data[c/32].Inheritable &^= 1 << (c % 32)
			lowered = true
		}
	}
	if lowered {
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return fmt.Errorf("capset: %w", err)
		}
	}
	if unix.Geteuid() != 0 && unix.Getuid() != 0 {
		return nil
	}
	for _, c := range childDrops {
		in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, c, 0, 0, 0)
		if err == unix.EINVAL || (err == nil && in == 0) {
			continue // a kernel that does not know it, or already out
		}
		if err != nil {
			return fmt.Errorf("prctl PR_CAPBSET_READ %d: %w", c, err)
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil {
			return fmt.Errorf("prctl PR_CAPBSET_DROP %d: %w", c, err)
		}
	}
	return nil
}

// restrict confines the launcher's thread with the inherited ruleset.
func restrict(fd int) error { return RestrictThread(fd) }
