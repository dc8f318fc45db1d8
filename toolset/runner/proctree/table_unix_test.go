//go:build linux || darwin

package proctree

import (
	"os"
	"syscall"
	"testing"
)

// TestTableShowsTheCaller runs on both systems with a reader: the test
// process's own row has its real parent and group, and a start token that
// two reads agree on.
func TestTableShowsTheCaller(t *testing.T) {
	t.Parallel()
	want := Proc{PID: os.Getpid(), PPID: os.Getppid(), PGID: syscall.Getpgrp()}
	var starts []uint64
	for range 2 {
		tab, err := Table()
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, p := range tab {
			if p.PID == want.PID {
				found = true
				starts = append(starts, p.Start)
				if p.Start = 0; p != want {
					t.Fatalf("own row %+v, want %+v", p, want)
				}
			}
		}
		if !found {
			t.Fatalf("Table has no row for the caller %d", want.PID)
		}
	}
	if starts[0] != starts[1] || starts[0] == 0 {
		t.Fatalf("start tokens %v, want two equal non-zero ones", starts)
	}
}
