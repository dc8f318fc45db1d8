package actors

import (
	"context"
	"time"

	"github.com/wraptool/wraptool/messages"
)

// DebounceDelay is how long the files must stay quiet before a reload: an
// editor's CREATE, WRITE and CHMOD of one save arrive within it.
const DebounceDelay = 200 * time.Millisecond

// Debouncer turns bursts of file events into one FileChanged ring, once no
// event has arrived for its delay (a trailing debounce).
type Debouncer struct {
	in, out messages.Doorbell
	delay   time.Duration
}

// DebouncerOptions configure a Debouncer.
type DebouncerOptions struct {
	// FileEvents rings for every relevant file event (the watcher's).
	FileEvents messages.Doorbell
	// FileChanged is rung once a burst is over (the loader's).
	FileChanged messages.Doorbell
	// Delay is the quiet period; zero means DebounceDelay.
	Delay time.Duration
}

// NewDebouncer debounces o.FileEvents into o.FileChanged.
func NewDebouncer(o DebouncerOptions) *Debouncer {
	if o.Delay <= 0 {
		o.Delay = DebounceDelay
	}
	return &Debouncer{in: o.FileEvents, out: o.FileChanged, delay: o.Delay}
}

// Run debounces until ctx is done. Its one timer is owned by the loop and
// reset on each event.
func (d *Debouncer) Run(ctx context.Context) error {
	timer := time.NewTimer(d.delay)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-d.in:
			timer.Reset(d.delay)
		case <-timer.C:
			ring(d.out)
		}
	}
}
