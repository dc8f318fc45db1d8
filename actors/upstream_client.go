package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/toolset/runner"
	"github.com/wraptool/wraptool/toolset/upstream"
)

// UpstreamTiming are an upstream client's clocks (docs/upstream-servers.md). A
// zero field means its default, the figure docs/upstream-servers.md gives.
type UpstreamTiming struct {
	// PingEvery is how often a running upstream is pinged. Default 30s.
	PingEvery time.Duration
	// PingTimeout is how long a ping may go unanswered before the upstream
	// counts as hung. Default 10s.
	PingTimeout time.Duration
	// FirstBackoff is the wait before the first restart; each further
	// failure doubles it. Default 1s.
	FirstBackoff time.Duration
	// MaxBackoff caps the wait. Default 60s.
	MaxBackoff time.Duration
	// HealthyAfter is how long an upstream must have served for the
	// backoff to start again from FirstBackoff. Default 60s.
	HealthyAfter time.Duration
	// StopGrace is how long a stopped upstream may take to exit after
	// SIGTERM and the end of its input, before its process group is
	// killed. Default 2s.
	StopGrace time.Duration
}

func (t UpstreamTiming) withDefaults() UpstreamTiming {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.PingEvery, 30*time.Second)
	def(&t.PingTimeout, 10*time.Second)
	def(&t.FirstBackoff, time.Second)
	def(&t.MaxBackoff, 60*time.Second)
	def(&t.HealthyAfter, 60*time.Second)
	def(&t.StopGrace, 2*time.Second)
	return t
}

// backoff is the wait before restart number n (1-based): FirstBackoff
// doubled n-1 times, capped at MaxBackoff.
func (t UpstreamTiming) backoff(n int) time.Duration {
	d := t.FirstBackoff
	for i := 1; i < n && d < t.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, t.MaxBackoff)
}

// Bounds on what one upstream can make wraptool hold or log.
const (
	// MaxUpstreamTools bounds the tools read from one upstream's list; the
	// rest are ignored (and logged).
	MaxUpstreamTools = 1000
	// maxUpstreamLine bounds one JSON-RPC message from an upstream; a
	// longer one ends the session, as a crash does.
	maxUpstreamLine = 16 << 20
	// maxStderrLine bounds one logged stderr line; the rest of a longer
	// line is dropped.
	maxStderrLine = 4096
	// stderrLinesPerSecond bounds how many stderr lines one upstream may
	// log each second; beyond it lines are counted and the count logged.
	stderrLinesPerSecond = 100
)

// upstreamSpec is what an upstream client starts: a change of any field restarts the
// upstream, while a change of the entry's other fields (allow, deny,
// name_prefix, timeout) applies without one, in the registry.
type upstreamSpec struct {
	command     string
	args        []string
	workingDir  string
	fileEnv     map[string]string
	env         map[string]string
	initTimeout time.Duration
}

func specOf(s *config.MCPServer) upstreamSpec {
	return upstreamSpec{command: s.Command, args: s.Args, workingDir: s.WorkingDir, fileEnv: s.FileEnv,
		env: s.Env, initTimeout: s.InitTimeout}
}

func (s upstreamSpec) equal(o upstreamSpec) bool {
	return s.command == o.command && slices.Equal(s.args, o.args) && s.workingDir == o.workingDir &&
		maps.Equal(s.fileEnv, o.fileEnv) && maps.Equal(s.env, o.env) && s.initTimeout == o.initTimeout
}

