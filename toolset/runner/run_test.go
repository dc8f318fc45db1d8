package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

func runReport(t *testing.T, c Command) toolsettest.Report {
	t.Helper()
	res := Run(context.Background(), c)
	if res.Err != nil || res.ExitCode != 0 {
		t.Fatalf("Run: exit %d, err %v, stderr %q", res.ExitCode, res.Err, res.Stderr)
	}
	var r toolsettest.Report
	if err := json.Unmarshal([]byte(res.Stdout), &r); err != nil {
		t.Fatalf("fakecli output %q: %v", res.Stdout, err)
	}
	return r
}

func fakeEnv(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestRunPassesArgvVerbatim(t *testing.T) {
	t.Parallel()
	argv := []string{fakecli, "push", "--message=a b; rm -rf /", "-m", "$(id)", "*", "'q'", ""}
	r := runReport(t, Command{Argv: argv, Env: []string{}})
	if !slices.Equal(r.Argv, argv) {
		t.Errorf("child saw argv %q, want %q (no shell may touch it)", r.Argv, argv)
	}
}

func TestRunEnvironmentIsExactlyTheDocumentedOne(t *testing.T) {
	// Not parallel: it sets a variable in this process to prove it does not leak.
	t.Setenv("WRAPTOOL_LEAK_CANARY", "leaked")
	env := Environ(fakecli, os.Getenv, map[string]string{"FROM_FILE": "f", "SHARED": "file"}, map[string]string{"SHARED": "inline", "INLINE": "i"})
	r := runReport(t, Command{Argv: []string{fakecli}, Env: env})
	want := []string{
		"FROM_FILE=f",
		"HOME=" + os.Getenv("HOME"),
		"INLINE=i",
		"LANG=C.UTF-8",
		"PATH=" + filepath.Dir(fakecli) + ":" + cleanPath(os.Getenv("PATH")),
		"SHARED=inline",
	}
	if !slices.Equal(r.Env, want) {
		t.Errorf("child environment:\n got %q\nwant %q", r.Env, want)
	}
}

func TestEnviron(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		parent  map[string]string
		fileEnv map[string]string
		env     map[string]string
		want    []string
	}{
		{"the binary's folder comes first in PATH",
			map[string]string{"PATH": "/usr/local/bin:/usr/bin", "HOME": "/home/op", "SECRET": "x"}, nil, nil,
			[]string{"HOME=/home/op", "LANG=C.UTF-8", "PATH=/opt/tool/bin:/usr/local/bin:/usr/bin"}},
		{"a server without PATH falls back to /usr/bin:/bin",
			map[string]string{"HOME": "/h"}, nil, nil,
			[]string{"HOME=/h", "LANG=C.UTF-8", "PATH=/opt/tool/bin:/usr/bin:/bin"}},
		{"a server without HOME passes none",
			map[string]string{"PATH": "/bin"}, nil, nil,
			[]string{"LANG=C.UTF-8", "PATH=/opt/tool/bin:/bin"}},
		{"an empty PATH entry (the client's cwd) is dropped",
			map[string]string{"PATH": "/usr/bin:", "HOME": "/h"}, nil, nil,
			[]string{"HOME=/h", "LANG=C.UTF-8", "PATH=/opt/tool/bin:/usr/bin"}},
		{"empty and relative PATH entries anywhere are dropped",
			map[string]string{"PATH": ":.:/usr/local/bin::bin:./x:../y:/usr/bin:", "HOME": "/h"}, nil, nil,
			[]string{"HOME=/h", "LANG=C.UTF-8", "PATH=/opt/tool/bin:/usr/local/bin:/usr/bin"}},
		{"a server PATH with nothing usable falls back to /usr/bin:/bin",
			map[string]string{"PATH": ":.:bin", "HOME": "/h"}, nil, nil,
			[]string{"HOME=/h", "LANG=C.UTF-8", "PATH=/opt/tool/bin:/usr/bin:/bin"}},
		{"a PATH from env_files loses empty and relative entries",
			map[string]string{"PATH": "/bin", "HOME": "/h"}, map[string]string{"PATH": "/opt/x:.::sbin"}, nil,
			[]string{"HOME=/h", "LANG=C.UTF-8", "PATH=/opt/x"}},
		{"a PATH from env loses empty and relative entries",
			map[string]string{"PATH": "/bin", "HOME": "/h"}, nil, map[string]string{"PATH": ":/opt/y:"},
			[]string{"HOME=/h", "LANG=C.UTF-8", "PATH=/opt/y"}},
		{"a PATH from env with nothing usable falls back to /usr/bin:/bin",
			map[string]string{"PATH": "/bin", "HOME": "/h"}, nil, map[string]string{"PATH": ""},
			[]string{"HOME=/h", "LANG=C.UTF-8", "PATH=/usr/bin:/bin"}},
		{"env overrides env_files, which override the base",
			map[string]string{"PATH": "/bin", "HOME": "/h"},
			map[string]string{"A": "file", "HOME": "/file-home", "B": "file"},
			map[string]string{"A": "inline", "LANG": "en_GB.UTF-8"},
			[]string{"A=inline", "B=file", "HOME=/file-home", "LANG=en_GB.UTF-8", "PATH=/opt/tool/bin:/bin"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Environ("/opt/tool/bin/tool", fakeEnv(tc.parent), tc.fileEnv, tc.env)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A relative binary (looked up on the server's PATH) has no folder worth
// putting first: "." would be the client's cwd.
func TestEnvironIgnoresTheFolderOfARelativeBinary(t *testing.T) {
	t.Parallel()
	got := Environ("tool", fakeEnv(map[string]string{"PATH": "/usr/bin"}), nil, nil)
	if want := []string{"LANG=C.UTF-8", "PATH=/usr/bin"}; !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestRunWorkingDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real, _ := filepath.EvalSymlinks(dir)
	r := runReport(t, Command{Argv: []string{fakecli}, Dir: dir, Env: []string{}})
	if r.Cwd != real {
		t.Errorf("child cwd = %q, want %q", r.Cwd, real)
	}
	wd, _ := os.Getwd()
	if r := runReport(t, Command{Argv: []string{fakecli}, Env: []string{}}); r.Cwd != wd {
		t.Errorf("child cwd with Dir unset = %q, want the server's %q", r.Cwd, wd)
	}
}

func TestRunExitStatusAndStreams(t *testing.T) {
	t.Parallel()
	res := Run(context.Background(), Command{Argv: []string{fakecli, "exit", "3"}, Env: []string{}})
	if res.ExitCode != 3 || res.Err != nil {
		t.Errorf("exit code %d, err %v; want 3, nil", res.ExitCode, res.Err)
	}
	if res.Stdout != "to stdout\n" || res.Stderr != "to stderr\n" {
		t.Errorf("streams %q / %q", res.Stdout, res.Stderr)
	}
	if res.Truncated || res.TimedOut {
		t.Errorf("truncated %v, timed out %v", res.Truncated, res.TimedOut)
	}
}

func TestRunStdinIsClosed(t *testing.T) {
	t.Parallel()
	res := Run(context.Background(), Command{Argv: []string{fakecli, "stdin"}, Env: []string{}, Timeout: 30 * time.Second})
	if res.Stdout != "{\"stdin_bytes\":0,\"err\":\"<nil>\"}\n" {
		t.Errorf("stdin report %q, want 0 bytes and EOF", res.Stdout)
	}
}

func TestRunFeedsStdin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		stdin []byte
	}{
		{"nil is /dev/null", nil},
		{"empty is an empty input", []byte{}},
		{"a line is read whole, then end of file", []byte("{\"id\":\"req_1\"}\n")},
		{"more than a pipe holds is read whole", bytes.Repeat([]byte("x"), 1<<20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := Run(context.Background(), Command{Argv: []string{fakecli, "stdin"}, Env: []string{}, Stdin: tc.stdin, Timeout: 30 * time.Second})
			want := "{\"stdin_bytes\":" + strconv.Itoa(len(tc.stdin)) + ",\"err\":\"<nil>\"}\n"
			if res.Err != nil || res.ExitCode != 0 || res.Stdout != want {
				t.Errorf("exit %d, err %v, stdout %q; want 0, no error and %q", res.ExitCode, res.Err, res.Stdout, want)
			}
		})
	}
}

// A child that exits without reading its input (a notifier that ignores
// stdin) is a clean exit, however much input there was.
func TestRunChildThatIgnoresStdinExitsCleanly(t *testing.T) {
	t.Parallel()
	res := Run(context.Background(), Command{Argv: []string{fakecli, "exit", "0"}, Env: []string{},
		Stdin: bytes.Repeat([]byte("x"), 4<<20), Timeout: 30 * time.Second})
	if res.Err != nil || res.ExitCode != 0 || res.TimedOut {
		t.Errorf("exit %d, err %v, timed out %v; want a clean exit 0", res.ExitCode, res.Err, res.TimedOut)
	}
}

func TestRunFailureToStart(t *testing.T) {
	t.Parallel()
	res := Run(context.Background(), Command{Argv: []string{filepath.Join(t.TempDir(), "missing")}, Env: []string{}})
	if res.ExitCode != -1 || res.Err == nil || !strings.HasPrefix(res.Err.Error(), "failed to start: ") {
		t.Errorf("exit %d, err %v; want -1 and a start failure", res.ExitCode, res.Err)
	}
}

func TestRunOutputCap(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		n, limit  int
		truncated bool
	}{
		{"output under the cap is whole", 1000, 1001, false},
		{"output at the cap is whole", 1000, 1000, false},
		{"output over the cap is cut and marked", 5000, 1001, true},
		{"the default cap is 1 MiB", DefaultOutputCap + 10, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := Run(context.Background(), Command{Argv: []string{fakecli, "spam", strconv.Itoa(tc.n)}, Env: []string{}, OutputCap: tc.limit})
			if res.Truncated != tc.truncated {
				t.Fatalf("Truncated = %v, want %v", res.Truncated, tc.truncated)
			}
			for name, s := range map[string]string{"stdout": res.Stdout, "stderr": res.Stderr} {
				if !tc.truncated {
					if len(s) != tc.n {
						t.Errorf("%s has %d bytes, want %d", name, len(s), tc.n)
					}
					continue
				}
				limit := tc.limit
				if limit == 0 {
					limit = DefaultOutputCap
				}
				body, mark, ok := strings.Cut(s, "\n[wraptool: output truncated at ")
				if !ok {
					t.Fatalf("%s lacks the truncation mark: ...%q", name, s[max(0, len(s)-80):])
				}
				if len(body) > limit || len(body) < limit-3 {
					t.Errorf("%s kept %d bytes, want just under %d", name, len(body), limit)
				}
				if !strings.HasSuffix(body, "é") || strings.ContainsRune(body, '\uFFFD') {
					t.Errorf("%s was cut inside a character: ...%q", name, body[len(body)-4:])
				}
				wantMark := strconv.Itoa(limit) + " bytes; " + strconv.Itoa(tc.n-len(body)) + " more bytes not shown]\n"
				if mark != wantMark {
					t.Errorf("%s mark = %q, want %q", name, mark, wantMark)
				}
			}
		})
	}
}

// The timeout kills the whole process group: the fixture starts a
// grandchild, and both must be gone. On a slow machine the timeout can fire
// before the grandchild exists, which proves nothing, so the run is repeated
// with a longer timeout until the grandchild was there to be killed.
func TestRunTimeoutKillsGrandchildren(t *testing.T) {
	t.Parallel()
	timeoutKillsGrandchildren(t, nil)
}

// timeoutKillsGrandchildren shows that a call started through sb (nil:
// none) that times out is killed with its grandchild, without waiting for
// it; the timeout grows until the grandchild has started in time.
func timeoutKillsGrandchildren(t *testing.T, sb *Sandbox) {
	t.Helper()
	for _, timeout := range []time.Duration{500 * time.Millisecond, 2 * time.Second, 8 * time.Second} {
		pidfile := filepath.Join(t.TempDir(), "grandchild.pid")
		start := time.Now()
		res := Run(context.Background(), Command{Argv: []string{fakecli, "grandchild", pidfile}, Env: []string{}, Timeout: timeout, Sandbox: sb})
		if !res.TimedOut || res.ExitCode != -1 || res.Err == nil || res.Err.Error() != "timed out after "+timeout.String() {
			t.Fatalf("TimedOut %v, exit %d, err %v; want a timeout with exit -1", res.TimedOut, res.ExitCode, res.Err)
		}
		if elapsed := time.Since(start); elapsed > timeout+waitDelay+10*time.Second {
			t.Errorf("Run returned after %v: it waited for the grandchild", elapsed)
		}
		data, err := os.ReadFile(pidfile)
		if err != nil || len(data) == 0 {
			continue // the grandchild had not started yet
		}
		pid, _ := strconv.Atoi(string(data))
		waittest.Gone(t, 10*time.Second, pid)
		return
	}
	t.Fatal("the grandchild never started before the timeout, even at 8s")
}

func TestRunContextCancelKillsTheProcessGroup(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "grandchild.pid")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Result, 1)
	go func() { done <- Run(ctx, Command{Argv: []string{fakecli, "grandchild", pidfile}, Env: []string{}}) }()
	pid := toolsettest.WaitForPID(t, pidfile)
	cancel()
	select {
	case res := <-done:
		if res.ExitCode != -1 || res.Err == nil || !strings.HasPrefix(res.Err.Error(), "cancelled") {
			t.Errorf("exit %d, err %v; want -1 and cancelled", res.ExitCode, res.Err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
	waittest.Gone(t, 10*time.Second, pid)
}

func TestRunWithCancelledContextDoesNotStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := Run(ctx, Command{Argv: []string{fakecli}, Env: []string{}})
	if res.ExitCode != -1 || res.Err == nil || !strings.HasPrefix(res.Err.Error(), "cancelled") {
		t.Errorf("exit %d, err %v; want -1 and cancelled", res.ExitCode, res.Err)
	}
}

// A child that backgrounds a helper and exits: the helper must not outlive
// the call, holding the operator's credentials.
func TestRunKillsWhatTheChildLeftBehind(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "left.pid")
	// sh starts the fixture in the background (same process group), waits
	// until it has written its pid, and exits 0 without waiting for it.
	script := fakecli + " pidfile " + pidfile + " >/dev/null 2>&1 & while [ ! -s " + pidfile + " ]; do :; done"
	res := Run(context.Background(), Command{Argv: []string{"/bin/sh", "-c", script}, Env: []string{}, Timeout: time.Minute})
	if res.ExitCode != 0 || res.TimedOut {
		t.Fatalf("exit %d, timed out %v, err %v; want a clean exit", res.ExitCode, res.TimedOut, res.Err)
	}
	waittest.Gone(t, 10*time.Second, toolsettest.WaitForPID(t, pidfile))
}

// The child starts in the opened directory itself: renaming the folder after
// it was opened does not change where the child runs, and Run closes the
// handle.
func TestRunStartsInTheOpenedDirectory(t *testing.T) {
	t.Parallel()
	base, _ := filepath.EvalSymlinks(t.TempDir())
	opened, moved := filepath.Join(base, "opened"), filepath.Join(base, "moved")
	if err := os.Mkdir(opened, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(opened)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(opened, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(opened, 0o700); err != nil { // a new folder under the old name
		t.Fatal(err)
	}
	r := runReport(t, Command{Argv: []string{fakecli}, DirFile: f, Dir: opened, Env: []string{}})
	if r.Cwd != moved {
		t.Errorf("child cwd = %q, want the opened folder, now %q", r.Cwd, moved)
	}
	if err := f.Close(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("closing the handle after Run: %v, want os.ErrClosed (Run closes it)", err)
	}
}
