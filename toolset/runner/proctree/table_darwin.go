//go:build darwin

package proctree

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Table reads the process table with sysctl kern.proc.all: every process
// of the system with its parent, group and start time.
func Table() ([]Proc, error) {
	kp, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, fmt.Errorf("sysctl kern.proc.all: %w", err)
	}
	out := make([]Proc, 0, len(kp))
	for i := range kp {
		p := &kp[i]
		if p.Proc.P_pid < 1 {
			continue // the kernel's own row (pid 0) is nothing to walk
		}
		st := p.Proc.P_starttime
		out = append(out, Proc{
			PID:   int(p.Proc.P_pid),
			PPID:  int(p.Eproc.Ppid),
			PGID:  int(p.Eproc.Pgid),
			Start: uint64(st.Sec)*1_000_000 + uint64(st.Usec),
		})
	}
	return out, nil
}
