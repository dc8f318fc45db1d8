package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/peterbourgon/ff/v4"
	"github.com/peterbourgon/ff/v4/ffhelp"
	"github.com/peterbourgon/ff/v4/ffval"

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
	// versionArg is --version, which is the version command.
	versionArg bool

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

	// svc is what `service` asks of the system; zero is the real one.
	svc serviceSys
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
	stringFlag(a.flags, &a.configArg, "config", "", "PATH", "config file (else $WRAPTOOL_CONFIG, else ~/.config/wraptool/config.yaml)")
	stringFlag(a.flags, &a.levelArg, "log-level", "", "LEVEL", "debug, info, warn or error (else $WRAPTOOL_LOG_LEVEL, else mcp.log_level, else info)")
	stringFlag(a.flags, &a.formatArg, "log-format", "", "FORMAT", "text or json (else $WRAPTOOL_LOG_FORMAT, else text)")
	a.flags.BoolVar(&a.versionArg, 0, "version", "print the version (as the version command does)")
	a.root = &ff.Command{
		Name:      "wraptool",
		Usage:     "wraptool [--config PATH] [--log-level LEVEL] [--log-format text|json] COMMAND",
		ShortHelp: "run commands for AI assistants with credentials they never see",
		Flags:     a.flags,
		Exec:      a.unknownCommand,
	}
	a.root.Subcommands = []*ff.Command{
		a.serveCommand(),
		a.upCommand(),
		a.configCommand(),
		a.requestsCommand(),
		a.checkCommand(),
		a.connectCommand(),
		a.setupCommand(),
		a.serviceCommand(),
		a.versionCommand(),
		a.helpCommand(),
	}
	return a
}

// helpCommand prints the help of the command named (`wraptool help
// requests approve`), or wraptool's own.
func (a *app) helpCommand() *ff.Command {
	return &ff.Command{
		Name:      "help",
		Usage:     "wraptool help [COMMAND [SUBCOMMAND]]",
		ShortHelp: "print the help of wraptool or of a command",
		LongHelp:  "Example:\n  wraptool help requests approve",
		Flags:     ff.NewFlagSet("help").SetParent(a.flags),
		Exec: func(_ context.Context, args []string) error {
			cmd := a.root
			for _, name := range args {
				next := findCommand(cmd.Subcommands, name)
				if next == nil {
					return usageErrorf("help: unknown command %q%s", name, didYouMean(cmd.Subcommands, name))
				}
				cmd = next
			}
			// A fresh copy of the command's public fields: ffhelp shows the
			// selected subcommand's help, which for wraptool is help itself.
			shown := &ff.Command{Name: cmd.Name, Usage: cmd.Usage, ShortHelp: cmd.ShortHelp, LongHelp: cmd.LongHelp,
				Flags: cmd.Flags, Subcommands: cmd.Subcommands}
			_, err := fmt.Fprintf(a.stdout, "%s\n", ffhelp.Command(shown))
			return err
		},
	}
}

func findCommand(cmds []*ff.Command, name string) *ff.Command {
	for _, c := range cmds {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// didYouMean suggests the command closest to a mistyped name (at most two
// edits away, or a prefix), as " (did you mean \"requests\"?)"; "" when
// none is close. The name is the operator's own typing, quoted with %q so
// nothing in it reaches the terminal raw.
func didYouMean(cmds []*ff.Command, name string) string {
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.Name
	}
	return closestName(names, name)
}

// closestName is didYouMean over plain names (setup's clients, say).
func closestName(names []string, name string) string {
	best, bestDist := "", 3
	for _, n := range names {
		d := editDistance(name, n)
		if len(name) >= 2 && strings.HasPrefix(n, name) {
			d = min(d, 1)
		}
		if d < bestDist {
			best, bestDist = n, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Damerau–Levenshtein distance (adjacent swaps count
// one, so "requets" is one from "requests"), bounded to short inputs.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range rb {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// unknownCommand runs when no subcommand matched: --version, else a
// usage error naming the command that came closest.
func (a *app) unknownCommand(_ context.Context, args []string) error {
	if a.versionArg && len(args) == 0 {
		return a.printVersion()
	}
	if len(args) == 0 {
		return usageErrorf("missing command")
	}
	return usageErrorf("unknown command %q%s", args[0], didYouMean(a.root.Subcommands, args[0]))
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

// unknownCommand is the Exec of a command group (config, requests) given no
// subcommand it knows.
func unknownCommand(_ context.Context, args []string) error {
	if len(args) == 0 {
		return usageErrorf("missing command")
	}
	return usageErrorf("unknown command %q", args[0])
}

// stringFlag is FlagSet.StringVar with a placeholder that says what the
// flag takes (--for DURATION), where ff would print its type (STRING).
func stringFlag(fs *ff.FlagSet, p *string, name, def, placeholder, usage string) {
	if _, err := fs.AddFlag(ff.FlagConfig{LongName: name, Value: ffval.NewValueDefault(p, def), Placeholder: placeholder, Usage: usage}); err != nil {
		panic(err) // a duplicate name: a programming error, caught by every test
	}
}
