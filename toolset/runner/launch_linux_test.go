//go:build linux

package runner

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wraptool/wraptool/toolset/runner/launch"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// startMode is one way Run can start a child: the Linux production path
// (direct), or the launcher macOS uses, confined, as Linux tests run it.
type startMode struct {
	name string
	sb   *Sandbox
}

// startModes are the direct start and the launcher, each confined by a
// sandbox that hides one file of its own, so every case runs both.
func startModes(t *testing.T) []startMode {
	t.Helper()
	sup := requireLandlock(t)
	hidden := filepath.Join(t.TempDir(), "hidden")
	if err := os.WriteFile(hidden, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	launched := sup
	launched.Launcher = true
	direct, viaLauncher := NewSandbox(Protected{Hidden: []string{hidden}}, sup), NewSandbox(Protected{Hidden: []string{hidden}}, launched)
	t.Cleanup(direct.Close)
	t.Cleanup(viaLauncher.Close)
	return []startMode{{"direct", direct}, {"through the launcher", viaLauncher}}
}

// The child starts in the handle OpenWorkdir checked, however the path
// changes after the check, through the launcher as directly.
func TestLaunchedChildStartsInTheCheckedHandle(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// change changes the checked path dir after the check; it
		// returns the path the handle's folder has now.
		change func(t *testing.T, dir, elsewhere string) string
	}{
		{"nothing changes", func(t *testing.T, dir, _ string) string { return dir }},
		{"the folder is renamed and a new one takes its name", func(t *testing.T, dir, elsewhere string) string {
			moved := dir + "-moved"
			mustDo(t, os.Rename(dir, moved), os.Mkdir(dir, 0o700))
			return moved
		}},
		{"the path is swapped for a symlink out of the root", func(t *testing.T, dir, elsewhere string) string {
			moved := dir + "-moved"
			mustDo(t, os.Rename(dir, moved), os.Symlink(elsewhere, dir))
			return moved
		}},
	}
	for _, mode := range startModes(t) {
		for _, tc := range cases {
			t.Run(mode.name+": "+tc.name, func(t *testing.T) {
				t.Parallel()
				base, _ := filepath.EvalSymlinks(t.TempDir())
				root, elsewhere := filepath.Join(base, "root"), filepath.Join(base, "elsewhere")
				dir := filepath.Join(root, "repo")
				mustDo(t, os.MkdirAll(dir, 0o700), os.Mkdir(elsewhere, 0o700))
				f, _, err := OpenWorkdir(dir, "", []string{root})
				if err != nil {
					t.Fatal(err)
				}
				want := tc.change(t, dir, elsewhere)
				r := runReport(t, Command{Argv: []string{fakecli}, DirFile: f, Env: []string{}, Sandbox: mode.sb})
				if r.Cwd != want {
					t.Errorf("child cwd = %q, want the checked folder, now %q", r.Cwd, want)
				}
				if err := f.Close(); !errors.Is(err, os.ErrClosed) {
					t.Errorf("closing the handle after Run: %v, want os.ErrClosed (Run closes it)", err)
				}
			})
		}
	}
}

