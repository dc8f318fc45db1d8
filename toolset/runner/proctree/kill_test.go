package proctree

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
)

func TestKill(t *testing.T) {
	t.Parallel()
	victims := []Proc{p(200, self, 200), p(201, 200, 200), p(202, 201, 202)}
	tests := []struct {
		name    string
		victims []Proc
		fresh   []Proc
		failing int // a pid whose signal fails
		want    []int
	}{
		{name: "every victim still there is signalled in order", victims: victims, fresh: table(victims...), want: []int{200, 201, 202}},
		{name: "a pid reused by another process is not signalled", victims: victims,
			fresh: table(victims[0], Proc{PID: 201, PPID: 1, PGID: 201, Start: 99999}, victims[2]), want: []int{200, 202}},
		{name: "a victim gone since the list is not signalled", victims: victims, fresh: table(victims[0]), want: []int{200}},
		{name: "a failed signal is not reported", victims: victims, fresh: table(victims...), failing: 201, want: []int{200, 202}},
		{name: "pids below 2 and the caller are never signalled, whatever the list says",
			victims: []Proc{p(1, 0, 1), p(0, 0, 0), p(-1, 0, 0), p(self, 50, 50)},
			fresh:   []Proc{p(1, 0, 1), p(0, 0, 0), p(-1, 0, 0), p(self, 50, 50)}, want: []int{}},
		{name: "an empty fresh read signals nothing", victims: victims, fresh: nil, want: []int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var signalled []int
			sendTo := func(pid int, sig Signal) error {
				signalled = append(signalled, pid)
				if pid == tt.failing {
					return syscall.EPERM
				}
				return nil
			}
			got := pids(Kill(tt.victims, tt.fresh, KillSignal, self, sendTo))
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Kill reported %v, want %v", got, tt.want)
			}
			for _, pid := range signalled {
				if pid < 2 || pid == self {
					t.Fatalf("Kill signalled pid %d", pid)
				}
			}
		})
	}
}

// world is a simulated process table that Sweep reads and signals. A
// process in forkers forks a child in a new session at every read of the
// table while it is not stopped; a killed process's children go to init,
// as on macOS.
type world struct {
	mu          sync.Mutex
	procs       map[int]*simProc
	next        int
	forkers     map[int]bool
	unstoppable map[int]bool
	failRead    map[int]bool   // by read number, from 1
	onRead      map[int]func() // by read number, run under mu before the read
	reads       int
	log         []string
}

type simProc struct {
	Proc
	stopped bool
}

func newWorld(rows ...Proc) *world {
	w := &world{procs: map[int]*simProc{}, next: 1000, forkers: map[int]bool{}, unstoppable: map[int]bool{}, failRead: map[int]bool{}, onRead: map[int]func(){}}
	for _, r := range table(rows...) {
		w.procs[r.PID] = &simProc{Proc: r}
	}
	return w
}

func (w *world) table() ([]Proc, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reads++
	if f := w.onRead[w.reads]; f != nil {
		f()
	}
	if w.failRead[w.reads] {
		return nil, errors.New("simulated read failure")
	}
	for _, pid := range w.sorted() {
		if q := w.procs[pid]; w.forkers[pid] && !q.stopped {
			w.next++
			w.procs[w.next] = &simProc{Proc: Proc{PID: w.next, PPID: pid, PGID: w.next, Start: uint64(w.next) * 10}}
		}
	}
	var out []Proc
	for _, pid := range w.sorted() {
		out = append(out, w.procs[pid].Proc)
	}
	return out, nil
}

func (w *world) sorted() []int {
	var ps []int
	for pid := range w.procs {
		ps = append(ps, pid)
	}
	slices.Sort(ps)
	return ps
}

