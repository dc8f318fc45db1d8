package waittest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestWithin(t *testing.T) {
	t.Parallel()
	errNotYet := errors.New("not yet")
	tests := []struct {
		name    string
		holdsAt int // the call on which cond first returns nil; 0 never
		within  time.Duration
		wantErr bool
	}{
		{name: "a condition that holds at once returns at once", holdsAt: 1, within: time.Second},
		{name: "a condition that holds on the fifth check returns then", holdsAt: 5, within: 10 * time.Second},
		{name: "a condition that never holds returns its last error", holdsAt: 0, within: 30 * time.Millisecond, wantErr: true},
		{name: "a zero bound still checks once", holdsAt: 1, within: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			err := Within(tt.within, func() error {
				calls++
				if calls == tt.holdsAt {
					return nil
				}
				return errNotYet
			})
			if (err != nil) != tt.wantErr {
				t.Fatalf("Within = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr && !errors.Is(err, errNotYet) {
				t.Errorf("Within = %v, want it to wrap the condition's last error", err)
			}
			if !tt.wantErr && calls != tt.holdsAt {
				t.Errorf("cond called %d times, want %d", calls, tt.holdsAt)
			}
		})
	}
}

func TestPollWakeEndsAPauseEarly(t *testing.T) {
	t.Parallel()
	wake := make(chan struct{}, 1)
	calls := 0
	start := time.Now()
	err := Poll{Every: time.Hour, Wake: wake}.Within(10*time.Second, func() error {
		calls++
		if calls == 2 {
			return nil
		}
		wake <- struct{}{}
		return errors.New("not yet")
	})
	if err != nil || calls != 2 {
		t.Fatalf("Within = %v after %d calls, want nil after 2", err, calls)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v: the wake did not end the hour's pause", took)
	}
}

func TestPollContextEndsTheWait(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Poll{Every: time.Hour, Context: ctx}.Within(time.Hour, func() error { return errors.New("never") })
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("Within = %v, want it to end with the context", err)
	}
}

func TestGoneAndState(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	// A process name with spaces and parentheses must not shift the fields.
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep binary:", err)
	}
	pid := cmd.Process.Pid
	if ppid, state := State(pid); ppid != os.Getpid() || state == "" {
		t.Errorf("State(child) = %d, %q, want parent %d and a state", ppid, state, os.Getpid())
	}
	if kids := Children(os.Getpid()); !slices.Contains(kids, pid) {
		t.Errorf("Children = %v, want it to hold %d", kids, pid)
	}
	if got := Cmdline(pid); got != "sleep\x0030\x00" {
		t.Errorf("Cmdline = %q, want %q", got, "sleep\x0030\x00")
	}
	cmd.Process.Kill()
	Gone(t, 10*time.Second, pid) // a zombie counts as gone
	cmd.Wait()
	if ppid, state := State(pid); ppid != 0 || state != "" {
		t.Errorf("State(reaped) = %d, %q, want 0, \"\"", ppid, state)
	}
	if got := Cmdline(pid); got != "" {
		t.Errorf("Cmdline(reaped) = %q, want \"\"", got)
	}
}

func TestStatSurvivesAHostileCommandName(t *testing.T) {
	t.Parallel()
	self := os.Getpid()
	fields := Stat(self)
	if len(fields) < 2 {
		t.Fatalf("Stat(self) = %v", fields)
	}
	// A comm of ") Z 1 (" would pass for a zombie if the cut were at the
	// first ')'; the cut at the last one keeps the true fields.
	path := t.TempDir() + "/a) Z 1 ("
	if err := os.Symlink("/bin/sleep", path); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(path, "30")
	if err := cmd.Start(); err != nil {
		t.Skip("no /bin/sleep:", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if err := Within(10*time.Second, func() error {
		if ppid, state := State(cmd.Process.Pid); ppid != self || state == "Z" {
			return errors.New("the parent is not this test, or it reads as a zombie")
		}
		if !strings.Contains(Cmdline(cmd.Process.Pid), ") Z 1 (") {
			return errors.New("not yet exec'd")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestFileSeesAFileWrittenMeanwhile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mark")
	written := make(chan error, 1)
	go func() { written <- os.WriteFile(path, nil, 0o600) }()
	File(t, 5*time.Second, path)
	if err := <-written; err != nil {
		t.Fatal(err)
	}
}
