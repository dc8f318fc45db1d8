package jsonl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wraptool/wraptool/policy/jsonl/jsonltest"
)

// holderEnv names the file a re-executed test binary locks: TestMain then
// acts as a lock holder in another process, not as the tests.
const holderEnv = "WRAPTOOL_JSONL_LOCK_HOLDER"

func TestMain(m *testing.M) {
	if path := os.Getenv(holderEnv); path != "" {
		os.Exit(holdUntilStdinCloses(path))
	}
	os.Exit(m.Run())
}

// holdUntilStdinCloses is the other process: it locks path, says "locked"
// on stdout, and keeps the lock until its stdin closes (or it dies); then it
// lets go and says "released".
func holdUntilStdinCloses(path string) int {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		return 2
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		fmt.Fprintln(os.Stderr, "holder: flock:", err)
		return 2
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin)
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "holder: close:", err)
		return 2
	}
	fmt.Println("released")
	return 0
}

// A holder keeps path locked from another open file description until
// release is called (or the test ends).
type holder func(t *testing.T, path string) (release func())

// holdInChild locks path from a child process (this test binary run again).
func holdInChild(t *testing.T, path string) func() {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// GORACE: a race-enabled binary otherwise idles a second before exiting.
	cmd.Env = append(os.Environ(), holderEnv+"="+path, "GORACE=atexit_sleep_ms=0")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	said := make(chan string, 2)
	go func() {
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				close(said)
				return
			}
			said <- line
		}
	}()
	// expect waits for the holder to say want, and kills it when it
	// says something else or nothing.
	expect := func(want string) bool {
		select {
		case line := <-said:
			if line == want {
				return true
			}
			t.Errorf("the holder process said %q, want %q", line, want)
		case <-time.After(30 * time.Second):
			t.Errorf("the holder process did not say %q within 30s", want)
		}
		cmd.Process.Kill()
		return false
	}
	if !expect("locked\n") {
		cmd.Wait()
		t.Fatalf("stderr of the holder process: %s", stderr.String())
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("the holder process: %v; stderr: %s", err, stderr.String())
		}
	})
	return sync.OnceFunc(func() {
		stdin.Close()
		expect("released\n")
	})
}

var holders = []struct {
	name string
	hold holder
}{
	{"another open file in this process", func(t *testing.T, path string) func() { return jsonltest.HoldLock(t, path) }},
	{"another process", holdInChild},
}

// newLog is a fresh private file in a temporary folder.
func newLog(t *testing.T) (*os.File, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "log.jsonl")
	f, err := OpenPrivate(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, path
}

// lockWithin runs Lock and waits at most bound for it to return. A Lock
// still waiting then fails the test rather than hang it; the holder's
// release (at cleanup) lets it finish.
func lockWithin(t *testing.T, ctx context.Context, f *os.File, bound time.Duration) (time.Duration, error) {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- Lock(ctx, f, nil) }()
	select {
	case err := <-done:
		return time.Since(start), err
	case <-time.After(bound):
		t.Fatalf("Lock still waiting after %v", bound)
		return 0, nil
	}
}

func TestLockWaitsOnlyWhileItsContextLasts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// The context has a deadline after deadline, or is cancelled
		// after cancel (at once when both are zero).
		deadline, cancel time.Duration
		want             error
	}{
		{"a context with a 300 ms deadline ends the wait with DeadlineExceeded", 300 * time.Millisecond, 0, context.DeadlineExceeded},
		{"a context cancelled after 300 ms ends the wait with Canceled", 0, 300 * time.Millisecond, context.Canceled},
		{"a context already cancelled returns at once", 0, 0, context.Canceled},
	}
	for _, h := range holders {
		for _, tc := range cases {
			t.Run(tc.name+" (held by "+h.name+")", func(t *testing.T) {
				t.Parallel()
				f, path := newLog(t)
				h.hold(t, path)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.deadline > 0 {
					ctx, cancel = context.WithTimeout(ctx, tc.deadline)
					defer cancel()
				} else {
					time.AfterFunc(tc.cancel, cancel)
				}
				took, err := lockWithin(t, ctx, f, 3*time.Second)
				if !errors.Is(err, tc.want) {
					t.Fatalf("Lock = %v, want an error wrapping %v", err, tc.want)
				}
				if !strings.Contains(err.Error(), path) {
					t.Errorf("Lock error %q does not name the file %s", err, path)
				}
				if took > time.Second {
					t.Errorf("Lock returned after %v, want within 1s of the context's end", took)
				}
			})
		}
	}
}

