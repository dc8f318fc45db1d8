package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	oklogrun "github.com/oklog/run"

	"github.com/wraptool/wraptool/actors"
	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/toolset"
	"github.com/wraptool/wraptool/toolset/runner"
	"github.com/wraptool/wraptool/webui"
	"github.com/wraptool/wraptool/webui/metrics"
)

// server is `wraptool serve`, wired: every actor, built and linked, not yet
// running.
type server struct {
	signals   *actors.Signals
	watcher   *actors.Watcher
	debouncer *actors.Debouncer
	loader    *actors.Loader
	holder    *actors.PolicyHolder
	registry  *actors.Registry
	upstreams *actors.Upstreams
	hub       *actors.Hub
	sessions  *actors.Sessions
	requests  *actors.RequestLog
	audit     *actors.Audit
	hooks     *actors.Hooks
	gc        *gcTuner // nil when the operator set GOGC
	grants    *actors.Grants
	reaper    *runner.Reaper
	// editor, admin and ui are the review UI and the config editor it
	// applies through, nil without admin.listen.
	editor *actors.ConfigEditor
	admin  *actors.Admin
	ui     *webui.UI
}

// wire builds the server for the config at path, first loaded as l.
//
// Every link between actors is a channel declared in the first block
// below, with its direction; package messages says, for each, its buffer
// and what happens when the receiver is busy. A request that wants an
// answer carries its own reply channel, and each receiver that answers
// requests (the request log, grants, the registry, the config editor, the
// audit writer) closes a
// "stopped" channel when its Run returns, so no sender waits on an actor
// that is gone. The second block holds the few links that are plain values,
// each with the reason it may be one (plainLinks lists them for the test
// that walks the actors' options). No actor holds another actor, except two
// shared tables named there with their reasons: the reaper's table of
// processes and the hub's session table, each guarded by its own lock, whose
// Run only sweeps (the session table's also writes its file).
//
// The graph has back edges, none of which can block: the policy holder
// rings the watcher (which feeds the loader, which feeds the holder)
// through a one-slot doorbell that absorbs rings; the request log rings
// nothing back, and the watcher's LogChanged ring reaches the grants actor,
// whose GrantsChanged the holder receives on a channel it always reads.
func (a *app) wire(path string, l *config.Loaded, reaper *runner.Reaper, introspection config.Introspect) *server {
	log := a.log
	var (
		fileEvents      = make(messages.Doorbell, 1)                       // watcher → debouncer
		fileChanged     = make(messages.Doorbell, 1)                       // debouncer → loader
		reloadNow       = make(messages.Doorbell, 1)                       // signals (SIGHUP) → loader
		loaded          = make(chan messages.ConfigLoaded)                 // loader → policy holder
		rejected        = make(chan messages.ConfigRejected)               // loader → policy holder (audited)
		toolsetChanged  = make(messages.Doorbell, 1)                       // policy holder → registry
		watchSetChanged = make(messages.Doorbell, 1)                       // policy holder → watcher
		upstreamChanged = make(messages.Doorbell, 1)                       // policy holder → upstream supervisor
		upstreamsReady  = make(chan struct{})                              // upstream supervisor → hub: closed after the first round
		offers          = make(chan messages.UpstreamTools)                // upstream clients → registry
		upstreamStates  = make(chan messages.UpstreamStates)               // metrics scrape → registry (reply inside)
		registryStopped = make(chan struct{})                              // registry → scrapes: closed when it stops
		killCalls       = make(chan struct{})                              // hub → registry: closed when running calls must be killed
		logChanged      = make(messages.Doorbell, 1)                       // watcher → grants
		grantsChanged   = make(chan messages.GrantsChanged)                // grants → policy holder
		learns          = make(chan messages.LearnHelps)                   // request tool, review UI → policy holder (reply inside)
		holderStopped   = make(chan struct{})                              // policy holder → learners: closed when it stops
		waits           = make(chan messages.AwaitDecision)                // request tool → grants (reply inside)
		grantsStopped   = make(chan struct{})                              // grants → request tool: closed when it stops
		appends         = make(chan messages.AppendRequest)                // request tool → request log (reply inside)
		queries         = make(chan messages.PendingQuery)                 // request tool → request log (reply inside)
		decides         = make(chan messages.DecideRequest)                // request tool, review UI → request log (reply inside)
		uses            = make(chan messages.UseGrant)                     // tool handlers → request log (reply inside)
		logStopped      = make(chan struct{})                              // request log → its senders: closed when it stops
		filed           = make(chan messages.RequestFiled, 64)             // request log → hooks (mcp.on_request)
		applies         = make(chan messages.ApplyToConfig)                // review UI → config editor (reply inside)
		editorStopped   = make(chan struct{})                              // config editor → review UI: closed when it stops
		auditLines      = make(chan messages.AuditLine, actors.AuditQueue) // tool handlers, policy holder → audit writer
		auditStopped    = make(chan struct{})                              // audit writer → its senders: closed when it stops
	)
	// The MCP server: the SDK's, whose tools the registry manages and whose
	// sessions the hub serves.
	var sessions *actors.Sessions
	mcpServer := mcp.NewServer(&mcp.Implementation{Name: "wraptool", Version: buildVersion()}, &mcp.ServerOptions{
		Logger: slog.New(actors.Quieter{Handler: log.Handler()}).With("component", "mcp"),
		// The session table chooses ids, so a session kept from the last
		// run comes back under its own (sessions is set before serving).
		GetSessionID: func() string { return sessions.NextID() },
		Capabilities: &mcp.ServerCapabilities{
			Tools: &mcp.ToolCapabilities{ListChanged: true},
			// Deprecated from protocol 2026-07-28 on, but clients on the
			// 2025 versions still send logging/setLevel.
			Logging: &mcp.LoggingCapabilities{}, //lint:ignore SA1019 see above
		},
	})
	// The links that are plain values (see plainLinks for each reason).
	var (
		published   = actors.NewPublished() // policy holder → every reader: the snapshot in service
		requestLog  = messages.RequestLogLinks{Appends: appends, Queries: queries, Decides: decides, Uses: uses, Stopped: logStopped}
		grantsLinks = messages.GrantsLinks{Waits: waits, Stopped: grantsStopped}
		editorLinks = messages.ConfigEditorLinks{Applies: applies, Stopped: editorStopped}
		helpLinks   = messages.HelpLinks{Learns: learns, Stopped: holderStopped}
		auditCounts = &actors.AuditCounts{} // audit senders and writer → metrics scrape
		audit       = &actors.AuditSender{Lines: auditLines, Stopped: auditStopped, Counts: auditCounts, Log: log}
		counters    = metrics.New(&metricSource{snapshots: published, server: mcpServer, states: upstreamStates,
			registryStopped: registryStopped, audit: auditCounts})
	)
	s := &server{reaper: reaper}
	if a.getenv("GOGC") == "" {
		s.gc = newGCTuner()
	}
	s.audit = actors.NewAudit(actors.AuditOptions{Lines: auditLines, Stopped: auditStopped, Counts: auditCounts, Log: log})
	// What outlives snapshots: the concurrency slots, the reaper, the
	// denial memory, the way to consume a once-grant, and the audit queue.
	shared := actors.Shared{Slots: toolset.NewSlots(l.Config.MCP.MaxConcurrentCalls), Reaper: reaper,
		Denials: toolset.NewDenials(), UseGrant: requestLog.UseGrant, Used: toolset.NewUsedGrants(), Audit: audit,
		Confiner: a.confinerFor(), Self: a.self(), Paths: a.configOptions()}

	s.grants = actors.NewGrants(actors.GrantsOptions{Snapshots: published, LogChanged: logChanged, Out: grantsChanged,
		Waits: waits, Stopped: grantsStopped, Log: log})
	s.holder = actors.NewPolicyHolder(actors.PolicyHolderOptions{
		Initial: actors.NewSnapshot(l, s.grants.Prime(l.Config.MCP.RequestLog), shared, a.getenv), Publish: published,
		Shared: shared, Getenv: a.getenv, SetLevel: a.configLevelSetter(), Loaded: loaded, Rejected: rejected, Grants: grantsChanged,
		Learns: learns, Stopped: holderStopped,
		ToolsetChanged: toolsetChanged, WatchSetChanged: watchSetChanged, UpstreamsChanged: upstreamChanged, Log: log,
	})
	s.signals = actors.NewSignals(actors.SignalsOptions{ReloadNow: reloadNow, Notify: a.notify, Stop: a.stopNotify, Log: log})
	s.watcher = actors.NewWatcher(actors.WatcherOptions{
		Snapshots: published, WatchSetChanged: watchSetChanged, FileEvents: fileEvents, LogChanged: logChanged, Log: log,
	})
	s.debouncer = actors.NewDebouncer(actors.DebouncerOptions{FileEvents: fileEvents, FileChanged: fileChanged})
	counters.Loaded(time.Now(), false)
	s.loader = actors.NewLoader(actors.LoaderOptions{
		Path: path, Paths: a.configOptions(), Introspect: introspection, Load: a.load, Running: l.Hash,
		NeedToken:   exposedListener(l.Config),
		FileChanged: fileChanged, ReloadNow: reloadNow, Loaded: loaded, Rejected: rejected, Counters: counters, Log: log,
	})
	s.upstreams = actors.NewUpstreams(actors.UpstreamsOptions{
		Snapshots: published, UpstreamsChanged: upstreamChanged, Offers: offers, Ready: upstreamsReady, Getenv: a.getenv,
		Reaper: reaper, Timing: a.upstreamTiming, Version: buildVersion(), Log: log,
	})
	sessions = actors.NewSessions(actors.SessionsOptions{Server: mcpServer, Path: config.SessionsPath(l.Config.MCP.RequestLog), Log: log})
	s.sessions = sessions
	s.hub = actors.NewHub(mcpServer, actors.HubOptions{
		Transport: l.Config.MCP.Transport, Listen: l.Config.MCP.Listen, Snapshots: published, Ready: upstreamsReady,
		Sessions: s.sessions, KillCalls: killCalls,
	}, log)
	s.registry = actors.NewRegistry(actors.RegistryOptions{
		Server: mcpServer, Snapshots: published, KillCalls: killCalls, States: upstreamStates, Stopped: registryStopped,
		ToolsetChanged: toolsetChanged, Offers: offers, Log: log,
	})
	s.requests = actors.NewRequestLog(actors.RequestLogOptions{Appends: appends, Queries: queries, Decides: decides, Uses: uses,
		Stopped: logStopped, Filed: filed, Snapshots: published, Log: log})
	s.hooks = actors.NewHooks(actors.HooksOptions{Filed: filed, Snapshots: published, Getenv: a.getenv, Reaper: reaper, Log: log})
	requestTool := &toolset.RequestTool{Submit: requestLog.Submit, Denials: shared.Denials, Watch: grantsLinks.Watch,
		Pending: requestLog.Pending, Decide: requestLog.Decide, Learn: helpLinks.Learn, State: published.State, Log: log}
	mcpServer.AddTool(requestTool.DefinitionAndHandler())
	mcpServer.AddTool(toolset.DiscoverDefinition(), toolset.NewDiscoverHandler(published.State))
	mcpServer.AddTool(toolset.StatusDefinition(), toolset.NewStatusHandler(published.State))
	s.registry.Prime()
	actors.ReleaseLoadGarbage()
	mcpServer.AddReceivingMiddleware(callMetrics(counters))
	if l.Config.Admin.Listen != "" {
		s.editor = actors.NewConfigEditor(actors.ConfigEditorOptions{Applies: applies, Stopped: editorStopped, Log: log})
		s.admin = actors.NewAdmin(actors.AdminOptions{Listen: l.Config.Admin.Listen, Log: log, Handler: func(addr net.Addr) http.Handler {
			s.ui = webui.New(webui.Options{Source: uiSource{published, a.configOptions()}, Addr: addr, Log: log.With("component", "webui"),
				Metrics: counters.Handler(), Decide: requestLog.Decide, Apply: editorLinks.Apply, Learn: helpLinks.Learn})
			return s.ui.Handler()
		}})
	}
	return s
}

