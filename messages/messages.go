// Package messages holds the typed messages wraptool's actors exchange, and
// says for each channel who sends, who receives, its buffer, and what happens
// when the receiver is busy. Messages are plain values with no behaviour,
// immutable once sent: a receiver may keep what it is given, and a sender
// must not change it afterwards.
//
// The hot-reload path reads left to right:
//
//	watcher ─FileEvents─► debouncer ─FileChanged─► loader ─ConfigLoaded─► policy holder ─ToolsetChanged─► registry
//	signals ─ReloadNow───────────────────────────────┘                        └─WatchSetChanged─► watcher
//
// and capability requests go from the built-in tool's handlers to the
// request-log writer as AppendRequest, answered on the reply channel the
// message carries. Upstream MCP servers (mcp_servers) each have a bridge,
// started, stopped and restarted by the upstream supervisor:
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
// Every tool call and every policy change is audited: the handlers, the
// policy holder and the loader queue lines for the audit writer, which
// appends them in order:
//
//	tool handlers, policy holder, loader ─AuditLines─► audit writer ─► audit.jsonl
//
// Every channel, as cmd/wraptool's wiring creates it:
//
//	channel           type                   sender → receiver                    buffer  receiver busy
//	FileEvents        Doorbell               watcher → debouncer                  1       rings coalesce
//	FileChanged       Doorbell               debouncer → loader                   1       rings coalesce
//	ReloadNow         Doorbell               signals (SIGHUP) → loader            1       rings coalesce; wins over FileChanged
//	ConfigLoaded      chan ConfigLoaded      loader → policy holder               0       blocks, with ctx: a built config is not dropped
//	WatchSetChanged   Doorbell               policy holder → watcher              1       rings coalesce; the watcher reads the snapshot
//	ToolsetChanged    Doorbell               policy holder → registry             1       rings coalesce; the registry reads the snapshot
//	AppendRequest     chan AppendRequest     request-tool handlers → request log  0       blocks, with the call's ctx
//	AppendResult      chan AppendResult      request log → one handler            1       never blocks: the caller may have gone
//	UpstreamsChanged  Doorbell               policy holder → upstream supervisor  1       rings coalesce; the supervisor reads the snapshot
//	UpstreamTools     chan UpstreamTools     bridges → registry                   0       blocks, with ctx: an offer or withdrawal is not lost
//	UpstreamCall      chan UpstreamCall      upstream tool handlers → one bridge  0       blocks, with the call's ctx and the bridge's Gone
//	UpstreamResult    chan UpstreamResult    bridge → one handler                 1       never blocks: the caller may have gone
//	UpstreamProgress  chan UpstreamProgress  bridge → one handler                 16      never blocks: a note without room is dropped
//	LogChanged        Doorbell               watcher → grants                     1       rings coalesce; the grants actor re-reads the log
//	GrantsChanged     chan GrantsChanged     grants → policy holder               0       blocks, with ctx: the grants in force are not lost
//	UseGrant          chan UseGrant          tool handlers → request log          0       blocks, with the call's ctx
//	UseGrant.Reply    chan error             request log → one handler            1       never blocks: the caller may have gone
//	DecideRequest     chan DecideRequest     request-tool handlers → request log  0       blocks, with the call's ctx
//	DecideRequest.Reply chan error           request log → one handler            1       never blocks: the caller may have gone
//	UpstreamStates    chan UpstreamStates    metrics scrape → registry            0       blocks, with the scrape's ctx
//	UpstreamStates.Reply chan map[string]string registry → the scrape             1       never blocks
//	PendingQuery      chan PendingQuery      request-tool handlers → request log  0       blocks, with the call's ctx
//	PendingQuery.Reply chan PendingAnswer    request log → one handler            1       never blocks
//	RequestFiled      chan RequestFiled      request log → hooks                  64      never blocks: a request the hooks have no room for is logged and not hooked
//	AwaitDecision     chan AwaitDecision     request-tool handlers → grants       0       blocks, with the call's ctx
//	AwaitDecision.Reply chan requests.Record grants → one handler                 1       never blocks: the caller may have gone; closed unanswered when grants stops
//	AuditLines        chan AuditLine         tool handlers, policy holder,        4096    blocks when full: the sender waits for room (counted,
//	                                         loader → audit writer                        Audit.Waited) until its context ends; a line is never dropped for speed
//
// A doorbell carries no data: its receiver reads the current state (the
// snapshot the policy holder publishes) when it answers, so a burst of rings
// is one ring, and a busy receiver never blocks its sender. Only data that
// must not be lost travels on a blocking channel, and every blocking send
// also selects on the sender's context.
package messages

import (
	"encoding/json"

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
// elicitation client; Reply (buffer 1) carries the outcome.
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
