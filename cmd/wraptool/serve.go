package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	oklogrun "github.com/oklog/run"
	"github.com/peterbourgon/ff/v4"

	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/edit"
	"github.com/wraptool/wraptool/toolset/runner"
)

func (a *app) serveCommand() *ff.Command {
	return &ff.Command{
		Name:      "serve",
		Usage:     "wraptool serve",
		ShortHelp: "run the MCP server",
		LongHelp: "Serves the tools the config allows over MCP (legacy SSE at /sse, Streamable HTTP at\n" +
			"/mcp) and reloads the config when it changes or on SIGHUP. A missing config is\n" +
			"scaffolded from the starter, and missing token files it names are created.\n\n" +
			"Example:\n  wraptool serve",
		Flags: ff.NewFlagSet("serve").SetParent(a.flags),
		Exec:  noArgs("serve", func(ctx context.Context) error { return a.serve(ctx, nil) }),
	}
}

func (a *app) upCommand() *ff.Command {
	return &ff.Command{
		Name:      "up",
		Usage:     "wraptool up",
		ShortHelp: "first run: scaffold what is missing, print client set-up, then serve",
		LongHelp: "The first command to run: writes the starter config and the token files where they\n" +
			"are missing, prints how to connect each MCP client (as `wraptool setup` does: every form\n" +
			"reads the token from WRAPTOOL_TOKEN, none holds it) and the review UI's address, then\n" +
			"serves as serve does. On a config whose wraptool already serves, it prints the set-up,\n" +
			"says it is already serving and exits 0; an address another program holds is an error\n" +
			"naming it, the config file and mcp.listen.\n\n" +
			"Example:\n  wraptool up",
		Flags: ff.NewFlagSet("up").SetParent(a.flags),
		Exec:  noArgs("up", func(ctx context.Context) error { return a.serve(ctx, a.printClientSetup) }),
	}
}

// serve runs the server until a signal or ctx stops it. ready, when set, is
// called once the listener is bound, before serving (up prints there). It
// reads as the architecture: load, install signals and wire, listen, print,
// run.
func (a *app) serve(ctx context.Context, ready func(setupTarget) error) error {
	path, err := a.configPath()
	if err != nil {
		return err
	}
	if path, err = filepath.Abs(path); err != nil {
		return fmt.Errorf("config path: %w", err)
	}

	// Load. Introspection runs the tools' help forms, which may take a
	// while (each bounded by its timeout): a SIGINT or SIGTERM meanwhile
	// ends the load and stops the server cleanly. The handling stays until
	// wire has installed the server's own, so no signal finds neither.
	reaper := runner.NewReaper(a.log.With("component", "reaper"))
	introspector := a.newIntrospector(reaper, false)
	defer introspector.Close()
	introspection := a.introspection(introspector)
	loadCtx, stopLoad := a.signalContext(ctx)
	defer stopLoad()
	l, confinementWarning, err := a.loadAtStart(loadCtx, path, introspection)
	if loadCtx.Err() != nil && ctx.Err() == nil {
		a.log.Info("stopped", "during", "start-up")
		return nil
	}
	if err != nil {
		return err
	}

	// Install signals and wire: signal handling is in place before the
	// listener binds, so before /healthz first answers.
	s := a.wire(path, l, reaper, introspection)
	defer s.signals.Stop()
	stopLoad()

	// Listen.
	closeListeners, err := a.listen(s)
	defer closeListeners()
	if err != nil {
		return a.listenFailed(ctx, err, l.Config, path, ready)
	}

	// Print.
	if err := a.announce(s, l, path, confinementWarning, ready); err != nil {
		return err
	}

	// Run. An error is returned, not logged: main reports it once.
	err = s.run(ctx)
	if errors.Is(err, oklogrun.ErrSignal) || errors.Is(err, context.Canceled) {
		a.log.Info("stopped")
		return nil
	}
	return err
}

// loadAtStart is the start-up load: the same load a reload does, except
// that a missing config is scaffolded and missing token files are created
// first; then the config's log level, what it created, its warnings, and
// the confinement check (whose warning the client set-up repeats).
func (a *app) loadAtStart(ctx context.Context, path string, introspection config.Introspect) (*config.Loaded, string, error) {
	created, err := edit.Scaffold(path, nil)
	if err != nil {
		return nil, "", err
	}
	if created {
		a.log.Info("wrote the starter config; edit it to expose your tools", "path", path)
	}
	l, err := a.load(ctx, path, &config.LoadOptions{Paths: a.configOptions(), Tokens: config.TokensCreate, Introspect: introspection})
	if err != nil {
		return nil, "", err
	}
	a.applyConfigLevel(l.Config)
	for _, f := range l.Created {
		a.log.Info("created token file", "path", f)
	}
	for _, w := range l.Warnings {
		a.log.Warn("config warning", "where", w.String())
	}
	warnAtStart(a.log, l)
	warning, err := checkConfinement(a.log, l.Config, a.confinerFor().Support(), path)
	if err != nil {
		return nil, "", err
	}
	return l, warning, nil
}