// plainLinks names every option field of an actor (and every constructor
// argument outside the options) that is a plain value where a link could be
// a channel — a function, an interface, or a pointer — with the reason it
// may be one. TestEveryLinkIsNamed walks the actors' options and
// constructors and fails on such a field this table does not name, or on a
// name here that nothing has. A key is the options type and the field
// ("actors.HubOptions.Sessions"), or the constructor and the argument
// ("actors.NewHub(server)"), so a new field always needs its own reason.
func plainLinks() map[string]string {
	const (
		snapshot = "a pure read of the published snapshot (actors.Published, an atomic pointer the policy holder alone " +
			"writes): the one sanctioned shortcut past messages"
		getenv    = "a read of the server's environment, fixed for its life"
		reaper    = "the child subreaper's table of owned processes, guarded by its own lock: every child start and exit registers there on its own goroutine, and a round trip would add a wait to every start; its Run only reaps"
		audit     = "the audit writer's queue as its senders hold it: the channel, the writer's stopped channel and atomic counters"
		sdk       = "the MCP SDK's server, whose tool table the registry alone changes and whose sessions the hub serves"
		paths     = "where the platform folders are: fixed values"
		clock     = "the clock"
		denials   = "the bounded memory of refused calls the request tool resolves call_ids against, guarded by its own lock"
		logLinks  = "a send on the request log's channel and a wait for the reply it carries (messages.RequestLogLinks)"
		helpLinks = "a send on the policy holder's Learns channel and a wait for the reply it carries, until the " +
			"snapshot in service knows the help"
	)
	return map[string]string{
		"actors.AdminOptions.Handler": "builds the review UI once the admin port is bound (the port names the UI's host): " +
			"called once by Listen, not a link",
		"actors.AuditOptions.Counts":     "atomic counters the audit senders and writer bump and the metrics scrape reads",
		"actors.GrantsOptions.Snapshots": snapshot,
		"actors.HooksOptions.Snapshots":  snapshot,
		"actors.HooksOptions.Getenv":     getenv,
		"actors.HooksOptions.Reaper":     reaper,
		"actors.HubOptions.Snapshots":    snapshot,
		"actors.HubOptions.Sessions": "the Streamable HTTP session table, guarded by its own lock: every request's token binding is " +
			"checked there on the request's own goroutine, and a round trip would add a wait to every request; its Run only sweeps the idle and writes the sessions kept for a restart",
		"actors.NewHub(server)":              sdk,
		"actors.LoaderOptions.Paths":         paths,
		"actors.LoaderOptions.Introspect":    "the domain's help runner, a function of the rules it is given",
		"actors.LoaderOptions.Load":          "the domain's one load path (config.LoadFile), a function of the files",
		"actors.LoaderOptions.Counters":      "Prometheus counters, safe for concurrent use and owned by no actor",
		"actors.PolicyHolderOptions.Initial": "the first snapshot, a value",
		"actors.PolicyHolderOptions.Publish": "where the holder publishes the snapshot (the sanctioned shortcut)",
		"actors.PolicyHolderOptions.Getenv":  getenv,
		"actors.PolicyHolderOptions.SetLevel": "applies mcp.log_level to the process's slog.LevelVar, which is safe for " +
			"concurrent use",
		"actors.PolicyHolderOptions.Audit":   audit,
		"actors.RegistryOptions.Server":      sdk,
		"actors.RegistryOptions.Snapshots":   snapshot,
		"actors.RequestLogOptions.Snapshots": snapshot,
		"actors.RequestLogOptions.Now":       clock,
		"actors.SignalsOptions.Notify":       "signal.Notify (a test's own): installs the process's signal handling",
		"actors.SignalsOptions.Stop":         "signal.Stop (a test's own): removes it",
		"actors.SessionsOptions.Server":      sdk,
		"actors.Shared.Slots":                "a limiter bounding the wrapped-tool children running at once, shared by every call",
		"actors.Shared.Reaper":               reaper,
		"actors.Shared.Denials":              denials,
		"actors.Shared.Used":                 "the once-grants used, for the denials that follow; guarded by its own lock",
		"actors.Shared.UseGrant":             "messages.RequestLogLinks.UseGrant: " + logLinks,
		"actors.Shared.Audit":                audit,
		"actors.Shared.Confiner":             "builds each snapshot's sandbox; immutable once made",
		"actors.Shared.Paths":                paths,
		"actors.UpstreamsOptions.Snapshots":  snapshot,
		"actors.UpstreamsOptions.Getenv":     getenv,
		"actors.UpstreamsOptions.Reaper":     reaper,
		"actors.WatcherOptions.Snapshots":    snapshot,
		"toolset.RequestTool.Submit":         "messages.RequestLogLinks.Submit: " + logLinks,
		"toolset.RequestTool.Pending":        "messages.RequestLogLinks.Pending: " + logLinks,
		"toolset.RequestTool.Decide":         "messages.RequestLogLinks.Decide: " + logLinks,
		"toolset.RequestTool.Watch": "messages.GrantsLinks.Watch: a send on the grants actor's Waits channel; the decision " +
			"arrives on the reply channel",
		"toolset.RequestTool.Denials": denials,
		"toolset.RequestTool.Learn":   "messages.HelpLinks.Learn: " + helpLinks,
		"toolset.RequestTool.State":   "actors.Published.State: " + snapshot,
		"webui.Options.Source":        "reads the published snapshot into the UI's view of it: " + snapshot,
		"webui.Options.Addr":          "the admin listener's bound address, a value",
		"webui.Options.Now":           clock,
		"webui.Options.Metrics":       "the Prometheus handler, which reads the metrics' own concurrency-safe registry",
		"webui.Options.Decide":        "messages.RequestLogLinks.Decide: " + logLinks,
		"webui.Options.Learn":         "messages.HelpLinks.Learn: " + helpLinks,
		"webui.Options.Apply": "messages.ConfigEditorLinks.Apply: a send on the config editor's Applies channel and a " +
			"wait for its reply",
	}
}

