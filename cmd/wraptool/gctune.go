package main

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// gcHeadroom is how much the heap may grow over what is live before the
// next collection, at least. Every MCP message costs the go-sdk a fresh
// 32 KiB decoder (≈200 KB allocated per call in all), so with Go's default
// (grow by what is live) a server with a few MB live collected every ~20
// calls, and marking was a quarter of a call's server CPU (`just bench`: a
// denied call 463 → 333 µs, an allowed one 973 → 723 µs with 32 MiB of
// headroom). An absolute headroom, unlike a larger GOGC, costs a bounded
// amount of memory however much is live: with more than this live, Go's
// default applies.
const gcHeadroom = 16 << 20

// gcPercent is the GOGC that lets a heap of live bytes grow by
// gcHeadroom, or by what is live (Go's default, 100) when that is more,
// and never by more than ten times what is live.
func gcPercent(live uint64) int {
	if live == 0 {
		return 1000
	}
	return int(min(max(gcHeadroom*100/live, 100), 1000))
}

// gcTuner keeps the heap's growth between collections at gcHeadroom: after
// every collection it reads the live heap and sets the GC percent that
// gives that growth. It hears of collections through a finalizer re-armed
// each cycle (the runtime offers no other hook), which only rings its
// doorbell; the tuning happens on the tuner's own goroutine. It leaves the
// GC alone when the operator set GOGC.
type gcTuner struct {
	cycles  chan struct{}
	stopped atomic.Bool
	set     int // the percent last set; 0 before the first
}

func newGCTuner() *gcTuner { return &gcTuner{cycles: make(chan struct{}, 1)} }

// gcSentinel is garbage the moment it is made; its finalizer runs after the
// collection that finds it. Its pointer keeps it out of the tiny
// allocator, whose objects may never be finalized.
type gcSentinel struct{ t *gcTuner }

func (t *gcTuner) arm() {
	runtime.SetFinalizer(&gcSentinel{t: t}, func(s *gcSentinel) {
		if s.t.stopped.Load() {
			return
		}
		select {
		case s.t.cycles <- struct{}{}:
		default: // a ring is pending: it will read the newest figures
		}
		s.t.arm()
	})
}

// Run tunes after each collection until ctx ends, then restores the
// percent it found.
func (t *gcTuner) Run(ctx context.Context) error {
	before := debug.SetGCPercent(100)
	debug.SetGCPercent(before)
	defer func() {
		t.stopped.Store(true)
		debug.SetGCPercent(before)
	}()
	t.arm()
	t.tune()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.cycles:
			t.tune()
		}
	}
}

func (t *gcTuner) tune() {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	// Setting the percent stops the world briefly: only on a change.
	if p := gcPercent(sample[0].Value.Uint64()); p != t.set {
		debug.SetGCPercent(p)
		t.set = p
	}
}
