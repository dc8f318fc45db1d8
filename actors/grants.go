package actors

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/requests"
)

// Grants keeps the temporary grants in force. It reads the decisions from
// the request log (verified against grants.key: an unsigned or over-long
// grant grants nothing) at start and whenever the watcher rings LogChanged,
// and hands the policy holder the grants in force each time that set
// changes: a grant decided, used, or expired. A timer on the nearest
// until expires grants; the holder's snapshot then no longer carries them,
// and a call decided before the new snapshot arrives still checks the
// grant's until itself.
//
// A once-grant whose use it has seen is remembered as used for the
// server's life, so an older copy of the log (a restored backup) cannot
// bring it back.
type Grants struct {
	changed   messages.Doorbell
	snapshots Snapshots
	out       chan<- messages.GrantsChanged
	waits     <-chan messages.AwaitDecision
	log       *slog.Logger
	stopped   chan<- struct{}

	// waiting are the calls waiting for a decision, by request id.
	waiting map[string][]messages.AwaitDecision

	recs   []*requests.Record // the log as last read
	active []*requests.Record // what the holder was last given
	used   map[string]bool
	warned map[string]bool // warnings already logged
}

// GrantsOptions configure a Grants.
type GrantsOptions struct {
	// Snapshots give the request log's path once serving (Prime is given
	// the first config's).
	Snapshots Snapshots
	// LogChanged is rung by the watcher when the request log changes.
	LogChanged messages.Doorbell
	// Out reaches the policy holder.
	Out chan<- messages.GrantsChanged
	// Log receives the ignored lines and the grants' comings and goings.
	Log *slog.Logger
	// Waits carries the request tool's waits for decisions; its senders
	// hold it as messages.GrantsLinks.
	Waits <-chan messages.AwaitDecision
	// Stopped is closed when Run returns, so a wait never blocks on an
	// actor that no longer reads Waits.
	Stopped chan<- struct{}
}

// NewGrants reads nothing until Prime or Run.
func NewGrants(o GrantsOptions) *Grants {
	return &Grants{changed: o.LogChanged, snapshots: o.Snapshots, out: o.Out, waits: o.Waits, log: logger(o.Log, "grants"),
		stopped: o.Stopped, waiting: map[string][]messages.AwaitDecision{},
		used: map[string]bool{}, warned: map[string]bool{}}
}

// DecisionPoll is how often the log is read again while a call waits for a
// decision, besides every change the watcher reports: a decision written
// by any writer ends a wait within it even if a file event was missed.
const DecisionPoll = time.Second

// Prime reads the log at path (the first config's request log) and returns
// the grants in force now, which the first snapshot carries: a grant
// survives a restart, and the first client sees it. Call it once, before
// Run.
func (g *Grants) Prime(path string) []*requests.Record {
	g.readAt(path)
	g.active = g.inForce(time.Now())
	return g.active
}

// Run follows the log until ctx is done.
func (g *Grants) Run(ctx context.Context) error {
	if g.stopped != nil {
		defer close(g.stopped)
	}
	// A wait still registered when the actor stops (the server is
	// stopping) hears so at once: its reply channel is closed.
	defer func() {
		for _, ws := range g.waiting {
			for _, w := range ws {
				close(w.Reply)
			}
		}
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	poll := time.NewTicker(DecisionPoll)
	defer poll.Stop()
	for {
		g.arm(timer, time.Now())
		select {
		case <-ctx.Done():
			return nil
		case <-g.changed:
			g.read()
		case <-timer.C:
		case w := <-g.waits:
			g.waiting[w.ID] = append(g.waiting[w.ID], w)
		case <-poll.C:
			if len(g.waiting) == 0 {
				continue
			}
			g.read()
		}
		g.answer()
		if !g.publish(ctx) {
			return nil
		}
	}
}

// answer forgets the waits whose callers stopped waiting, then replies to
// every wait whose request is decided.
func (g *Grants) answer() {
	if len(g.waiting) == 0 {
		return
	}
	for id, ws := range g.waiting {
		kept := slices.DeleteFunc(ws, func(w messages.AwaitDecision) bool {
			select {
			case <-w.Done:
				return true
			default:
				return false
			}
		})
		if len(kept) == 0 {
			delete(g.waiting, id)
		} else {
			g.waiting[id] = kept
		}
	}
	for _, r := range g.recs {
		ws, ok := g.waiting[r.ID]
		if !ok || r.Status == requests.StatusPending {
			continue
		}
		for _, w := range ws {
			w.Reply <- *r // buffered (size 1): never blocks
		}
		delete(g.waiting, r.ID)
	}
}

// read re-reads the whole log (it is small, and every writer appends), and
// remembers every once-grant it sees used.
func (g *Grants) read() { g.readAt(g.snapshots.Current().Config.MCP.RequestLog) }

func (g *Grants) readAt(path string) {
	recs, warns, err := requests.Read(path)
	if err != nil {
		g.log.Warn("cannot read the request log for grants; keeping the grants in force", "file", path, "error", err)
		return
	}
	for _, w := range warns {
		if key := path + "\x00" + w.String(); !g.warned[key] {
			g.warned[key] = true
			g.log.Warn("request log: ignored a line", "file", path, "line", w.Line, "problem", w.Err)
		}
	}
	for _, r := range recs {
		if r.Grant != nil && r.Grant.Once && r.Grant.UsedAt != nil {
			g.used[r.ID] = true
		}
	}
	g.recs = recs
}

// inForce is what the log grants at now, less the once-grants seen used.
func (g *Grants) inForce(now time.Time) []*requests.Record {
	var out []*requests.Record
	for _, r := range requests.ActiveGrants(g.recs, now) {
		if !g.used[r.ID] {
			out = append(out, r)
		}
	}
	return out
}

// arm sets timer to the nearest until of the grants in force; a timer
// without one waits an hour for nothing.
func (g *Grants) arm(timer *time.Timer, now time.Time) {
	next := now.Add(time.Hour)
	for _, r := range g.active {
		if r.Grant.Until.Before(next) {
			next = r.Grant.Until
		}
	}
	timer.Stop()
	select {
	case <-timer.C:
	default:
	}
	timer.Reset(max(next.Sub(now), 0))
}

// publish hands the holder the grants in force when they changed; false
// when ctx ended first.
func (g *Grants) publish(ctx context.Context) bool {
	now := time.Now()
	next := g.inForce(now)
	if sameGrants(next, g.active) {
		return true
	}
	cause := "grant"
	for _, r := range g.active {
		if !slices.ContainsFunc(next, func(n *requests.Record) bool { return n.ID == r.ID }) {
			if g.used[r.ID] {
				cause = "grant_used"
			} else if !now.Before(r.Grant.Until) {
				cause = "grant_expired"
			}
			g.log.Info("grant ended", "id", r.ID, "cause", cause)
		}
	}
	for _, r := range next {
		if !slices.ContainsFunc(g.active, func(a *requests.Record) bool { return a.ID == r.ID }) {
			g.log.Info("grant in force", "id", r.ID, "tool", r.Tool, "subcommand", r.Subcommand, "once", r.Grant.Once,
				"until", r.Grant.Until, "exact", r.Grant.Exact)
			cause = "grant"
		}
	}
	select {
	case g.out <- messages.GrantsChanged{Grants: next, Cause: cause}:
		g.active = next
		return true
	case <-ctx.Done():
		return false
	}
}

// sameGrants reports whether two sets in force hold the same grants.
func sameGrants(a, b []*requests.Record) bool {
	return slices.EqualFunc(a, b, func(x, y *requests.Record) bool {
		return x.ID == y.ID && *x.Grant == *y.Grant
	})
}
