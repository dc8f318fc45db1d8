package runner

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Reaper ends the processes that outlive their calls. Every child wraptool
// starts through Start is tracked while it runs; a sweep lists wraptool's
// children and SIGKILLs and reaps each one that no tracked process owns:
// orphans re-parented to wraptool as a subreaper. A child owns itself and,
// when it leads a process group, the group's members that were re-parented
// while it runs (they die with the group when it ends). A process that left
// the group (setsid) belongs to nobody and is killed by the next sweep.
//
// A Reaper sweeps only while the process really is a subreaper
// (BecomeSubreaper); otherwise it only tracks. Tests run many servers in one
// process, and a sweep there would kill the other tests' children.
//
// Every child of the process must be started through Start (wrapped tools,
// upstream servers, introspection, hooks): one started otherwise counts as a
// stray, and a sweep would kill it and steal its exit status from os/exec.
// Start, Sweep and Run are safe for concurrent use; a nil *Reaper tracks
// nothing and sweeps nothing.
type Reaper struct {
	log *slog.Logger
	// bell is the sweep doorbell. Buffer 1; Sweep sends without blocking
	// (a burst of rings coalesces into one sweep); Run receives.
	bell chan struct{}
	// forks is held shared across each Start (fork, exec, track) and
	// exclusively by a sweep while it lists, decides and kills, so a sweep
	// never sees a child that is forked but not yet tracked.
	forks sync.RWMutex
	// mu guards owned: how many running Starts track each pid.
	mu    sync.Mutex
	owned map[int]int
	// byTable: Run also sweeps each call's leftovers by the process table
	// as the call ends (leftovers.go); set where there is no subreaper.
	byTable bool
}

// NewReaper returns a Reaper that logs what it kills to log (nil means
// nowhere). It starts nothing; whoever owns the run group calls Run.
func NewReaper(log *slog.Logger) *Reaper {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Reaper{log: log, bell: make(chan struct{}, 1), owned: map[int]int{}, byTable: sweepByTableDefault}
}

// Run sweeps on every ring of the doorbell and on every SIGCHLD until ctx
// is done, then returns nil. It also sweeps once at start.
func (r *Reaper) Run(ctx context.Context) error {
	// sigchld: buffer 1, sent by the runtime's signal handler, received
	// here; a signal arriving while one is pending is dropped, which loses
	// nothing because the pending one sweeps after it.
	sigchld := make(chan os.Signal, 1)
	signal.Notify(sigchld, syscall.SIGCHLD)
	defer signal.Stop(sigchld)
	for {
		r.sweep()
		select {
		case <-ctx.Done():
			return nil
		case <-r.bell:
		case <-sigchld:
		}
	}
}

// Sweep asks for a sweep soon. It never blocks, so a caller can ring it as
// each call ends and the sweep, run in Run's goroutine, costs the call
// nothing.
func (r *Reaper) Sweep() {
	if r == nil {
		return
	}
	select {
	case r.bell <- struct{}{}:
	default: // a sweep is already due
	}
}

// Start starts cmd confined by sb (nil confines nothing) and tracks its
// process until done is called; call done only after cmd.Wait has returned
// (the process is reaped), never before. On a nil Reaper it only starts
// cmd. done is never nil and may be called more than once. When sb cannot
// confine the process, nothing starts and the error says why
// (ErrNoConfinement). Nor does it when the program is one others could
// change or replace (CheckProgram; the error wraps ErrUntrusted): every
// child passes here, so a folder swapped while the server runs is caught at
// the next start of whatever lies under it.
func (r *Reaper) Start(cmd *exec.Cmd, sb *Sandbox) (done func(), err error) {
	if err := startCheck(cmd); err != nil {
		return func() {}, err
	}
	if r == nil {
		return func() {}, sb.start(cmd)
	}
	r.forks.RLock()
	defer r.forks.RUnlock()
	if err := sb.start(cmd); err != nil {
		return func() {}, err
	}
	pid := cmd.Process.Pid
	r.mu.Lock()
	r.owned[pid]++
	r.mu.Unlock()
	return sync.OnceFunc(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.owned[pid]--; r.owned[pid] <= 0 {
			delete(r.owned, pid)
		}
	}), nil
}

// sweep kills and reaps every child no tracked process owns, when this
// process is a subreaper. A killed child usually is not dead yet when sweep
// tries to reap it without waiting; its SIGCHLD brings the next sweep, which
// reaps it.
func (r *Reaper) sweep() {
	if !isSubreaper() {
		return
	}
	r.forks.Lock()
	defer r.forks.Unlock()
	pids, err := children()
	if err != nil {
		r.log.Warn("cannot list child processes", "error", err)
		return
	}
	r.mu.Lock()
	var strays []proc
	for _, pid := range pids {
		if r.owned[pid] > 0 {
			continue
		}
		p, ok := readProc(pid)
		if !ok || r.owned[p.pgid] > 0 {
			continue // gone already, or in a running call's group
		}
		strays = append(strays, p)
	}
	r.mu.Unlock()
	// The lock is still held: no tracked child can be forked and take the
	// pid of a stray reaped here before this sweep is done with it.
	for _, p := range strays {
		if !p.zombie {
			if err := syscall.Kill(p.pid, syscall.SIGKILL); err == nil {
				r.log.Info("killed a process that outlived its call", "pid", p.pid, "command", p.comm)
			}
		}
		// Reap this pid only, never wait4(-1): that would steal os/exec's
		// own children's statuses.
		var ws syscall.WaitStatus
		for {
			_, err := syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
			if !errors.Is(err, syscall.EINTR) {
				break
			}
		}
	}
}

// proc is what a sweep needs from /proc/PID/stat.
type proc struct {
	pid, pgid int
	comm      string
	zombie    bool
}

// readProc reads pid's stat; ok is false once the process is gone.
func readProc(pid int) (proc, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	p, ok := parseStat(string(data))
	p.pid = pid
	return p, ok
}

// parseStat reads "pid (comm) state ppid pgrp …"; comm may hold spaces and
// parentheses, so the fields are counted from the last ')'.
func parseStat(s string) (proc, bool) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return proc{}, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 3 {
		return proc{}, false
	}
	pgid, err := strconv.Atoi(f[2])
	if err != nil {
		return proc{}, false
	}
	return proc{pgid: pgid, comm: s[open+1 : end], zombie: f[0] == "Z"}, true
}

// parentOf is the ppid field of a stat line.
func parentOf(s string) (int, bool) {
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return 0, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// children lists this process's children, from each thread's
// /proc/self/task/TID/children, or, on a kernel without that file, by
// scanning /proc for processes whose parent is this one. A listing may miss
// a child that appears meanwhile; the next sweep sees it.
func children() ([]int, error) {
	self := os.Getpid()
	if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(self) + "/children"); errors.Is(err, fs.ErrNotExist) {
		return scanChildren(self)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, t := range tasks {
		data, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue // the thread ended; its children moved to another
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
}

func scanChildren(self int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(string(data)); ok && ppid == self {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
