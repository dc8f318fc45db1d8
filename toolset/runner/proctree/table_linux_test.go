//go:build linux

package proctree

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

func TestTableFromSkipsWhatIsNotAProcess(t *testing.T) {
	t.Parallel()
	line := func(pid string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte(pid + " (x) S" + tail)}
	}
	proc := fstest.MapFS{
		"42/stat":   line("42"),
		"43/stat":   line("44"), // names another pid than its folder
		"045/stat":  line("45"), // not how the kernel writes a pid
		"-46/stat":  line("-46"),
		"self/stat": line("47"),
		"48/stat":   {Data: []byte("48 (x")}, // cut short
		"49/status": {Data: []byte("no stat")},
		"meminfo":   {Data: []byte("MemTotal: 1 kB")},
	}
	got, err := tableFrom(proc)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Proc{{PID: 42, PPID: 19541, PGID: 19538, Start: 777}}; !slices.Equal(got, want) {
		t.Fatalf("tableFrom = %+v, want %+v", got, want)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// row returns pid's row in a fresh Table.
func row(t *testing.T, pid int) (Proc, bool) {
	t.Helper()
	tab, err := Table()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tab {
		if p.PID == pid {
			return p, true
		}
	}
	return Proc{}, false
}

// dead says pid has ended: gone from /proc, or a zombie nobody reaped yet.
func dead(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	return len(f) == 0 || string(f[0]) == "Z" || string(f[0]) == "X"
}

// start starts name with args in its own process group and makes sure the
// whole group is gone when the test ends.
func start(t *testing.T, name string, args ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd, bufio.NewReader(out)
}

func TestSweepKillsASetsidGrandchild(t *testing.T) {
	t.Parallel()
	sh, out := start(t, "sh", "-c", "setsid sleep 300 & echo $!; sleep 300")
	text, err := out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	daemon, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil {
		t.Fatalf("sh printed %q, want a pid", text)
	}
	var d Proc
	waitFor(t, "the grandchild to leave the group", func() bool {
		var ok bool
		d, ok = row(t, daemon)
		return ok && d.PGID == daemon
	})
	t.Cleanup(func() { // only if it is still the same process
		if tab, err := Table(); err == nil {
			Kill([]Proc{d}, tab, KillSignal, os.Getpid(), send)
		}
	})
	if d.PPID != sh.Process.Pid || d.PGID == sh.Process.Pid {
		t.Fatalf("grandchild %+v: want parent %d and its own group", d, sh.Process.Pid)
	}

	tab, err := Table()
	if err != nil {
		t.Fatal(err)
	}
	found := Descendants(tab, []int{sh.Process.Pid}, sh.Process.Pid)
	if !slices.Contains(found, d) || !slices.ContainsFunc(found, func(p Proc) bool { return p.PID == sh.Process.Pid }) {
		t.Fatalf("Descendants = %+v, want sh %d and the grandchild %+v", found, sh.Process.Pid, d)
	}

	killed, err := Sweep([]int{sh.Process.Pid}, sh.Process.Pid, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(killed, d) {
		t.Fatalf("Sweep killed %+v, want the grandchild %+v among them", killed, d)
	}
	waitFor(t, "the grandchild to end", func() bool { return dead(daemon) })
	if _, err := sh.Process.Wait(); err != nil {
		t.Fatal(err)
	}
	if me, ok := row(t, os.Getpid()); !ok || dead(me.PID) {
		t.Fatal("the sweep took the test process with it")
	}
}

func TestTableReadsHostileNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary:", err)
	}
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a) (b", ")", "()", "x) R 1 1 1\nz", "abcdefghijklmnopqrstuvwxyz"} {
		t.Run(strconv.Quote(name), func(t *testing.T) {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, b, 0o700); err != nil {
				t.Fatal(err)
			}
			cmd, _ := start(t, path, "300")
			want := Proc{PID: cmd.Process.Pid, PPID: os.Getpid(), PGID: cmd.Process.Pid}
			var got Proc
			waitFor(t, "the process to exec", func() bool {
				comm, _ := os.ReadFile("/proc/" + strconv.Itoa(want.PID) + "/comm")
				var ok bool
				got, ok = row(t, want.PID)
				return ok && strings.HasPrefix(name, strings.TrimSuffix(string(comm), "\n"))
			})
			got.Start = 0
			if got != want {
				t.Fatalf("Table row %+v, want %+v", got, want)
			}
		})
	}
}
