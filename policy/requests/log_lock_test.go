package requests

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/policy/jsonl"
	"github.com/wraptool/wraptool/policy/jsonl/jsonltest"
)

// callWithin runs call and waits at most bound for it. A call still blocked
// then fails the test, rather than hang it; release (the lock holder's)
// lets it finish before the test ends.
func callWithin(t *testing.T, bound time.Duration, release func(), call func() error) (time.Duration, error) {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- call() }()
	select {
	case err := <-done:
		return time.Since(start), err
	case <-time.After(bound):
		t.Errorf("the call is still blocked after %v", bound)
		release()
		<-done
		t.FailNow()
		return 0, nil
	}
}

// The defect: a held lock blocked a writer, and so the server's shutdown,
// forever. A writer now waits only while its context lasts.
func TestWritersWaitingForAHeldLockEndWithTheirContext(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// call writes through l (whose first call has folded the log);
		// held is the id of the pending request in it.
		call func(ctx context.Context, l *Log, path, held string) error
		// busy, when set, keeps l busy (blocked on the lock) first, so
		// that call waits for its turn on the Log, not for the flock.
		busy bool
	}{
		{"Log.Submit returns when its context ends",
			func(ctx context.Context, l *Log, _, _ string) error {
				_, err := l.Submit(ctx, Request{Tool: "new", Subcommand: []string{}, Rationale: "why"}, t0)
				return err
			}, false},
		{"Log.Decide returns when its context ends",
			func(ctx context.Context, l *Log, _, held string) error {
				return l.Decide(ctx, held, Decision{Status: StatusApproved, Reason: "", Applied: true, DecidedBy: "cli"}, t0)
			}, false},
		{"the package-level Submit returns when its context ends",
			func(ctx context.Context, _ *Log, path, _ string) error {
				_, err := Submit(ctx, path, Request{Tool: "new", Subcommand: []string{}, Rationale: "why"}, t0)
				return err
			}, false},
		{"the package-level Decide returns when its context ends",
			func(ctx context.Context, _ *Log, path, held string) error {
				return Decide(ctx, path, held, Decision{Status: StatusDenied, Reason: "", Applied: false, DecidedBy: "cli"}, t0)
			}, false},
		{"a Log.Submit queued behind another call on the same Log returns when its context ends",
			func(ctx context.Context, l *Log, _, _ string) error {
				_, err := l.Submit(ctx, Request{Tool: "new", Subcommand: []string{}, Rationale: "why"}, t0)
				return err
			}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := logPath(t)
			l := Open(path)
			held := logSubmit(t, l, Request{Tool: "held", Subcommand: []string{}, Rationale: "why"}).ID
			before := configtest.ReadFile(t, path)
			release := jsonltest.HoldLock(t, path)
			if tc.busy {
				busy := make(chan struct{})
				go func() {
					defer close(busy)
					l.Submit(context.Background(), Request{Tool: "busy", Subcommand: []string{}, Rationale: "why"}, t0)
				}()
				t.Cleanup(func() { release(); <-busy })
				// Wait until it holds the turn (it then waits for the lock).
				waittest.Until(t, 10*time.Second, func() error {
					if l.turn.TryAcquire(1) {
						l.turn.Release(1)
						return errors.New("the busy Submit has not taken its turn")
					}
					return nil
				})
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			time.AfterFunc(200*time.Millisecond, cancel)
			took, err := callWithin(t, 3*time.Second, release, func() error { return tc.call(ctx, l, path, held) })
			if !errors.Is(err, context.Canceled) {
				t.Errorf("the call = %v, want an error wrapping context.Canceled", err)
			} else if !strings.Contains(err.Error(), path) {
				t.Errorf("the call's error %q does not name the file %s", err, path)
			}
			if took > 1500*time.Millisecond {
				t.Errorf("the call returned after %v, want soon after the context ended (200 ms)", took)
			}
			if after := configtest.ReadFile(t, path); !bytes.Equal(after, before) {
				t.Errorf("the log changed while another writer held the lock:\n got %q\nwant %q", after, before)
			}
		})
	}
}

