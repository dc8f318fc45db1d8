package actors

import (
	"context"
	"time"

	"github.com/wraptool/wraptool/messages"
)

// DebounceDelay is how long the files must stay quiet before a reload: an
// editor's CREATE, WRITE and CHMOD of one save arrive within it.
const DebounceDelay = 200 * time.Millisecond

// Debouncer coalesces bursts of file events into one ReloadRequest, sent
// once no event has arrived for its delay (a trailing debounce).
type Debouncer struct {
	in    <-chan messages.FileChanged
	out   chan<- messages.ReloadRequest
	delay time.Duration
}

// NewDebouncer debounces in into out; a zero delay means DebounceDelay.
func NewDebouncer(in <-chan messages.FileChanged, out chan<- messages.ReloadRequest, delay time.Duration) *Debouncer {
	if delay <= 0 {
		delay = DebounceDelay
	}
	return &Debouncer{in: in, out: out, delay: delay}
}

// Run debounces until ctx is done.
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
			select {
			case d.out <- messages.ReloadRequest{Cause: "file"}:
			case <-ctx.Done():
				return nil
			}
		}
	}
}
