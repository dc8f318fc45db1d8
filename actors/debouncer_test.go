package actors

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wraptool/wraptool/messages"
)

func TestDebouncer(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		name string
		// events are when FileEvents rings, from the start.
		events []time.Duration
		// want are when FileChanged rings, from the start.
		want []time.Duration
	}{
		{
			name:   "one event yields one ring 200 ms later",
			events: []time.Duration{0},
			want:   []time.Duration{200 * ms},
		},
		{
			name:   "a burst within 200 ms yields one ring 200 ms after its last event",
			events: []time.Duration{0, 20 * ms, 50 * ms, 150 * ms, 340 * ms},
			want:   []time.Duration{540 * ms},
		},
		{
			name:   "two bursts more than 200 ms apart yield two rings",
			events: []time.Duration{0, 50 * ms, 100 * ms, 301 * ms, 400 * ms},
			want:   []time.Duration{300 * ms, 600 * ms},
		},
		{
			name:   "an event 1 ms before the delay runs out postpones the ring",
			events: []time.Duration{0, 199 * ms},
			want:   []time.Duration{399 * ms},
		},
		{
			name:   "events every 100 ms ring once a second while they last, then 200 ms after the last",
			events: []time.Duration{0, 100 * ms, 200 * ms, 300 * ms, 400 * ms, 500 * ms, 600 * ms, 700 * ms, 800 * ms, 900 * ms, 1050 * ms, 1150 * ms, 1250 * ms},
			want:   []time.Duration{1000 * ms, 1450 * ms},
		},
		{
			name:   "an event after a max-wait ring opens a new burst",
			events: []time.Duration{0, 150 * ms, 300 * ms, 450 * ms, 600 * ms, 750 * ms, 900 * ms, 1050 * ms},
			want:   []time.Duration{1000 * ms, 1250 * ms},
		},
		{
			name:   "no events yield no ring",
			events: nil,
			want:   nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				in, out, ctx, cancel, done := startDebouncer(t)

				begin := time.Now()
				var got []time.Duration
				collected := make(chan struct{})
				go func() {
					defer close(collected)
					for {
						select {
						case <-out:
							got = append(got, time.Since(begin))
						case <-ctx.Done():
							return
						}
					}
				}()
				for _, at := range tt.events {
					time.Sleep(at - time.Since(begin))
					ring(in)
				}
				// Long after the last possible ring, everything is settled.
				time.Sleep(10 * DebounceDelay)
				synctest.Wait()
				cancel()
				<-collected
				if err := <-done; err != nil {
					t.Errorf("Run returned %v, want nil", err)
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("FileChanged rang at %v, want %v", got, tt.want)
				}
			})
		})
	}
}

func TestDebouncerUsesTheGivenDelay(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		in, out := make(messages.Doorbell, 1), make(messages.Doorbell, 1)
		stop := start(t, NewDebouncer(DebouncerOptions{FileEvents: in, FileChanged: out, Delay: time.Second}))
		begin := time.Now()
		ring(in)
		<-out
		if got := time.Since(begin); got != time.Second {
			t.Errorf("FileChanged rang after %v, want %v", got, time.Second)
		}
		if err := stop(); err != nil {
			t.Errorf("Run returned %v, want nil", err)
		}
	})
}

// A busy loader never holds the debouncer up: with its ring unanswered, the
// debouncer still takes every event, and the rings collapse into one.
func TestDebouncerNeverBlocksOnABusyLoader(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		in, out, _, cancel, done := startDebouncer(t)
		for i := range 3 {
			ring(in)
			synctest.Wait()
			if len(in) != 0 {
				t.Fatalf("event %d: FileEvents still holds its ring, want the debouncer to have taken it", i+1)
			}
			time.Sleep(2 * DebounceDelay) // nobody answers FileChanged
			synctest.Wait()
		}
		if got := drain(out); got != 1 {
			t.Errorf("FileChanged holds %d rings after three bursts nobody answered, want 1", got)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run returned %v, want nil", err)
		}
	})
}

func TestDebouncerStops(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// before runs with the debouncer started, before ctx is cancelled.
		before func(in messages.Doorbell)
	}{
		{
			name:   "cancelling ctx while idle stops Run",
			before: func(messages.Doorbell) {},
		},
		{
			name: "cancelling ctx with a ring nobody answered stops Run",
			before: func(in messages.Doorbell) {
				ring(in)
				time.Sleep(2 * DebounceDelay) // nobody reads FileChanged
			},
		},
		{
			name: "cancelling ctx while a ring is pending stops Run",
			before: func(in messages.Doorbell) {
				ring(in)
				time.Sleep(DebounceDelay / 2)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				in, out, _, cancel, done := startDebouncer(t)
				tt.before(in)
				synctest.Wait()
				cancel()
				synctest.Wait()
				select {
				case err := <-done:
					if err != nil {
						t.Errorf("Run returned %v, want nil", err)
					}
				default:
					t.Fatal("Run is still running after its context was cancelled")
				}
				// Nothing may ring once stopped, however long we wait.
				drain(out)
				time.Sleep(10 * DebounceDelay)
				synctest.Wait()
				if rang(out) {
					t.Error("FileChanged rang after Run returned, want nothing")
				}
			})
		})
	}
}

// startDebouncer runs a debouncer with the default delay inside a synctest
// bubble; done receives Run's result once cancel has stopped it.
func startDebouncer(t *testing.T) (in, out messages.Doorbell, ctx context.Context, cancel context.CancelFunc, done <-chan error) {
	in, out = make(messages.Doorbell, 1), make(messages.Doorbell, 1)
	ctx, cancel = context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- NewDebouncer(DebouncerOptions{FileEvents: in, FileChanged: out}).Run(ctx) }()
	return in, out, ctx, cancel, errc
}
