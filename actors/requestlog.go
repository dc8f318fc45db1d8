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
	in        chan messages.AppendRequest
	uses      chan messages.UseGrant
	decides   chan messages.DecideRequest
	queries   chan messages.PendingQuery
	filed     chan<- messages.RequestFiled
	snapshots Snapshots
	now       func() time.Time
	log       *slog.Logger
	done      chan struct{}
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

// RequestLogOptions configure a RequestLog.
type RequestLogOptions struct {
	// Appends carries the requests Submit sends.
	Appends chan messages.AppendRequest
	// Uses carries the once-grants UseGrant consumes; nil makes its own.
	Uses chan messages.UseGrant
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

// NewRequestLog serves the requests Submit sends.
func NewRequestLog(o RequestLogOptions) *RequestLog {
	if o.Now == nil {
		o.Now = time.Now
	}
	waits, endWaits := context.WithCancel(context.Background())
	if o.Uses == nil {
		o.Uses = make(chan messages.UseGrant)
	}
	return &RequestLog{in: o.Appends, uses: o.Uses, decides: make(chan messages.DecideRequest), queries: make(chan messages.PendingQuery), filed: o.Filed, snapshots: o.Snapshots, now: o.Now, log: logger(o.Log, "requestlog"),
		done: make(chan struct{}), waits: waits, endWaits: endWaits}
}

// StopWaiting makes every wait for the file's lock, now and later, give up
// at once. It never blocks: it is a run-group interrupt.
func (w *RequestLog) StopWaiting() { w.endWaits() }

// Run appends requests until ctx is done.
func (w *RequestLog) Run(ctx context.Context) error {
	defer close(w.done)
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
				// Stopped meanwhile: the caller hears ErrStopped from Submit.
				return nil
			}
			path := w.current()
			s, err := w.file.Submit(lockCtx, m.Request, w.now())
			for _, warn := range s.Warnings {
				w.log.Warn("request log: skipped a line", "file", path, "line", warn.Line, "problem", warn.Err)
			}
			// Reply is buffered (size 1) by contract: this never blocks.
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

// UseGrant consumes the once-grant id for a call about to run (the
// toolset.GrantUser of every snapshot's State): the writer re-reads the log
// under its lock, checks the grant is unused and unexpired, and appends its
// used_at line. It waits for the writer only while ctx lasts.
func (w *RequestLog) UseGrant(ctx context.Context, id string) error {
	reply := make(chan error, 1)
	err, cerr := roundTrip(ctx, w.done, w.uses, messages.UseGrant{ID: id, Reply: reply}, reply)
	if cerr != nil {
		return cerr
	}
	return err
}

// Decide records d on request id through the writer (the toolset.Decider
// of the request tool: a decision made in an elicitation client). It waits
// only while ctx lasts.
func (w *RequestLog) Decide(ctx context.Context, id string, d requests.Decision) error {
	reply := make(chan error, 1)
	err, cerr := roundTrip(ctx, w.done, w.decides, messages.DecideRequest{ID: id, Decision: d, Reply: reply}, reply)
	if cerr != nil {
		return cerr
	}
	return err
}

// Submit sends r to the writer and waits for its answer. It is the
// Submitter of the built-in request tool, called from tool handlers.
func (w *RequestLog) Submit(ctx context.Context, r requests.Request) (requests.Submitted, error) {
	reply := make(chan messages.AppendResult, 1)
	res, err := roundTrip(ctx, w.done, w.in, messages.AppendRequest{Request: r, Reply: reply}, reply)
	if err != nil {
		return requests.Submitted{}, err
	}
	return res.Submitted, res.Err
}

// Pending says which of ids are still pending and whether a request
// identical to r is, through the writer (the toolset.PendingChecker of the
// request tool's per-session limit). It waits only while ctx lasts.
func (w *RequestLog) Pending(ctx context.Context, ids []string, r requests.Request) ([]string, bool, error) {
	reply := make(chan messages.PendingAnswer, 1)
	a, err := roundTrip(ctx, w.done, w.queries, messages.PendingQuery{IDs: ids, Request: r, Reply: reply}, reply)
	if err != nil {
		return nil, false, err
	}
	return a.Still, a.Identical, a.Err
}

// roundTrip sends m to the writer on in and waits for its answer on reply
// (buffered, size 1), while ctx lasts and the writer runs. An answer given
// just before the writer stopped still counts; otherwise a stopped writer
// is ErrStopped. The error is about the round trip, not the answer.
func roundTrip[M, R any](ctx context.Context, done <-chan struct{}, in chan<- M, m M, reply <-chan R) (R, error) {
	var zero R
	select {
	case in <- m:
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-done:
		return zero, ErrStopped
	}
	select {
	case r := <-reply:
		return r, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-done:
		select {
		case r := <-reply: // answered just before stopping
			return r, nil
		default:
			return zero, ErrStopped
		}
	}
}
