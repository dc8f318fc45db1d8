package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/peterbourgon/ff/v4"
	"github.com/peterbourgon/ff/v4/ffhelp"

	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/toolset/runner"
)

// app holds what every command shares: stdio, the environment, the global
// flags and, once they are parsed, the logger.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string

	flags     *ff.FlagSet
	root      *ff.Command
	configArg string
	levelArg  string
	formatArg string

	// level is the live log level; levelPinned is true when --log-level or
	// WRAPTOOL_LOG_LEVEL set it, so mcp.log_level must not override it.
	level       *slog.LevelVar
	levelPinned bool
	log         *slog.Logger

	// hooks are the process-wide parts of serve (signals, the load path),
	// replaced by in-process tests.
	hooks

	// ownsProcess is true when the app is the whole process (main), not a
	// test running serve in-process: only then may serve make the process a
	// child subreaper, whose sweeps kill children no call owns (in a test
	// binary they would be other tests' children).
	ownsProcess bool
	// dumpErr is why the process could not be made non-dumpable, for
	// serve to log; nil when it was (or in tests).
	dumpErr error

	// confiner hands out the sandboxes every started process runs in,
	// made on first use (confinerFor).
	confiner *runner.Confiner
}

// exec runs the wraptool command line args. It is main without the process:
// stdio and the environment come in as arguments so tests run it in-process.
func exec(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	a := newApp(getenv, stdout, stderr)
	a.stdin = stdin
	return a.exec(ctx, args)
}

// execProcess is exec for main: the app owns the process, so serve also
// reaps what calls leave behind: every process a call started is gone when it ends.
// dumpErr is why main could not make the process non-dumpable (nil when
// it did); serve logs it.
func execProcess(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer, dumpErr error) error {
	a := newApp(getenv, stdout, stderr)
	a.stdin = stdin
	a.ownsProcess = true
	a.dumpErr = dumpErr
	return a.exec(ctx, args)
}

// exec parses args and runs the command they name.
func (a *app) exec(ctx context.Context, args []string) error {
	if err := a.root.Parse(args); err != nil {
		if errors.Is(err, ff.ErrHelp) {
			fmt.Fprintf(a.stdout, "%s\n", ffhelp.Command(a.root))
			return err
		}
		return &usageError{err: err, help: ffhelp.Command(a.root).String()}
	}
	if err := a.setup(); err != nil {
		return err
	}
	err := a.root.Run(ctx)
	var ue *usageError
	if errors.As(err, &ue) && ue.help == "" {
		ue.help = ffhelp.Command(a.root).String()
	}
	return err
}

// newApp builds the command tree and its global flags; nothing is parsed or
// run yet.
func newApp(getenv func(string) string, stdout, stderr io.Writer) *app {
	a := &app{stdout: stdout, stderr: stderr, getenv: getenv, level: new(slog.LevelVar), hooks: defaultHooks()}
	a.flags = ff.NewFlagSet("wraptool")
	a.flags.StringVar(&a.configArg, 0, "config", "", "config file (else $WRAPTOOL_CONFIG, else ~/.config/wraptool/config.yaml)")
	a.flags.StringVar(&a.levelArg, 0, "log-level", "", "debug, info, warn or error (else $WRAPTOOL_LOG_LEVEL, else mcp.log_level, else info)")
	a.flags.StringVar(&a.formatArg, 0, "log-format", "", "text or json (else $WRAPTOOL_LOG_FORMAT, else text)")
	a.root = &ff.Command{
		Name:      "wraptool",
		Usage:     "wraptool [--config PATH] [--log-level LEVEL] [--log-format text|json] COMMAND",
		ShortHelp: "run commands for AI assistants with credentials they never see",
		Flags:     a.flags,
		Exec:      unknownCommand,
	}
	a.root.Subcommands = []*ff.Command{
		a.serveCommand(),
		a.upCommand(),
		a.configCommand(),
		a.requestsCommand(),
		a.checkCommand(),
		a.connectCommand(),
		a.versionCommand(),
	}
	return a
}

func unknownCommand(_ context.Context, args []string) error {
	if len(args) == 0 {
		return usageErrorf("missing command")
	}
	return usageErrorf("unknown command %q", args[0])
}

// setup fills the global flags not given on the command line from their
// WRAPTOOL_* variables and builds the logger. Only these three flags are read
// from the environment: a subcommand flag such as --apply must always be
// typed by the operator.
func (a *app) setup() error {
	fromEnv := func(name, env string, v *string) (source string) {
		if *v != "" {
			return "--" + name
		}
		*v = a.getenv(env)
		return env
	}
	fromEnv("config", "WRAPTOOL_CONFIG", &a.configArg)
	levelSource := fromEnv("log-level", "WRAPTOOL_LOG_LEVEL", &a.levelArg)
	formatSource := fromEnv("log-format", "WRAPTOOL_LOG_FORMAT", &a.formatArg)

	if a.levelArg != "" {
		lvl, err := parseLevel(a.levelArg)
		if err != nil {
			return usageErrorf("%s: %v", levelSource, err)
		}
		a.level.Set(lvl)
		a.levelPinned = true
	}
	opts := &slog.HandlerOptions{Level: a.level}
	switch a.formatArg {
	case "", "text":
		a.log = slog.New(slog.NewTextHandler(a.stderr, opts))
	case "json":
		a.log = slog.New(slog.NewJSONHandler(a.stderr, opts))
	default:
		return usageErrorf("%s: unknown log format %q (want text or json)", formatSource, a.formatArg)
	}
	return nil
}

// configPath resolves the config file: --config, else $WRAPTOOL_CONFIG,
// else the platform default.
func (a *app) configPath() (string, error) {
	if a.configArg != "" {
		return a.configArg, nil
	}
	p, err := config.DefaultPath(a.configOptions())
	if err != nil {
		return "", fmt.Errorf("find config: %w (use --config)", err)
	}
	return p, nil
}

// loadConfig loads the config as the server does, without creating token
// files (validate touches nothing), and applies
// mcp.log_level unless the level was pinned on the command line or in the
// environment.
func (a *app) loadConfig(ctx context.Context, path string) (*config.Loaded, error) {
	// The introspection cache (and overrides) type flags as the server
	// would; cache-only, so validate never runs a tool.
	l, err := config.LoadFile(ctx, path, &config.LoadOptions{Paths: a.configOptions(), Tokens: config.TokensOptional,
		Introspect: a.introspection(a.newIntrospector(nil, true))})
	if err != nil {
		return nil, err
	}
	a.applyConfigLevel(l.Config)
	return l, nil
}

// applyConfigLevel sets the log level from mcp.log_level unless a flag or
// WRAPTOOL_LOG_LEVEL pinned it.
func (a *app) applyConfigLevel(c *config.Config) {
	if a.levelPinned {
		return
	}
	if lvl, err := parseLevel(c.MCP.LogLevel); err == nil {
		a.level.Set(lvl)
	}
}

func (a *app) configOptions() *config.Options {
	return &config.Options{Getenv: a.getenv}
}

func parseLevel(s string) (slog.Level, error) {
	switch s {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unknown log level %q (want debug, info, warn or error)", s)
}
