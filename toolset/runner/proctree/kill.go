package proctree

import (
	"fmt"
	"os"
)

// Signal is a signal Sweep and Kill send, named here because not every
// system the module builds for has SIGSTOP.
type Signal int

const (
	// Stop freezes a process (SIGSTOP): it can neither fork nor exit until
	// continued, and SIGKILL still ends it.
	Stop Signal = iota + 1
	// KillSignal ends a process (SIGKILL).
	KillSignal
)

// Sender sends sig to the single process pid (never to a group: pid is
// always 2 or more).
type Sender func(pid int, sig Signal) error

// maxRounds bounds how often Sweep re-reads the table for children forked
// before their parent was frozen: each round freezes everything it saw, so
// only a child forked in that round's window is new to the next.
const maxRounds = 8

// Options configures Sweep; a nil *Options means every default.
type Options struct {
	// Table reads the process table; nil means Table.
	Table func() ([]Proc, error)
	// Send signals one process; nil means the system's kill(2).
	Send Sender
	// Self is the pid never signalled, with its ancestors; 0 means
	// os.Getpid.
	Self int
}

func (o *Options) table() ([]Proc, error) {
	if o == nil || o.Table == nil {
		return Table()
	}
	return o.Table()
}

func (o *Options) send() Sender {
	if o == nil || o.Send == nil {
		return send
	}
	return o.Send
}

func (o *Options) self() int {
	if o == nil || o.Self == 0 {
		return os.Getpid()
	}
	return o.Self
}

// Kill sends sig to each victim, in order, that fresh — a read of the table
// taken just before — still shows with the same pid and the same start
// time, so a pid an unrelated process took since the victims were listed
// is never signalled. A pid below 2 or equal to self is never signalled,
// whatever the list says. It returns the victims signalled without error.
func Kill(victims, fresh []Proc, sig Signal, self int, sendTo Sender) []Proc {
	now := make(map[int]uint64, len(fresh))
	for _, p := range fresh {
		if _, dup := now[p.PID]; !dup {
			now[p.PID] = p.Start
		}
	}
	var sent []Proc
	for _, v := range victims {
		start, ok := now[v.PID]
		if v.PID < 2 || v.PID == self || !ok || start != v.Start {
			continue
		}
		if sendTo(v.PID, sig) == nil {
			sent = append(sent, v)
		}
	}
	return sent
}

// Sweep kills what a call left behind: Descendants of roots and of group
// pgid. It first freezes them (Stop, parents before children, each checked
// against a fresh read), re-reads the table for children forked before
// their parent froze, freezes those too (at most maxRounds times), then
// kills every frozen process after one more fresh read. Freezing first is
// what keeps a parent from forking a child, or restarting a killed one,
// between the read and the kill: such a child would be re-parented to
// launchd when the parent dies, out of reach. It returns what it killed, for
// the log; an error only when the first read of the table fails.
//
// Call it when the call ends, before its roots are reaped and before its
// process group is killed: a process whose parent has exited is re-parented
// to launchd and no walk by parent pid reaches it, so the walk must run while
// the parents still live (the group kill after it ends what is left of the
// group).
func Sweep(roots []int, pgid int, o *Options) ([]Proc, error) {
	self, sendTo := o.self(), o.send()
	table, err := o.table()
	if err != nil {
		return nil, fmt.Errorf("read process table: %w", err)
	}
	victims := descendants(table, roots, nil, pgid, self)
	frozen := map[int]Proc{}
	var order []Proc
	for round := 0; round < maxRounds && len(victims) > 0; round++ {
		fresh, err := o.table()
		if err != nil {
			break
		}
		for _, p := range Kill(victims, fresh, Stop, self, sendTo) {
			frozen[p.PID] = p
			order = append(order, p)
		}
		after, err := o.table()
		if err != nil {
			break
		}
		table = after
		// A frozen pid leads the next walk only while the table still
		// shows it with its start time: if it died and its pid was
		// reused, what lies below is not the call's.
		var held []int
		live := map[int]uint64{}
		for _, p := range table {
			live[p.PID] = p.Start
		}
		for _, p := range order {
			if s, ok := live[p.PID]; ok && s == p.Start {
				held = append(held, p.PID)
			}
		}
		victims = victims[:0]
		for _, p := range descendants(table, roots, held, pgid, self) {
			if _, ok := frozen[p.PID]; !ok {
				victims = append(victims, p)
			}
		}
	}
	if len(order) == 0 {
		return nil, nil
	}
	fresh, err := o.table()
	if err != nil {
		// Leaving them frozen would be worse: fall back to the last read
		// taken after they froze (a frozen process cannot exit by itself,
		// so its pid is still its own).
		fresh = table
	}
	return Kill(order, fresh, KillSignal, self, sendTo), nil
}