// upstreamClient keeps one upstream MCP server running and carries calls to it. It
// is started, and stopped by cancelling its context, by the upstream
// supervisor, which waits for run to return. Between failures it restarts
// the upstream with capped exponential backoff; every start is a new
// process and a new MCP session, while the upstream client (its Calls channel and
// Gone) stays, so handlers registered for it stay valid across restarts.
//
// Calls are multiplexed on the upstream's one stdio session: each runs in
// its own goroutine, and the SDK matches every reply to its request by
// JSON-RPC id.
type upstreamClient struct {
	name   string
	gen    uint64
	spec   upstreamSpec
	getenv func(string) string
	reaper *runner.Reaper
	// snapshots is read at each start for the sandbox in force, so a
	// restart after a reload runs under the new config's protected set.
	snapshots Snapshots
	timing    UpstreamTiming
	version   string
	log       *slog.Logger
	// publish reaches the registry; first, until used, tells the
	// supervisor the first start is over (its offer applied, or failed).
	publish chan<- messages.UpstreamTools
	first   chan<- string
	// calls is read by run only; gone is closed when run returns.
	calls chan messages.UpstreamCall
	gone  chan struct{}

	// progress routes the upstream's progress notes, which the SDK hands
	// to a callback on its read goroutine, to the calls that asked for
	// them, by the token forward gave the upstream.
	progressMu sync.Mutex
	progress   map[string]chan<- messages.UpstreamProgress
	tokens     atomic.Uint64
}

// run keeps the upstream running until ctx is done.
func (b *upstreamClient) run(ctx context.Context) {
	defer close(b.gone)
	failures := 0
	down := "it is starting"
	for {
		up, tools, err := b.startRefusing(ctx, down)
		served := time.Duration(0)
		var ok bool
		if err == nil {
			b.log.Info("upstream server ready", "pid", up.pid, "tools", len(tools))
			ok = b.offer(ctx, tools, b.first != nil)
			if ok {
				b.reportFirst(ctx)
				began := time.Now()
				err = b.serve(ctx, up)
				served = time.Since(began)
			}
		} else {
			b.reportFirst(ctx)
		}
		if served >= b.timing.HealthyAfter {
			failures = 0
		}
		failures++
		delay := b.timing.backoff(failures)
		down = fmt.Sprintf("it failed (%v) and restarts in %s", err, delay)
		if ctx.Err() != nil {
			down = "it is being stopped"
		}
		if up != nil {
			if ok && ctx.Err() == nil {
				// Withdraw first: the tools go at once, even while a hung
				// process takes its grace to stop.
				b.offer(ctx, nil, false)
			}
			stopped := make(chan struct{})
			go func() {
				up.stop(b.timing.StopGrace)
				close(stopped)
			}()
			b.refuseUntil(stopped, down)
		}
		if ctx.Err() != nil {
			return
		}
		b.log.Warn("upstream server failed; its tools are withdrawn until it restarts", "error", err, "restart_in", delay)
		if !b.refuseFor(ctx, delay, down) {
			return
		}
		down = "it is restarting"
	}
}

// refuseFor answers every call that arrives in the next d with an
// upstream.Down saying why; false when ctx ended first.
func (b *upstreamClient) refuseFor(ctx context.Context, d time.Duration, why string) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		case c := <-b.calls:
			c.Reply <- messages.UpstreamResult{Err: upstream.Down{Why: why}}
		}
	}
}

// startRefusing starts the upstream, answering calls meanwhile (a handler
// registered before a failure may still send one) with upstream.Down.
func (b *upstreamClient) startRefusing(ctx context.Context, why string) (*upstreamProc, []*mcp.Tool, error) {
	var s struct {
		up    *upstreamProc
		tools []*mcp.Tool
		err   error
	}
	done := make(chan struct{})
	go func() {
		s.up, s.tools, s.err = b.start(ctx)
		close(done)
	}()
	b.refuseUntil(done, why)
	return s.up, s.tools, s.err
}

// refuseUntil answers every call with an upstream.Down saying why, until
// done is closed.
func (b *upstreamClient) refuseUntil(done <-chan struct{}, why string) {
	for {
		select {
		case <-done:
			return
		case c := <-b.calls:
			c.Reply <- messages.UpstreamResult{Err: upstream.Down{Why: why}}
		}
	}
}

// reportFirst tells the supervisor, once, that the first start is over.
func (b *upstreamClient) reportFirst(ctx context.Context) {
	if b.first == nil {
		return
	}
	select {
	case b.first <- b.name:
	case <-ctx.Done():
	}
	b.first = nil
}

