package requests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/policy/jsonl/jsonltest"
)

// usedLines counts the lines of the log at path that record a use.
func usedLines(t *testing.T, path string) int {
	t.Helper()
	return strings.Count(string(configtest.ReadFile(t, path)), `"used_at":`)
}

func TestUseGrant(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(t *testing.T) (path, id string)
		now   time.Time
		want  error // nil: the use succeeds
	}{
		{"an unused once-grant is used",
			func(t *testing.T) (string, string) { return granted(t, pushRequest(), onceGrant()) },
			t0.Add(time.Minute), nil},
		{"an unused once-grant is used up to just before its until",
			func(t *testing.T) (string, string) { return granted(t, pushRequest(), onceGrant()) },
			t0.Add(time.Hour - time.Millisecond), nil},
		{"a once-grant at its until has expired",
			func(t *testing.T) (string, string) { return granted(t, pushRequest(), onceGrant()) },
			t0.Add(time.Hour), ErrGrantExpired},
		{"a timed grant is not used up",
			func(t *testing.T) (string, string) { return granted(t, pushRequest(), timedGrant(time.Hour)) },
			t0.Add(time.Minute), ErrNoGrant},
		{"an unknown id has no grant",
			func(t *testing.T) (string, string) {
				path, _ := granted(t, pushRequest(), onceGrant())
				return path, "req_00000000"
			},
			t0, ErrNoGrant},
		{"a pending request has no grant",
			func(t *testing.T) (string, string) {
				path := logPath(t)
				return path, submit(t, path, pushRequest()).ID
			},
			t0, ErrNoGrant},
		{"an approval without a grant has none",
			func(t *testing.T) (string, string) {
				path := logPath(t)
				id := submit(t, path, pushRequest()).ID
				if err := Decide(t.Context(), path, id, Decision{Status: StatusApproved, DecidedBy: "cli"}, t0); err != nil {
					t.Fatal(err)
				}
				return path, id
			},
			t0, ErrNoGrant},
		{"a denial has no grant",
			func(t *testing.T) (string, string) {
				path := logPath(t)
				id := submit(t, path, pushRequest()).ID
				if err := Decide(t.Context(), path, id, Decision{Status: StatusDenied, DecidedBy: "cli"}, t0); err != nil {
					t.Fatal(err)
				}
				return path, id
			},
			t0, ErrNoGrant},
		{"a grant in a log without its key is none",
			func(t *testing.T) (string, string) {
				path, id := granted(t, pushRequest(), onceGrant())
				if err := os.Remove(KeyPath(path)); err != nil {
					t.Fatal(err)
				}
				return path, id
			},
			t0, ErrNoGrant},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path, id := tc.setup(t)
			before := configtest.ReadFile(t, path)
			g, err := Open(path).UseGrant(t.Context(), id, tc.now)
			if tc.want != nil {
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), id) {
					t.Errorf("UseGrant: err %v, want %v naming %s", err, tc.want, id)
				}
				if after := configtest.ReadFile(t, path); !bytes.Equal(after, before) {
					t.Errorf("a refused UseGrant wrote %q", after[len(before):])
				}
				return
			}
			at := tc.now.UTC().Truncate(time.Millisecond)
			if err != nil || !g.Once || g.UsedAt == nil || !g.UsedAt.Equal(at) {
				t.Fatalf("UseGrant = %+v, %v; want the once-grant used at %v", g, err, at)
			}
			ls := lines(t, configtest.ReadFile(t, path))
			if len(ls) != 3 {
				t.Fatalf("the log has %d lines, want the request, the grant and its use", len(ls))
			}
			m := object(t, ls[2])
			if got, want := keys(m), keys(object(t, ls[1])); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("the use line has fields %q, want the grant line's %q", got, want)
			}
			if string(m["sig"]) == string(object(t, ls[1])["sig"]) {
				t.Error("the use line carries the grant line's sig, want its own")
			}
			r, warns := record(t, path, id)
			if r.Grant == nil || r.Grant.UsedAt == nil || !r.Grant.UsedAt.Equal(at) || len(warns) != 0 {
				t.Errorf("Read: %s, warnings %v; want the grant used at %v", show([]*Record{r}), warns, at)
			}
			if got := GrantStatus(r, tc.now); got != "approved once, used" {
				t.Errorf("GrantStatus = %q, want \"approved once, used\"", got)
			}
			if _, err := Open(path).UseGrant(t.Context(), id, tc.now); !errors.Is(err, ErrGrantUsed) {
				t.Errorf("a second UseGrant: err %v, want ErrGrantUsed", err)
			}
		})
	}
}

