// Package messages holds the typed messages wraptool's actors exchange, and
// says for each channel who sends, who receives, its buffer, and what happens
// when the receiver is busy. Messages are plain values with no behaviour,
// immutable once sent: a receiver may keep what it is given, and a sender
// must not change it afterwards. A receiver's channels, as its senders hold
// them, travel together as a Links value (RequestLogLinks, GrantsLinks,
// ConfigEditorLinks) whose methods are the one send-and-wait each request
// needs (Ask): every channel between two actors is made in cmd/wraptool's
// wiring, except the per-request reply channels and each upstream client's
// Calls and Gone, which its offer carries to the registry.
//
// The hot-reload path reads left to right:
//
//	watcher ─FileEvents─► debouncer ─FileChanged─► loader ─ConfigLoaded─► policy holder ─ToolsetChanged─► registry
//	signals ─ReloadNow───────────────────────────────┘  └─ConfigRejected─►┘    └─WatchSetChanged─► watcher
//
// and capability requests go from the built-in tool's handlers to the
// request-log writer as AppendRequest (PendingQuery, DecideRequest),
// answered on the reply channel the message carries. The review UI decides
// through the same writer (DecideRequest) and applies through the config
// editor (ApplyToConfig). Upstream MCP servers (mcp_servers) each have a
// bridge, started, stopped and restarted by the upstream supervisor:
//
//	policy holder ─UpstreamsChanged─► upstream supervisor ─(starts, stops)─► bridges ─UpstreamTools─► registry
//	upstream tool handlers ─UpstreamCall─► one bridge ─UpstreamResult, UpstreamProgress─► that handler
//
// Temporary grants live in the request log: the watcher rings the grants
// actor when the log changes, and the grants actor hands the policy holder
// the grants in force, which it merges into the snapshot. A call a
// once-grant allows consumes it through the request-log writer:
//
//	watcher ─LogChanged─► grants ─GrantsChanged─► policy holder
//	tool handlers ─UseGrant─► request log ─error─► that handler
//
// Every tool call and every policy change is audited: the handlers and the
// policy holder (for its own changes and the loader's rejections) queue
// lines for the audit writer, which appends them in order:
//
//	tool handlers, policy holder ─AuditLines─► audit writer ─► audit.jsonl
//
// Every channel, as cmd/wraptool's wiring creates it:
//
//	channel           type                   sender → receiver                    buffer  receiver busy
//	FileEvents        Doorbell               watcher → debouncer                  1       rings coalesce
//	FileChanged       Doorbell               debouncer → loader                   1       rings coalesce
//	ReloadNow         Doorbell               signals (SIGHUP) → loader            1       rings coalesce; wins over FileChanged
//	ConfigLoaded      chan ConfigLoaded      loader → policy holder               0       blocks, with ctx: a built config is not dropped
//	ConfigRejected    chan ConfigRejected    loader → policy holder               0       blocks, with ctx: the rejection is audited
//	WatchSetChanged   Doorbell               policy holder → watcher              1       rings coalesce; the watcher reads the snapshot
//	ToolsetChanged    Doorbell               policy holder → registry             1       rings coalesce; the registry reads the snapshot
//	AppendRequest     chan AppendRequest     request-tool handlers → request log  0       blocks, with the call's ctx
//	AppendResult      chan AppendResult      request log → one handler            1       never blocks: the caller may have gone
//	UpstreamsChanged  Doorbell               policy holder → upstream supervisor  1       rings coalesce; the supervisor reads the snapshot
//	Ready             chan struct{}          upstream supervisor → hub            0       closed once, after the first round of starts
//	KillCalls         chan struct{}          hub → registry                       0       closed once, when running calls must be killed
//	UpstreamTools     chan UpstreamTools     bridges → registry                   0       blocks, with ctx: an offer or withdrawal is not lost
//	UpstreamCall      chan UpstreamCall      upstream tool handlers → one bridge  0       blocks, with the call's ctx and the bridge's Gone
//	UpstreamResult    chan UpstreamResult    bridge → one handler                 1       never blocks: the caller may have gone
//	UpstreamProgress  chan UpstreamProgress  bridge → one handler                 16      never blocks: a note without room is dropped
//	LogChanged        Doorbell               watcher → grants                     1       rings coalesce; the grants actor re-reads the log
//	GrantsChanged     chan GrantsChanged     grants → policy holder               0       blocks, with ctx: the grants in force are not lost
//	UseGrant          chan UseGrant          tool handlers → request log          0       blocks, with the call's ctx
//	UseGrant.Reply    chan error             request log → one handler            1       never blocks: the caller may have gone
//	DecideRequest     chan DecideRequest     request-tool handlers, review UI     0       blocks, with the call's or the HTTP request's ctx
//	                                         → request log
//	DecideRequest.Reply chan error           request log → one caller             1       never blocks: the caller may have gone
//	ApplyToConfig     chan ApplyToConfig     review UI → config editor            0       blocks, with the HTTP request's ctx
//	ApplyToConfig.Reply chan AppliedToConfig config editor → one caller           1       never blocks
//	UpstreamStates    chan UpstreamStates    metrics scrape → registry            0       blocks, with the scrape's ctx
//	UpstreamStates.Reply chan map[string]string registry → the scrape             1       never blocks
//	PendingQuery      chan PendingQuery      request-tool handlers → request log  0       blocks, with the call's ctx
//	PendingQuery.Reply chan PendingAnswer    request log → one handler            1       never blocks
//	RequestFiled      chan RequestFiled      request log → hooks                  64      never blocks: a request the hooks have no room for is logged and not hooked
//	AwaitDecision     chan AwaitDecision     request-tool handlers → grants       0       blocks, with the call's ctx
//	AwaitDecision.Reply chan requests.Record grants → one handler                 1       never blocks: the caller may have gone; closed unanswered when grants stops
//	LearnHelps        chan LearnHelps        request-tool handlers, review UI     0       blocks, with the call's or the HTTP request's ctx
//	                                         → policy holder
//	LearnHelps.Reply  chan struct{}          policy holder → one caller           1       never blocks: the caller may have gone
//	AuditLines        chan AuditLine         tool handlers, policy holder         4096    blocks when full: the sender waits for room (counted,
//	                                         → audit writer                               AuditCounts.Waited) until its context ends; a line is never dropped for speed
//	…Stopped          chan struct{}          each receiver above → its senders    0       closed when its Run returns: a send or wait then ends with ErrStopped
//
// A doorbell carries no data: its receiver reads the current state (the
// snapshot the policy holder publishes) when it answers, so a burst of rings
// is one ring, and a busy receiver never blocks its sender. Only data that
// must not be lost travels on a blocking channel, and every blocking send
// also selects on the sender's context.
package messages

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/requests"
)

