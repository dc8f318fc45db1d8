package proctree

import (
	"os"
	"slices"
	"testing"
)

// self is the caller's pid in the tables below: 100, started by 50, started
// by init. The call's root is 200, a child of self, in group 200.
const self = 100

// p is a row with start time pid*10, enough to tell rows apart.
func p(pid, ppid, pgid int) Proc {
	return Proc{PID: pid, PPID: ppid, PGID: pgid, Start: uint64(pid) * 10}
}

// gate is the caller's own part of the table: init, the caller's parent and
// the caller, all in group 50.
var gate = []Proc{p(1, 0, 1), p(50, 1, 50), p(self, 50, 50)}

func table(rows ...Proc) []Proc { return append(slices.Clone(gate), rows...) }

func pids(ps []Proc) []int {
	out := []int{}
	for _, p := range ps {
		out = append(out, p.PID)
	}
	return out
}

func TestDescendants(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		table []Proc
		roots []int
		pgid  int
		want  []int
	}{
		{name: "an empty table gives nothing", table: nil, roots: []int{200}, pgid: 200, want: []int{}},
		{name: "a root gone from the table gives nothing", table: table(p(300, 1, 300)), roots: []int{200}, want: []int{}},
		{name: "a chain is walked parents first",
			table: table(p(200, self, 200), p(203, 202, 200), p(201, 200, 200), p(202, 201, 200)),
			roots: []int{200}, want: []int{200, 201, 202, 203}},
		{name: "siblings come by pid under their parent",
			table: table(p(200, self, 200), p(230, 200, 200), p(210, 200, 200), p(211, 210, 200)),
			roots: []int{200}, want: []int{200, 210, 211, 230}},
		{name: "a setsid grandchild in its own group and session is found by parent",
			table: table(p(200, self, 200), p(201, 200, 200), p(202, 201, 202)),
			roots: []int{200}, pgid: 200, want: []int{200, 201, 202}},
		{name: "a group member whose parent is outside is found with its children",
			table: table(p(200, self, 200), p(300, 1, 200), p(301, 300, 301), p(400, 1, 400)),
			roots: []int{200}, pgid: 200, want: []int{200, 300, 301}},
		{name: "the group alone, root already reaped",
			table: table(p(300, 1, 200), p(299, 300, 200)),
			roots: []int{200}, pgid: 200, want: []int{300, 299}},
		{name: "a daemon re-parented to init out of the group is out of reach",
			table: table(p(200, self, 200), p(500, 1, 500)),
			roots: []int{200}, pgid: 200, want: []int{200}},
		{name: "unrelated processes are left alone",
			table: table(p(200, self, 200), p(600, 50, 50), p(601, 1, 601), p(602, self, 602)),
			roots: []int{200}, pgid: 200, want: []int{200}},
		{name: "a root that is the caller is refused", table: table(p(200, self, 200)), roots: []int{self}, want: []int{}},
		{name: "a root that is the caller's parent is refused, with all below it",
			table: table(p(200, self, 200), p(201, 50, 201)), roots: []int{50}, want: []int{}},
		{name: "roots 0 and 1 are refused", table: table(p(200, 1, 200)), roots: []int{0, 1}, want: []int{}},
		{name: "the caller's own group is never the call's",
			table: table(p(200, self, 200), p(600, 1, 50)), roots: []int{200}, pgid: 50, want: []int{200}},
		{name: "group 1 brings nothing of init", table: table(p(200, self, 200)), roots: []int{200}, pgid: 1, want: []int{200}},
		{name: "a table claiming the caller is a child of the call skips the caller and its children",
			table: []Proc{p(1, 0, 1), p(200, 1, 200), p(self, 200, 200), p(700, self, 700), p(201, 200, 200)},
			roots: []int{200}, pgid: 200, want: []int{}},
		{name: "a table claiming init is in the call's group never returns init",
			table: []Proc{p(0, 0, 200), p(1, 200, 200), p(200, self, 200), p(self, 50, 50)},
			roots: []int{200}, pgid: 200, want: []int{200}},
		{name: "negative pids are never returned",
			table: table(p(200, self, 200), p(-1, 200, 200), p(-200, 200, 200)),
			roots: []int{200, -1}, pgid: 200, want: []int{200}},
		{name: "a pid its own parent ends",
			table: table(p(200, 200, 200)), roots: []int{200}, pgid: 200, want: []int{200}},
		{name: "a pid its own parent is no root of the caller",
			table: table(p(200, 200, 200)), roots: []int{200}, want: []int{}},
		{name: "a loop of parents ends and is walked once",
			table: table(p(200, 202, 200), p(201, 200, 200), p(202, 201, 200)),
			roots: []int{200}, pgid: 200, want: []int{200, 201, 202}},
		{name: "a loop through the caller's ancestors ends",
			table: []Proc{p(50, self, 50), p(self, 50, 50), p(200, self, 200)}, roots: []int{200}, pgid: 200, want: []int{200}},
		{name: "a duplicated pid keeps its first row",
			table: table(p(200, self, 200), p(201, 200, 200), p(201, 1, 201), p(202, 201, 202)),
			roots: []int{200}, want: []int{200, 201, 202}},
		{name: "a duplicated pid whose first row is elsewhere is not taken",
			table: table(p(200, self, 200), p(201, 1, 201), p(201, 200, 200)),
			roots: []int{200}, want: []int{200}},
		{name: "an ancestor of the caller behind a negative pid is still the caller's",
			table: []Proc{p(1, 0, 1), p(20, 1, 20), p(-5, 20, 20), p(21, -5, 21), p(self, 21, 21), p(22, 20, 22)},
			roots: []int{20}, want: []int{}},
		{name: "duplicate roots are walked once",
			table: table(p(200, self, 200), p(201, 200, 200)), roots: []int{200, 200, 201}, want: []int{200, 201}},
		{name: "several roots keep their order",
			table: table(p(300, self, 300), p(200, self, 200), p(301, 300, 300)),
			roots: []int{300, 200}, want: []int{300, 301, 200}},
		{name: "a root below another root comes under it",
			table: table(p(200, self, 200), p(201, 200, 200)), roots: []int{201, 200}, want: []int{200, 201}},
		{name: "a root reaped and its pid taken by an unrelated process is ignored with its tree",
			table: table(p(200, 1, 200), p(201, 200, 200), p(202, 201, 202)), roots: []int{200}, want: []int{}},
		{name: "a root reaped and its pid taken by a process of another call is ignored",
			table: table(p(300, self, 300), p(200, 300, 300), p(201, 200, 300)), roots: []int{200}, want: []int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := pids(descendants(tt.table, tt.roots, nil, tt.pgid, self))
			if !slices.Equal(got, tt.want) {
				t.Fatalf("descendants(roots %v, group %d) = %v, want %v", tt.roots, tt.pgid, got, tt.want)
			}
		})
	}
}