// One call and one only consumes a once-grant, whatever the number of
// callers at once and however they share Logs.
func TestUseGrantHasExactlyOneWinner(t *testing.T) {
	t.Parallel()
	const n = 50
	cases := []struct {
		name string
		log  func(shared *Log, path string) *Log
	}{
		{"50 goroutines sharing one Log", func(shared *Log, _ string) *Log { return shared }},
		{"50 Logs on one path, as separate processes would have", func(_ *Log, path string) *Log { return Open(path) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path, id := granted(t, pushRequest(), onceGrant())
			shared := Open(path)
			errs := make([]error, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				l := tc.log(shared, path)
				wg.Go(func() {
					<-start
					_, errs[i] = l.UseGrant(context.Background(), id, t0.Add(time.Minute))
				})
			}
			close(start)
			wg.Wait()
			won, lost := 0, 0
			for i, err := range errs {
				switch {
				case err == nil:
					won++
				case errors.Is(err, ErrGrantUsed):
					lost++
				default:
					t.Errorf("UseGrant %d: %v", i, err)
				}
			}
			if won != 1 || lost != n-1 {
				t.Errorf("%d calls used the grant and %d got ErrGrantUsed, want 1 and %d", won, lost, n-1)
			}
			if got := usedLines(t, path); got != 1 {
				t.Errorf("the log has %d used_at lines, want 1", got)
			}
		})
	}
}

// The helper processes of TestUseGrantAcrossProcesses.
const (
	useHelperEnv = "WRAPTOOL_REQUESTS_USE_HELPER"
	useIDEnv     = "WRAPTOOL_REQUESTS_USE_ID"
)

// TestUseGrantHelperProcess is not a test: it is one of the processes of
// TestUseGrantAcrossProcesses. Its goroutines try to use the grant, each
// through a Log of its own, and it prints how many won and lost.
func TestUseGrantHelperProcess(t *testing.T) {
	if os.Getenv(useHelperEnv) != "1" {
		t.Skip("runs only as a helper process of TestUseGrantAcrossProcesses")
	}
	path, id := os.Getenv(helperPathEnv), os.Getenv(useIDEnv)
	n, _ := strconv.Atoi(os.Getenv(helperCountEnv))
	awaitStartSignal()
	var mu sync.Mutex
	won, lost := 0, 0
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			_, err := Open(path).UseGrant(context.Background(), id, t0.Add(time.Minute))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, ErrGrantUsed):
				lost++
			default:
				fmt.Fprintf(os.Stderr, "helper: UseGrant: %v\n", err)
				os.Exit(1)
			}
		})
	}
	wg.Wait()
	fmt.Printf("won=%d lost=%d\n", won, lost)
	os.Exit(0)
}