// Doorbell is a one-slot trigger: make(Doorbell, 1), rung with a
// non-blocking send, so a ring while one is pending is absorbed by it.
type Doorbell chan struct{}

// ConfigLoaded carries a fully built, valid configuration from the loader to
// the policy holder.
type ConfigLoaded struct {
	// Loaded is the load's result: config, policy, tokens, hash.
	Loaded *config.Loaded
	// Cause names the trigger for the log: "file" or "SIGHUP".
	Cause string
}

// AppendRequest asks the request-log writer to record a capability request.
// Reply is buffered (size 1) so the writer never blocks on a caller that has
// given up.
type AppendRequest struct {
	Request requests.Request
	Reply   chan<- AppendResult
}

// AppendResult answers an AppendRequest.
type AppendResult struct {
	Submitted requests.Submitted
	Err       error
}

// UpstreamTools is a bridge's offer to the registry: every tool its upstream
// server lists now, unfiltered (the registry applies the config's allow and
// deny rules in service, so a filter-only change needs no restart), or nil
// when the upstream's tools are withdrawn (it exited, hung, or was stopped).
// Generation orders the offers for one server: the supervisor gives each
// bridge it starts a higher one, and the registry ignores an offer older
// than the one it holds.
type UpstreamTools struct {
	// Server is the mcp_servers key.
	Server string
	// Generation identifies the bridge that sent the offer.
	Generation uint64
	// Tools are the upstream's definitions as it listed them; nil withdraws.
	Tools []*mcp.Tool
	// Calls reaches the bridge; Gone is closed once it stopped, so a
	// handler never waits on a bridge that no longer reads Calls.
	Calls chan<- UpstreamCall
	Gone  <-chan struct{}
	// Applied, when not nil (buffer 1), is signalled once the registry has
	// applied the offer: the supervisor's first round waits for it, so the
	// hub serves only once the upstreams' first tools are registered.
	Applied chan<- struct{}
}

