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
		// events are when each FileChanged arrives, from the start.
		events []time.Duration
		// want are when each ReloadRequest is sent, from the start.
		want []time.Duration
	}{
		{
			name:   "one event yields one reload 200 ms later",
			events: []time.Duration{0},
			want:   []time.Duration{200 * ms},
		},
		{
			name:   "a burst within 200 ms yields one reload 200 ms after its last event",
			events: []time.Duration{0, 20 * ms, 50 * ms, 150 * ms, 340 * ms},
			want:   []time.Duration{540 * ms},
		},
		{
			name:   "two bursts more than 200 ms apart yield two reloads",
			events: []time.Duration{0, 50 * ms, 100 * ms, 301 * ms, 400 * ms},
			want:   []time.Duration{300 * ms, 600 * ms},
		},
		{
			name:   "an event 1 ms before the delay runs out postpones the reload",
			events: []time.Duration{0, 199 * ms},
			want:   []time.Duration{399 * ms},
		},
		{
			name:   "no events yield no reload",
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
				var reqs []messages.ReloadRequest
				collected := make(chan struct{})
				go func() {
					defer close(collected)
					for {
						select {
						case r := <-out:
							got = append(got, time.Since(begin))
							reqs = append(reqs, r)
						case <-ctx.Done():
							return
						}
					}
				}()
				for _, at := range tt.events {
					time.Sleep(at - time.Since(begin))
					in <- messages.FileChanged{Path: "/cfg/config.yaml", Op: "WRITE"}
				}
				// Long after the last possible reload, everything is settled.
				time.Sleep(10 * DebounceDelay)
				synctest.Wait()
				cancel()
				<-collected
				if err := <-done; err != nil {
					t.Errorf("Run returned %v, want nil", err)
				}

				if !slices.Equal(got, tt.want) {
					t.Errorf("reloads sent at %v, want %v", got, tt.want)
				}
				for i, r := range reqs {
					if want := (messages.ReloadRequest{Cause: "file"}); r != want {
						t.Errorf("reload %d = %+v, want %+v", i, r, want)
					}
				}
			})
		})
	}
}

func TestDebouncerUsesTheGivenDelay(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		in := make(chan messages.FileChanged)
		out := make(chan messages.ReloadRequest)
		stop := start(t, NewDebouncer(in, out, time.Second))
		begin := time.Now()
		in <- messages.FileChanged{Path: "/cfg/config.yaml", Op: "WRITE"}
		<-out
		if got := time.Since(begin); got != time.Second {
			t.Errorf("reload sent after %v, want %v", got, time.Second)
		}
		if err := stop(); err != nil {
			t.Errorf("Run returned %v, want nil", err)
		}
	})
}

func TestDebouncerStops(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// before runs with the debouncer started, before ctx is cancelled.
		before func(in chan<- messages.FileChanged)
	}{
		{
			name:   "cancelling ctx while idle stops Run",
			before: func(chan<- messages.FileChanged) {},
		},
		{
			name: "cancelling ctx while a reload waits for the loader stops Run",
			before: func(in chan<- messages.FileChanged) {
				in <- messages.FileChanged{Path: "/cfg/config.yaml", Op: "WRITE"}
				time.Sleep(2 * DebounceDelay) // nobody reads the reload
			},
		},
		{
			name: "cancelling ctx while a reload is pending stops Run",
			before: func(in chan<- messages.FileChanged) {
				in <- messages.FileChanged{Path: "/cfg/config.yaml", Op: "WRITE"}
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
				// Nothing may be sent once stopped, however long we wait.
				time.Sleep(10 * DebounceDelay)
				synctest.Wait()
				select {
				case r := <-out:
					t.Errorf("got %+v after Run returned, want nothing", r)
				default:
				}
			})
		})
	}
}

// startDebouncer runs a debouncer with the default delay inside a synctest
// bubble; done receives Run's result once cancel has stopped it.
func startDebouncer(t *testing.T) (chan messages.FileChanged, chan messages.ReloadRequest, context.Context, context.CancelFunc, <-chan error) {
	in := make(chan messages.FileChanged)
	out := make(chan messages.ReloadRequest)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- NewDebouncer(in, out, 0).Run(ctx) }()
	return in, out, ctx, cancel, done
}
