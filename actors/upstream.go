package actors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/toolset"
	"github.com/wraptool/wraptool/toolset/runner"
)

// Upstreams supervises one upstream client per mcp_servers entry. On every swap it
// compares the entries in service with the upstream clients running: it stops the
// upstream clients whose entry vanished or whose start (command, args, working_dir,
// environment, init_timeout) changed, then starts the new ones, and leaves
// every other upstream client (and its upstream's session) untouched. Changes of
// allow, deny, name_prefix or timeout need no restart: the registry applies
// them from the snapshot.
//
// Its first round gates serving: UpstreamsOptions.Ready is closed once every upstream in the
// first config has either offered its tools (and the registry applied them)
// or failed its first start, so a client's first tools/list already holds
// every upstream tool that could be had. Each first start is bounded by its
// init_timeout.
type Upstreams struct {
	changed   messages.Doorbell
	snapshots Snapshots
	publish   chan<- messages.UpstreamTools
	getenv    func(string) string
	reaper    *runner.Reaper
	timing    UpstreamTiming
	version   string
	log       *slog.Logger

	ready     chan<- struct{}
	readyOnce sync.Once
	// first carries each upstream client's "first start over" report. Unbuffered;
	// upstream clients send with their context, Run receives.
	first   chan string
	running map[string]*runningBridge
	gen     uint64
}

type runningBridge struct {
	b    *upstreamClient
	spec upstreamSpec
	// sandbox is the one in force when the upstream client started; another in a
	// later snapshot restarts the server in it.
	sandbox *runner.Sandbox
	cancel  context.CancelFunc
	done    chan struct{}
}

// UpstreamsOptions configure Upstreams.
type UpstreamsOptions struct {
	// Snapshots give the mcp_servers entries in service.
	Snapshots Snapshots
	// UpstreamsChanged is rung by the policy holder after each swap.
	UpstreamsChanged messages.Doorbell
	// Offers reaches the registry.
	Offers chan<- messages.UpstreamTools
	// Getenv reads the server's environment (the upstreams' PATH and
	// HOME); nil means none.
	Getenv func(string) string
	// Reaper tracks the upstream processes; nil means none.
	Reaper *runner.Reaper
	// Timing sets the upstream clients' clocks; zero fields are the defaults.
	Timing UpstreamTiming
	// Version is wraptool's, sent to each upstream at initialization.
	Version string
	// Log receives the upstream clients' lines, each with its server's name.
	Log *slog.Logger
	// Ready, when not nil, is closed once the first round of starts is
	// over (see Upstreams): the hub serves only then.
	Ready chan<- struct{}
}

// NewUpstreams supervises the snapshot's mcp_servers once Run starts.
func NewUpstreams(o UpstreamsOptions) *Upstreams {
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	return &Upstreams{changed: o.UpstreamsChanged, snapshots: o.Snapshots, publish: o.Offers, getenv: o.Getenv,
		reaper: o.Reaper, timing: o.Timing.withDefaults(), version: o.Version, log: logger(o.Log, "upstream"),
		ready: o.Ready, first: make(chan string), running: map[string]*runningBridge{}}
}

// Run supervises until ctx is done, then stops every upstream (SIGTERM,
// then SIGKILL after the grace, to each process group) and returns nil.
func (u *Upstreams) Run(ctx context.Context) error {
	defer u.stopAll()
	pending := map[string]bool{}
	for _, name := range u.reconcile(ctx) {
		pending[name] = true
	}
	u.readyWhenEmpty(pending)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-u.changed:
			u.reconcile(ctx)
			// A first start still pending whose server was removed will
			// never report; one whose server was restarted reports from
			// its new upstream client.
			for name := range pending {
				if _, still := u.running[name]; !still {
					delete(pending, name)
				}
			}
			u.readyWhenEmpty(pending)
		case name := <-u.first:
			delete(pending, name)
			u.readyWhenEmpty(pending)
		}
	}
}