// UpstreamCall asks a bridge to call one of its upstream's tools. The bridge
// answers on Reply, and forwards the upstream's progress notes on Progress
// when the caller asked for them.
type UpstreamCall struct {
	// Tool is the upstream's own name for the tool (not the exposed one).
	Tool string
	// Arguments are the client's arguments, passed through unchanged.
	Arguments json.RawMessage
	// Done is closed when the caller gives up (timeout or cancellation);
	// the bridge then cancels the upstream call.
	Done <-chan struct{}
	// Progress, when not nil, receives the upstream's progress notes.
	Progress chan<- UpstreamProgress
	// Reply receives the one answer; buffered (size 1).
	Reply chan<- UpstreamResult
}

// UpstreamProgress is one progress note from the upstream, for the caller to
// pass on under its client's own progress token.
type UpstreamProgress struct {
	Progress, Total float64
	Message         string
}

// UpstreamResult answers an UpstreamCall: the upstream's result as it sent
// it, or why there is none.
type UpstreamResult struct {
	Result *mcp.CallToolResult
	Err    error
}

// GrantsChanged carries the temporary grants in force from the grants
// actor to the policy holder, whenever that set changes: a grant
// decided, used, or expired. Each record is approved, signed, unused and
// unexpired, oldest first; the holder keeps those for the config it serves.
type GrantsChanged struct {
	Grants []*requests.Record
	// Cause names the change for the log and the audit trail: "grant",
	// "grant_used" or "grant_expired".
	Cause string
}

// UseGrant asks the request-log writer to consume a once-grant for a call
// about to run: one step under the log's lock. Reply (buffer 1) receives nil
// when this call has it.
type UseGrant struct {
	ID    string
	Reply chan<- error
}

// RequestFiled tells the hook runner (mcp.on_request) of a new
// request: one the writer appended, never a de-duplicated one. Line is the
// request's JSON line as written (the hook's stdin).
type RequestFiled struct {
	Record requests.Record
	Line   []byte
}

// AwaitDecision asks the grants actor, which follows the request log, to
// answer on Reply (buffer 1) once the request ID is decided, by any writer.
// Done is closed when the caller stops waiting (its wait ended or its call
// was cancelled); the actor then forgets the wait.
type AwaitDecision struct {
	ID    string
	Done  <-chan struct{}
	Reply chan<- requests.Record
}

// DecideRequest asks the request-log writer to record a decision made in an
// elicitation client or in the review UI; Reply (buffer 1) carries the outcome.
type DecideRequest struct {
	ID       string
	Decision requests.Decision
	Reply    chan<- error
}

// AuditLine is one encoded audit-log line (JSON ending in "\n") for the
// file at Path: the audit_log of the snapshot the call or change belongs
// to, so a reload that moves the log never moves a line already queued.
type AuditLine struct {
	Path string
	Line []byte
}

// UpstreamStates asks the registry, which holds the bridges' latest
// offers, for each upstream server's state (the metrics' scrape): "running"
// when it offers tools, "down" when its bridge withdrew them. Reply has
// room for the answer.
type UpstreamStates struct {
	Reply chan<- map[string]string
}