// offer sends the upstream's tools (nil withdraws them) to the registry,
// and with wait, waits until they are applied; false when ctx ended first.
func (b *upstreamClient) offer(ctx context.Context, tools []*mcp.Tool, wait bool) bool {
	m := messages.UpstreamTools{Server: b.name, Generation: b.gen, Tools: tools, Calls: b.calls, Gone: b.gone}
	var applied chan struct{}
	if wait {
		applied = make(chan struct{}, 1)
		m.Applied = applied
	}
	select {
	case b.publish <- m:
	case <-ctx.Done():
		return false
	}
	if wait {
		select {
		case <-applied:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// start spawns the upstream, initializes an MCP session with it and lists
// its tools, all within init_timeout.
func (b *upstreamClient) start(ctx context.Context) (*upstreamProc, []*mcp.Tool, error) {
	env := runner.Environ("", b.getenv, b.spec.fileEnv, b.spec.env)
	path, err := runner.LookPath(b.spec.command, env)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot start: %w", err)
	}
	env = runner.Environ(path, b.getenv, b.spec.fileEnv, b.spec.env)
	var sandbox *runner.Sandbox
	if b.snapshots != nil {
		sandbox = b.snapshots.Current().Sandbox
	}
	// The command is checked as every start is (runner); a script it is
	// given decides what runs as much, so it is checked here, just before
	// each start, where the process will open it.
	if i, err := runner.CheckScripts(b.spec.args, b.spec.workingDir); err != nil {
		return nil, nil, fmt.Errorf("cannot start: its argument %s: %w", b.spec.args[i], err)
	}
	up, err := spawn(path, b.spec.args, b.spec.workingDir, env, b.reaper, sandbox, b.log)
	if errors.Is(err, runner.ErrUntrusted) {
		return nil, nil, fmt.Errorf("cannot start: %w", err) // it names the program already
	}
	if err != nil {
		return nil, nil, fmt.Errorf("cannot start %s: %w", path, err)
	}
	initCtx, cancel := context.WithTimeout(ctx, b.spec.initTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "wraptool", Version: b.version}, &mcp.ClientOptions{
		Logger:                      slog.New(Quieter{b.log.Handler()}),
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { ring(up.listChanged) },
		ProgressNotificationHandler: b.onProgress,
		// An upstream's requests for input (elicitation, sampling, roots;
		// in a result since protocol 2026-07-28) come back as they are,
		// for upstream.Outcome to refuse: wraptool's client answers none.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		// No capabilities at all: not even the SDK's default roots, so an
		// upstream learns nothing of the client behind wraptool.
		Capabilities: &mcp.ClientCapabilities{},
		// Deprecated from protocol 2026-07-28 on, but upstreams on the
		// 2025 versions still send log notifications.
		//lint:ignore SA1019 see above
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			b.log.Debug("upstream log message", "level", req.Params.Level, "logger", req.Params.Logger, "data", req.Params.Data)
		},
	})
	session, err := client.Connect(initCtx, &mcp.IOTransport{Reader: up.stdout, Writer: up.stdin, MaxLineLength: maxUpstreamLine}, nil)
	if err != nil {
		err = b.startError("initialize", initCtx, up, err)
		up.stop(b.timing.StopGrace)
		return nil, nil, err
	}
	up.attach(session)
	tools, err := b.list(initCtx, session)
	if err != nil {
		err = b.startError("list its tools", initCtx, up, err)
		up.stop(b.timing.StopGrace)
		return nil, nil, err
	}
	return up, tools, nil
}

// startError says why a start failed, in the words an operator needs: the
// budget it overran, or how the process ended.
func (b *upstreamClient) startError(step string, ctx context.Context, up *upstreamProc, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("did not %s within init_timeout (%s)", step, b.spec.initTimeout)
	case up.exitedEarly():
		return fmt.Errorf("exited before it could %s (%s)", step, up.exitStatus())
	}
	return fmt.Errorf("could not %s: %w", step, err)
}