func TestUseGrantAcrossProcesses(t *testing.T) {
	t.Parallel()
	const procs, each = 5, 10
	path, id := granted(t, pushRequest(), onceGrant())
	startFile := path + ".start"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	outs := make([]*bytes.Buffer, procs)
	cmds := make([]*exec.Cmd, procs)
	for i := range procs {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestUseGrantHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), useHelperEnv+"=1", helperPathEnv+"="+path, useIDEnv+"="+id,
			helperCountEnv+"="+strconv.Itoa(each), helperStartEnv+"="+startFile)
		outs[i] = &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	if err := os.WriteFile(startFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	won, lost := 0, 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v\n%s", i, err, outs[i])
		}
		var w, l int
		if _, err := fmt.Sscanf(outs[i].String(), "won=%d lost=%d", &w, &l); err != nil {
			t.Fatalf("helper %d printed %q: %v", i, outs[i], err)
		}
		won, lost = won+w, lost+l
	}
	if won != 1 || lost != procs*each-1 {
		t.Errorf("%d calls used the grant and %d got ErrGrantUsed, want 1 and %d", won, lost, procs*each-1)
	}
	if got := usedLines(t, path); got != 1 {
		t.Errorf("the log has %d used_at lines, want 1", got)
	}
}

// A use that cannot be written is an error, and leaves the grant unused.
func TestUseGrantThatCannotWriteFails(t *testing.T) {
	t.Parallel()
	path, id := granted(t, pushRequest(), onceGrant())
	l := Open(path)
	before := configtest.ReadFile(t, path)
	release := jsonltest.HoldLock(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.UseGrant(ctx, id, t0); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), path) {
		t.Errorf("UseGrant with the lock held: err %v, want context.Canceled naming the file", err)
	}
	if after := configtest.ReadFile(t, path); !bytes.Equal(after, before) {
		t.Errorf("the log changed: %q", after[len(before):])
	}
	release()
	if _, err := l.UseGrant(t.Context(), id, t0); err != nil {
		t.Errorf("UseGrant once the lock is free: %v", err)
	}
}

// An older copy of a grant's decision, appended after its use (a replay),
// does not revive it.
func TestAReplayedGrantLineStaysUsed(t *testing.T) {
	t.Parallel()
	path, id := granted(t, pushRequest(), onceGrant())
	grantLine := lines(t, configtest.ReadFile(t, path))[1]
	if _, err := Open(path).UseGrant(t.Context(), id, t0); err != nil {
		t.Fatal(err)
	}
	appendRaw(t, path, grantLine+"\n")
	r, warns := record(t, path, id)
	if r.Status != StatusApproved || r.Grant == nil || r.Grant.UsedAt == nil {
		t.Errorf("record %s, want the grant still used", show([]*Record{r}))
	}
	if len(warns) != 1 || warns[0].Line != 4 || !strings.Contains(warns[0].Err, "stays used") {
		t.Errorf("warnings %v, want one for line 4 saying the grant stays used", warns)
	}
	if got := ActiveGrants([]*Record{r}, t0); got != nil {
		t.Errorf("ActiveGrants = %s, want none", show(got))
	}
	if _, err := Open(path).UseGrant(t.Context(), id, t0); !errors.Is(err, ErrGrantUsed) {
		t.Errorf("UseGrant after the replay: err %v, want ErrGrantUsed", err)
	}
}

