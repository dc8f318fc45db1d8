// Package waittest waits, in tests, for what rings no bell: a condition
// polled with a deadline (a log line, a file another process writes, a
// server's answer) and another process's end.
//
// Every wait is bounded: it ends when its condition holds, when its time is
// up, or when the context it was given ends. A wait for an event that has a
// channel selects on that channel instead; Poll.Wake joins the two.
//
// The helpers are safe to call from parallel tests; Until and Gone must be
// called from the test's own goroutine (they call t.Fatalf), Within from
// any goroutine.
package waittest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Poll is how a wait checks its condition. The zero value checks at once,
// then after 10 ms, the pause doubling up to 50 ms: a condition that holds
// soon is seen soon, and a slow one costs at most 20 checks a second.
type Poll struct {
	// Every is the pause between two checks; zero means the backoff above.
	Every time.Duration
	// Wake ends a pause early each time it delivers (a doorbell such as a
	// client's list_changed channel); nil means only the pause ends one.
	// A wait consumes what it receives from Wake.
	Wake <-chan struct{}
	// Context ends the wait early with its error; nil means
	// context.Background, so only the bound ends it (t.Context would be
	// wrong: it is already done when a Cleanup function waits).
	Context context.Context
}

// Within checks cond until it returns nil, and returns nil; when within
// has passed (or the context ended) it returns cond's last error, saying
// how long it waited. cond is called at least once, first at once.
func (p Poll) Within(within time.Duration, cond func() error) error {
	ctx := p.Context
	if ctx == nil {
		ctx = context.Background()
	}
	deadline := time.Now().Add(within)
	pause := p.Every
	if pause <= 0 {
		pause = 10 * time.Millisecond
	}
	// One timer for the whole wait; since Go 1.23 Reset drops a stale
	// tick, so no draining is needed.
	timer := time.NewTimer(pause)
	defer timer.Stop()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("not within %v: %w", within, err)
		}
		timer.Reset(min(pause, left))
		select {
		case <-timer.C:
		case <-p.Wake:
		case <-ctx.Done():
			return fmt.Errorf("gave up after %v (%v): %w", within-time.Until(deadline), ctx.Err(), err)
		}
		if p.Every <= 0 {
			pause = min(2*pause, 50*time.Millisecond)
		}
	}
}

// Until checks cond until it returns nil and fails t, with cond's last
// error, when within passes first.
func (p Poll) Until(t testing.TB, within time.Duration, cond func() error) {
	t.Helper()
	if err := p.Within(within, cond); err != nil {
		t.Fatal(err)
	}
}

// Within is Poll{}.Within: cond checked with the default backoff.
func Within(within time.Duration, cond func() error) error {
	return Poll{}.Within(within, cond)
}

// Until is Poll{}.Until: cond checked with the default backoff, failing t
// when within passes first.
func Until(t testing.TB, within time.Duration, cond func() error) {
	t.Helper()
	Poll{}.Until(t, within, cond)
}

// File waits (bounded) until path exists: a mark another process leaves
// when it has got somewhere.
func File(t testing.TB, within time.Duration, path string) {
	t.Helper()
	Until(t, within, func() error {
		_, err := os.Stat(path)
		return err
	})
}

// Gone waits (bounded) until pid no longer runs: it is gone from the
// process table or is a zombie, which runs nothing whether or not anyone
// has reaped it yet. Linux only: it reads /proc.
func Gone(t testing.TB, within time.Duration, pid int) {
	t.Helper()
	Until(t, within, func() error {
		if _, state := State(pid); state == "" || state == "Z" {
			return nil
		}
		return fmt.Errorf("process %d still runs", pid)
	})
}

// Stat is the fields of /proc/PID/stat after the command name (which may
// hold spaces and parentheses, so the cut is at the last ')'): state,
// ppid, …; nil when the process no longer exists.
func Stat(pid int) []string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	return strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
}

// State is pid's parent and state letter from /proc; ppid is 0 and state
// "" when the process no longer exists (reaped).
func State(pid int) (ppid int, state string) {
	fields := Stat(pid)
	if len(fields) < 2 {
		return 0, ""
	}
	ppid, _ = strconv.Atoi(fields[1])
	return ppid, fields[0]
}

// Children lists the processes whose parent is pid, zombies included.
func Children(pid int) []int {
	var kids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err == nil {
			if ppid, _ := State(child); ppid == pid {
				kids = append(kids, child)
			}
		}
	}
	return kids
}

// Cmdline is pid's argv as /proc holds it, each argument ended by a NUL;
// "" when the process no longer exists.
func Cmdline(pid int) string {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return string(data)
}

// Receive is the value ch delivers, failing t (with what it waited for)
// when within passes first. For events that have a channel: no polling.
func Receive[T any](t testing.TB, ch <-chan T, within time.Duration, what string) T {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("no %s after %v", what, within)
		panic("unreachable")
	}
}
