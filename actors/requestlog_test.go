package actors

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/policy/requests/requeststest"
)

var requestTime = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func pushRequest() requests.Request {
	return requests.Request{
		Tool:       "git",
		Subcommand: []string{"push"},
		Flags:      []string{"--force-with-lease", "--set-upstream"},
		Rationale:  "publish the branch",
		Enables:    "pushing",
	}
}

// requestLogSnapshot is a snapshot whose mcp.request_log is path.
func requestLogSnapshot(path string) *Snapshot {
	return &Snapshot{Config: &config.Config{MCP: config.MCP{RequestLog: path}}}
}

// testRequestLog is a request-log writer and the links its senders hold,
// wired as serve wires them.
type testRequestLog struct {
	*RequestLog
	messages.RequestLogLinks
}

// newRequestLogAt returns a RequestLog writing to the file the snapshot in
// snaps names (read on every request) and the sink its log goes to.
func newRequestLogAt(snaps Snapshots) (*testRequestLog, *logSink) {
	log, sink := newTestLogger()
	appends, queries, decides, uses := make(chan messages.AppendRequest), make(chan messages.PendingQuery),
		make(chan messages.DecideRequest), make(chan messages.UseGrant)
	stopped := make(chan struct{})
	w := NewRequestLog(RequestLogOptions{
		Appends: appends, Queries: queries, Decides: decides, Uses: uses, Stopped: stopped,
		Snapshots: snaps,
		Now:       func() time.Time { return requestTime },
		Log:       log,
	})
	return &testRequestLog{w, messages.RequestLogLinks{Appends: appends, Queries: queries, Decides: decides, Uses: uses,
		Stopped: stopped}}, sink
}

// pathSnapshots is a testSnapshots naming path as the request log.
func pathSnapshots(path string) *testSnapshots { return newTestSnapshots(requestLogSnapshot(path)) }

// submit calls w.Submit with a bounded context, so a hang fails the test.
func submit(t *testing.T, w *testRequestLog, r requests.Request) (requests.Submitted, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	s, err := w.Submit(ctx, r)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Submit did not return within %v", wait)
	}
	return s, err
}

func TestRequestLogSubmitRecordsARequest(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "data", "requests.jsonl")
	w, _ := newRequestLogAt(pathSnapshots(path))
	start(t, w)

	s, err := submit(t, w, pushRequest())
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	if s.ID == "" || s.Existing {
		t.Errorf("Submit = %+v, want a new id with Existing false", s)
	}
	recs := requeststest.Records(t, path)
	if len(recs) != 1 {
		t.Fatalf("log holds %d records, want 1", len(recs))
	}
	r := recs[0]
	if r.ID != s.ID || r.Status != requests.StatusPending || r.Tool != "git" || !r.CreatedAt.Equal(requestTime) {
		t.Errorf("record = %+v, want id %s, pending, tool git, created %v", r, s.ID, requestTime)
	}
}

func TestRequestLogSubmitRecognisesDuplicates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		again func(r requests.Request) requests.Request
		// decide decides the first request before the second is sent.
		decide       bool
		wantExisting bool
	}{
		{
			name:         "the same request while pending returns the existing id",
			again:        func(r requests.Request) requests.Request { return r },
			wantExisting: true,
		},
		{
			name: "the same capability in other words, flags reordered, returns the existing id",
			again: func(r requests.Request) requests.Request {
				r.Flags = []string{"--set-upstream", "--force-with-lease"}
				r.Rationale = "another reason"
				return r
			},
			wantExisting: true,
		},
		{
			name: "another flag set is a new request",
			again: func(r requests.Request) requests.Request {
				r.Flags = []string{"--force-with-lease"}
				return r
			},
			wantExisting: false,
		},
		{
			name:         "the same request once decided is a new request",
			again:        func(r requests.Request) requests.Request { return r },
			decide:       true,
			wantExisting: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "requests.jsonl")
			w, _ := newRequestLogAt(pathSnapshots(path))
			start(t, w)
			first, err := submit(t, w, pushRequest())
			if err != nil {
				t.Fatalf("first Submit: %v", err)
			}
			if tt.decide {
				if err := requests.Decide(t.Context(), path, first.ID, requests.Decision{Status: requests.StatusDenied, Reason: "no", Applied: false, DecidedBy: "cli"}, requestTime); err != nil {
					t.Fatal(err)
				}
			}
			second, err := submit(t, w, tt.again(pushRequest()))
			if err != nil {
				t.Fatalf("second Submit: %v", err)
			}
			if second.Existing != tt.wantExisting {
				t.Errorf("second Submit Existing = %v, want %v", second.Existing, tt.wantExisting)
			}
			if sameID := second.ID == first.ID; sameID != tt.wantExisting {
				t.Errorf("second Submit id %s, first %s: same = %v, want %v", second.ID, first.ID, sameID, tt.wantExisting)
			}
			wantRecords := 2
			if tt.wantExisting {
				wantRecords = 1
			}
			if got := len(requeststest.Records(t, path)); got != wantRecords {
				t.Errorf("log holds %d records, want %d", got, wantRecords)
			}
		})
	}
}