// Only waiting ends with the context: a call whose context is already done
// still takes a free turn and a free lock, as jsonl.Lock does, so a
// shutdown's last write is not refused for want of a wait it never needs.
func TestACallWithADoneContextTakesAFreeTurn(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		call func(ctx context.Context, l *Log, held string) error
	}{
		{"Log.Submit records the request",
			func(ctx context.Context, l *Log, _ string) error {
				_, err := l.Submit(ctx, Request{Tool: "new", Subcommand: []string{}, Rationale: "why"}, t0)
				return err
			}},
		{"Log.Decide records the decision",
			func(ctx context.Context, l *Log, held string) error {
				return l.Decide(ctx, held, Decision{Status: StatusDenied, Reason: "", Applied: false, DecidedBy: "cli"}, t0)
			}},
		{"Log.Records reads the log",
			func(ctx context.Context, l *Log, _ string) error {
				_, _, err := l.Records(ctx)
				return err
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := Open(logPath(t))
			held := logSubmit(t, l, Request{Tool: "held", Subcommand: []string{}, Rationale: "why"}).ID
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := tc.call(ctx, l, held); err != nil {
				t.Errorf("the call with a done context = %v, want nil: its turn was free", err)
			}
		})
	}
}

// A context that never ends still gives up after the 5 s bound, with an
// error naming the file and nothing written; once the holder lets go, the
// same Log writes again.
func TestWritersGiveUpOnALockHeldTooLong(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		call func(l *Log, held string) error
	}{
		{"Log.Submit gives up", func(l *Log, _ string) error {
			_, err := l.Submit(context.Background(), Request{Tool: "new", Subcommand: []string{}, Rationale: "why"}, t0)
			return err
		}},
		{"Log.Decide gives up", func(l *Log, held string) error {
			return l.Decide(context.Background(), held, Decision{Status: StatusApproved, Reason: "", Applied: true, DecidedBy: "cli"}, t0)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "requests.jsonl")
			l := Open(path)
			held := logSubmit(t, l, Request{Tool: "held", Subcommand: []string{}, Rationale: "why"}).ID
			before := configtest.ReadFile(t, path)
			release := jsonltest.HoldLock(t, path)
			took, err := callWithin(t, 3*jsonl.LockTimeout, release, func() error { return tc.call(l, held) })
			if !errors.Is(err, jsonl.ErrLockTimeout) {
				t.Fatalf("the call = %v, want an error wrapping jsonl.ErrLockTimeout", err)
			}
			want := "request log: lock " + path + ": the file is locked by another process; gave up after 5s"
			if err.Error() != want {
				t.Errorf("error\n got %q\nwant %q", err, want)
			}
			if took < jsonl.LockTimeout {
				t.Errorf("gave up after %v, want no sooner than %v", took, jsonl.LockTimeout)
			}
			if after := configtest.ReadFile(t, path); !bytes.Equal(after, before) {
				t.Errorf("the log changed while another writer held the lock:\n got %q\nwant %q", after, before)
			}
			release()
			if err := tc.call(l, held); err != nil {
				t.Errorf("the call once the lock is free: %v", err)
			}
		})
	}
}

// A request log that is not a regular file is refused, by writers and
// readers alike, without blocking on a FIFO.
func TestALogThatIsAFIFOIsRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		call func(path string) error
	}{
		{"Submit refuses it", func(path string) error {
			_, err := Submit(context.Background(), path, Request{Tool: "git", Subcommand: []string{}, Rationale: "why"}, t0)
			return err
		}},
		{"Read refuses it", func(path string) error {
			_, _, err := Read(path)
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := logPath(t)
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
			// Opening the other end unblocks a reader stuck in open(2).
			unblock := func() {
				if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
					f.Close()
				}
			}
			_, err := callWithin(t, 2*time.Second, unblock, func() error { return tc.call(path) })
			if !errors.Is(err, jsonl.ErrNotRegular) || !strings.Contains(err.Error(), path) {
				t.Errorf("err %v, want one wrapping jsonl.ErrNotRegular and naming %s", err, path)
			}
		})
	}
}
