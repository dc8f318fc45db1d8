package runner

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nobody is the uid the tests hand folders to when they run as root.
const nobody = 65534

// The program check walks every folder a program's path goes through, up to
// "/", along the path as given and along every symlink's target. Each refusal
// here passed before the check existed (only the file and its own folder
// were looked at, and not at every start).
func TestCheckProgram(t *testing.T) {
	t.Parallel()
	root := os.Geteuid() == 0
	cases := []struct {
		name string
		// setup builds the layout under dir (0700, private) and returns
		// the program's path and the uid the check runs for.
		setup    func(t *testing.T, dir string) (string, int)
		needRoot bool
		// want is a fragment of the refusal ("" accepts); $D is dir.
		want string
		// notUntrusted: an error that is not a refusal (a path that
		// cannot be walked).
		notUntrusted bool
	}{
		{
			name: "a private program in private folders under the sticky /tmp is run",
			setup: func(t *testing.T, dir string) (string, int) {
				return program(t, dir, "a/b/tool", 0o700), os.Geteuid()
			},
		},
		{
			name: "a system program through the /bin symlink is run",
			setup: func(t *testing.T, dir string) (string, int) {
				return "/bin/sh", os.Geteuid()
			},
		},
		{
			name: "a world-writable folder two levels up is refused",
			setup: func(t *testing.T, dir string) (string, int) {
				p := program(t, dir, "open/sub/tool", 0o700)
				chmod(t, filepath.Join(dir, "open"), 0o777)
				return p, os.Geteuid()
			},
			want: "is under $D/open, which group or others may write, so they could put another program in its place; fix with: chmod go-w $D/open",
		},
		{
			name: "a group-writable folder holding the program is refused",
			setup: func(t *testing.T, dir string) (string, int) {
				p := program(t, dir, "grp/tool", 0o700)
				chmod(t, filepath.Join(dir, "grp"), 0o770)
				return p, os.Geteuid()
			},
			want: "fix with: chmod go-w $D/grp",
		},
		{
			name: "a program others may write is refused",
			setup: func(t *testing.T, dir string) (string, int) {
				return program(t, dir, "bin/tool", 0o757), os.Geteuid()
			},
			want: "$D/bin/tool is writable by group or others, and it decides what runs; fix with: chmod go-w $D/bin/tool",
		},
		{
			name: "a sticky world-writable folder root owns counts as safe",
			setup: func(t *testing.T, dir string) (string, int) {
				p := program(t, dir, "shared/mine/tool", 0o700)
				chmod(t, filepath.Join(dir, "shared"), 0o777|fs.ModeSticky)
				return p, os.Geteuid()
			},
			needRoot: true, // the folder must be root's
		},
		{
			name: "a sticky world-writable folder another user owns is refused",
			setup: func(t *testing.T, dir string) (string, int) {
				p := program(t, dir, "shared/mine/tool", 0o700)
				self := os.Geteuid()
				if root {
					// Checked for nobody, whose folder it is: its owner
					// is fine, its sticky bit is not enough.
					self = nobody
					chown(t, filepath.Join(dir, "shared"), nobody)
				}
				chmod(t, filepath.Join(dir, "shared"), 0o777|fs.ModeSticky)
				return p, self
			},
			want: "$D/shared, which group or others may write (its sticky bit counts only on a folder root owns)",
		},
		{
			name: "a folder another user owns is refused",
			setup: func(t *testing.T, dir string) (string, int) {
				p := program(t, dir, "theirs/sub/tool", 0o700)
				chown(t, filepath.Join(dir, "theirs"), nobody)
				return p, 0
			},
			needRoot: true,
			want:     "$D/theirs is owned by uid 65534, not by you (uid 0) or root, so another user controls it ($D/theirs/sub/tool lies under it); fix with: chown 0 $D/theirs",
		},
		{
			name: "a program another user owns is refused",
			setup: func(t *testing.T, dir string) (string, int) {
				p := program(t, dir, "bin/tool", 0o755)
				chown(t, p, nobody)
				return p, 0
			},
			needRoot: true,
			want:     "$D/bin/tool is owned by uid 65534",
		},
		{
			name: "a symlinked program whose target's folder others may write is refused",
			setup: func(t *testing.T, dir string) (string, int) {
				real := program(t, dir, "open/real/tool", 0o700)
				chmod(t, filepath.Join(dir, "open"), 0o777)
				return link(t, real, filepath.Join(dir, "safe/tool")), os.Geteuid()
			},
			want: "$D/safe/tool is under $D/open, which group or others may write",
		},
		{
			name: "a symlink in a folder others may write is refused, though its target is safe",
			setup: func(t *testing.T, dir string) (string, int) {
				l := link(t, "/usr/bin/true", filepath.Join(dir, "open/tool"))
				chmod(t, filepath.Join(dir, "open"), 0o777)
				return l, os.Geteuid()
			},
			want: "$D/open/tool is under $D/open, which group or others may write",
		},
		{
			name: "a symlinked folder on the path whose target others may write is refused",
			setup: func(t *testing.T, dir string) (string, int) {
				program(t, dir, "open/sub/tool", 0o700)
				chmod(t, filepath.Join(dir, "open"), 0o777)
				link(t, filepath.Join(dir, "open/sub"), filepath.Join(dir, "safe/sub"))
				return filepath.Join(dir, "safe/sub/tool"), os.Geteuid()
			},
			want: "fix with: chmod go-w $D/open",
		},
		{
			name: "a link to a link in a folder others may write is refused, though neither path holds that folder",
			setup: func(t *testing.T, dir string) (string, int) {
				real := program(t, dir, "safe2/tool", 0o700)
				mid := link(t, real, filepath.Join(dir, "open/mid"))
				chmod(t, filepath.Join(dir, "open"), 0o777)
				return link(t, mid, filepath.Join(dir, "safe/tool")), os.Geteuid()
			},
			want: "fix with: chmod go-w $D/open",
		},
		{
			name: "a relative symlink through .. to a safe program is run",
			setup: func(t *testing.T, dir string) (string, int) {
				program(t, dir, "safe2/tool", 0o700)
				return link(t, "../safe2/tool", filepath.Join(dir, "safe/tool")), os.Geteuid()
			},
		},
		{
			name: "a relative symlink whose .. leads into a folder others may write is refused",
			setup: func(t *testing.T, dir string) (string, int) {
				program(t, dir, "open/sub/tool", 0o700)
				chmod(t, filepath.Join(dir, "open"), 0o777)
				return link(t, "../open/sub/tool", filepath.Join(dir, "safe/tool")), os.Geteuid()
			},
			want: "fix with: chmod go-w $D/open",
		},
		{
			name: "a loop of symlinks ends the walk",
			setup: func(t *testing.T, dir string) (string, int) {
				link(t, filepath.Join(dir, "loop/b"), filepath.Join(dir, "loop/a"))
				link(t, filepath.Join(dir, "loop/a"), filepath.Join(dir, "loop/b"))
				return filepath.Join(dir, "loop/a"), os.Geteuid()
			},
			want: "too many levels of symbolic links", notUntrusted: true,
		},
		{
			name: "a missing program is an error of its own",
			setup: func(t *testing.T, dir string) (string, int) {
				return filepath.Join(dir, "nope/tool"), os.Geteuid()
			},
			want: "no such file or directory", notUntrusted: true,
		},
		{
			name: "a relative path is not checked against anything",
			setup: func(t *testing.T, dir string) (string, int) {
				return "bin/tool", os.Geteuid()
			},
			want: "not an absolute path", notUntrusted: true,
		},
		{
			// The sticky bit lets a link's owner remove it and make
			// another: re-pointed between the check and the start.
			name: "a link another user owns in a sticky folder root owns is refused",
			setup: func(t *testing.T, dir string) (string, int) {
				l := link(t, "/usr/bin/true", filepath.Join(dir, "shared/tool"))
				chmod(t, filepath.Join(dir, "shared"), 0o777|fs.ModeSticky)
				chown(t, l, nobody)
				return l, os.Geteuid()
			},
			needRoot: true,
			want:     "goes through the link $D/shared/tool, which uid 65534 owns in $D/shared, a folder others may write",
		},
		{
			name: "a link of one's own in a sticky folder root owns is run",
			setup: func(t *testing.T, dir string) (string, int) {
				l := link(t, "/usr/bin/true", filepath.Join(dir, "shared/tool"))
				chmod(t, filepath.Join(dir, "shared"), 0o777|fs.ModeSticky)
				return l, os.Geteuid()
			},
			needRoot: true,
		},
		{
			name: "a folder is not a program",
			setup: func(t *testing.T, dir string) (string, int) {
				return dir + "/.", os.Geteuid()
			},
			want: "names a folder", notUntrusted: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.needRoot && !root {
				t.Skip("needs root: the layout needs a folder root owns or chown")
			}
			dir := privateDir(t)
			path, self := tc.setup(t, dir)
			err := checkProgram(path, self)
			want := strings.ReplaceAll(tc.want, "$D", dir)
			switch {
			case want == "" && err != nil:
				t.Fatalf("checkProgram(%s) = %v, want nil", path, err)
			case want == "":
			case err == nil:
				t.Fatalf("checkProgram(%s) = nil, want an error holding %q", path, want)
			case !strings.Contains(err.Error(), want):
				t.Fatalf("checkProgram(%s) = %q\nwant it to hold %q", path, err, want)
			case errors.Is(err, ErrUntrusted) == tc.notUntrusted:
				t.Fatalf("errors.Is(%q, ErrUntrusted) = %v, want %v", err, !tc.notUntrusted, !tc.notUntrusted)
			}
		})
	}
}

