package actors

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/semaphore"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/toolset/runner"
)

// HookTimeout bounds one run of the operator's hook: a notification that
// takes longer is stuck, and its process group is killed.
const HookTimeout = 10 * time.Second

// MaxHooks is how many hooks run at once. A burst of requests must not
// become a burst of processes; the rest queue in the RequestFiled channel.
const MaxHooks = 4

// hookOutputCap bounds each of a hook's streams: only an excerpt of stderr
// is ever logged, and stdout is not read at all.
const hookOutputCap = 16 << 10

// hookStderrExcerpt is how many bytes of a failed hook's stderr the log
// line shows, so a hook cannot flood the server's log.
const hookStderrExcerpt = 512

// hookDesktopEnv are the server's variables a hook gets beyond the tools'
// minimal environment, so a desktop notification (notify-send, D-Bus)
// reaches the operator's session.
var hookDesktopEnv = []string{"DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"}

// hookPlaceholders are the arguments replaced in mcp.on_request: only an
// argument that is exactly one of them, so no text the assistant wrote is
// ever spliced into something the operator wrote. Both have token syntax.
// The assistant's words (the summary) are never an argument: a program that
// runs its arguments as a command (sh -c, make -E, setpriv sh -c) would run
// them, and no list of such programs is complete. They reach the hook in
// its environment (WRAPTOOL_SUMMARY) and on its stdin.
//
// {tool} is the tool's key only when the config has that tool; for a
// request naming any other tool it is an empty argument. The assistant
// picks the name, and a token can still name a program (`sh`, `perl`): a
// hook that hands {tool} to something that runs it (`env {tool}`, `sh -c
// {tool}`) would start it, reading the request's line on stdin as its
// script. The config's own tool names are the operator's words.
var hookPlaceholders = map[string]func(r requests.Record, known func(string) bool) string{
	"{id}": func(r requests.Record, _ func(string) bool) string { return r.ID },
	"{tool}": func(r requests.Record, known func(string) bool) string {
		if known(r.Tool) {
			return r.Tool
		}
		return ""
	},
}

// Hooks runs the operator's hook (mcp.on_request) for every new capability
// request, so a request reaches the operator without anyone watching the
// log. It reads the hook from the snapshot in service as each request is
// taken, so a reload that adds, changes or removes the hook applies to the
// next one.
//
// A hook runs detached from the request tool, which never waits for it (the
// request-log writer drops what the channel has no room for): at most
// MaxHooks at once, each bounded by HookTimeout, without a shell, with the
// request's JSON line on stdin. Its failure is logged, never shown to the
// assistant. When Run's context ends it takes no more requests, kills the
// hooks still running and returns once each has been reaped.
type Hooks struct {
	in        <-chan messages.RequestFiled
	snapshots Snapshots
	getenv    func(string) string
	reaper    *runner.Reaper
	timeout   time.Duration
	log       *slog.Logger
}

// HooksOptions configure Hooks.
type HooksOptions struct {
	// Filed carries the new requests from the request-log writer.
	Filed <-chan messages.RequestFiled
	// Snapshots gives mcp.on_request and the config's folder, read for
	// every request.
	Snapshots Snapshots
	// Getenv reads the server's environment (PATH, HOME and the desktop
	// variables a hook is given); nil means os.Getenv.
	Getenv func(string) string
	// Reaper tracks each hook while it runs, so a sweep never takes it for
	// a stray, and sweeps what a hook left behind; nil means none.
	Reaper *runner.Reaper
	// Timeout bounds each run; zero means HookTimeout. Tests shorten it.
	Timeout time.Duration
	// Log receives each run's outcome; nil discards it.
	Log *slog.Logger
}

// NewHooks runs the hook for the requests o.Filed carries.
func NewHooks(o HooksOptions) *Hooks {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Timeout <= 0 {
		o.Timeout = HookTimeout
	}
	return &Hooks{in: o.Filed, snapshots: o.Snapshots, getenv: o.Getenv, reaper: o.Reaper, timeout: o.Timeout,
		log: logger(o.Log, "hooks")}
}

// Run starts a hook for each request until ctx is done, then kills the
// hooks still running and waits for them.
func (h *Hooks) Run(ctx context.Context) error {
	var running sync.WaitGroup
	defer running.Wait()
	// slots holds one unit per running hook: with none free the loop
	// waits, leaving the requests queued in h.in rather than in goroutines.
	// Acquire fails on an ended context even when a slot is free.
	slots := semaphore.NewWeighted(MaxHooks)
	for {
		var m messages.RequestFiled
		select {
		case <-ctx.Done():
			return nil
		case m = <-h.in:
		}
		if slots.Acquire(ctx, 1) != nil {
			return nil
		}
		// Read after the wait for a slot: a queued request gets the hook
		// in force when it starts, not the one of when it was filed.
		c, ok := h.command(m)
		if !ok {
			slots.Release(1)
			continue
		}
		running.Go(func() {
			defer slots.Release(1)
			h.run(ctx, c, m.Record.ID)
		})
	}
}

// hookRun is one hook, ready to start.
type hookRun struct {
	runner.Command
	// configured is the hook as the config writes it, for the log: the
	// operator's words, not the assistant's.
	configured []string
	// err is why the hook cannot start (its command is not found); the
	// run logs it as a failure.
	err error
}