// uiSource shows the review UI the snapshot in service.
type uiSource struct {
	snapshots actors.Snapshots
	paths     *config.Options
}

// Current is what the UI shows and acts on now.
func (u uiSource) Current() webui.State {
	snap := u.snapshots.Current()
	return webui.State{AdminToken: snap.AdminToken, ConfigPath: snap.Config.File, RequestLog: snap.Config.MCP.RequestLog,
		Policy: snap.Policy, Base: snap.Base, Grants: grantsInForce(snap), Helps: snap.Helps, Paths: u.paths}
}

// grantsInForce are the records of the capability grants in force under
// snap's config (snap.Grants holds those of every config, dormant ones
// too).
func grantsInForce(snap *actors.Snapshot) []*requests.Record {
	if snap.State.Grants == nil {
		return nil
	}
	in := map[string]bool{}
	for _, c := range snap.State.Grants.Capability {
		in[c.ID] = true
	}
	var out []*requests.Record
	for _, r := range snap.Grants {
		if in[r.ID] {
			out = append(out, r)
		}
	}
	return out
}

// run runs every actor in one group until a signal, an actor's failure or
// ctx (tests run serve in-process) ends it.
//
// The plain actors stop when their own context is cancelled. The fronts —
// the hub and, with admin.listen, the review UI's listener — and the
// actors that must outlive them (the request-log and audit writers, the
// hooks the writer feeds, the registry, the upstream supervisor, the config
// editor) follow one rule: the back actors' context ends only when every
// front's Run has returned — every call answered or killed, every decision
// the UI was making recorded — so a request made during the shutdown grace
// period is still recorded (and its hook started), an upstream call still
// answered, and an approval in flight applied and recorded; the writers'
// interrupt only ends their waits for a file lock, so no other process can
// keep the server from stopping. The hooks then kill what they still run: a
// notification never holds the server up.
func (s *server) run(ctx context.Context) error {
	var g oklogrun.Group
	g.Add(oklogrun.ContextHandler(ctx))
	type actor struct {
		name string
		run  func(context.Context) error
	}
	plain := []actor{
		{"signals", s.signals.Run},
		{"watcher", s.watcher.Run},
		{"debouncer", s.debouncer.Run},
		{"loader", s.loader.Run},
		{"policy holder", s.holder.Run},
		{"grants", s.grants.Run},
		{"reaper", s.reaper.Run},
		// The hub's session table expires the Streamable HTTP sessions
		// that never opened a stream, and writes the file that keeps
		// sessions across a restart (once more as it stops); a sweep
		// during shutdown is not needed.
		{"session sweeper", s.sessions.Run},
	}
	if s.gc != nil {
		plain = append(plain, actor{"gc tuner", s.gc.Run})
	}
	for _, a := range plain {
		actx, cancel := context.WithCancel(context.Background())
		g.Add(func() error { return expectRunning(actx, a.name, a.run(actx)) }, func(error) { cancel() })
	}

	fronts := []actor{{"hub", s.hub.Run}}
	if s.admin != nil {
		fronts = append(fronts, actor{"admin UI", s.admin.Run})
	}
	drain, endDrain := context.WithCancel(context.Background())
	var frontsDone sync.WaitGroup
	frontsDone.Add(len(fronts))
	go func() { frontsDone.Wait(); endDrain() }()
	for _, f := range fronts {
		fctx, stop := context.WithCancel(context.Background())
		g.Add(func() error {
			defer frontsDone.Done()
			return expectRunning(fctx, f.name, f.run(fctx))
		}, func(error) { stop() })
	}
	type back struct {
		name        string
		run         func(context.Context) error
		stopWaiting func()
	}
	backs := []back{
		{"request log", s.requests.Run, s.requests.StopWaiting},
		// The audit writer records every call the hub lets finish, and
		// writes what is queued when its context ends.
		{"audit log", s.audit.Run, s.audit.StopWaiting},
		// The hooks run for as long as the request log can file a
		// request; they never make the writer wait (it drops what their
		// queue has no room for).
		{"hooks", s.hooks.Run, func() {}},
		// The registry and the upstream bridges serve the calls the hub
		// lets finish, so they too stop only after it.
		{"registry", s.registry.Run, func() {}},
		{"upstream supervisor", s.upstreams.Run, func() {}},
	}
	if s.editor != nil {
		// The review UI's applies in flight are written before it stops.
		backs = append(backs, back{"config editor", s.editor.Run, func() {}})
	}
	for _, b := range backs {
		g.Add(func() error { return expectRunning(drain, b.name, b.run(drain)) }, func(error) { b.stopWaiting() })
	}
	return g.Run()
}

