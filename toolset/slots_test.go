package toolset

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wraptool/wraptool/integration/waittest"
)

// acquireAsync starts an Acquire and returns where its result arrives.
func acquireAsync(ctx context.Context, s *Slots) <-chan error {
	done := make(chan error, 1)
	go func() { done <- s.Acquire(ctx) }()
	return done
}

// waitWaiting polls until n Acquires wait.
func waitWaiting(t *testing.T, s *Slots, n int) {
	t.Helper()
	waittest.Until(t, 10*time.Second, func() error {
		if got := s.waiting(); got != n {
			return fmt.Errorf("%d waiters, want %d", got, n)
		}
		return nil
	})
}

func receive(t *testing.T, c <-chan error) error {
	t.Helper()
	select {
	case err := <-c:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Acquire did not return")
		return nil
	}
}

func TestSlotsServeWaitersInArrivalOrder(t *testing.T) {
	t.Parallel()
	s := NewSlots(1)
	if err := s.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	var waiters []<-chan error
	for i := range 3 {
		waiters = append(waiters, acquireAsync(context.Background(), s))
		waitWaiting(t, s, i+1)
	}
	for i, w := range waiters {
		s.Release()
		// Each Release admits exactly one waiter: if it is the oldest
		// one, the order holds.
		if err := receive(t, w); err != nil {
			t.Fatalf("waiter %d: %v", i, err)
		}
		if got, want := s.waiting(), len(waiters)-i-1; got != want {
			t.Fatalf("after %d releases %d wait, want %d", i+1, got, want)
		}
	}
	s.Release()
	if got := s.Running(); got != 0 {
		t.Errorf("%d running after every Release, want 0", got)
	}
}

func TestSlotsCancelledWaiterStopsWaiting(t *testing.T) {
	t.Parallel()
	s := NewSlots(1)
	if err := s.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := acquireAsync(ctx, s)
	waitWaiting(t, s, 1)
	cancel()
	if err := receive(t, w); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire = %v, want context.Canceled", err)
	}
	if s.waiting() != 0 || s.Running() != 1 {
		t.Errorf("%d waiting, %d running; want 0 and 1", s.waiting(), s.Running())
	}
	s.Release()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Acquire(ctx); err != nil {
		t.Errorf("the slot the cancelled waiter left is not free: %v", err)
	}
	if err := s.Acquire(canceled()); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire with a done context = %v, want context.Canceled", err)
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func TestSlotsChangingTheLimit(t *testing.T) {
	t.Parallel()
	s := NewSlots(1)
	if err := s.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	a, b := acquireAsync(context.Background(), s), acquireAsync(context.Background(), s)
	waitWaiting(t, s, 2)
	s.SetLimit(3)
	for _, w := range []<-chan error{a, b} {
		if err := receive(t, w); err != nil {
			t.Fatalf("raising the limit did not admit a waiter: %v", err)
		}
	}
	// Lowering the limit stops nothing, and admits no one until fewer run.
	s.SetLimit(2)
	c := acquireAsync(context.Background(), s)
	waitWaiting(t, s, 1)
	s.Release() // 2 run: still not below the limit
	if got := s.waiting(); got != 1 {
		t.Fatalf("%d wait with 2 running under a limit of 2, want 1", got)
	}
	s.Release()
	if err := receive(t, c); err != nil {
		t.Fatal(err)
	}
	if got := s.Running(); got != 2 {
		t.Errorf("%d running, want 2", got)
	}
}

func TestNilSlotsAreUnlimited(t *testing.T) {
	t.Parallel()
	var s *Slots
	for range 100 {
		if err := s.Acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	s.Release()
	if s.Running() != 0 {
		t.Error("a nil Slots counts")
	}
}

// Many holders and quitters at once: never more holders than the limit, and
// nothing left held or waiting at the end.
func TestSlotsUnderContention(t *testing.T) {
	t.Parallel()
	const limit = 3
	s := NewSlots(limit)
	var held, peak atomic.Int32
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if i%3 == 0 {
				cancel() // some give up at once, some while waiting
				go cancel()
			}
			if i%3 == 1 {
				go cancel()
			}
			if s.Acquire(ctx) != nil {
				return
			}
			n := held.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			held.Add(-1)
			s.Release()
		})
	}
	wg.Wait()
	if p := peak.Load(); p > limit {
		t.Errorf("%d held a slot at once, limit %d", p, limit)
	}
	if s.Running() != 0 || s.waiting() != 0 {
		t.Errorf("%d running, %d waiting at the end; want 0 and 0", s.Running(), s.waiting())
	}
}