// Every start goes through the check, just before the fork: a program put
// under a folder others may write after it was configured is not started,
// and the run says why.
func TestRunRefusesAProgramOthersCouldReplace(t *testing.T) {
	t.Parallel()
	dir := privateDir(t)
	marker := filepath.Join(dir, "ran")
	p := program(t, dir, "open/sub/tool", 0o700)
	// Written while no fork can start: a child a parallel test forks
	// meanwhile would inherit the write descriptor until its exec, and exec
	// of a file open for writing fails (text file busy). A fork holds
	// syscall.ForkLock for writing.
	syscall.ForkLock.RLock()
	err := os.WriteFile(p, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o700)
	syscall.ForkLock.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res := Run(ctx, Command{Argv: []string{p}}); res.Err != nil || res.ExitCode != 0 {
		t.Fatalf("the safe layout did not run: %+v", res)
	}
	if err := os.Remove(marker); err != nil {
		t.Fatalf("the program did not run in the safe layout: %v", err)
	}
	chmod(t, filepath.Join(dir, "open"), 0o777)
	res := Run(ctx, Command{Argv: []string{p}})
	if !errors.Is(res.Err, ErrUntrusted) || res.ExitCode != -1 {
		t.Fatalf("Run = %+v, want a refusal wrapping ErrUntrusted", res)
	}
	want := "refused to start " + p + ": " + p + " is under " + filepath.Join(dir, "open")
	if !strings.HasPrefix(res.Err.Error(), want) {
		t.Errorf("Run error = %q\nwant it to start %q", res.Err, want)
	}
	if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused program ran: %s exists (%v)", marker, err)
	}
}

