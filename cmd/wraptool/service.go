package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v4"

	"github.com/wraptool/wraptool/cmd/wraptool/service"
	"github.com/wraptool/wraptool/policy/atomicfile"
	"github.com/wraptool/wraptool/toolset/runner"
)

// serviceSys is what `service` asks of the system, replaced by in-process
// tests; each zero field is the real one.
type serviceSys struct {
	// goos picks the service manager (runtime.GOOS when "").
	goos string
	// executable is wraptool's own path (os.Executable when nil).
	executable func() (string, error)
	// uid is launchd's gui/UID domain (os.Getuid when nil).
	uid func() int
}

// serviceCommandTimeout bounds each systemctl or launchctl run: a service
// manager that hangs must not hang the command.
const serviceCommandTimeout = 30 * time.Second

func (a *app) serviceCommand() *ff.Command {
	var force bool
	installFlags := ff.NewFlagSet("install").SetParent(a.flags)
	installFlags.BoolVar(&force, 0, "force", "replace a unit or agent wraptool did not write")
	sub := func(name, short, long string, flags *ff.FlagSet, fn func(context.Context, *serviceTarget) error) *ff.Command {
		if flags == nil {
			flags = ff.NewFlagSet(name).SetParent(a.flags)
		}
		return &ff.Command{
			Name: name, Usage: "wraptool service " + name, ShortHelp: short, Flags: flags,
			LongHelp: long + "\n\nExample:\n  wraptool service " + name,
			Exec: noArgs("service "+name, func(ctx context.Context) error {
				t, err := a.serviceTarget()
				if err != nil {
					return err
				}
				return fn(ctx, t)
			}),
		}
	}
	return &ff.Command{
		Name:      "service",
		Usage:     "wraptool service install|uninstall|status",
		ShortHelp: "start serve at login (systemd user unit / launchd agent)",
		Flags:     ff.NewFlagSet("service").SetParent(a.flags),
		Exec:      unknownCommand,
		Subcommands: []*ff.Command{
			sub("install", "start `wraptool serve` with this config at login, restarted on failure",
				"Writes a systemd user unit (~/.config/systemd/user/wraptool.service) on Linux, or a launchd\n"+
					"agent (~/Library/LaunchAgents/dev.wraptool.serve.plist) on macOS, that runs this wraptool's\n"+
					"`serve` with the same --config at login and restarts it when it fails; then enables and\n"+
					"starts it. A unit or agent wraptool did not write is never replaced unless --force is given.\n"+
					"A wraptool built by `go run` is refused: run `go install ./cmd/wraptool` first.",
				installFlags, func(ctx context.Context, t *serviceTarget) error { return a.serviceInstall(ctx, t, force) }),
			sub("uninstall", "stop, disable and remove the unit or agent install wrote",
				"Stops and disables the service, then removes the file install wrote; a file wraptool did\n"+
					"not write is left alone.", nil, a.serviceUninstall),
			sub("status", "say whether the service is installed, enabled and running, and its config",
				"Prints the unit or agent file, whether wraptool wrote it, the config it serves, and what\n"+
					"the service manager says: enabled, active.", nil, a.serviceStatus),
		},
	}
}

// serviceTarget is where this system keeps the service and how it is
// driven.
type serviceTarget struct {
	launchd bool
	file    string // the unit or plist
	home    string
	uid     int
}

func (t *serviceTarget) kind() string {
	if t.launchd {
		return "launchd agent " + service.Label
	}
	return "systemd user unit " + service.Unit
}

func (a *app) serviceTarget() (*serviceTarget, error) {
	goos := a.svc.goos
	if goos == "" {
		goos = runtime.GOOS
	}
	home := a.getenv("HOME")
	if home == "" || !filepath.IsAbs(home) {
		return nil, fmt.Errorf("service: $HOME is %q, not an absolute path", home)
	}
	t := &serviceTarget{home: filepath.Clean(home), uid: os.Getuid()}
	if a.svc.uid != nil {
		t.uid = a.svc.uid()
	}
	switch goos {
	case "linux":
		dir := filepath.Join(t.home, ".config")
		if x := a.getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
			dir = filepath.Clean(x)
		}
		t.file = filepath.Join(dir, "systemd", "user", service.Unit)
	case "darwin":
		t.launchd = true
		t.file = filepath.Join(t.home, "Library", "LaunchAgents", service.Label+".plist")
	default:
		return nil, fmt.Errorf("service: no service manager wraptool knows on %s (systemd on Linux, launchd on macOS)", goos)
	}
	return t, nil
}

