//go:build linux

package proctree

import (
	"fmt"
	"io/fs"
	"os"
	"strconv"
)

// Table reads the process table from /proc: one row per process (thread
// group), read from /proc/PID/stat. A process that ends while the folder is
// read is left out.
func Table() ([]Proc, error) {
	return tableFrom(os.DirFS("/proc"))
}

// tableFrom reads a /proc-shaped tree, so tests can hand it a crafted one.
// An entry that is not a pid or whose stat line does not parse, or names
// another pid than its folder, is skipped: no row is better than a wrong one.
func tableFrom(proc fs.FS) ([]Proc, error) {
	entries, err := fs.ReadDir(proc, ".")
	if err != nil {
		return nil, fmt.Errorf("list /proc: %w", err)
	}
	out := make([]Proc, 0, len(entries))
	for _, e := range entries {
		pid, err := decimal([]byte(e.Name()))
		if err != nil || pid < 1 || strconv.Itoa(pid) != e.Name() {
			continue
		}
		b, err := fs.ReadFile(proc, e.Name()+"/stat")
		if err != nil {
			continue // ended since the folder was listed, or unreadable
		}
		p, err := parseStat(b)
		if err != nil || p.PID != pid {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}