// A relative program (an upstream's "./server") is checked where the child
// finds it: in its working directory.
func TestStartChecksARelativeProgramInItsWorkingDirectory(t *testing.T) {
	t.Parallel()
	dir := privateDir(t)
	program(t, dir, "open/srv", 0o700)
	chmod(t, filepath.Join(dir, "open"), 0o777)
	cmd := exec.Command("./srv")
	cmd.Dir = filepath.Join(dir, "open")
	done, err := (*Reaper)(nil).Start(cmd, nil)
	defer done()
	if err == nil {
		cmd.Wait()
		t.Fatal("Start ran ./srv from a world-writable folder")
	}
	if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "chmod go-w "+cmd.Dir) {
		t.Errorf("Start error = %q, want a refusal naming %s", err, cmd.Dir)
	}
}

// privateDir is a fresh 0700 folder, with its symlinks resolved so the
// messages name it as the walk does.
func privateDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// program writes an executable script at dir/rel, making its folders 0700.
func program(t *testing.T, dir, rel string, mode fs.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	chmod(t, p, mode)
	return p
}

// link makes the symlink at to pointing at target, making to's folder.
func link(t *testing.T, target, to string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, to); err != nil {
		t.Fatal(err)
	}
	return to
}

func chmod(t *testing.T, p string, mode fs.FileMode) {
	t.Helper()
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func chown(t *testing.T, p string, uid int) {
	t.Helper()
	if err := os.Lchown(p, uid, -1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Lchown(p, os.Geteuid(), -1) })
}