// expectRunning turns an actor's early, error-free return into an error: an
// actor that stops while its context is live would otherwise end the server
// with exit status 0 and nothing said.
func expectRunning(ctx context.Context, name string, err error) error {
	if err == nil && ctx.Err() == nil {
		return fmt.Errorf("%s stopped unexpectedly", name)
	}
	return err
}

// exposedListener names an sse listener that other hosts can reach, whose
// token a reload must keep (the listener only changes with a restart); ""
// for a loopback or unix listener.
func exposedListener(c *config.Config) string {
	if c.MCP.Transport != "sse" {
		return ""
	}
	host, _, err := net.SplitHostPort(c.MCP.Listen)
	if err != nil || config.IsLoopback(host) {
		return ""
	}
	return c.MCP.Listen
}

// configLevelSetter applies mcp.log_level after a reload; nil when the
// level was pinned by --log-level or WRAPTOOL_LOG_LEVEL.
func (a *app) configLevelSetter() func(string) {
	if a.levelPinned {
		return nil
	}
	return func(s string) {
		if lvl, err := parseLevel(s); err == nil {
			a.level.Set(lvl)
		}
	}
}

// The process-wide hooks serve uses, which an in-process test replaces so
// its signals and slow loads reach only its own server.
type hooks struct {
	// notify and stopNotify install and remove signal handling.
	notify     func(c chan<- os.Signal, sig ...os.Signal)
	stopNotify func(c chan<- os.Signal)
	// load is the one load path (config.LoadFile).
	load actors.LoadFunc
	// upstreamTiming sets the upstream clients' clocks (ping, backoff);
	// the zero value is the documented figures (docs/upstream-servers.md), which in-process tests
	// shorten.
	upstreamTiming actors.UpstreamTiming
}

// signalContext is ctx, ended also by SIGINT or SIGTERM (through the notify
// hook); stop removes the handling.
func (a *app) signalContext(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	sigs := make(chan os.Signal, 1)
	a.notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			a.stopNotify(sigs)
			cancel()
		})
	}
}

func defaultHooks() hooks {
	return hooks{notify: signal.Notify, stopNotify: signal.Stop, load: config.LoadFile}
}
