package actors

import "github.com/wraptool/wraptool/messages"

// ring rings a doorbell without blocking: when a ring is already pending,
// this one is absorbed by it, so a burst is one ring and a busy receiver
// never holds up its sender.
func ring(d messages.Doorbell) {
	select {
	case d <- struct{}{}:
	default:
	}
}

// Snapshots is where readers find the snapshot in service: the policy
// holder, which publishes each one through an atomic pointer (the one
// sanctioned shortcut past messages). Consumers take this small interface
// so a test can hand them a fixed snapshot.
type Snapshots interface {
	// Current returns the snapshot in service; it never returns nil.
	Current() *Snapshot
}