// A folder removed after the check: the launcher does what the direct
// start does.
func TestLaunchedChildInARemovedFolderActsAsDirect(t *testing.T) {
	t.Parallel()
	var got []string
	for _, mode := range startModes(t) {
		dir := filepath.Join(t.TempDir(), "gone")
		mustDo(t, os.Mkdir(dir, 0o700))
		f, _, err := OpenWorkdir(dir, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		mustDo(t, os.Remove(dir))
		res := Run(context.Background(), Command{Argv: []string{fakecli}, DirFile: f, Env: []string{}, Sandbox: mode.sb})
		var r toolsettest.Report
		json.Unmarshal([]byte(res.Stdout), &r)
		got = append(got, "exit "+strconv.Itoa(res.ExitCode)+", err "+errText(res.Err)+", cwd "+strconv.Quote(r.Cwd))
	}
	if got[0] != got[1] || !strings.HasPrefix(got[0], "exit 0,") {
		t.Errorf("direct: %s\nlauncher: %s\nwant both to run, alike", got[0], got[1])
	}
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// The program inherits no descriptor of the launcher's: not the directory
// handle, not the ruleset, not the status pipe. What it does inherit is
// what a direct start passes on (whatever the test process itself
// inherited without close-on-exec, too).
func TestLaunchedChildInheritsOnlyWhatADirectStartPasses(t *testing.T) {
	t.Parallel()
	var got [][]string
	for _, mode := range startModes(t) {
		dir := t.TempDir()
		f, _, err := OpenWorkdir(dir, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		res := Run(context.Background(), Command{Argv: []string{"/bin/ls", "-l", "/proc/self/fd/"}, DirFile: f, Env: []string{}, Sandbox: mode.sb})
		if res.Err != nil || res.ExitCode != 0 {
			t.Fatalf("%s: ls: exit %d, err %v, stderr %q", mode.name, res.ExitCode, res.Err, res.Stderr)
		}
		var fds []string
		for _, line := range strings.Split(res.Stdout, "\n") {
			before, link, ok := strings.Cut(line, " -> ")
			if !ok {
				continue
			}
			fields := strings.Fields(before)
			fds = append(fds, fields[len(fields)-1])
			if link == dir || strings.Contains(link, "landlock") {
				t.Errorf("%s: the program inherited %s", mode.name, line)
			}
		}
		got = append(got, fds)
	}
	if !slices.Equal(got[0], got[1]) {
		t.Errorf("descriptors through the launcher %q, directly %q; want the same", got[1], got[0])
	}
}

// The program gets the environment Run was given, byte for byte, through
// the launcher as directly: the launcher adds nothing and removes nothing.
func TestLaunchedChildGetsTheEnvironmentVerbatim(t *testing.T) {
	t.Parallel()
	env := []string{"PATH=/usr/bin:/bin", "EMPTY=", "EQUALS=a=b=c", "NOEQUALS", "UTF8=é\u00a0ü", "CTRL=a\tb\x01", "GODEBUG=x=1", "LONG=" + strings.Repeat("x", 64<<10)}
	want := slices.Clone(env)
	sort.Strings(want)
	for _, mode := range startModes(t) {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			r := runReport(t, Command{Argv: []string{fakecli, "a b", "", "--", "dir=4"}, Env: env, Sandbox: mode.sb})
			if !slices.Equal(r.Env, want) {
				var extra, missing []string
				for _, kv := range r.Env {
					if !slices.Contains(want, kv) {
						extra = append(extra, kv)
					}
				}
				for _, kv := range want {
					if !slices.Contains(r.Env, kv) {
						missing = append(missing, kv)
					}
				}
				t.Errorf("environment: %d entries, want %d; added %.200q, missing %.200q", len(r.Env), len(want), extra, missing)
			}
			if wantArgv := []string{fakecli, "a b", "", "--", "dir=4"}; !slices.Equal(r.Argv, wantArgv) {
				t.Errorf("argv %q, want %q", r.Argv, wantArgv)
			}
		})
	}
}

// A launcher that cannot run the program fails the start as a direct
// start does (exit -1, an error naming the cause), never as a child that
// exited.
func TestLauncherFailureFailsTheStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-exec")
	mustDo(t, os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644))
	file := filepath.Join(dir, "file")
	mustDo(t, os.WriteFile(file, nil, 0o600))
	cases := []struct {
		name  string
		cmd   func(t *testing.T) Command
		cause string
	}{
		{"the program is not executable", func(*testing.T) Command {
			return Command{Argv: []string{notExec}}
		}, "permission denied"},
		// The program check finds it missing before any start; the
		// launcher's own exec failure is TestLauncherRefusesWhatItWasNotGiven's.
		{"the program is missing", func(*testing.T) Command {
			return Command{Argv: []string{filepath.Join(dir, "missing")}}
		}, "no such file or directory"},
		{"the working directory is not a directory", func(t *testing.T) Command {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			return Command{Argv: []string{fakecli}, DirFile: f}
		}, "not a directory"},
	}
	for _, mode := range startModes(t) {
		for _, tc := range cases {
			t.Run(mode.name+": "+tc.name, func(t *testing.T) {
				t.Parallel()
				c := tc.cmd(t)
				c.Env, c.Sandbox = []string{}, mode.sb
				res := Run(context.Background(), c)
				if res.ExitCode != -1 || res.Err == nil || !strings.HasPrefix(res.Err.Error(), "failed to start: ") || !strings.Contains(res.Err.Error(), tc.cause) {
					t.Errorf("exit %d, err %v, stderr %q; want -1 and a start failure naming %q", res.ExitCode, res.Err, res.Stderr, tc.cause)
				}
				checked := strings.Contains(errText(res.Err), "refused to start")
				if viaLauncher := mode.sb.Support().Launcher && !checked; viaLauncher != strings.Contains(errText(res.Err), "launcher: ") {
					t.Errorf("err %v: want it from the launcher exactly when the start went through it (%v)", res.Err, viaLauncher)
				}
			})
		}
	}
}

