package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	oklogrun "github.com/oklog/run"

	"github.com/wraptool/wraptool/actors"
	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/config"
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
	requests  *actors.RequestLog
	audit     *actors.Audit
	metrics   *metrics.Metrics
	hooks     *actors.Hooks
	gc        *gcTuner // nil when the operator set GOGC
	grants    *actors.Grants
	reaper    *runner.Reaper
	// admin and ui are the review UI, nil without admin.listen.
	admin *actors.Admin
	ui    *webui.UI
}

// wire builds the server for the config at path, first loaded as l. Every
// link is named in the one block below, with its direction; package
// messages says, for each, its buffer and what happens when the receiver is
// busy. The actors follow in pipeline order, except that the policy holder
// comes first: it publishes the snapshot every other actor reads.
func (a *app) wire(path string, l *config.Loaded, reaper *runner.Reaper, introspection config.Introspect) *server {
	log := a.log
	var (
		fileEvents      = make(messages.Doorbell, 1)                       // watcher → debouncer
		fileChanged     = make(messages.Doorbell, 1)                       // debouncer → loader
		reloadNow       = make(messages.Doorbell, 1)                       // signals (SIGHUP) → loader
		loaded          = make(chan messages.ConfigLoaded)                 // loader → policy holder
		toolsetChanged  = make(messages.Doorbell, 1)                       // policy holder → registry
		watchSetChanged = make(messages.Doorbell, 1)                       // policy holder → watcher
		appends         = make(chan messages.AppendRequest)                // request-tool handlers → request log
		upstreamChanged = make(messages.Doorbell, 1)                       // policy holder → upstream supervisor
		offers          = make(chan messages.UpstreamTools)                // bridges → registry
		logChanged      = make(messages.Doorbell, 1)                       // watcher → grants
		grantsChanged   = make(chan messages.GrantsChanged)                // grants → policy holder
		uses            = make(chan messages.UseGrant)                     // tool handlers → request log
		filed           = make(chan messages.RequestFiled, 64)             // request log → hooks (mcp.on_request)
		auditLines      = make(chan messages.AuditLine, actors.AuditQueue) // tool handlers, policy holder, loader → audit writer
	)
	s := &server{reaper: reaper}
	if a.getenv("GOGC") == "" {
		s.gc = newGCTuner()
	}
	s.audit = actors.NewAudit(actors.AuditOptions{Lines: auditLines, Log: log})
	// What outlives snapshots: the concurrency slots, the reaper, the
	// denial memory, the way to consume a once-grant (through the
	// request-log writer, built below), and the audit writer.
	shared := actors.Shared{Slots: toolset.NewSlots(l.Config.MCP.MaxConcurrentCalls), Reaper: reaper,
		Denials: toolset.NewDenials(), UseGrant: func(ctx context.Context, id string) error { return s.requests.UseGrant(ctx, id) },
		Audit: s.audit, Confiner: a.confinerFor(), Self: a.self(), Paths: a.configOptions()}

	s.grants = actors.NewGrants(actors.GrantsOptions{LogChanged: logChanged, Out: grantsChanged, Log: log})
	s.holder = actors.NewPolicyHolder(actors.PolicyHolderOptions{
		Initial: actors.NewSnapshot(l, s.grants.Prime(l.Config.MCP.RequestLog), shared, a.getenv), Shared: shared, Getenv: a.getenv,
		SetLevel: a.configLevelSetter(), Loaded: loaded, Grants: grantsChanged,
		ToolsetChanged: toolsetChanged, WatchSetChanged: watchSetChanged, UpstreamsChanged: upstreamChanged, Log: log,
	})
	s.grants.Follow(s.holder)
	s.signals = actors.NewSignals(actors.SignalsOptions{ReloadNow: reloadNow, Notify: a.notify, Stop: a.stopNotify, Log: log})
	s.watcher = actors.NewWatcher(actors.WatcherOptions{
		Snapshots: s.holder, WatchSetChanged: watchSetChanged, FileEvents: fileEvents, LogChanged: logChanged, Log: log,
	})
	s.debouncer = actors.NewDebouncer(actors.DebouncerOptions{FileEvents: fileEvents, FileChanged: fileChanged})
	// Metrics (served on the admin listener): gauges read at scrape time
	// from what the actors below hold, counters pushed by the loader and
	// by a middleware on every tool call.
	src := &metricSource{holder: s.holder, auditWaits: s.audit.Waited, auditLost: s.audit.Lost}
	s.metrics = metrics.New(src)
	s.metrics.Loaded(time.Now(), false)
	s.loader = actors.NewLoader(actors.LoaderOptions{
		Path: path, Paths: a.configOptions(), Introspect: introspection, Load: a.load, Running: l.Hash,
		NeedToken:   exposedListener(l.Config),
		FileChanged: fileChanged, ReloadNow: reloadNow, Loaded: loaded, Log: log,
		Rejected: func(ctx context.Context, cause string, err error) {
			s.metrics.Rejected()
			s.holder.AuditRejected(ctx, cause, err)
		},
		Accepted: func(string) {
			s.metrics.Loaded(time.Now(), true)
			releaseLoadGarbage()
		},
	})
	mcpServer := mcp.NewServer(&mcp.Implementation{Name: "wraptool", Version: buildVersion()}, &mcp.ServerOptions{
		Logger: slog.New(actors.Quieter{Handler: log.Handler()}).With("component", "mcp"),
		Capabilities: &mcp.ServerCapabilities{
			Tools: &mcp.ToolCapabilities{ListChanged: true},
			// Deprecated from protocol 2026-07-28 on, but clients on the
			// 2025 versions still send logging/setLevel.
			Logging: &mcp.LoggingCapabilities{}, //lint:ignore SA1019 see above
		},
	})
	s.upstreams = actors.NewUpstreams(actors.UpstreamsOptions{
		Snapshots: s.holder, UpstreamsChanged: upstreamChanged, Offers: offers, Getenv: a.getenv, Reaper: reaper,
		Timing: a.upstreamTiming, Version: buildVersion(), Log: log,
	})
	s.hub = actors.NewHub(mcpServer, actors.HubOptions{
		Transport: l.Config.MCP.Transport, Listen: l.Config.MCP.Listen, Snapshots: s.holder, Ready: s.upstreams.Ready(),
	}, log)
	s.registry = actors.NewRegistry(actors.RegistryOptions{
		Server: mcpServer, Snapshots: s.holder, Calls: s.hub.Calls(), ToolsetChanged: toolsetChanged, Offers: offers, Log: log,
	})
	s.requests = actors.NewRequestLog(actors.RequestLogOptions{Appends: appends, Uses: uses, Filed: filed, Snapshots: s.holder, Log: log})
	s.hooks = actors.NewHooks(actors.HooksOptions{Filed: filed, Snapshots: s.holder, Getenv: a.getenv, Reaper: reaper, Log: log})
	requestTool := &toolset.RequestTool{Submit: s.requests.Submit, Denials: shared.Denials, Watch: s.grants.Watch, Pending: s.requests.Pending,
		Decide: s.requests.Decide, State: s.holder.State, Log: log}
	mcpServer.AddTool(requestTool.DefinitionAndHandler())
	mcpServer.AddTool(toolset.DiscoverDefinition(), toolset.NewDiscoverHandler(s.holder.State))
	mcpServer.AddTool(toolset.StatusDefinition(), toolset.NewStatusHandler(s.holder.State))
	s.registry.Prime()
	releaseLoadGarbage()
	src.server = mcpServer
	src.upstreams = func() map[string]string {
		ctx, cancel := context.WithTimeout(context.Background(), scrapeWait)
		defer cancel()
		return s.registry.UpstreamStates(ctx)
	}
	mcpServer.AddReceivingMiddleware(callMetrics(s.metrics))
	if l.Config.Admin.Listen != "" {
		s.admin = actors.NewAdmin(actors.AdminOptions{Listen: l.Config.Admin.Listen, Log: log, Handler: func(addr net.Addr) http.Handler {
			s.ui = webui.New(webui.Options{Source: uiSource{s.holder, a.configOptions()}, Addr: addr, Log: log.With("component", "webui"),
				Metrics: s.metrics.Handler()})
			return s.ui.Handler()
		}})
	}
	return s
}

