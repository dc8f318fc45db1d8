package actors

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/jsonl"
	"github.com/wraptool/wraptool/toolset"
)

// The audit log's limits. AuditQueue lines wait between the calls and the
// writer; a call that finds the queue full waits for room (counted by
// Waited) rather than lose its line. The file rotates by size: past
// AuditMaxBytes it becomes audit.jsonl.1, and AuditKeep rotated files are
// kept (audit.jsonl.1 … audit.jsonl.5), so the log takes at most
// (AuditKeep+1) × AuditMaxBytes, 384 MiB, on disk.
const (
	AuditQueue    = 4096
	AuditMaxBytes = 64 << 20
	AuditKeep     = config.AuditKeep
)

// auditAttempts is how often the writer tries a batch before it gives the
// lines up as lost: three lock timeouts (15 s) ride out another process
// holding the file, while a file that cannot be written at all (a full
// disk) must not stop every tool call.
const auditAttempts = 3

// auditBatch is the most lines the writer appends under one lock.
const auditBatch = 256

// Audit is the server's audit-log writer: tool handlers, the policy holder
// and the loader queue lines (Call, Policy), and Run appends them, in the
// order queued, to the file each line names, through jsonl (lock, torn-line
// repair, mode 0600) with size-based rotation.
//
// Like the request log it must outlive the hub: serve runs it with a
// context that ends only once the hub has stopped, and when that context
// ends Run still writes what is queued, so a call answered in the
// shutdown grace is audited. A lock wait gives up at once from the moment
// StopWaiting is called (one attempt is still made), so no other process
// can keep the server from stopping.
type Audit struct {
	queue   <-chan messages.AuditLine
	limit   int64
	keep    int
	log     *slog.Logger
	stopped chan<- struct{}
	counts  *AuditCounts

	waits    context.Context
	endWaits context.CancelFunc
	files    map[string]*jsonl.Rotating
}

// AuditOptions configure an Audit. The zero value is docs/operations.md's
// figures.
type AuditOptions struct {
	// Lines is the queue (the wiring's AuditLines link, of length
	// AuditQueue); its senders hold it as an AuditSender.
	Lines <-chan messages.AuditLine
	// Stopped is closed when Run returns, so a sender never waits for room
	// that no writer will make.
	Stopped chan<- struct{}
	// Counts are shared with the senders' AuditSender: the lines that
	// waited, and those lost; nil counts nothing.
	Counts *AuditCounts
	// MaxBytes is the size past which a file rotates; zero means
	// AuditMaxBytes, negative never.
	MaxBytes int64
	// Keep is how many rotated files are kept; zero means AuditKeep.
	Keep int
	// Log receives write failures; nil discards them.
	Log *slog.Logger
}

// NewAudit builds the writer; Run serves it.
func NewAudit(o AuditOptions) *Audit {
	if o.MaxBytes == 0 {
		o.MaxBytes = AuditMaxBytes
	}
	if o.Keep <= 0 {
		o.Keep = AuditKeep
	}
	if o.Counts == nil {
		o.Counts = &AuditCounts{}
	}
	waits, endWaits := context.WithCancel(context.Background())
	return &Audit{queue: o.Lines, limit: o.MaxBytes, keep: o.Keep, log: logger(o.Log, "audit"), stopped: o.Stopped,
		counts: o.Counts, waits: waits, endWaits: endWaits, files: map[string]*jsonl.Rotating{}}
}

// AuditCounts are the audit trail's health counters, shared by the
// senders (an AuditSender counts the lines that waited, and those it could
// not queue) and the writer (the lines it could not write), and read by the
// metrics scrape. Atomic, so they need no owner.
type AuditCounts struct{ waited, lost atomic.Uint64 }

// AuditSender is the audit writer's inbox as its senders hold it: the tool
// handlers (through each snapshot's Auditor) and the policy holder (its
// changes, and the rejected reloads the loader reports to it). A nil
// *AuditSender audits nothing.
type AuditSender struct {
	// Lines is the writer's queue; Stopped is closed once it has stopped.
	Lines   chan<- messages.AuditLine
	Stopped <-chan struct{}
	// Counts are shared with the writer.
	Counts *AuditCounts
	// Now stamps policy lines; nil means time.Now.
	Now func() time.Time
	// Log receives the lines not written; nil discards them.
	Log *slog.Logger
}

// Waited counts the lines whose sender found the queue full and waited
// for room: a sign the disk is slower than the calls (for metrics).
func (c *AuditCounts) Waited() uint64 { return c.waited.Load() }

// Lost counts the lines that could not be written after every attempt,
// or could not be queued before their sender's context ended.
func (c *AuditCounts) Lost() uint64 { return c.lost.Load() }

// StopWaiting makes every wait for a file's lock, now and later, give up
// after one attempt. It never blocks: it is a run-group interrupt.
func (a *Audit) StopWaiting() { a.endWaits() }

// For returns the toolset.Auditor that queues call lines for the audit
// log at path (a snapshot's mcp.audit_log). Every call line is bounded
// here (toolset.CallAudit.Bounded), whoever built it — an upstream tool's
// line carries the client's name and the upstream's error text — so no
// call can flush the trail by volume.
func (a *AuditSender) For(path string) toolset.Auditor {
	return func(ctx context.Context, c toolset.CallAudit) {
		c.Event = "call"
		a.enqueue(ctx, path, c.Bounded())
	}
}

