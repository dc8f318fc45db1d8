package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	oklogrun "github.com/oklog/run"
	"github.com/peterbourgon/ff/v4"

	"github.com/wraptool/wraptool/actors"
	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/toolset"
)

func (a *app) serveCommand() *ff.Command {
	return &ff.Command{
		Name:      "serve",
		Usage:     "wraptool serve",
		ShortHelp: "run the MCP server",
		LongHelp: "Serves the tools the config allows over MCP (legacy SSE at /sse, Streamable HTTP at\n" +
			"/mcp) and reloads the config when it changes or on SIGHUP. A missing config is\n" +
			"scaffolded from the starter, and missing token files it names are created.",
		Flags: ff.NewFlagSet("serve").SetParent(a.flags),
		Exec:  noArgs("serve", func(ctx context.Context) error { return a.serve(ctx, nil) }),
	}
}

func (a *app) upCommand() *ff.Command {
	return &ff.Command{
		Name:      "up",
		Usage:     "wraptool up",
		ShortHelp: "first run: scaffold what is missing, print client set-up, then serve",
		Flags:     ff.NewFlagSet("up").SetParent(a.flags),
		Exec:      noArgs("up", func(ctx context.Context) error { return a.serve(ctx, a.printClientSetup) }),
	}
}

// serve runs the server until a signal or ctx stops it. ready, when set, is
// called once the listener is bound, before serving (up prints there).
func (a *app) serve(ctx context.Context, ready func(url, socket, token string) error) error {
	path, err := a.configPath()
	if err != nil {
		return err
	}
	if path, err = filepath.Abs(path); err != nil {
		return fmt.Errorf("config path: %w", err)
	}
	log := a.log
	created, err := config.Scaffold(path, nil)
	if err != nil {
		return err
	}
	if created {
		log.Info("wrote the starter config; edit it to expose your tools", "path", path)
	}

	// Read the config once: the token files it names are created, then the
	// same parse is compiled, so what binds is what was checked.
	opts := a.configOptions()
	data, c, err := actors.ReadConfig(path, opts)
	if err != nil {
		return err
	}
	for _, f := range c.TokenFiles() {
		made, err := config.EnsureToken(f)
		if err != nil {
			return err
		}
		if made {
			log.Info("created token file", "path", f)
		}
	}
	loaded, err := actors.Compile(c, data)
	if err != nil {
		return err
	}
	a.applyConfigLevel(c)
	for _, w := range c.Warnings(nil) {
		log.Warn("config warning", "where", w.String())
	}
	snap := actors.NewSnapshot(loaded, path, a.getenv)
	// One set of slots and one reaper for the server's life; every snapshot
	// carries them.
	reaper := toolset.NewReaper(log.With("component", "reaper"))
	if a.ownsProcess {
		if err := toolset.BecomeSubreaper(); err != nil {
			log.Warn("cannot become a child subreaper; processes that leave a call's process group are not reaped", "error", err)
		}
	}
	snap.Slots, snap.Reaper = toolset.NewSlots(c.MCP.MaxConcurrentCalls), reaper
	if len(snap.Policy.Rules()) > 0 && len(c.MCP.AllowedCwdRoots) == 0 {
		log.Warn("mcp.allowed_cwd_roots is empty, so a client may run tools in any directory; " +
			"a client that can write a repository's .git/config or hooks could make a wrapped git run its code with your credentials")
	}
	if c.Admin.Listen != "" {
		log.Warn("admin.listen is set, but this build has no review UI yet; read the request log instead", "admin.listen", c.Admin.Listen)
	}

	// Signal handling first: it must be in place before /healthz answers.
	reloads := make(chan messages.ReloadRequest)
	signals := actors.NewSignals(reloads, log)
	defer signals.Stop()

	var setLevel func(string)
	if !a.levelPinned {
		setLevel = func(s string) {
			if lvl, err := parseLevel(s); err == nil {
				a.level.Set(lvl)
			}
		}
	}
	var (
		fileEvents = make(chan messages.FileChanged)
		loads      = make(chan messages.ConfigLoaded)
		toolsets   = make(chan messages.ToolsetChanged)
		appends    = make(chan messages.AppendRequest)
	)
	holder := actors.NewPolicyHolder(snap, a.getenv, setLevel, loads, toolsets, log)
	server := mcp.NewServer(&mcp.Implementation{Name: "wraptool", Version: buildVersion()}, &mcp.ServerOptions{
		Logger: slog.New(quieter{log.Handler()}).With("component", "mcp"),
		Capabilities: &mcp.ServerCapabilities{
			Tools: &mcp.ToolCapabilities{ListChanged: true},
			// Deprecated from protocol 2026-07-28 on, but clients on the
			// 2025 versions still send logging/setLevel.
			Logging: &mcp.LoggingCapabilities{}, //lint:ignore SA1019 see above
		},
	})
	calls, abortCalls := context.WithCancel(context.Background())
	defer abortCalls()
	hub := actors.NewHub(server, actors.HubOptions{
		Transport:  c.MCP.Transport,
		Listen:     c.MCP.Listen,
		Token:      func() string { return holder.Current().MCPToken },
		AbortCalls: abortCalls,
	}, log)
	if err := hub.Listen(); err != nil {
		return err
	}
	defer hub.Close()
	// A listener other hosts can reach must keep its token across reloads.
	needToken := ""
	if tcp, ok := hub.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		needToken = hub.Addr().String()
	}
	watcher := actors.NewWatcher(func() []string { return holder.Current().WatchPaths() }, fileEvents, log)
	debouncer := actors.NewDebouncer(fileEvents, reloads, 0)
	loader := actors.NewLoader(path, opts, loaded.Hash, needToken, reloads, loads, log)
	writer := actors.NewRequestLog(appends, func() string { return holder.Current().Config.MCP.RequestLog },
		time.Now, hub.Done(), log)
	registry := actors.NewRegistry(server, holder.State, calls, toolsets, log)
	server.AddTool(toolset.RequestDefinition(), toolset.NewRequestHandler(writer.Submit, log))
	registry.Prime(snap.Policy)

	if ready != nil {
		socket := ""
		if c.MCP.Transport == "unix" {
			socket = c.MCP.Listen
		}
		if err := ready(hub.URL(), socket, snap.MCPToken); err != nil {
			return err
		}
	}
	log.Info("serving MCP", "transport", c.MCP.Transport, "address", hub.Addr().String(),
		"config", path, "exposed", len(snap.Policy.Rules()))

	var g oklogrun.Group
	{
		ctx, cancel := context.WithCancel(ctx)
		g.Add(func() error { return signals.Run(ctx) }, func(error) { cancel() })
	}
	{
		ctx, cancel := context.WithCancel(ctx)
		g.Add(func() error { return expectRunning(ctx, "watcher", watcher.Run(ctx)) }, func(error) { cancel() })
	}
	{
		ctx, cancel := context.WithCancel(ctx)
		g.Add(func() error { return expectRunning(ctx, "debouncer", debouncer.Run(ctx)) }, func(error) { cancel() })
	}
	{
		ctx, cancel := context.WithCancel(ctx)
		g.Add(func() error { return expectRunning(ctx, "loader", loader.Run(ctx)) }, func(error) { cancel() })
	}
	{
		ctx, cancel := context.WithCancel(ctx)
		g.Add(func() error { return expectRunning(ctx, "policy holder", holder.Run(ctx)) }, func(error) { cancel() })
	}
	{
		ctx, cancel := context.WithCancel(ctx)
		g.Add(func() error { return expectRunning(ctx, "registry", registry.Run(ctx)) }, func(error) { cancel() })
	}
	{
		// Keeps serving after its interrupt until the hub is done, so
		// requests made during the shutdown grace period are recorded.
		ctx, cancel := context.WithCancel(ctx)
		g.Add(func() error { return expectRunning(ctx, "request log", writer.Run(ctx)) }, func(error) { cancel() })
	}
	{
		ctx, cancel := context.WithCancel(ctx)
		g.Add(func() error { return expectRunning(ctx, "hub", hub.Run(ctx)) }, func(error) { cancel() })
	}
	{
		ctx, cancel := context.WithCancel(ctx)
		g.Add(func() error { return expectRunning(ctx, "reaper", reaper.Run(ctx)) }, func(error) { cancel() })
	}
	{
		// Stop when the caller's context ends (tests run serve in-process).
		ctx, cancel := context.WithCancel(ctx)
		g.Add(func() error { <-ctx.Done(); return ctx.Err() }, func(error) { cancel() })
	}
	err = g.Run()
	if errors.Is(err, oklogrun.ErrSignal) || errors.Is(err, context.Canceled) {
		log.Info("stopped")
		return nil
	}
	log.Error("stopped on an error", "error", err)
	return err
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