func TestRequestLogSubmitAfterStopReturnsErrStopped(t *testing.T) {
	t.Parallel()
	w, _ := newRequestLogAt(pathSnapshots(filepath.Join(t.TempDir(), "requests.jsonl")))
	stop := start(t, w)
	if err := stop(); err != nil {
		t.Fatalf("Run returned %v, want nil", err)
	}
	if _, err := submit(t, w, pushRequest()); !errors.Is(err, messages.ErrStopped) {
		t.Errorf("Submit after stop returned %v, want ErrStopped", err)
	}
}

// TestRequestLogSubmitDuringStopNeverHangs submits from several goroutines
// while the writer stops: each Submit returns, answered or ErrStopped.
func TestRequestLogSubmitDuringStopNeverHangs(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	w, _ := newRequestLogAt(pathSnapshots(path))
	stop := start(t, w)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var (
		wg       sync.WaitGroup
		answered atomic.Int64
		errs     = make(chan error, 64)
	)
	firstDone := make(chan struct{})
	var once sync.Once
	for i := range 8 {
		wg.Go(func() {
			r := pushRequest()
			r.Subcommand = []string{"push", string(rune('a' + i))}
			for {
				_, err := w.Submit(ctx, r)
				once.Do(func() { close(firstDone) })
				switch {
				case err == nil:
					answered.Add(1)
				case errors.Is(err, messages.ErrStopped), errors.Is(err, context.Canceled):
					// Stopped, or the writer's own lock wait ended with
					// its ctx: either way an answer, not a hang.
					return
				default:
					errs <- err
					return
				}
			}
		})
	}
	<-firstDone
	if err := stop(); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Submit returned %v, want nil or ErrStopped", err)
	}
	// Every answered Submit is in the log.
	pending := 0
	for _, r := range requeststest.Records(t, path) {
		if r.Status == requests.StatusPending {
			pending++
		}
	}
	if pending == 0 || int64(pending) > answered.Load() {
		t.Errorf("log holds %d pending requests, want between 1 and the %d answered", pending, answered.Load())
	}
}

func TestRequestLogSubmitHonoursItsContext(t *testing.T) {
	t.Parallel()
	// No Run: nobody takes the request, so only ctx can end the wait.
	w, _ := newRequestLogAt(pathSnapshots(filepath.Join(t.TempDir(), "requests.jsonl")))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.Submit(ctx, pushRequest()); !errors.Is(err, context.Canceled) {
		t.Errorf("Submit with a cancelled context returned %v, want context.Canceled", err)
	}
}

func TestRequestLogWarnsAboutABadLineOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	configtest.WriteFile(t, path, "this is not JSON\n", 0o600)
	w, sink := newRequestLogAt(pathSnapshots(path))
	start(t, w)
	for i, sub := range []string{"push", "fetch", "pull"} {
		r := pushRequest()
		r.Subcommand = []string{sub}
		s, err := submit(t, w, r)
		if err != nil {
			t.Fatalf("Submit %d: %v", i+1, err)
		}
		// The writer keeps what it has read, so only the first submit
		// reads (and reports) the bad line.
		if i == 0 && (len(s.Warnings) != 1 || s.Warnings[0].Line != 1) {
			t.Errorf("Submit %d warnings = %+v, want one for line 1", i+1, s.Warnings)
		}
		if i > 0 && len(s.Warnings) != 0 {
			t.Errorf("Submit %d warnings = %+v, want none: line 1 was reported", i+1, s.Warnings)
		}
	}
	warns := sink.lines("request log: skipped a line")
	if len(warns) != 1 {
		t.Fatalf("warning lines = %q, want 1", warns)
	}
	for _, want := range []string{"level=WARN", "component=requestlog", "line=1", "file=" + path} {
		if !containsAll(warns[0], []string{want}) {
			t.Errorf("warning %q lacks %q", warns[0], want)
		}
	}
}

func TestRequestLogReadsThePathOfTheSnapshotInServiceForEveryRequest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, second := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	snaps := pathSnapshots(first)
	w, _ := newRequestLogAt(snaps)
	start(t, w)
	if _, err := submit(t, w, pushRequest()); err != nil {
		t.Fatal(err)
	}
	snaps.Store(requestLogSnapshot(second)) // a reload changed mcp.request_log
	s, err := submit(t, w, pushRequest())
	if err != nil {
		t.Fatal(err)
	}
	if s.Existing {
		t.Error("a request to the new file was a duplicate of one in the old file")
	}
	if a, b := len(requeststest.Records(t, first)), len(requeststest.Records(t, second)); a != 1 || b != 1 {
		t.Errorf("records in the old and new files = %d and %d, want 1 and 1", a, b)
	}
}