func (u *Upstreams) readyWhenEmpty(pending map[string]bool) {
	if len(pending) == 0 {
		u.readyOnce.Do(func() {
			if u.ready != nil {
				close(u.ready)
			}
		})
	}
}

// reconcile makes the running upstream clients match the snapshot's mcp_servers:
// stops first (so a restarted upstream never runs twice, and a withdrawal
// always precedes the new upstream client's offer), then starts. It returns the
// names it started.
func (u *Upstreams) reconcile(ctx context.Context) []string {
	snap := u.snapshots.Current()
	want := snap.Config.MCPServers
	var stopping []string
	for name, r := range u.running {
		s, ok := want[name]
		// A server runs in the sandbox of the snapshot that started it:
		// a new protected set, or confinement turned on, restarts it.
		if ok && r.spec.equal(specOf(s)) && r.sandbox == snap.Sandbox {
			continue
		}
		why := "removed from the config"
		switch {
		case ok && !r.spec.equal(specOf(s)):
			why = "its entry changed"
		case ok:
			why = "its confinement changed"
		}
		u.log.Info("stopping upstream server", "server", name, "because", why)
		r.cancel()
		stopping = append(stopping, name)
	}
	for _, name := range stopping {
		r := u.running[name]
		<-r.done
		delete(u.running, name)
		select {
		case u.publish <- messages.UpstreamTools{Server: name, Generation: r.b.gen}:
		case <-ctx.Done():
			return nil
		}
	}
	var started []string
	for _, name := range sortedNames(want) {
		if _, ok := u.running[name]; ok {
			continue
		}
		u.start(ctx, name, specOf(want[name]))
		started = append(started, name)
	}
	return started
}

func (u *Upstreams) start(ctx context.Context, name string, spec upstreamSpec) {
	u.gen++
	b := &upstreamClient{name: name, gen: u.gen, spec: spec, getenv: u.getenv, reaper: u.reaper, snapshots: u.snapshots, timing: u.timing,
		version: u.version, log: u.log.With("server", name), publish: u.publish, first: u.first,
		calls: make(chan messages.UpstreamCall), gone: make(chan struct{}),
		progress: map[string]chan<- messages.UpstreamProgress{}}
	bctx, cancel := context.WithCancel(ctx)
	r := &runningBridge{b: b, spec: spec, sandbox: u.snapshots.Current().Sandbox, cancel: cancel, done: make(chan struct{})}
	u.running[name] = r
	u.log.Info("starting upstream server", "server", name, "command", spec.command, "args", spec.args)
	go func() {
		defer close(r.done)
		b.run(bctx)
	}()
}