// list reads every tool the upstream offers, at most MaxUpstreamTools.
func (b *upstreamClient) list(ctx context.Context, s *mcp.ClientSession) ([]*mcp.Tool, error) {
	tools := []*mcp.Tool{}
	for t, err := range s.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if len(tools) == MaxUpstreamTools {
			b.log.Warn("upstream server lists too many tools; the rest are ignored", "limit", MaxUpstreamTools)
			break
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// serve carries calls to a running upstream until it fails (exits, closes
// its output, or misses a ping) or ctx is done. It follows the upstream's
// list_changed by listing again and offering the new list.
func (b *upstreamClient) serve(ctx context.Context, up *upstreamProc) error {
	ping := time.NewTicker(b.timing.PingEvery)
	defer ping.Stop()
	pinged := make(chan error, 1)
	pinging := false
	type listing struct {
		tools []*mcp.Tool
		err   error
	}
	listed := make(chan listing, 1)
	busy, again := false, false
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-up.exited:
			return fmt.Errorf("the process exited (%s)", up.exitStatus())
		case <-up.closed:
			if up.exitedEarly() { // the usual cause: say how it ended
				return fmt.Errorf("the process exited (%s)", up.exitStatus())
			}
			return errors.New("it closed its connection")
		case c := <-b.calls:
			go b.forward(ctx, up.session, c)
		case <-up.listChanged:
			if busy {
				again = true
				continue
			}
			busy = true
			go func() {
				lctx, cancel := context.WithTimeout(ctx, b.spec.initTimeout)
				defer cancel()
				tools, err := b.list(lctx, up.session)
				listed <- listing{tools, err}
			}()
		case l := <-listed:
			busy = false
			if l.err != nil {
				b.log.Warn("upstream server announced new tools but could not list them; keeping the previous list", "error", l.err)
			} else {
				b.log.Info("upstream server's tools changed", "tools", len(l.tools))
				if !b.offer(ctx, l.tools, false) {
					return ctx.Err()
				}
			}
			if again {
				again = false
				ring(up.listChanged)
			}
		case <-ping.C:
			if pinging {
				continue
			}
			pinging = true
			go func() {
				pctx, cancel := context.WithTimeout(ctx, b.timing.PingTimeout)
				defer cancel()
				err := up.session.Ping(pctx, nil)
				var wire *jsonrpc.Error
				if errors.As(err, &wire) {
					err = nil // an error reply is still a reply
				}
				pinged <- err
			}()
		case err := <-pinged:
			pinging = false
			if err != nil && ctx.Err() == nil {
				return fmt.Errorf("it did not answer a ping within %s: %w", b.timing.PingTimeout, err)
			}
		}
	}
}

// forward makes one call on the upstream's session and replies with its
// outcome. The upstream call is cancelled (the SDK sends
// notifications/cancelled) when the caller gives up or the upstream client stops.
func (b *upstreamClient) forward(ctx context.Context, s *mcp.ClientSession, c messages.UpstreamCall) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.Done:
			cancel()
		case <-ctx.Done():
		}
	}()
	p := &mcp.CallToolParams{Name: c.Tool}
	if len(c.Arguments) > 0 {
		p.Arguments = c.Arguments
	}
	if c.Progress != nil {
		token := fmt.Sprintf("wraptool-%d-%d", b.gen, b.tokens.Add(1))
		b.progressMu.Lock()
		b.progress[token] = c.Progress
		b.progressMu.Unlock()
		defer func() {
			b.progressMu.Lock()
			delete(b.progress, token)
			b.progressMu.Unlock()
		}()
		p.SetProgressToken(token)
	}
	res, err := s.CallTool(ctx, p)
	c.Reply <- messages.UpstreamResult{Result: res, Err: err}
}

// onProgress passes an upstream progress note to the call it belongs to,
// without blocking the SDK's read goroutine: a note the call has no room
// for is dropped (progress is advisory).
func (b *upstreamClient) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	token, _ := req.Params.ProgressToken.(string)
	b.progressMu.Lock()
	ch := b.progress[token]
	b.progressMu.Unlock()
	if ch == nil {
		return
	}
	select {
	case ch <- messages.UpstreamProgress{Progress: req.Params.Progress, Total: req.Params.Total, Message: req.Params.Message}:
	default:
	}
}