// lockElsewhere takes the exclusive flock on path through a file of its
// own, as another process would (a flock belongs to an open file
// description); unlock releases it.
func lockElsewhere(t *testing.T, path string) (unlock func()) {
	t.Helper()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		configtest.WriteFile(t, path, "", 0o600)
	}
	holder, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Close() })
	if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("flock: %v", err)
	}
	return func() {
		if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_UN); err != nil {
			t.Fatal(err)
		}
	}
}

// submitAsync calls w.Submit in a goroutine, bounded by wait; the channel
// gets its error.
func submitAsync(w *testRequestLog, r requests.Request) <-chan error {
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_, err := w.Submit(ctx, r)
		errc <- err
	}()
	return errc
}

// wantLockWaitError checks the answer to a Submit whose lock wait was cut
// short: an error, and not the caller's own deadline.
func wantLockWaitError(t *testing.T, errc <-chan error) {
	t.Helper()
	switch err := receive(t, errc, "the Submit's answer"); {
	case err == nil:
		t.Error("Submit while the lock was held elsewhere returned no error, want one")
	case errors.Is(err, context.DeadlineExceeded):
		t.Errorf("Submit returned %v: it waited out its own deadline, want the writer to give up", err)
	}
}

// TestRequestLogStopsWhileAnotherProcessHoldsTheLock is the old defect: a
// request-log lock held elsewhere blocked shutdown for ever. Cancelling
// Run's ctx must end the writer's wait for the lock at once, answering the
// request with an error. Once the lock is released, a new writer records
// requests again.
func TestRequestLogStopsWhileAnotherProcessHoldsTheLock(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	unlock := lockElsewhere(t, path)
	w, sink := newRequestLogAt(pathSnapshots(path))
	stop := start(t, w)
	submitted := submitAsync(w, pushRequest())
	sink.waitFor(t, "level=WARN", "locked by another process", "file="+path)

	begin := time.Now()
	if err := stop(); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
	if elapsed := time.Since(begin); elapsed > prompt {
		t.Errorf("Run returned %v after its ctx was cancelled while the lock was held, want within %v", elapsed, prompt)
	}
	wantLockWaitError(t, submitted)
	if got := requeststest.Records(t, path); len(got) != 0 {
		t.Errorf("log holds %d records, want none while the lock was held", len(got))
	}

	unlock()
	again, _ := newRequestLogAt(pathSnapshots(path))
	start(t, again)
	s, err := submit(t, again, pushRequest())
	if err != nil {
		t.Fatalf("Submit once the lock is released: %v", err)
	}
	if recs := requeststest.Records(t, path); len(recs) != 1 || recs[0].ID != s.ID {
		t.Errorf("log holds %+v, want one record with id %s", recs, s.ID)
	}
}

// StopWaiting (serve's interrupt, when shutdown begins) ends a wait for a
// lock held elsewhere at once, without stopping the writer.
func TestRequestLogStopWaitingEndsALockWait(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	unlock := lockElsewhere(t, path)
	w, sink := newRequestLogAt(pathSnapshots(path))
	start(t, w)
	submitted := submitAsync(w, pushRequest())
	sink.waitFor(t, "level=WARN", "locked by another process", "file="+path)

	begin := time.Now()
	w.StopWaiting()
	wantLockWaitError(t, submitted)
	if elapsed := time.Since(begin); elapsed > prompt {
		t.Errorf("Submit answered %v after StopWaiting, want within %v", elapsed, prompt)
	}
	// The writer still runs: a later request is answered, not ErrStopped.
	unlock()
	if _, err := submit(t, w, pushRequest()); errors.Is(err, messages.ErrStopped) {
		t.Errorf("Submit after StopWaiting returned %v, want the writer still running", err)
	}
}

// After StopWaiting the writer "still appends when the lock is free"
// (RequestLog's doc): a request made during the shutdown grace period is
// recorded.
func TestRequestLogStillAppendsAfterStopWaitingWhenTheLockIsFree(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	w, _ := newRequestLogAt(pathSnapshots(path))
	start(t, w)
	w.StopWaiting()
	s, err := submit(t, w, pushRequest())
	if err != nil {
		t.Fatalf("Submit with the lock free after StopWaiting: %v, want it recorded", err)
	}
	if recs := requeststest.Records(t, path); len(recs) != 1 || recs[0].ID != s.ID {
		t.Errorf("log holds %+v, want one record with id %s", recs, s.ID)
	}
}
