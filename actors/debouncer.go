package actors

import (
	"context"
	"time"

	"github.com/wraptool/wraptool/messages"
)

// DebounceDelay is how long the files must stay quiet before a reload: an
// editor's CREATE, WRITE and CHMOD of one save arrive within it.
const DebounceDelay = 200 * time.Millisecond

// DebounceMaxWait bounds how long a burst may postpone its reload: a file
// rewritten more often than DebounceDelay (a generator, a sync tool, a loop
// in a script) would otherwise starve reloads for as long as it runs, and
// the served policy would fall arbitrarily far behind the file.
const DebounceMaxWait = 5 * DebounceDelay

// Debouncer turns bursts of file events into one FileChanged ring, once no
// event has arrived for its delay (a trailing debounce), or once the burst
// has lasted its maximum wait, whichever comes first.
type Debouncer struct {
	in, out messages.Doorbell
	delay   time.Duration
	maxWait time.Duration
}

// DebouncerOptions configure a Debouncer.
type DebouncerOptions struct {
	// FileEvents rings for every relevant file event (the watcher's).
	FileEvents messages.Doorbell
	// FileChanged is rung once a burst is over (the loader's).
	FileChanged messages.Doorbell
	// Delay is the quiet period; zero means DebounceDelay.
	Delay time.Duration
	// MaxWait is the longest a burst's first event waits for its ring;
	// zero means DebounceMaxWait (or Delay, when Delay is longer).
	MaxWait time.Duration
}

// NewDebouncer debounces o.FileEvents into o.FileChanged.
func NewDebouncer(o DebouncerOptions) *Debouncer {
	if o.Delay <= 0 {
		o.Delay = DebounceDelay
	}
	if o.MaxWait <= 0 {
		o.MaxWait = DebounceMaxWait
	}
	o.MaxWait = max(o.MaxWait, o.Delay)
	return &Debouncer{in: o.FileEvents, out: o.FileChanged, delay: o.Delay, maxWait: o.MaxWait}
}

// Run debounces until ctx is done. Its one timer is owned by the loop: each
// event moves it to delay from now, but never past maxWait from the
// burst's first event.
func (d *Debouncer) Run(ctx context.Context) error {
	timer := time.NewTimer(d.delay)
	timer.Stop()
	defer timer.Stop()
	var deadline time.Time // zero while no burst is open
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-d.in:
			now := time.Now()
			if deadline.IsZero() {
				deadline = now.Add(d.maxWait)
			}
			timer.Reset(min(d.delay, deadline.Sub(now)))
		case <-timer.C:
			deadline = time.Time{}
			ring(d.out)
		}
	}
}