// listen makes the process what serving needs (not dumpable, a child
// subreaper; each only warned about when it fails) and binds the MCP and
// admin listeners. The returned func closes what was bound; it is never nil.
func (a *app) listen(s *server) (closeAll func(), err error) {
	var closers []func()
	closeAll = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	if a.dumpErr != nil {
		a.log.Warn("cannot wholly close wraptool's process to other processes of this user (its memory or its environment block)", "error", a.dumpErr)
	}
	if a.ownsProcess {
		if err := runner.BecomeSubreaper(); err != nil {
			a.log.Warn("cannot become a child subreaper", "error", err)
		}
	}
	if err := s.hub.Listen(); err != nil {
		return closeAll, &mcpListenError{err}
	}
	closers = append(closers, s.hub.Close)
	if s.admin != nil {
		if err := s.admin.Listen(); err != nil {
			return closeAll, err
		}
		closers = append(closers, s.admin.Close)
	}
	return closeAll, nil
}

// announce logs where the server serves and hands ready the client set-up.
func (a *app) announce(s *server, l *config.Loaded, path, confinementWarning string, ready func(setupTarget) error) error {
	c := l.Config
	setup := setupTarget{URL: s.hub.URL(), TokenFile: c.MCP.AuthTokenFile, ConfigPath: path, Warning: confinementWarning}
	if c.MCP.Transport == "unix" {
		setup.Socket = c.MCP.Listen
	} else {
		setup.Status = "wraptool is serving MCP at " + setup.URL
	}
	if s.ui != nil {
		setup.AdminURL = s.ui.URL()
		a.log.Info("serving the review UI", "url", setup.AdminURL, "address", s.admin.Addr().String())
	}
	if ready != nil {
		if err := ready(setup); err != nil {
			return err
		}
	}
	a.log.Info("serving MCP", "transport", c.MCP.Transport, "address", s.hub.Addr().String(),
		"config", path, "exposed", len(l.Policy.Rules()))
	return nil
}

// warnAtStart logs what an operator should know about a config that loads:
// the risks that are allowed but worth a second look.
func warnAtStart(log *slog.Logger, l *config.Loaded) {
	c := l.Config
	if len(l.Policy.Rules()) > 0 && len(c.MCP.AllowedCwdRoots) == 0 {
		log.Warn("mcp.allowed_cwd_roots is empty, so a client may run tools in any directory; " +
			"a client that can write a repository's .git/config or hooks could make a wrapped git run its code with your credentials")
	}
	if c.Admin.Listen != "" {
		if host, _, err := net.SplitHostPort(c.Admin.Listen); err == nil && !config.IsLoopback(host) {
			log.Warn("admin.listen is not a loopback address: the review UI, which approves what the assistant may run, "+
				"is reachable from other hosts; bind it to 127.0.0.1", "admin.listen", c.Admin.Listen)
		}
	}
}

// printClientSetup is up's ready: the set-up of every client, as `setup`
// prints it, for the server just bound; then, when this terminal is what
// keeps the server running, how to start it at login instead.
func (a *app) printClientSetup(t setupTarget) error {
	if err := a.writeSetup(t, setupClients); err != nil {
		return err
	}
	if strings.HasPrefix(t.Status, alreadyServing) {
		return nil
	}
	_, err := fmt.Fprintln(a.stdout, "To start wraptool at login: wraptool service install")
	return err
}

// alreadyServing begins up's status when another wraptool serves the config.
const alreadyServing = "wraptool is already serving MCP at "

// mcpListenError is the MCP listener's bind failing (not the admin
// listener's): only then may a wraptool answering at mcp.listen be the
// reason.
type mcpListenError struct{ err error }

func (e *mcpListenError) Error() string { return e.err.Error() }
func (e *mcpListenError) Unwrap() error { return e.err }