// serviceBinary is the wraptool the service runs: this one, unless `go
// run` built it, whose cache is cleaned under the service; then the one
// `go install` puts in place, which must exist.
func (a *app) serviceBinary() (string, error) {
	executable := a.svc.executable
	if executable == nil {
		executable = os.Executable
	}
	exe, err := executable()
	if err != nil {
		return "", fmt.Errorf("find wraptool's own path: %w", err)
	}
	command, note := stdioCommand(exe, a.getenv)
	if note != "" {
		if fi, err := os.Stat(command); err != nil || !fi.Mode().IsRegular() {
			return "", fmt.Errorf("this wraptool was built by `go run` in a folder the go command cleans, so a service cannot run it; "+
				"run `go install ./cmd/wraptool` first, then %s service install", shellQuote(command))
		}
	}
	return command, nil
}

func (a *app) serviceInstall(ctx context.Context, t *serviceTarget, force bool) error {
	cfg, err := a.configPath()
	if err != nil {
		return err
	}
	if cfg, err = filepath.Abs(cfg); err != nil {
		return fmt.Errorf("config path: %w", err)
	}
	bin, err := a.serviceBinary()
	if err != nil {
		return err
	}
	spec := service.Spec{Binary: bin, Config: cfg, Env: serviceEnv(t.home, a.getenv("PATH"))}
	render := service.SystemdUnit
	if t.launchd {
		spec.Log = filepath.Join(t.home, "Library", "Logs", "wraptool.log")
		render = service.LaunchdPlist
	}
	content, err := render(spec)
	if err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	old, existed, err := readOurs(t.file)
	if err != nil {
		return err
	}
	if existed && !service.IsOurs(old) && !force {
		return fmt.Errorf("service install: %s exists and wraptool did not write it; leaving it alone (--force replaces it)", shellQuote(t.file))
	}
	if err := os.MkdirAll(filepath.Dir(t.file), 0o755); err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	if err := atomicfile.Replace(t.file, []byte(content), 0o644); err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	fmt.Fprintf(a.stdout, "wrote %s (%s: %s --config %s serve)\n", shellQuote(t.file), t.kind(), shellQuote(bin), shellQuote(cfg))
	var steps [][]string
	if t.launchd {
		domain := "gui/" + strconv.Itoa(t.uid)
		if existed {
			// A loaded job keeps its old definition until booted out;
			// failing here only means it was not loaded.
			_, _ = a.runManager(ctx, "launchctl", "bootout", domain+"/"+service.Label)
		}
		steps = [][]string{{"launchctl", "enable", domain + "/" + service.Label}, {"launchctl", "bootstrap", domain, t.file}}
	} else {
		steps = [][]string{{"systemctl", "--user", "daemon-reload"}, {"systemctl", "--user", "enable", "--now", service.Unit}}
		if existed && !bytes.Equal(old, []byte(content)) {
			steps = append(steps, []string{"systemctl", "--user", "restart", service.Unit})
		}
	}
	for _, s := range steps {
		if out, err := a.runManager(ctx, s[0], s[1:]...); err != nil {
			return fmt.Errorf("service install: the file is written, but `%s` failed: %w%s", strings.Join(s, " "), err, outputNote(out))
		}
	}
	fmt.Fprintf(a.stdout, "wraptool now serves at login and restarts on failure; `wraptool service status` shows it\n")
	return nil
}

func (a *app) serviceUninstall(ctx context.Context, t *serviceTarget) error {
	old, existed, err := readOurs(t.file)
	if err != nil {
		return err
	}
	if !existed {
		fmt.Fprintf(a.stdout, "not installed: no %s\n", shellQuote(t.file))
		return nil
	}
	if !service.IsOurs(old) {
		return fmt.Errorf("service uninstall: %s was not written by wraptool; leaving it alone", shellQuote(t.file))
	}
	var stop []string
	if t.launchd {
		stop = []string{"launchctl", "bootout", "gui/" + strconv.Itoa(t.uid) + "/" + service.Label}
	} else {
		stop = []string{"systemctl", "--user", "disable", "--now", service.Unit}
	}
	// The file goes even when the manager cannot be reached: a manager
	// that is not running runs nothing from it.
	out, stopErr := a.runManager(ctx, stop[0], stop[1:]...)
	if err := os.Remove(t.file); err != nil {
		return fmt.Errorf("service uninstall: %w", err)
	}
	fmt.Fprintf(a.stdout, "removed %s\n", shellQuote(t.file))
	if !t.launchd {
		reload := []string{"systemctl", "--user", "daemon-reload"}
		if rout, err := a.runManager(ctx, reload[0], reload[1:]...); err != nil && stopErr == nil {
			out, stopErr, stop = rout, err, reload
		}
	}
	if stopErr != nil {
		return fmt.Errorf("service uninstall: the file is removed, but `%s` failed: %w%s", strings.Join(stop, " "), stopErr, outputNote(out))
	}
	return nil
}

