package actors

import (
	"context"
	"log/slog"
	"time"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/requests"
)

// RequestLog is the server's only writer of the capability-request log. It
// serialises the server's appends (the file lock orders them against other
// processes) and answers each with the recorded id.
type RequestLog struct {
	in        chan messages.AppendRequest
	path      func() string
	now       func() time.Time
	stayUntil <-chan struct{}
	log       *slog.Logger
	done      chan struct{}

	// file is the log at the current path: it remembers what it has read,
	// so a submit reads only what was appended since (and reports each
	// skipped line once).
	file     *requests.Log
	filePath string
}

// NewRequestLog serves the requests sent on in (Submit sends them) and
// appends them to the file path returns (the current snapshot's
// mcp.request_log); now stamps the records. stayUntil, when not nil, keeps
// the writer serving after its context is done until it is closed: serve
// passes the hub's Done, so a request made during the shutdown grace
// period is still recorded.
func NewRequestLog(in chan messages.AppendRequest, path func() string, now func() time.Time,
	stayUntil <-chan struct{}, log *slog.Logger) *RequestLog {
	return &RequestLog{in: in, path: path, now: now, stayUntil: stayUntil,
		log: log.With("component", "requestlog"), done: make(chan struct{})}
}

// Run appends requests until ctx is done (and stayUntil is closed).
func (w *RequestLog) Run(ctx context.Context) error {
	defer close(w.done)
	stop := ctx.Done()
	for {
		select {
		case <-stop:
			if w.stayUntil == nil {
				return nil
			}
			stop, w.stayUntil = w.stayUntil, nil
		case m := <-w.in:
			path := w.path()
			if w.file == nil || w.filePath != path {
				w.file, w.filePath = requests.Open(path), path
			}
			s, err := w.file.Submit(m.Request, w.now())
			for _, warn := range s.Warnings {
				w.log.Warn("request log: skipped a line", "file", path, "line", warn.Line, "problem", warn.Err)
			}
			// Reply is buffered (size 1) by contract: this never blocks.
			m.Reply <- messages.AppendResult{Submitted: s, Err: err}
		}
	}
}

// Submit sends r to the writer and waits for its answer. It is the
// Submitter of the built-in request tool, called from tool handlers.
func (w *RequestLog) Submit(ctx context.Context, r requests.Request) (requests.Submitted, error) {
	reply := make(chan messages.AppendResult, 1)
	select {
	case w.in <- messages.AppendRequest{Request: r, Reply: reply}:
	case <-ctx.Done():
		return requests.Submitted{}, ctx.Err()
	case <-w.done:
		return requests.Submitted{}, ErrStopped
	}
	select {
	case res := <-reply:
		return res.Submitted, res.Err
	case <-ctx.Done():
		return requests.Submitted{}, ctx.Err()
	case <-w.done:
		select {
		case res := <-reply: // answered just before stopping
			return res.Submitted, res.Err
		default:
			return requests.Submitted{}, ErrStopped
		}
	}
}