// command builds m's hook from the snapshot in service; false when the
// config names none.
func (h *Hooks) command(m messages.RequestFiled) (hookRun, bool) {
	snap := h.snapshots.Current()
	configured := snap.Config.MCP.OnRequest
	if len(configured) == 0 {
		return hookRun{}, false
	}
	c := hookRun{configured: slices.Clone(configured)}
	dir := hookDir(snap.Config.Dir, snap.Config.File)
	argv := hookArgv(configured, m.Record, func(tool string) bool { _, ok := snap.Config.Tools[tool]; return ok })
	// As for an upstream server: a bare name is looked up in the PATH the
	// hook itself gets, then that PATH starts with the binary's folder.
	path, err := runner.LookPath(hookBinary(argv[0], dir), hookEnv("", h.getenv, m.Record))
	if err != nil {
		c.err = err
		return c, true
	}
	argv[0] = path
	// The program itself is checked as every start is (runner); a script
	// it is given decides what runs as much, so it is checked here, from
	// the folder the hook runs in.
	if i, err := runner.CheckScripts(argv[1:], dir); err != nil {
		c.err = fmt.Errorf("refused to start: its argument %s: %w", argv[i+1], err)
		return c, true
	}
	c.Command = runner.Command{
		Argv:      argv,
		Dir:       dir,
		Env:       hookEnv(path, h.getenv, m.Record),
		Stdin:     m.Line,
		Timeout:   h.timeout,
		OutputCap: hookOutputCap,
		Reaper:    h.reaper,
		Sandbox:   snap.Sandbox,
	}
	return c, true
}

// run runs one hook and logs how it ended.
func (h *Hooks) run(ctx context.Context, c hookRun, id string) {
	cmdText := requests.Command(c.configured)
	if c.err != nil {
		h.log.Warn("on_request hook failed", "id", id, "command", cmdText, "error", c.err.Error())
		return
	}
	defer h.reaper.Sweep() // whatever the hook left outside its group
	res := runner.Run(ctx, c.Command)
	failed := func(attrs ...any) {
		attrs = append([]any{"id", id, "command", cmdText}, attrs...)
		if res.Stderr != "" {
			attrs = append(attrs, "stderr", stderrExcerpt(res.Stderr))
		}
		h.log.Warn("on_request hook failed", attrs...)
	}
	switch {
	case res.TimedOut:
		failed("error", fmt.Sprintf("killed after %s", h.timeout))
	case res.Err != nil && ctx.Err() != nil:
		h.log.Info("on_request hook stopped: the server is shutting down", "id", id, "command", cmdText)
	case res.Err != nil:
		failed("error", res.Err.Error())
	case res.ExitCode != 0:
		failed("exit_code", res.ExitCode)
	default:
		h.log.Debug("on_request hook ran", "id", id, "command", cmdText, "duration", res.Duration.Round(time.Millisecond))
	}
}

// hookArgv replaces each argument of configured that is exactly a
// placeholder with r's value; known says which tools the config has. A placeholder inside a longer argument stays
// as written: splicing the assistant's text into the operator's would let it
// shape an argument (a URL, a --flag=value) the operator wrote. The command
// itself (argv[0]) is never replaced: which program runs is the operator's
// choice alone.
func hookArgv(configured []string, r requests.Record, known func(tool string) bool) []string {
	argv := make([]string, len(configured))
	for i, a := range configured {
		if value, ok := hookPlaceholders[a]; ok && i > 0 {
			argv[i] = value(r, known)
			continue
		}
		argv[i] = a
	}
	return argv
}

// hookEnv is a hook's whole environment: the tools' minimal one for the
// hook's binary, the server's desktop variables that are set,
// WRAPTOOL_REQUEST_ID and WRAPTOOL_SUMMARY (requests.Summary: escaped, one
// line, the rationale cut, never the flags), which a shell hook may quote
// ("$WRAPTOOL_SUMMARY") without running it. Nothing else of the server's
// environment (its tokens, its secrets) reaches the hook.
func hookEnv(binary string, getenv func(string) string, r requests.Record) []string {
	extra := map[string]string{"WRAPTOOL_REQUEST_ID": r.ID, "WRAPTOOL_SUMMARY": requests.Summary(r)}
	for _, k := range hookDesktopEnv {
		if v := getenv(k); v != "" {
			extra[k] = v
		}
	}
	return runner.Environ(binary, getenv, nil, extra)
}

// hookDir is where a hook runs: the config's folder, which exists (the
// config was read from it) and belongs to the operator. Neither the server's
// own working directory (wherever it was started) nor a folder a client
// chose has any meaning for a notification.
func hookDir(dir, file string) string {
	if dir != "" {
		return dir
	}
	return filepath.Dir(file)
}

// hookBinary is the hook's command as it will be started: a relative path
// with a slash ("./notify") names a file in the config's folder, like every
// other relative path in the config; a bare name is looked up in the hook's
// PATH when it runs (LookPath), and an absolute path stays as it is.
func hookBinary(cmd, dir string) string {
	if strings.Contains(cmd, "/") && !filepath.IsAbs(cmd) {
		return filepath.Join(dir, cmd)
	}
	return cmd
}

// stderrExcerpt is the start of a failed hook's stderr for one log line:
// at most hookStderrExcerpt bytes, whitespace collapsed and control
// characters escaped, so the hook can neither flood the log nor forge a
// line in it.
func stderrExcerpt(s string) string {
	cut := len(s) > hookStderrExcerpt
	if cut {
		s = s[:hookStderrExcerpt]
		// Drop a character the cut split in two.
		for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
			if utf8.RuneStart(s[i]) {
				if !utf8.FullRuneInString(s[i:]) {
					s = s[:i]
				}
				break
			}
		}
	}
	out := requests.Text(s)
	if cut {
		out += "…"
	}
	return out
}