// printClientSetup prints ready-to-paste client configuration for the
// running server.
func (a *app) printClientSetup(url, socket, token string) error {
	w := a.stdout
	if socket != "" {
		_, err := fmt.Fprintf(w, "wraptool is serving MCP on the unix socket %s (mode 0600).\n"+
			"Point a client that speaks MCP over HTTP on a unix socket at http://localhost/mcp or /sse there.\n", socket)
		return err
	}
	header := ""
	if token != "" {
		header = " --header \"Authorization: Bearer " + token + "\""
	}
	fmt.Fprintf(w, "wraptool is serving MCP at %s\n\n", url)
	if token != "" {
		fmt.Fprintf(w, "The lines below contain your MCP token: keep them private.\n\n")
	}
	fmt.Fprintf(w, "Claude Code (Streamable HTTP):\n  claude mcp add --transport http wraptool %s/mcp%s\n", url, header)
	fmt.Fprintf(w, "Claude Code (legacy SSE):\n  claude mcp add --transport sse wraptool %s/sse%s\n\n", url, header)
	for _, v := range []struct{ title, kind, path string }{
		{".mcp.json, Cursor, VS Code (Streamable HTTP):", "http", "/mcp"},
		{"Clients that only speak legacy SSE:", "sse", "/sse"},
	} {
		entry := map[string]any{"type": v.kind, "url": url + v.path}
		if token != "" {
			entry["headers"] = map[string]string{"Authorization": "Bearer " + token}
		}
		if err := printJSON(w, v.title, map[string]any{"mcpServers": map[string]any{"wraptool": entry}}); err != nil {
			return err
		}
	}
	return nil
}

func printJSON(w io.Writer, title string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n%s\n\n", title, data)
	return err
}

// quieter demotes a library's Info records to Debug: the MCP SDK reports
// every session connect and disconnect at Info, which would drown the
// server's own log lines.
type quieter struct{ slog.Handler }

func (q quieter) Enabled(ctx context.Context, l slog.Level) bool {
	if l == slog.LevelInfo {
		l = slog.LevelDebug
	}
	return q.Handler.Enabled(ctx, l)
}

func (q quieter) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo {
		r.Level = slog.LevelDebug
	}
	return q.Handler.Handle(ctx, r)
}

func (q quieter) WithAttrs(as []slog.Attr) slog.Handler { return quieter{q.Handler.WithAttrs(as)} }
func (q quieter) WithGroup(n string) slog.Handler       { return quieter{q.Handler.WithGroup(n)} }