// PendingQuery asks the request-log writer which of IDs are still pending
// and whether a request identical to Request is (the request tool's
// per-session limit); Reply (buffer 1) carries the answer.
type PendingQuery struct {
	IDs     []string
	Request requests.Request
	Reply   chan<- PendingAnswer
}

// PendingAnswer answers a PendingQuery.
type PendingAnswer struct {
	Still     []string
	Identical bool
	Err       error
}

// ErrStopped answers a request whose receiver has stopped: the server is
// shutting down.
var ErrStopped = errors.New("the server is shutting down")

// Ask sends m on to and waits for the answer on reply (buffered, size 1,
// so the receiver never blocks on a caller that gave up), while ctx lasts
// and until stopped is closed (the receiver's Run closes it when it
// returns). An answer given just before the receiver stopped still counts;
// otherwise a stopped receiver is ErrStopped. The error is about the round
// trip, not the answer.
func Ask[M, R any](ctx context.Context, stopped <-chan struct{}, to chan<- M, m M, reply <-chan R) (R, error) {
	var zero R
	select {
	case to <- m:
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-stopped:
		return zero, ErrStopped
	}
	select {
	case r := <-reply:
		return r, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-stopped:
		select {
		case r := <-reply: // answered just before stopping
			return r, nil
		default:
			return zero, ErrStopped
		}
	}
}

// RequestLogLinks are the request-log writer's inbound channels as its
// senders hold them, with the channel it closes when it stops. The methods
// are the send-and-wait of each: what the request tool, the tool handlers
// (a once-grant's use) and the review UI call.
type RequestLogLinks struct {
	Appends chan<- AppendRequest
	Queries chan<- PendingQuery
	Decides chan<- DecideRequest
	Uses    chan<- UseGrant
	Stopped <-chan struct{}
}

// Submit records r, or finds the identical pending request, waiting only
// while ctx lasts.
func (l RequestLogLinks) Submit(ctx context.Context, r requests.Request) (requests.Submitted, error) {
	reply := make(chan AppendResult, 1)
	res, err := Ask(ctx, l.Stopped, l.Appends, AppendRequest{Request: r, Reply: reply}, reply)
	if err != nil {
		return requests.Submitted{}, err
	}
	return res.Submitted, res.Err
}

// Pending says which of ids are still pending and whether a request
// identical to r is (the request tool's per-session limit).
func (l RequestLogLinks) Pending(ctx context.Context, ids []string, r requests.Request) ([]string, bool, error) {
	reply := make(chan PendingAnswer, 1)
	a, err := Ask(ctx, l.Stopped, l.Queries, PendingQuery{IDs: ids, Request: r, Reply: reply}, reply)
	if err != nil {
		return nil, false, err
	}
	return a.Still, a.Identical, a.Err
}

// Decide records d on request id: a decision made in an elicitation client
// or in the review UI.
func (l RequestLogLinks) Decide(ctx context.Context, id string, d requests.Decision) error {
	reply := make(chan error, 1)
	err, cerr := Ask(ctx, l.Stopped, l.Decides, DecideRequest{ID: id, Decision: d, Reply: reply}, reply)
	if cerr != nil {
		return cerr
	}
	return err
}

// UseGrant consumes the once-grant id for a call about to run: the writer
// re-reads the log under its lock, checks the grant is unused and
// unexpired, and appends its used_at line.
func (l RequestLogLinks) UseGrant(ctx context.Context, id string) error {
	reply := make(chan error, 1)
	err, cerr := Ask(ctx, l.Stopped, l.Uses, UseGrant{ID: id, Reply: reply}, reply)
	if cerr != nil {
		return cerr
	}
	return err
}

// GrantsLinks are the grants actor's inbound wait channel as the request
// tool holds it, with the channel the actor closes when it stops.
type GrantsLinks struct {
	Waits   chan<- AwaitDecision
	Stopped <-chan struct{}
}