// listenFailed explains a bind failure of mcp.listen. An address in use by
// a wraptool (its /healthz answers as one) is, for up (ready set), the
// server already running: up prints the set-up as setup does and
// succeeds. Anything else holding it is an error naming the address, the
// config file and mcp.listen.
func (a *app) listenFailed(ctx context.Context, err error, c *config.Config, path string, ready func(setupTarget) error) error {
	var le *mcpListenError
	if !errors.As(err, &le) || !errors.Is(err, syscall.EADDRINUSE) || c.MCP.Transport == "unix" {
		return err
	}
	url, uerr := listenURL(c.MCP.Listen)
	if uerr != nil {
		return err
	}
	if !probeWraptool(ctx, url, c.MCP.AuthTokenFile) {
		return fmt.Errorf("mcp.listen %s is held by another program (none of your wraptools answers there): stop it, or change mcp.listen in %s (%w)",
			c.MCP.Listen, path, err)
	}
	if ready == nil {
		return fmt.Errorf("a wraptool already serves mcp.listen %s: `wraptool setup` prints its client set-up; to serve a second one, change mcp.listen in %s (%w)",
			c.MCP.Listen, path, err)
	}
	t, terr := setupTargetOf(c, path)
	if terr != nil {
		return terr
	}
	t.Status = alreadyServing + url + " (config " + shellQuote(path) + "): nothing more to start."
	return ready(t)
}

// stdioCommand is the command a stdio client's entry starts: the running
// binary, unless `go run` built it in a temporary folder that is gone once
// it exits; then the wraptool `go install ./cmd/wraptool` puts in $GOBIN
// (else the first $GOPATH's bin, else ~/go/bin), with a note saying to run
// that install first.
func stdioCommand(exe string, getenv func(string) string) (command, note string) {
	if !builtByGoRun(exe, getenv) {
		return exe, ""
	}
	bin := getenv("GOBIN")
	if bin == "" {
		if gopath := filepath.SplitList(getenv("GOPATH")); len(gopath) > 0 && gopath[0] != "" {
			bin = filepath.Join(gopath[0], "bin")
		} else {
			bin = filepath.Join(getenv("HOME"), "go", "bin")
		}
	}
	return filepath.Join(bin, "wraptool"),
		"(this wraptool was built by `go run` in a temporary folder; run `go install ./cmd/wraptool` first, so the command below exists)"
}

// builtByGoRun reports whether exe is a build `go run` made: in a go-build
// folder under the temporary directory ($GOTMPDIR, else $TMPDIR, else
// /tmp), or, since Go 1.24 caches `go run` binaries, in the build cache
// ($GOCACHE, else the user cache folder's go-build), whose cleaner removes
// it. A cached binary sits at CACHE/xx/<hash>-d/NAME; that shape is
// recognised wherever the cache is, since `go env -w GOCACHE=…` sets it
// without the environment showing it.
func builtByGoRun(exe string, getenv func(string) string) bool {
	exe = filepath.Clean(exe)
	var tmp []string
	for _, v := range []string{getenv("GOTMPDIR"), getenv("TMPDIR"), os.TempDir(), "/tmp"} {
		if v != "" {
			tmp = append(tmp, filepath.Clean(v))
		}
	}
	for _, dir := range tmp {
		rel, err := filepath.Rel(dir, exe)
		if err == nil && !strings.HasPrefix(rel, "..") && strings.HasPrefix(rel, "go-build") {
			return true
		}
	}
	for _, cache := range goBuildCaches(getenv) {
		if rel, err := filepath.Rel(cache, exe); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			return true
		}
	}
	entry := filepath.Dir(exe)
	return cachedRunEntry.MatchString(filepath.Base(entry)) && cacheShard.MatchString(filepath.Base(filepath.Dir(entry)))
}

// cachedRunEntry and cacheShard are the two folders above a binary the go
// command cached for `go run`: CACHE/xx/<sha256 hex>-d/NAME.
var (
	cachedRunEntry = regexp.MustCompile(`^[0-9a-f]{64}-d$`)
	cacheShard     = regexp.MustCompile(`^[0-9a-f]{2}$`)
)

// goBuildCaches lists where the go command's build cache may be: $GOCACHE
// (unless "off"), else the user cache folder's go-build ($XDG_CACHE_HOME,
// ~/.cache, or ~/Library/Caches on macOS).
func goBuildCaches(getenv func(string) string) []string {
	if c := getenv("GOCACHE"); c != "" && c != "off" && filepath.IsAbs(c) {
		return []string{filepath.Clean(c)}
	}
	var out []string
	if x := getenv("XDG_CACHE_HOME"); x != "" && filepath.IsAbs(x) {
		out = append(out, filepath.Join(x, "go-build"))
	}
	if home := getenv("HOME"); home != "" && filepath.IsAbs(home) {
		out = append(out, filepath.Join(home, ".cache", "go-build"), filepath.Join(home, "Library", "Caches", "go-build"))
	}
	return out
}
