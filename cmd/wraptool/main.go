// Command wraptool is a local MCP server that lets AI assistants run exactly
// the commands an operator's policy allows, with credentials the assistant
// never sees. README.md and docs/ describe the command tree.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/peterbourgon/ff/v4"

	"github.com/wraptool/wraptool/toolset/runner"
	"github.com/wraptool/wraptool/toolset/runner/launch"
)

// init keeps the main goroutine on the main thread: the confined starts
// restrict the thread they fork from and let the Go runtime end it, which
// it does for every thread but the main one (toolset/runner says more).
func init() { runtime.LockOSThread() }

func main() {
	// Started as the launcher (a child on its way to the program it
	// runs), wraptool is nothing else: it enters the directory, carries
	// the confinement and execs, and this never returns.
	launch.Main()
	// Before anything else: no other process of this user, a tool
	// wraptool starts included, may read this one's memory, environment
	// or open files (ssh-agent does the same). A failure is reported by
	// serve, which alone holds credentials for long.
	dumpErr := runner.NotDumpable()
	if dumpErr == nil {
		dumpErr = runner.ScrubEnviron()
	}
	// serve installs its own signal handling (SIGHUP reloads, SIGINT and
	// SIGTERM stop gracefully); other commands keep the default.
	err := execProcess(context.Background(), os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr, dumpErr)
	os.Exit(exitCode(err, os.Stderr))
}

// Exit statuses, as docs/operations.md (Command line) lists them.
const (
	exitOK      = 0
	exitFailure = 1 // a runtime failure or an invalid config
	exitUsage   = 2 // the command line itself is wrong
	exitDenied  = 3 // check: a denied command line, or a tests file with a mismatch
)

// exitCode reports err on stderr and picks the exit status. Help asked for
// with -h is a success; its text was already printed.
func exitCode(err error, stderr io.Writer) int {
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, ff.ErrHelp):
		return exitOK
	case errors.Is(err, errDenied):
		return exitDenied // the verdict is already on stdout
	case errors.Is(err, errMismatch):
		return exitFailure // the mismatches are already on stdout
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "wraptool: %v\n", ue.err)
		if ue.help != "" {
			fmt.Fprintf(stderr, "\n%s\n", ue.help)
		}
		return exitUsage
	default:
		fmt.Fprintln(stderr, err)
		return exitFailure
	}
}

// usageError marks a mistake on the command line (exit status 2); help is
// the text of the command that was being parsed, printed after the message.
type usageError struct {
	err  error
	help string
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// noArgs adapts fn to a command that takes no positional arguments; any
// given is a usage error naming the command.
func noArgs(name string, fn func(context.Context) error) func(context.Context, []string) error {
	return func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return usageErrorf("%s takes no arguments", name)
		}
		return fn(ctx)
	}
}