func TestDescendantsNeverReturnsTheCaller(t *testing.T) {
	t.Parallel()
	// The exported form takes the caller from os.Getpid.
	me, parent := os.Getpid(), os.Getppid()
	tab := []Proc{p(parent, 1, parent), {PID: me, PPID: parent, PGID: parent}, p(me+1, me, me+1)}
	if got := Descendants(tab, []int{me, parent}, parent); len(got) != 0 {
		t.Fatalf("Descendants(the caller and its parent) = %v, want nothing", pids(got))
	}
}

// FuzzDescendants decodes a table of small pids (so that parents, groups and
// loops collide often) and checks what Descendants promises: it ends; it
// returns each row at most once, the first row of its pid; never pid < 2,
// the caller nor an ancestor of it; a process is returned exactly when its
// parent chain reaches a root that is the caller's child or a member of the
// group without passing the caller's side; and a parent comes before its
// children unless they loop.
func FuzzDescendants(f *testing.F) {
	f.Add([]byte{}, []byte{20}, int8(20), int8(10))
	f.Add([]byte{10, 5, 10, 20, 10, 20, 21, 20, 20, 22, 21, 22}, []byte{20}, int8(20), int8(10))
	f.Add([]byte{20, 22, 20, 21, 20, 20, 22, 21, 20}, []byte{20}, int8(20), int8(10))
	f.Add([]byte{10, 20, 10, 20, 10, 20, 30, 1, 20, 31, 30, 31}, []byte{20, 10}, int8(10), int8(10))
	f.Add([]byte{0, 0, 20, 1, 20, 20, 255, 20, 20}, []byte{255, 1, 0}, int8(-1), int8(20))
	f.Fuzz(func(t *testing.T, rows, rootBytes []byte, pgid8, self8 int8) {
		var tab []Proc
		for i := 0; i+2 < len(rows) && len(tab) < 64; i += 3 {
			tab = append(tab, Proc{PID: int(int8(rows[i])), PPID: int(int8(rows[i+1])), PGID: int(int8(rows[i+2])), Start: uint64(i)})
		}
		var roots []int
		for _, b := range rootBytes {
			roots = append(roots, int(int8(b)))
		}
		pgid, me := int(pgid8), int(self8)
		got := descendants(tab, roots, nil, pgid, me)

		first := map[int]Proc{}
		for _, p := range tab {
			if _, ok := first[p.PID]; !ok {
				first[p.PID] = p
			}
		}
		bad := map[int]bool{me: true}
		for q, ok := first[me]; ok && !bad[q.PPID]; q, ok = first[q.PPID] {
			bad[q.PPID] = true
		}
		group := pgid > 0 && !(first[me].PGID == pgid && hasPID(first, me))
		isRoot := map[int]bool{}
		for _, r := range roots {
			if q, ok := first[r]; ok && q.PPID == me {
				isRoot[r] = true
			}
		}
		// reaches says whether pid's chain reaches a seed through allowed
		// pids, and whether it looped on the way.
		reaches := func(pid int) (ok, loops bool) {
			seen := map[int]bool{}
			for x := pid; ; {
				q, in := first[x]
				if !in || seen[x] {
					return false, seen[x]
				}
				if x < 2 || bad[x] {
					return false, false
				}
				if isRoot[x] || (group && q.PGID == pgid) {
					return true, false
				}
				seen[x] = true
				x = q.PPID
			}
		}
		at := map[int]int{}
		for i, q := range got {
			if _, dup := at[q.PID]; dup {
				t.Fatalf("pid %d returned twice: %v", q.PID, got)
			}
			at[q.PID] = i
			if q != first[q.PID] {
				t.Fatalf("returned %+v, not the first row of its pid %+v", q, first[q.PID])
			}
			if q.PID < 2 || bad[q.PID] {
				t.Fatalf("returned %d: below 2, the caller %d or its ancestor", q.PID, me)
			}
		}
		for pid := range first {
			ok, _ := reaches(pid)
			if _, in := at[pid]; in != ok {
				t.Fatalf("pid %d returned %v, but its chain reaches a root or the group: %v (table %v, roots %v, group %d, caller %d)", pid, in, ok, tab, roots, pgid, me)
			}
		}
		for i, q := range got {
			j, parentIn := at[q.PPID]
			if !parentIn || j < i {
				continue
			}
			if _, loops := chainLoops(first, q.PID); !loops {
				t.Fatalf("pid %d at %d comes before its parent %d at %d: %v", q.PID, i, q.PPID, j, pids(got))
			}
		}
	})
}

func hasPID(m map[int]Proc, pid int) bool { _, ok := m[pid]; return ok }

// chainLoops follows pid's parents through first and says whether they
// come back to a pid already seen.
func chainLoops(first map[int]Proc, pid int) (int, bool) {
	seen := map[int]bool{}
	for x := pid; ; x = first[x].PPID {
		if seen[x] {
			return x, true
		}
		if !hasPID(first, x) {
			return x, false
		}
		seen[x] = true
	}
}
