package proctree

import (
	"os"
	"slices"
)

// Proc is one row of the process table.
type Proc struct {
	// PID, PPID and PGID are the process, its parent and its process
	// group, as the table said when it was read.
	PID, PPID, PGID int
	// Start is an opaque token of when the process started (clock ticks
	// since boot on Linux, microseconds since the epoch on macOS). Two
	// reads of the same process give the same token; a pid reused by a
	// later process gives a different one. Compare it only for equality.
	Start uint64
}

// Descendants returns the processes of table that a call whose processes
// were roots, running in process group pgid, left behind: every process
// whose parent chain through table leads to a root, every member of group
// pgid, and the descendants of those; a root present in table is included.
// pgid 0 (or less) means no group.
//
// It never returns pid 0 or 1 (nor any pid below 1), the calling process
// (os.Getpid), any of its ancestors through table, nor anything below
// those: the call's tree cannot hold the gate itself, and a table that says
// otherwise is corrupt or lies. For the same reason pgid is ignored when it
// is the caller's own process group.
//
// The order is parents before children (a pre-order walk; roots first in
// the order given, then the other tops by pid, children by pid): Sweep
// stops them in this order, so a parent is frozen before it could fork a
// child the walk has not seen, and a listed child whose parent died first
// is still killed by pid. A corrupt table terminates: a pid that appears
// twice keeps its first row, and a loop of parents is walked once.
func Descendants(table []Proc, roots []int, pgid int) []Proc {
	return descendants(table, roots, nil, pgid, os.Getpid())
}

// descendants is Descendants for a caller whose pid is self, so tests can
// place the caller anywhere in a table. held are more roots that need not
// be the caller's children: processes Sweep froze and checked by start
// time.
func descendants(table []Proc, roots, held []int, pgid, self int) []Proc {
	byPID := make(map[int]Proc, len(table))
	for _, p := range table {
		if _, dup := byPID[p.PID]; !dup {
			byPID[p.PID] = p
		}
	}
	excluded := excludedPIDs(byPID, self)
	if me, ok := byPID[self]; ok && me.PGID == pgid {
		pgid = 0 // the caller's own group is never the call's
	}
	children := map[int][]int{}
	for pid, p := range byPID {
		children[p.PPID] = append(children[p.PPID], pid)
	}
	for _, c := range children {
		slices.Sort(c)
	}

	// in: the closure of the seeds through children, never entering an
	// excluded pid (nor, so, what lies below it).
	in := map[int]bool{}
	var seeds []int
	for _, r := range roots {
		if q, ok := byPID[r]; ok && q.PPID == self {
			seeds = append(seeds, r)
		}
	}
	for _, r := range held {
		if _, ok := byPID[r]; ok {
			seeds = append(seeds, r)
		}
	}
	if pgid > 0 {
		var members []int
		for pid, p := range byPID {
			if p.PGID == pgid {
				members = append(members, pid)
			}
		}
		slices.Sort(members)
		seeds = append(seeds, members...)
	}
	stack := slices.Clone(seeds)
	for len(stack) > 0 {
		pid := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if in[pid] || excluded[pid] {
			continue
		}
		in[pid] = true
		stack = append(stack, children[pid]...)
	}

	// Order: tops (in, parent not in) pre-order; the seeds first so roots
	// lead, then any pid left over (a loop with no top) by pid.
	var tops []int
	for _, s := range seeds {
		if in[s] && !in[byPID[s].PPID] {
			tops = append(tops, s)
		}
	}
	rest := make([]int, 0, len(in))
	for pid := range in {
		rest = append(rest, pid)
	}
	slices.Sort(rest)
	tops = append(tops, rest...)

	out := make([]Proc, 0, len(in))
	done := map[int]bool{}
	walk := func(pid int) {
		// Iterative on an explicit stack: a hostile table can hold a
		// chain as long as the table, too deep to recurse.
		st := []int{pid}
		for len(st) > 0 {
			p := st[len(st)-1]
			st = st[:len(st)-1]
			if !in[p] || done[p] {
				continue
			}
			done[p] = true
			out = append(out, byPID[p])
			kids := children[p]
			for i := len(kids) - 1; i >= 0; i-- {
				st = append(st, kids[i])
			}
		}
	}
	for _, t := range tops {
		walk(t)
	}
	return out
}

// excludedPIDs is what no walk may return: pids below 2, self and self's
// ancestors through the table (each looked at once, so a loop ends).
func excludedPIDs(byPID map[int]Proc, self int) map[int]bool {
	ex := map[int]bool{self: true}
	// The ancestors first, on their own seen set: a pid below 2 in the
	// middle of the chain (a corrupt table) must not end the walk early.
	for p, ok := byPID[self]; ok && !ex[p.PPID]; p, ok = byPID[p.PPID] {
		ex[p.PPID] = true
	}
	for pid := range byPID {
		if pid < 2 {
			ex[pid] = true
		}
	}
	return ex
}