// uiSource shows the review UI the snapshot in service.
type uiSource struct {
	holder *actors.PolicyHolder
	paths  *config.Options
}

// Current is what the UI shows and acts on now.
func (u uiSource) Current() webui.State {
	snap := u.holder.Current()
	return webui.State{AdminToken: snap.AdminToken, ConfigPath: snap.Config.File, RequestLog: snap.Config.MCP.RequestLog,
		Policy: snap.Policy, Helps: snap.Helps, Paths: u.paths}
}

// run runs every actor in one group until a signal, an actor's failure or
// ctx (tests run serve in-process) ends it.
//
// The plain actors stop when their own context is cancelled. The hub and
// the actors that must outlive it (the request-log and audit writers, the hooks it
// feeds, the registry, the upstream supervisor) follow one rule: their
// context ends only when the hub's Run has returned — every call answered
// or killed — so a request made during the shutdown grace period is still
// recorded (and its hook started) and an upstream call still answered; the
// writer's interrupt only ends its waits for a file lock, so no other
// process can keep the server from stopping. The hooks then kill what they
// still run: a notification never holds the server up.
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
		// that never opened a stream; a sweep during shutdown is not needed.
		{"session sweeper", s.hub.Sessions().Run},
	}
	if s.admin != nil {
		plain = append(plain, actor{"admin UI", s.admin.Run})
	}
	if s.gc != nil {
		plain = append(plain, actor{"gc tuner", s.gc.Run})
	}
	for _, a := range plain {
		actx, cancel := context.WithCancel(context.Background())
		g.Add(func() error { return expectRunning(actx, a.name, a.run(actx)) }, func(error) { cancel() })
	}

	drain, endDrain := context.WithCancel(context.Background())
	hubCtx, stopHub := context.WithCancel(context.Background())
	g.Add(func() error {
		defer endDrain()
		return expectRunning(hubCtx, "hub", s.hub.Run(hubCtx))
	}, func(error) { stopHub() })
	for _, writer := range []struct {
		name        string
		run         func(context.Context) error
		stopWaiting func()
	}{
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
	} {
		g.Add(func() error { return expectRunning(drain, writer.name, writer.run(drain)) }, func(error) { writer.stopWaiting() })
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
	// the zero value is the README's figures, which in-process tests
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

// releaseLoadGarbage runs after each load. It returns to the system the
// memory the load used and no longer needs: a load allocates several times
// what its policy keeps (a 2.5 MB config of 5,000 rules: ~140 MB for ~45
// MB kept, most of it yaml.v3's node tree), and the Go runtime would
// otherwise hold those pages for minutes, so an idle server would show
// twice its size. Loads are rare (at most about one a second, by the
// debounce's maximum wait), and so is the forced collection this costs.
func releaseLoadGarbage() { debug.FreeOSMemory() }