// Watch registers a wait for request id's decision, by any writer (the
// CLI, watch, the review UI, a client): the folded record arrives on the
// returned channel (buffer 1) once it is decided; the channel is closed
// without a value when the actor stops first. The wait is forgotten once
// ctx ends (the request stays as it is).
func (l GrantsLinks) Watch(ctx context.Context, id string) (<-chan requests.Record, error) {
	reply := make(chan requests.Record, 1)
	select {
	case l.Waits <- AwaitDecision{ID: id, Done: ctx.Done(), Reply: reply}:
		return reply, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.Stopped:
		return nil, ErrStopped
	}
}

// ApplyToConfig asks the config editor to merge a request's capability
// into the config file (as `requests approve --apply` does): Reply (buffer
// 1) carries the merge line, or why it was refused (the file untouched).
type ApplyToConfig struct {
	// Path is the config file; Tool, Subcommand and Flags the request's.
	Path       string
	Tool       string
	Subcommand []string
	Flags      []string
	// Paths locate "~" and the platform folders; nil means the process's.
	Paths *config.Options
	Reply chan<- AppliedToConfig
}

// AppliedToConfig answers an ApplyToConfig.
type AppliedToConfig struct {
	// Applied says what was merged ("added flags --x to git push").
	Applied string
	Err     error
}

// ConfigEditorLinks are the config editor's inbound channel as the review
// UI holds it, with the channel the editor closes when it stops.
type ConfigEditorLinks struct {
	Applies chan<- ApplyToConfig
	Stopped <-chan struct{}
}

// Apply merges the request's capability into the config file at path,
// waiting only while ctx lasts.
func (l ConfigEditorLinks) Apply(ctx context.Context, path, tool string, sub, flags []string, paths *config.Options) (string, error) {
	reply := make(chan AppliedToConfig, 1)
	a, err := Ask(ctx, l.Stopped, l.Applies, ApplyToConfig{Path: path, Tool: tool, Subcommand: sub, Flags: flags, Paths: paths, Reply: reply}, reply)
	if err != nil {
		return "", err
	}
	return a.Applied, a.Err
}

// LearnHelps asks the policy holder to learn the help of the subcommands
// capability requests name, when a person is about to decide them (the
// review page shows them, the admin API approves one, an elicitation
// client is asked): a request's subcommand is often one no rule names, and
// what approving it grants is computed from that help. The holder learns
// only what the config lets it run (a tool the config has, a subcommand no
// deny rule covers), under introspection's bounds, and publishes a snapshot
// whose Helps holds what it learned. Reply (buffer 1) is sent once every
// spec's help is known in the snapshot in service, or was tried and could
// not be learned (the screens then fail closed: HELP UNKNOWN).
type LearnHelps struct {
	Specs []config.GrantSpec
	Reply chan<- struct{}
}

// HelpLinks are the policy holder's LearnHelps channel as the request tool
// and the review UI hold it, with the channel the holder closes when it
// stops.
type HelpLinks struct {
	Learns  chan<- LearnHelps
	Stopped <-chan struct{}
}

// Learn asks for specs' help and waits until the snapshot in service knows
// it (or it could not be learned), only while ctx lasts: an error means the
// screen shows what is known now.
func (l HelpLinks) Learn(ctx context.Context, specs []config.GrantSpec) error {
	if len(specs) == 0 {
		return nil
	}
	reply := make(chan struct{}, 1)
	_, err := Ask(ctx, l.Stopped, l.Learns, LearnHelps{Specs: specs, Reply: reply}, reply)
	return err
}

// ConfigRejected tells the policy holder that a reload's config did not
// load: the policy in service stays, and the holder audits the rejection
// against it.
type ConfigRejected struct {
	// Cause names the trigger: "file" or "SIGHUP".
	Cause string
	Err   error
}