// The real bound, with headroom: a context that never ends still gives up.
func TestLockGivesUpAfterLockTimeout(t *testing.T) {
	t.Parallel()
	for _, h := range holders {
		t.Run("held by "+h.name, func(t *testing.T) {
			t.Parallel()
			f, path := newLog(t)
			h.hold(t, path)
			took, err := lockWithin(t, context.Background(), f, 3*LockTimeout)
			if !errors.Is(err, ErrLockTimeout) {
				t.Fatalf("Lock = %v, want an error wrapping ErrLockTimeout", err)
			}
			if took < LockTimeout {
				t.Errorf("Lock gave up after %v, want no sooner than %v", took, LockTimeout)
			}
			want := "lock " + path + ": the file is locked by another process; gave up after 5s"
			if err.Error() != want {
				t.Errorf("Lock error\n got %q\nwant %q", err, want)
			}
		})
	}
}

func TestLockIsTakenSoonAfterTheHolderLetsGo(t *testing.T) {
	t.Parallel()
	for _, h := range holders {
		t.Run("held by "+h.name, func(t *testing.T) {
			t.Parallel()
			f, path := newLog(t)
			release := h.hold(t, path)
			released := make(chan time.Time, 1)
			time.AfterFunc(300*time.Millisecond, func() {
				at := time.Now()
				release()
				released <- at
			})
			if _, err := lockWithin(t, context.Background(), f, 3*time.Second); err != nil {
				t.Fatalf("Lock after the holder let go: %v", err)
			}
			if late := time.Since(<-released); late > time.Second {
				t.Errorf("Lock returned %v after the holder began to let go, want within 1s", late)
			}
			// Now it is ours: another open file cannot take it.
			other, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
				t.Errorf("another open file's flock = %v, want EWOULDBLOCK while Lock holds it", err)
			}
			if err := Unlock(f); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				t.Errorf("another open file's flock after Unlock = %v, want it taken", err)
			}
		})
	}
}

// The backoff by a simulated clock: the last attempt falls exactly on
// LockTimeout, and a released lock is taken by the next attempt, at most
// maxBackoff later.
func TestLockBackoffBySimulatedClock(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		releaseAt time.Duration // 0: never
		want      error
		min, max  time.Duration
	}{
		{"a lock never released is given up at exactly LockTimeout", 0, ErrLockTimeout, LockTimeout, LockTimeout},
		{"a lock released after 1s is taken within the backoff cap", time.Second, nil, time.Second, time.Second + maxBackoff},
		{"a lock released after 4.99s is taken before the bound", LockTimeout - 10*time.Millisecond, nil, LockTimeout - 10*time.Millisecond, LockTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, path := newLog(t)
			release := jsonltest.HoldLock(t, path)
			synctest.Test(t, func(t *testing.T) {
				if tc.releaseAt > 0 {
					go func() {
						time.Sleep(tc.releaseAt)
						release()
					}()
				}
				start := time.Now()
				err := Lock(context.Background(), f, nil)
				took := time.Since(start)
				if !errors.Is(err, tc.want) {
					t.Errorf("Lock = %v, want %v", err, tc.want)
				}
				if took < tc.min || took > tc.max {
					t.Errorf("Lock returned after %v, want between %v and %v", took, tc.min, tc.max)
				}
			})
		})
	}
}
