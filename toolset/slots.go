package toolset

import (
	"container/list"
	"context"
	"sync"
)

// Slots bounds how many wrapped-tool children run at once
// (mcp.max_concurrent_calls), so a burst of calls cannot fork without limit
// with the operator's credentials. Waiters are served first come, first
// served; a waiter costs a channel, not a goroutine. The limit can change on
// reload: raising it admits waiters at once, lowering it stops nothing that
// runs and admits no one until fewer run than the new limit.
//
// Slots is safe for concurrent use. A nil *Slots is unlimited: Acquire
// returns at once and Release does nothing.
//
// It is not a semaphore.Weighted (golang.org/x/sync), whose size is fixed
// when it is made: a resize emulated by holding back part of a larger one
// would have to wait in line behind the callers to lower the limit (a
// reload must not wait on running calls), and a raise could not hand back
// units that a lowering still waits to take.
type Slots struct {
	mu      sync.Mutex
	limit   int
	running int
	// waiters holds each waiting Acquire's channel, oldest first; a grant
	// removes it from the list and closes it.
	waiters list.List
}

// NewSlots returns a limiter admitting limit holders at once; a limit below
// 1 means 1.
func NewSlots(limit int) *Slots {
	return &Slots{limit: max(limit, 1)}
}

// SetLimit changes the limit (below 1 means 1) and admits the waiters it
// makes room for.
func (s *Slots) SetLimit(limit int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = max(limit, 1)
	s.grant()
}

// Acquire waits for a slot, in arrival order, until ctx is done, and
// returns ctx.Err() then. A nil error obliges the caller to Release.
func (s *Slots) Acquire(ctx context.Context) error {
	if s == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.running < s.limit && s.waiters.Len() == 0 {
		s.running++
		s.mu.Unlock()
		return nil
	}
	ready := make(chan struct{})
	elem := s.waiters.PushBack(ready)
	s.mu.Unlock()

	select {
	case <-ready:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-ready:
		// Granted while giving up: pass the slot on.
		s.running--
	default:
		s.waiters.Remove(elem)
	}
	s.grant()
	return ctx.Err()
}

// Release frees a slot taken by Acquire and admits the next waiter.
func (s *Slots) Release() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running <= 0 {
		panic("toolset: Slots.Release without Acquire")
	}
	s.running--
	s.grant()
}

// Running is how many slots are held now, for messages and metrics.
func (s *Slots) Running() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// waiting is how many Acquires wait now.
func (s *Slots) waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiters.Len()
}

// grant admits waiters, oldest first, while there is room. s.mu is held.
func (s *Slots) grant() {
	for s.running < s.limit && s.waiters.Len() > 0 {
		ready := s.waiters.Remove(s.waiters.Front()).(chan struct{})
		s.running++
		close(ready)
	}
}