// stopAll stops every upstream client at once and waits for each.
func (u *Upstreams) stopAll() {
	for _, r := range u.running {
		r.cancel()
	}
	for name, r := range u.running {
		<-r.done
		delete(u.running, name)
	}
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// upstreamHandler forwards calls of one exposed upstream tool to its upstream client.
// Each call is bounded by the server's timeout, read from the snapshot in
// service when the call starts, and ends at the latest when abort does (the
// hub's shutdown). Progress notes from the upstream reach the client under
// the client's own progress token, and only when the client asked for
// progress.
func upstreamHandler(server, tool string, offer messages.UpstreamTools, timeout func() time.Duration, abort context.Context) mcp.ToolHandler {
	return func(caller context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		limit := timeout()
		ctx, cancel := context.WithTimeout(caller, limit)
		defer cancel()
		stop := context.AfterFunc(abort, cancel)
		defer stop()
		token := req.Params.GetProgressToken()
		var progress chan messages.UpstreamProgress
		if token != nil {
			progress = make(chan messages.UpstreamProgress, progressBuffer)
		}
		reply := make(chan messages.UpstreamResult, 1)
		call := messages.UpstreamCall{Tool: tool, Arguments: req.Params.Arguments, Done: ctx.Done(), Progress: progress, Reply: reply}
		ended := func() (*mcp.CallToolResult, error) {
			switch {
			case caller.Err() != nil:
				return nil, caller.Err()
			case abort.Err() != nil:
				return upstreamError("the call to upstream server %q was stopped: wraptool is shutting down", server), nil
			}
			return upstreamError("upstream server %q did not answer %s within its timeout (%s); the call was cancelled", server, tool, limit), nil
		}
		select {
		case offer.Calls <- call:
		case <-offer.Gone:
			return upstreamError("upstream server %q was stopped (its config entry was removed or changed); list the tools again", server), nil
		case <-ctx.Done():
			return ended()
		}
		for {
			select {
			case r := <-reply:
				// Notes already here precede the result: pass them on.
				for len(progress) > 0 {
					p := <-progress
					req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
						Progress: p.Progress, Total: p.Total, Message: p.Message})
				}
				return upstreamOutcome(server, r)
			case p := <-progress:
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
					Progress: p.Progress, Total: p.Total, Message: p.Message})
			case <-ctx.Done():
				select {
				case r := <-reply: // answered as the deadline fell: the answer wins
					return upstreamOutcome(server, r)
				default:
				}
				return ended()
			}
		}
	}
}

// audited wraps an upstream tool's handler so each call gets its audit
// line: allowed (the registry exposes only what the config allows), with no
// argv (an upstream takes JSON arguments, which are not recorded: wraptool
// knows nothing of which of them are secret), no exit code, and "error" set
// when the call failed. The line is queued with the call's values but not
// its cancellation, bounded by stop.
func audited(server string, state func() *toolset.State, stop context.Context, h mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		st := state()
		if st.Audit == nil {
			return h(ctx, req)
		}
		line := toolset.CallAudit{Time: time.Now().UTC(), Tool: req.Params.Name, Decision: "allowed",
			Policy: st.AuditPolicy, Upstream: server}
		line.Session, line.Client = toolset.SessionOf(ctx, req)
		began := time.Now()
		res, err := h(ctx, req)
		line.DurationMS = time.Since(began).Milliseconds()
		switch {
		case err != nil:
			line.Error = err.Error()
		case res != nil && res.IsError:
			line.Error = "the upstream tool reported an error"
		}
		actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		defer context.AfterFunc(stop, cancel)()
		st.Audit(actx, line)
		return res, err
	}
}

// upstreamOutcome turns an upstream client's answer into the client's: the upstream's
// result as it sent it, its JSON-RPC error as that same error, and a tool
// error saying what happened when the upstream failed or was down.
func upstreamOutcome(server string, r messages.UpstreamResult) (*mcp.CallToolResult, error) {
	var wire *jsonrpc.Error
	var down errUpstreamDown
	switch {
	case r.Err == nil && r.Result == nil:
		return &mcp.CallToolResult{Content: []mcp.Content{}}, nil
	case r.Err == nil && (r.Result.NeedsInput() || r.Result.InputRequests != nil):
		return upstreamError("upstream server %q asked the client for input (elicitation, sampling or roots), "+
			"which wraptool does not pass on", server), nil
	case r.Err == nil:
		r.Result.RequestState = "" // only ever echoed back with input responses
		return r.Result, nil
	case errors.As(r.Err, &wire):
		return nil, wire
	case errors.As(r.Err, &down):
		return upstreamError("upstream server %q is not available: %s; try again in a moment", server, down.why), nil
	case errors.Is(r.Err, mcp.ErrConnectionClosed), errors.Is(r.Err, io.EOF), errors.Is(r.Err, io.ErrUnexpectedEOF):
		return upstreamError("upstream server %q stopped while handling the call; it is restarted, so try again in a moment", server), nil
	}
	return upstreamError("upstream server %q failed the call: %v", server, r.Err), nil
}

func upstreamError(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}
