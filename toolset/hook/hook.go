// Package hook builds the operator's hook (mcp.on_request) for one new
// capability request: its argv with the placeholders replaced, the folder
// it runs in and its minimal environment, plus the excerpt of its stderr a
// log line may show. It starts nothing and keeps nothing between requests,
// so its functions are safe for concurrent use; the process itself is
// started, bounded and killed by whoever runs the result (runner.Run).
//
// Every choice here is made against the assistant, which writes the
// request: its words (the summary, the rationale) reach the hook only in
// the environment and on stdin, never as an argument, and never spliced
// into the operator's own text.
package hook

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/toolset/runner"
)

// OutputCap bounds each of a hook's streams: only an excerpt of stderr
// is ever logged, and stdout is not read at all.
const OutputCap = 16 << 10

// stderrExcerptLen is how many bytes of a failed hook's stderr the log
// line shows, so a hook cannot flood the server's log.
const stderrExcerptLen = 512

// desktopEnv are the server's variables a hook gets beyond the tools'
// minimal environment, so a desktop notification (notify-send, D-Bus)
// reaches the operator's session.
var desktopEnv = []string{"DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"}

// placeholders are the arguments replaced in mcp.on_request: only an
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
var placeholders = map[string]func(r requests.Record, known func(string) bool) string{
	"{id}": func(r requests.Record, _ func(string) bool) string { return r.ID },
	"{tool}": func(r requests.Record, known func(string) bool) string {
		if known(r.Tool) {
			return r.Tool
		}
		return ""
	},
}

// Run is one hook, ready to start: its Command lacks only what the runner
// of hooks decides (Timeout, Reaper, Sandbox).
type Run struct {
	runner.Command
	// Configured is the hook as the config writes it, for the log: the
	// operator's words, not the assistant's.
	Configured []string
	// Err is why the hook cannot start (its command is not found, or a
	// script it is given is refused); the run is then logged as a failure.
	Err error
}

// New builds the hook c names for r, whose request-log line (line) is the
// hook's stdin; getenv reads the server's environment. False when c names
// no hook.
func New(c *config.Config, r requests.Record, line []byte, getenv func(string) string) (Run, bool) {
	configured := c.MCP.OnRequest
	if len(configured) == 0 {
		return Run{}, false
	}
	run := Run{Configured: slices.Clone(configured)}
	dir := Dir(c.Dir, c.File)
	argv := Argv(configured, r, func(tool string) bool { _, ok := c.Tools[tool]; return ok })
	// As for an upstream server: a bare name is looked up in the PATH the
	// hook itself gets, then that PATH starts with the binary's folder.
	path, err := runner.LookPath(Binary(argv[0], dir), Env("", getenv, r))
	if err != nil {
		run.Err = err
		return run, true
	}
	argv[0] = path
	// The program itself is checked as every start is (runner); a script
	// it is given decides what runs as much, so it is checked here, from
	// the folder the hook runs in.
	if i, err := runner.CheckScripts(argv[1:], dir); err != nil {
		run.Err = fmt.Errorf("refused to start: its argument %s: %w", argv[i+1], err)
		return run, true
	}
	run.Command = runner.Command{
		Argv:      argv,
		Dir:       dir,
		Env:       Env(path, getenv, r),
		Stdin:     line,
		OutputCap: OutputCap,
	}
	return run, true
}

// Argv replaces each argument of configured that is exactly a placeholder
// with r's value; known says which tools the config has. A placeholder
// inside a longer argument stays as written: splicing the assistant's text
// into the operator's would let it shape an argument (a URL, a
// --flag=value) the operator wrote. The command itself (argv[0]) is never
// replaced: which program runs is the operator's choice alone.
func Argv(configured []string, r requests.Record, known func(tool string) bool) []string {
	argv := make([]string, len(configured))
	for i, a := range configured {
		if value, ok := placeholders[a]; ok && i > 0 {
			argv[i] = value(r, known)
			continue
		}
		argv[i] = a
	}
	return argv
}

// Env is a hook's whole environment: the tools' minimal one for the
// hook's binary, the server's desktop variables that are set,
// WRAPTOOL_REQUEST_ID and WRAPTOOL_SUMMARY (requests.Summary: escaped, one
// line, the rationale cut, never the flags), which a shell hook may quote
// ("$WRAPTOOL_SUMMARY") without running it. Nothing else of the server's
// environment (its tokens, its secrets) reaches the hook.
func Env(binary string, getenv func(string) string, r requests.Record) []string {
	extra := map[string]string{"WRAPTOOL_REQUEST_ID": r.ID, "WRAPTOOL_SUMMARY": requests.Summary(r)}
	for _, k := range desktopEnv {
		if v := getenv(k); v != "" {
			extra[k] = v
		}
	}
	return runner.Environ(binary, getenv, nil, extra)
}

// Dir is where a hook runs: the config's folder, which exists (the config
// was read from it) and belongs to the operator. Neither the server's own
// working directory (wherever it was started) nor a folder a client chose
// has any meaning for a notification.
func Dir(dir, file string) string {
	if dir != "" {
		return dir
	}
	return filepath.Dir(file)
}

// Binary is the hook's command as it will be started: a relative path
// with a slash ("./notify") names a file in the config's folder, like every
// other relative path in the config; a bare name is looked up in the hook's
// PATH when it runs (LookPath), and an absolute path stays as it is.
func Binary(cmd, dir string) string {
	if strings.Contains(cmd, "/") && !filepath.IsAbs(cmd) {
		return filepath.Join(dir, cmd)
	}
	return cmd
}

// StderrExcerpt is the start of a failed hook's stderr for one log line:
// at most 512 bytes, whitespace collapsed and control characters escaped,
// so the hook can neither flood the log nor forge a line in it.
func StderrExcerpt(s string) string {
	cut := len(s) > stderrExcerptLen
	if cut {
		s = s[:stderrExcerptLen]
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