// PolicyAudit is the audit log's line for one policy change: a new snapshot
// whose policy hash or grants in force differ from the last, or a reload
// that was rejected.
type PolicyAudit struct {
	// Event is "policy".
	Event string    `json:"event"`
	Time  time.Time `json:"time"`
	// Cause is what triggered it: "start", "file", "sighup", "grant",
	// "grant_expired" or "grant_used".
	Cause string `json:"cause"`
	// Outcome is "applied", or "rejected" for a reload whose config did
	// not load (Error says why; the old policy stays in service).
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
	// Old and New are the audit policy hashes (toolset.AuditPolicy)
	// before and after; New is "" for a rejected reload.
	Old string `json:"old"`
	New string `json:"new"`
	// ToolsAdded and ToolsRemoved are the exposed MCP tool names that
	// appeared or went (wrapped tools; upstream tools follow their
	// servers and are not listed).
	ToolsAdded   []string `json:"tools_added"`
	ToolsRemoved []string `json:"tools_removed"`
	// FlagsAdded and FlagsRemoved map a tool exposed before and after to
	// the flags it gained or lost.
	FlagsAdded   map[string][]string `json:"flags_added"`
	FlagsRemoved map[string][]string `json:"flags_removed"`
}

// Policy queues a policy line for the audit log at path; a nil queue or
// an empty path (the audit log is off) records nothing. It waits for room
// in the queue while ctx lasts, like a call's line.
func (a *AuditSender) Policy(ctx context.Context, path string, p PolicyAudit) {
	if a == nil || path == "" {
		return
	}
	p.Event = "policy"
	if p.Time.IsZero() {
		now := time.Now
		if a.Now != nil {
			now = a.Now
		}
		p.Time = now().UTC()
	}
	a.enqueue(ctx, path, p)
}

// enqueue encodes v and queues it: at once when there is room, else
// waiting (counted) until there is, ctx ends or the writer has stopped.
func (a *AuditSender) enqueue(ctx context.Context, path string, v any) {
	line, err := jsonl.Encode(v)
	if err != nil {
		a.Counts.lost.Add(1)
		a.logger().Error("audit line does not encode; not written", "error", err)
		return
	}
	m := messages.AuditLine{Path: path, Line: line}
	select {
	case <-a.Stopped:
		a.Counts.lost.Add(1)
		a.logger().Error("audit line not written: the writer has stopped", "file", path)
		return
	default:
	}
	select {
	case a.Lines <- m:
		return
	default:
	}
	a.Counts.waited.Add(1)
	select {
	case a.Lines <- m:
	case <-ctx.Done():
		a.Counts.lost.Add(1)
		a.logger().Error("audit line not written: the queue stayed full until the call ended", "file", path)
	case <-a.Stopped:
		a.Counts.lost.Add(1)
		a.logger().Error("audit line not written: the writer has stopped", "file", path)
	}
}

// logger is the queue's log, or one that discards.
func (a *AuditSender) logger() *slog.Logger { return logger(a.Log, "audit") }

// Run appends queued lines until ctx is done, then writes what is still
// queued and returns.
func (a *Audit) Run(ctx context.Context) error {
	defer func() {
		for _, f := range a.files {
			f.Close()
		}
	}()
	if a.stopped != nil {
		defer close(a.stopped)
	}
	// Lock waits end with StopWaiting; the loop runs until ctx ends.
	lockCtx := a.waits
	batch := make([]messages.AuditLine, 0, auditBatch)
	for {
		select {
		case <-ctx.Done():
			// The hub has stopped: every call has queued its line. Write
			// them all; StopWaiting bounds each lock wait.
			for {
				batch = a.take(batch[:0])
				if len(batch) == 0 {
					return nil
				}
				a.write(lockCtx, batch)
			}
		case m := <-a.queue:
			batch = a.take(append(batch[:0], m))
			a.write(lockCtx, batch)
		}
	}
}

// take adds to batch what is queued now, up to auditBatch lines, without
// waiting.
func (a *Audit) take(batch []messages.AuditLine) []messages.AuditLine {
	for len(batch) < auditBatch {
		select {
		case m := <-a.queue:
			batch = append(batch, m)
		default:
			return batch
		}
	}
	return batch
}

// write appends the batch, each run of lines for one file under one lock,
// in order.
func (a *Audit) write(ctx context.Context, batch []messages.AuditLine) {
	for len(batch) > 0 {
		path := batch[0].Path
		n := 1
		for n < len(batch) && batch[n].Path == path {
			n++
		}
		lines := make([][]byte, n)
		for i := range n {
			lines[i] = batch[i].Line
		}
		a.append(ctx, path, lines)
		batch = batch[n:]
	}
}

// append writes lines to path, trying a failed write again (from the first
// line not written) up to auditAttempts times before counting the rest as
// lost.
func (a *Audit) append(ctx context.Context, path string, lines [][]byte) {
	f := a.files[path]
	if f == nil {
		f = &jsonl.Rotating{Path: path, Limit: a.limit, Keep: a.keep, Waiting: func() {
			a.log.Warn("the audit log is locked by another process; waiting", "file", path, "up_to", jsonl.LockTimeout)
		}}
		a.files[path] = f
	}
	var err error
	for attempt := 1; attempt <= auditAttempts && len(lines) > 0; attempt++ {
		var n int
		n, err = f.Append(ctx, lines)
		lines = lines[n:]
		if err == nil {
			return
		}
		f.Close() // reopen on the next attempt: the file may have moved
		if ctx.Err() != nil {
			break // stopping: one attempt only
		}
	}
	if len(lines) > 0 {
		a.counts.lost.Add(uint64(len(lines)))
		a.log.Error("audit lines lost: the audit log could not be written", "file", path, "lines", len(lines), "error", err)
	}
}
