package actors

import (
	"sync/atomic"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/toolset"
)

// ring rings a doorbell without blocking: when a ring is already pending,
// this one is absorbed by it, so a burst is one ring and a busy receiver
// never holds up its sender.
func ring(d messages.Doorbell) {
	select {
	case d <- struct{}{}:
	default:
	}
}

// Snapshots is where readers find the snapshot in service: the Published
// pointer the policy holder writes. Consumers take this small interface so
// a test can hand them a fixed snapshot.
type Snapshots interface {
	// Current returns the snapshot in service; it never returns nil.
	Current() *Snapshot
}

// Published is the snapshot in service as the policy holder publishes it:
// an atomic pointer, the one sanctioned shortcut past messages. The holder
// is its only writer; every reader loads the snapshot it needs when it
// needs it, so a reload is one pointer swap and a call keeps the snapshot
// it started with. It is not an actor: it holds one pointer and no logic.
type Published struct{ cur atomic.Pointer[Snapshot] }

// NewPublished is empty until the policy holder is built (NewPolicyHolder
// stores its first snapshot): only construction runs before that.
func NewPublished() *Published { return &Published{} }

// Current returns the snapshot in service.
func (p *Published) Current() *Snapshot { return p.cur.Load() }

// State returns the tool-call state of the snapshot in service: what the
// built-in tools read.
func (p *Published) State() *toolset.State { return &p.cur.Load().State }