// What an interpreter runs is held to the program check wherever the
// arguments name it: a script, a folder (python3 /srv/app runs its
// __main__.py, node its package.json main or index.js), an option's
// attached value (--require=pre.js), and a name that does not exist yet in
// a folder others may write (whoever creates it first decides what runs).
// Each refusal passed before (found by the attack review).
func TestCheckScriptsHoldsWhatAnInterpreterRuns(t *testing.T) {
	t.Parallel()
	write := func(t *testing.T, p, text string, mode fs.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		chmod(t, p, mode)
	}
	cases := []struct {
		name string
		// setup builds the layout under dir and returns the arguments.
		setup func(t *testing.T, dir string) []string
		// want is a fragment of the refusal of argument at ("" accepts).
		want string
		at   int
	}{
		{"a folder whose __main__.py others may write is refused", func(t *testing.T, dir string) []string {
			write(t, filepath.Join(dir, "app/__main__.py"), "print(1)\n", 0o666)
			return []string{"-u", filepath.Join(dir, "app")}
		}, "app/__main__.py is writable by group or others", 1},
		{"a folder others may write is refused", func(t *testing.T, dir string) []string {
			write(t, filepath.Join(dir, "app/__main__.py"), "print(1)\n", 0o600)
			chmod(t, filepath.Join(dir, "app"), 0o777)
			return []string{filepath.Join(dir, "app")}
		}, "which group or others may write", 0},
		{"a package.json's main others may write is refused", func(t *testing.T, dir string) []string {
			write(t, filepath.Join(dir, "srv/package.json"), `{"main": "lib/server"}`, 0o600)
			write(t, filepath.Join(dir, "srv/lib/server.js"), "1\n", 0o646)
			return []string{filepath.Join(dir, "srv")}
		}, "srv/lib/server.js is writable by group or others", 0},
		{"a main that leaves its folder is not followed", func(t *testing.T, dir string) []string {
			write(t, filepath.Join(dir, "open.js"), "1\n", 0o666)
			write(t, filepath.Join(dir, "srv/package.json"), `{"main": "../open.js"}`, 0o600)
			return []string{filepath.Join(dir, "srv")}
		}, "", 0},
		{"a private folder with private entries is run", func(t *testing.T, dir string) []string {
			write(t, filepath.Join(dir, "app/__main__.py"), "print(1)\n", 0o600)
			write(t, filepath.Join(dir, "app/index.js"), "1\n", 0o644)
			return []string{filepath.Join(dir, "app")}
		}, "", 0},
		{"an option's attached value others may write is refused", func(t *testing.T, dir string) []string {
			write(t, filepath.Join(dir, "pre.js"), "1\n", 0o666)
			return []string{"--require=pre.js", "server.js"}
		}, "pre.js is writable by group or others", 0},
		{"a short option's attached value is checked too", func(t *testing.T, dir string) []string {
			write(t, filepath.Join(dir, "pre.js"), "1\n", 0o666)
			return []string{"-r=" + filepath.Join(dir, "pre.js")}
		}, "pre.js is writable by group or others", 0},
		{"an option's value that names nothing is left alone", func(t *testing.T, dir string) []string {
			return []string{"--port=8080", "--mode=stdio", "--url=https://example.com/x"}
		}, "", 0},
		{"a name that does not exist yet in a folder others may write is refused", func(t *testing.T, dir string) []string {
			if err := os.Mkdir(filepath.Join(dir, "drop"), 0o700); err != nil {
				t.Fatal(err)
			}
			chmod(t, filepath.Join(dir, "drop"), 0o777|fs.ModeSticky)
			return []string{"stdio", filepath.Join(dir, "drop/server.py")}
		}, "drop/server.py does not exist yet, and " /* $D */, 1},
		{"a name that does not exist yet in a private folder is left for the process", func(t *testing.T, dir string) []string {
			return []string{filepath.Join(dir, "later/server.py"), "stdio", "sub/word"}
		}, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := privateDir(t)
			args := tc.setup(t, dir)
			at, err := checkScripts(args, dir, os.Geteuid())
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("checkScripts(%q) = %d, %v; want nil", args, at, err)
			case tc.want == "":
			case err == nil:
				t.Fatalf("checkScripts(%q) = nil, want a refusal holding %q", args, tc.want)
			case !strings.Contains(err.Error(), tc.want) || at != tc.at || !errors.Is(err, ErrUntrusted):
				t.Fatalf("checkScripts(%q) = %d, %q\nwant argument %d refused with %q", args, at, err, tc.at, tc.want)
			}
		})
	}
}