// The launcher, started by hand with what its parent might have got
// wrong, reports on the status pipe and execs nothing.
func TestLauncherRefusesWhatItWasNotGiven(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	// A program that would leave a trace if the launcher ran it.
	prog := []string{"/bin/sh", "sh", "-c", "touch " + marker}
	dirFile, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dirFile.Close() }) // after the parallel subtests
	cases := []struct {
		name  string
		opts  []string
		extra []*os.File // after the status pipe
		want  string
	}{
		{"the directory descriptor is closed", []string{"dir=4"}, nil, "enter the working directory: "},
		{"the ruleset descriptor is no ruleset", []string{"landlock=4"}, []*os.File{dirFile}, "confine: landlock_restrict_self"},
		{"an unknown option", []string{"exec=/bin/sh"}, nil, "unexpected option"},
		{"a descriptor number that is not the expected one", []string{"dir=7"}, []*os.File{dirFile}, "want 4"},
		{"the program is missing", []string{"dir=4", "--", "/nonexistent/prog", "prog"}, []*os.File{dirFile}, "exec /nonexistent/prog: no such file or directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			args := append([]string{"v1", "status=3"}, tc.opts...)
			if !slices.Contains(tc.opts, "--") {
				args = append(append(args, "--"), prog...)
			}
			cmd := exec.CommandContext(ctx, self, args...)
			cmd.Args[0] = launch.Marker
			cmd.Env = []string{}
			cmd.ExtraFiles = append([]*os.File{w}, tc.extra...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			var buf strings.Builder
			b := make([]byte, 512)
			for {
				n, err := r.Read(b)
				buf.Write(b[:n])
				if err != nil {
					break
				}
			}
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != launch.ExitFailed || !strings.Contains(buf.String(), tc.want) {
				t.Errorf("launcher: %v, status %q; want exit %d and a status naming %q", err, buf.String(), launch.ExitFailed, tc.want)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the launcher ran the program")
			}
		})
	}
}

// Through the launcher the child keeps the pid and process group Run
// started: the timeout kills it and what it started.
func TestLaunchedChildIsKilledAtTheTimeout(t *testing.T) {
	t.Parallel()
	modes := startModes(t)
	timeoutKillsGrandchildren(t, modes[1].sb)
}

// The launcher without confinement (how macOS starts a child no Sandbox
// confines) enters the handle too, and runs a confining prefix command
// in front of the program when it is given one.
func TestLaunchedWithoutConfinement(t *testing.T) {
	t.Parallel()
	// Behind a confining prefix the loader's DYLD_ variables never reach
	// the launcher, which runs before the confinement does.
	dyld := "DYLD_INSERT_LIBRARIES=/tmp/planted.dylib"
	cases := []struct {
		name    string
		prefix  []string
		wantEnv []string
	}{
		{"no prefix", nil, []string{"A=1", dyld}},
		{"a prefix command", []string{"/usr/bin/env", "--"}, []string{"A=1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base, _ := filepath.EvalSymlinks(t.TempDir())
			dir := filepath.Join(base, "dir")
			mustDo(t, os.Mkdir(dir, 0o700))
			f, _, err := OpenWorkdir(dir, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			mustDo(t, os.Rename(dir, dir+"-moved"), os.Mkdir(dir, 0o700))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, fakecli, "x")
			cmd.Env, cmd.ExtraFiles = []string{"A=1", dyld}, []*os.File{f}
			var out strings.Builder
			cmd.Stdout = &out
			if err := startLaunched(cmd, -1, tc.prefix); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			var r toolsettest.Report
			if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
				t.Fatalf("fakecli output %q: %v", out.String(), err)
			}
			if r.Cwd != dir+"-moved" || !slices.Equal(r.Env, tc.wantEnv) || r.Argv[len(r.Argv)-1] != "x" {
				t.Errorf("report %+v; want cwd %s, env %q, last argument x", r, dir+"-moved", tc.wantEnv)
			}
		})
	}
}

// The parent side refuses a start it cannot pass to the launcher whole.
func TestStartLaunchedRefusesWhatItCannotPass(t *testing.T) {
	t.Parallel()
	f, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases := []struct {
		name string
		cmd  func() *exec.Cmd
		want string
	}{
		{"descriptors besides the working directory", func() *exec.Cmd {
			cmd := exec.Command(fakecli)
			cmd.ExtraFiles = []*os.File{f, f}
			return cmd
		}, "only the working directory may be inherited"},
		{"a program that is not a path", func() *exec.Cmd {
			return &exec.Cmd{Path: "fakecli", Args: []string{"fakecli"}}
		}, "is not a path"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := tc.cmd()
			err := startLaunched(cmd, -1, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || cmd.Process != nil {
				t.Errorf("startLaunched = %v, process %v; want nothing started and an error naming %q", err, cmd.Process, tc.want)
			}
		})
	}
}