// A Log remembers a use it has seen even when the file is replaced by an
// older copy in which the grant was not used yet.
func TestALogRemembersAUseAcrossAnOlderCopy(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		restore func(t *testing.T, path string, old []byte)
	}{
		{"an older copy renamed over the log", func(t *testing.T, path string, old []byte) {
			if err := os.WriteFile(path+".old", old, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(path+".old", path); err != nil {
				t.Fatal(err)
			}
		}},
		{"the log truncated back to an older size", func(t *testing.T, path string, old []byte) {
			if err := os.Truncate(path, int64(len(old))); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path, id := granted(t, pushRequest(), onceGrant())
			old := configtest.ReadFile(t, path)
			l, other := Open(path), Open(path)
			if _, _, err := other.Records(t.Context()); err != nil { // sees the grant unused
				t.Fatal(err)
			}
			if _, err := l.UseGrant(t.Context(), id, t0); err != nil {
				t.Fatal(err)
			}
			recs, _, err := other.Records(t.Context()) // sees the use
			if err != nil || recs[0].Grant.UsedAt == nil {
				t.Fatalf("Records = %s, %v; want the grant used", show(recs), err)
			}
			tc.restore(t, path, old)
			if _, err := l.UseGrant(t.Context(), id, t0); !errors.Is(err, ErrGrantUsed) {
				t.Errorf("UseGrant on the older copy: err %v, want ErrGrantUsed", err)
			}
			for name, log := range map[string]*Log{"the Log that used it": l, "another Log that saw it used": other} {
				recs, _, err := log.Records(t.Context())
				if err != nil || len(recs) != 1 || recs[0].Grant == nil || recs[0].Grant.UsedAt == nil {
					t.Errorf("%s: Records = %s, %v; want the grant used", name, show(recs), err)
				}
				if got := ActiveGrants(recs, t0); got != nil {
					t.Errorf("%s: ActiveGrants = %s, want none", name, show(got))
				}
			}
			if got := usedLines(t, path); got != 0 {
				t.Errorf("the restored log has %d used_at lines, want 0 (nothing was written)", got)
			}
			// A fresh reader has no memory: that is what the Log is for.
			if r, _ := record(t, path, id); r.Grant == nil || r.Grant.UsedAt != nil {
				t.Errorf("Read of the older copy: %s, want the grant unused", show([]*Record{r}))
			}
		})
	}
}

// A Log folds grants with the key beside the log: when the key first
// appears it reads on without starting again, and when it changes it
// judges every grant anew.
func TestALogFollowsTheKey(t *testing.T) {
	t.Parallel()
	t.Run("a key created by another writer costs no re-read", func(t *testing.T) {
		t.Parallel()
		path := logPath(t)
		l := Open(path)
		for i := range 50 {
			logSubmit(t, l, Request{Tool: "tool", Subcommand: []string{strconv.Itoa(i)}, Rationale: strings.Repeat("r", 1000)})
		}
		id := logSubmit(t, l, pushRequest()).ID
		size, read := fileSize(t, path), l.bytesRead
		if err := Decide(t.Context(), path, id, Decision{Status: StatusApproved, DecidedBy: "cli", Grant: onceGrant()}, t0); err != nil {
			t.Fatal(err)
		}
		if _, err := l.UseGrant(t.Context(), id, t0); err != nil {
			t.Fatalf("UseGrant of a grant another writer made: %v", err)
		}
		if grown, got := fileSize(t, path)-size, l.bytesRead-read; got > grown+readSlack {
			t.Errorf("UseGrant read %d bytes of a %d-byte log, want at most the %d appended + %d", got, fileSize(t, path), grown, readSlack)
		}
	})
	t.Run("a replaced key voids the grants made with the old one", func(t *testing.T) {
		t.Parallel()
		path, id := granted(t, pushRequest(), onceGrant())
		l := Open(path)
		if _, err := l.Submit(t.Context(), Request{Tool: "x", Rationale: "why"}, t0); err != nil {
			t.Fatal(err)
		}
		writeKey(t, path, testKey)
		if _, err := l.UseGrant(t.Context(), id, t0); !errors.Is(err, ErrNoGrant) {
			t.Errorf("UseGrant under another key: err %v, want ErrNoGrant", err)
		}
	})
	t.Run("a loosened key stops every writer, saying how to fix it", func(t *testing.T) {
		t.Parallel()
		path, id := granted(t, pushRequest(), onceGrant())
		if err := os.Chmod(KeyPath(path), 0o640); err != nil {
			t.Fatal(err)
		}
		l := Open(path)
		if _, err := l.UseGrant(t.Context(), id, t0); !errors.Is(err, ErrBadKey) || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("UseGrant: err %v, want ErrBadKey with the chmod", err)
		}
		if err := os.Chmod(KeyPath(path), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := l.UseGrant(t.Context(), id, t0); err != nil {
			t.Errorf("UseGrant once the key is private: %v", err)
		}
	})
}