func (a *app) serviceStatus(ctx context.Context, t *serviceTarget) error {
	old, existed, err := readOurs(t.file)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%s\n", t.kind())
	if !existed {
		fmt.Fprintf(a.stdout, "installed: no (no %s; `wraptool service install` writes it)\n", shellQuote(t.file))
		return nil
	}
	configOf := service.ConfigOfUnit
	if t.launchd {
		configOf = service.ConfigOfPlist
	}
	cfg, ours := configOf(old)
	if !ours {
		fmt.Fprintf(a.stdout, "installed: %s, not written by wraptool\n", shellQuote(t.file))
	} else {
		fmt.Fprintf(a.stdout, "installed: %s\nconfig: %s\n", shellQuote(t.file), shellQuote(cfg))
	}
	if t.launchd {
		out, err := a.runManager(ctx, "launchctl", "print", "gui/"+strconv.Itoa(t.uid)+"/"+service.Label)
		loaded, running := "no", "no"
		if err == nil {
			loaded = "yes"
			if bytes.Contains(out, []byte("state = running")) {
				running = "yes"
			}
		}
		fmt.Fprintf(a.stdout, "loaded: %s\nrunning: %s\n", loaded, running)
		return nil
	}
	for _, q := range []struct{ verb, label string }{{"is-enabled", "enabled"}, {"is-active", "active"}} {
		out, err := a.runManager(ctx, "systemctl", "--user", q.verb, service.Unit)
		answer := firstWord(out)
		if answer == "" {
			answer = "unknown"
			if err != nil {
				answer += " (" + err.Error() + ")"
			}
		}
		fmt.Fprintf(a.stdout, "%s: %s\n", q.label, answer)
	}
	return nil
}

// firstWord is a manager's one-word answer (enabled, active), kept only
// when it is a plain word, so its output never reaches the terminal raw.
func firstWord(out []byte) string {
	w, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r == '-') {
			return ""
		}
	}
	return w
}

// outputNote is what a failed manager said, quoted and cut short.
func outputNote(out []byte) string {
	s := strings.TrimSpace(string(out))
	if s == "" {
		return ""
	}
	if len(s) > 500 {
		s = s[:500]
	}
	return ": " + strconv.Quote(s)
}

// runManager runs systemctl or launchctl, found on $PATH's absolute
// entries only (a relative entry would run whatever the working folder
// holds), bounded by serviceCommandTimeout.
func (a *app) runManager(ctx context.Context, name string, args ...string) ([]byte, error) {
	path := ""
	for _, dir := range filepath.SplitList(a.getenv("PATH")) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			path = p
			break
		}
	}
	if path == "" {
		return nil, fmt.Errorf("%s: not found on $PATH", name)
	}
	// Through runner like every start (its own process group, bounded),
	// but unconfined: these are the operator's own service manager
	// clients, run by the operator's command and never for an assistant,
	// and they need the manager's sockets the sandbox would hide.
	res := runner.Run(ctx, runner.Command{Argv: append([]string{path}, args...), Env: os.Environ(), Timeout: serviceCommandTimeout})
	out := []byte(res.Stdout + res.Stderr)
	if res.Err != nil {
		return out, res.Err
	}
	if res.ExitCode != 0 {
		return out, fmt.Errorf("exit status %d", res.ExitCode)
	}
	return out, nil
}

// serviceEnv is the environment the service starts with: HOME, and PATH
// as the installing shell has it (absolute entries only), so serve finds
// the same tools under the service manager as it does by hand.
func serviceEnv(home, path string) []service.Var {
	env := []service.Var{{Name: "HOME", Value: home}}
	var keep []string
	seen := map[string]bool{}
	for _, dir := range filepath.SplitList(path) {
		if filepath.IsAbs(dir) && !seen[dir] && !strings.ContainsAny(dir, "\x00\n\r") {
			seen[dir] = true
			keep = append(keep, dir)
		}
	}
	if len(keep) > 0 {
		env = append(env, service.Var{Name: "PATH", Value: strings.Join(keep, string(filepath.ListSeparator))})
	}
	return env
}

// readOurs reads the unit or plist; existed is false when there is none.
// A symlink or any other non-regular file is refused: install would
// replace something it cannot have written.
func readOurs(path string) (content []byte, existed bool, err error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("service: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, true, fmt.Errorf("service: %s is not a regular file (%s); wraptool never writes one, so it leaves it alone", shellQuote(path), fi.Mode().Type())
	}
	content, err = os.ReadFile(path)
	if err != nil {
		return nil, true, fmt.Errorf("service: %w", err)
	}
	return content, true, nil
}