func (w *world) send(pid int, sig Signal) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	q, ok := w.procs[pid]
	if !ok {
		return syscall.ESRCH
	}
	switch sig {
	case Stop:
		w.log = append(w.log, fmt.Sprintf("stop %d", pid))
		q.stopped = !w.unstoppable[pid]
	case KillSignal:
		w.log = append(w.log, fmt.Sprintf("kill %d", pid))
		delete(w.procs, pid)
		for _, c := range w.procs {
			if c.PPID == pid {
				c.PPID = 1
			}
		}
	}
	return nil
}

func (w *world) alive(pid int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.procs[pid]
	return ok
}

func (w *world) options() *Options { return &Options{Table: w.table, Send: w.send, Self: self} }

func TestSweep(t *testing.T) {
	t.Parallel()
	call := []Proc{p(200, self, 200), p(201, 200, 200), p(202, 201, 202)}
	tests := []struct {
		name  string
		setup func(w *world)
		want  []int    // killed
		log   []string // signals in order, when set
		alive []int    // pids that must survive
		err   bool
		check func(t *testing.T, w *world, killed []Proc) // instead of want, when set
	}{
		{name: "the whole tree is frozen parents first, then killed",
			want:  []int{200, 201, 202},
			log:   []string{"stop 200", "stop 201", "stop 202", "kill 200", "kill 201", "kill 202"},
			alive: []int{1, 50, self}},
		{name: "children a parent forks before it freezes are found and killed",
			setup: func(w *world) { w.forkers[201] = true },
			want:  []int{200, 201, 202, 1001, 1002}},
		{name: "a process that cannot be frozen ends the rounds, and is killed",
			setup: func(w *world) { w.forkers[201] = true; w.unstoppable[201] = true },
			check: func(t *testing.T, w *world, killed []Proc) {
				if max := 2*maxRounds + 2; w.reads > max {
					t.Errorf("Sweep read the table %d times, want at most %d", w.reads, max)
				}
				if len(killed) < 3+maxRounds || w.alive(201) {
					t.Errorf("Sweep killed %v, want the tree and every child forked during its rounds", pids(killed))
				}
			}},
		{name: "a pid reused between the first read and the freeze is left alone",
			setup: func(w *world) {
				w.onRead[2] = func() { // 202 exited and an unrelated process took its pid
					w.procs[202] = &simProc{Proc: Proc{PID: 202, PPID: 1, PGID: 202, Start: 5}}
				}
			},
			want: []int{200, 201}, alive: []int{202}},
		{name: "a first read that fails is an error",
			setup: func(w *world) { w.failRead[1] = true }, err: true, alive: []int{200, 201, 202}},
		{name: "a last read that fails still kills what was frozen",
			setup: func(w *world) { w.failRead[4] = true }, want: []int{200, 201, 202}},
		{name: "unrelated processes survive",
			setup: func(w *world) {
				w.procs[300] = &simProc{Proc: p(300, 1, 300)}
				w.procs[301] = &simProc{Proc: p(301, 50, 50)}
			},
			want: []int{200, 201, 202}, alive: []int{300, 301}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(call...)
			if tt.setup != nil {
				tt.setup(w)
			}
			got, err := Sweep([]int{200}, 200, w.options())
			if (err != nil) != tt.err {
				t.Fatalf("Sweep error %v, want error %v", err, tt.err)
			}
			if tt.check != nil {
				tt.check(t, w, got)
			} else if !slices.Equal(pids(got), tt.want) && (len(got) != 0 || len(tt.want) != 0) {
				t.Fatalf("Sweep killed %v, want %v (signals %v)", pids(got), tt.want, w.log)
			}
			if tt.log != nil && !slices.Equal(w.log, tt.log) {
				t.Fatalf("signals %v, want %v", w.log, tt.log)
			}
			for _, k := range tt.want {
				if w.alive(k) {
					t.Errorf("pid %d still alive after Sweep", k)
				}
			}
			for _, a := range tt.alive {
				if !w.alive(a) {
					t.Errorf("pid %d was killed, want it alive", a)
				}
			}
		})
	}
}
