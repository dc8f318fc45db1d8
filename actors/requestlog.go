package actors

import (
	"context"
	"log/slog"
	"time"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/jsonl"
	"github.com/wraptool/wraptool/policy/requests"
)

// RequestLog is the server's only writer of the capability-request log. It
// serialises the server's appends (the file lock orders them against other
// processes) and answers each with the recorded id.
//
// It is one of the writers that must outlive the hub: serve runs it with a
// context that ends only once the hub has stopped (every call answered), so
// a request made during the shutdown grace period is still recorded. A wait
// for the file's lock gives up after jsonl.LockTimeout, and at once from the
// moment StopWaiting is called (serve calls it when shutdown begins), so no
// lock held by another process can keep the server from stopping.
type RequestLog struct {
	in        <-chan messages.AppendRequest
	uses      <-chan messages.UseGrant
	decides   <-chan messages.DecideRequest
	queries   <-chan messages.PendingQuery
	filed     chan<- messages.RequestFiled
	snapshots Snapshots
	now       func() time.Time
	log       *slog.Logger
	stopped   chan<- struct{}
	// waits ends lock waits (StopWaiting); the writer still appends when
	// the lock is free.
	waits    context.Context
	endWaits context.CancelFunc

	// file is the log at the current path: it remembers what it has read,
	// so a submit reads only what was appended since (and reports each
	// skipped line once).
	file     *requests.Log
	filePath string
}

// RequestLogOptions configure a RequestLog. Its senders hold the other
// ends as messages.RequestLogLinks.
type RequestLogOptions struct {
	// Appends carries the capability requests to record.
	Appends <-chan messages.AppendRequest
	// Queries carries the request tool's per-session pending checks.
	Queries <-chan messages.PendingQuery
	// Decides carries decisions made in a client or the review UI.
	Decides <-chan messages.DecideRequest
	// Uses carries the once-grants calls consume.
	Uses <-chan messages.UseGrant
	// Stopped is closed when Run returns, so a sender never waits on a
	// writer that no longer reads (it hears messages.ErrStopped).
	Stopped chan<- struct{}
	// Filed, when set, hears of every request appended (never of a
	// de-duplicated one), for the operator's hook. A send that would
	// block is dropped and logged: the request tool never waits for it.
	Filed chan<- messages.RequestFiled
	// Snapshots gives the log's path (mcp.request_log of the snapshot in
	// service), read for every request.
	Snapshots Snapshots
	// Now stamps the records; nil means time.Now.
	Now func() time.Time
	// Log receives skipped-line warnings; nil discards them.
	Log *slog.Logger
}

// NewRequestLog serves what arrives on o's channels once Run starts.
func NewRequestLog(o RequestLogOptions) *RequestLog {
	if o.Now == nil {
		o.Now = time.Now
	}
	waits, endWaits := context.WithCancel(context.Background())
	return &RequestLog{in: o.Appends, uses: o.Uses, decides: o.Decides, queries: o.Queries, filed: o.Filed, snapshots: o.Snapshots,
		now: o.Now, log: logger(o.Log, "requestlog"), stopped: o.Stopped, waits: waits, endWaits: endWaits}
}

// StopWaiting makes every wait for the file's lock, now and later, give up
// at once. It never blocks: it is a run-group interrupt.
func (w *RequestLog) StopWaiting() { w.endWaits() }

// Run appends requests until ctx is done.
func (w *RequestLog) Run(ctx context.Context) error {
	if w.stopped != nil {
		defer close(w.stopped)
	}
	// lockCtx bounds lock waits: they end with ctx, or when StopWaiting is
	// called, whichever is first; the loop itself runs until ctx ends.
	lockCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(w.waits, cancel)()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-w.in:
			if ctx.Err() != nil {
				// Stopped meanwhile: the caller hears messages.ErrStopped.
				return nil
			}
			path := w.current()
			s, err := w.file.Submit(lockCtx, m.Request, w.now())
			for _, warn := range s.Warnings {
				w.log.Warn("request log: skipped a line", "file", path, "line", warn.Line, "problem", warn.Err)
			}
			// Reply is buffered (size 1), as messages requires of every sender: this never blocks.
			m.Reply <- messages.AppendResult{Submitted: s, Err: err}
			if err == nil && !s.Existing {
				w.announce(s)
			}
		case m := <-w.queries:
			if ctx.Err() != nil {
				return nil
			}
			w.current()
			still, identical, err := w.file.Pending(lockCtx, m.IDs, m.Request)
			m.Reply <- messages.PendingAnswer{Still: still, Identical: identical, Err: err} // buffered (size 1)
		case m := <-w.decides:
			if ctx.Err() != nil {
				return nil
			}
			w.current()
			err := w.file.Decide(lockCtx, m.ID, m.Decision, w.now())
			if err == nil {
				w.log.Info("request decided", "id", m.ID, "status", m.Decision.Status, "decided_by", m.Decision.DecidedBy, "client", m.Decision.Client)
			}
			m.Reply <- err // buffered (size 1): never blocks
		case m := <-w.uses:
			if ctx.Err() != nil {
				return nil
			}
			w.current()
			_, err := w.file.UseGrant(lockCtx, m.ID, w.now())
			if err == nil {
				w.log.Info("once-grant used", "id", m.ID)
			}
			m.Reply <- err // buffered (size 1): never blocks
		}
	}
}

// announce hands a new request to the hook runner, never waiting for it.
func (w *RequestLog) announce(s requests.Submitted) {
	if w.filed == nil {
		return
	}
	select {
	case w.filed <- messages.RequestFiled{Record: s.Record, Line: s.Line}:
	default:
		w.log.Warn("on_request hook skipped: too many requests are waiting for the hook", "id", s.ID)
	}
}

// current opens the log at the snapshot's path, keeping the one it has when
// the path is unchanged, and returns the path.
func (w *RequestLog) current() string {
	path := w.snapshots.Current().Config.MCP.RequestLog
	if w.file == nil || w.filePath != path {
		w.file, w.filePath = requests.Open(path).OnLockWait(func() {
			w.log.Warn("the request log is locked by another process; waiting", "file", path, "up_to", jsonl.LockTimeout)
		}), path
	}
	return path
}
