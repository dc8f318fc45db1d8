package actors

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/policy/requests"
)

// grantLog writes a request log at path with one approved grant per term
// (a negative duration is a once-grant lasting its absolute value), decided
// now; it returns the ids in order.
func grantLog(t *testing.T, path string, terms []time.Duration) []string {
	t.Helper()
	l := requests.Open(path)
	var ids []string
	for i, d := range terms {
		now := time.Now()
		s, err := l.Submit(context.Background(), requests.Request{Tool: "git", Subcommand: []string{"push"},
			Flags: []string{"--f" + string(rune('a'+i%26)) + string(rune('a'+i/26))}, Rationale: "r"}, now)
		if err != nil {
			t.Fatal(err)
		}
		g := &requests.Grant{Until: now.Add(d), Config: "/etc/wraptool/config.yaml"}
		if d < 0 {
			g.Once, g.Until = true, now.Add(-d)
		}
		if err := l.Decide(context.Background(), s.ID, requests.Decision{Status: requests.StatusApproved, DecidedBy: "cli", Grant: g}, now); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	return ids
}

// TestGrantsExpireInOrder has many grants expire, in a fake clock: the
// grants actor hands the holder one change per expiry, each at its grant's
// until to the instant, nearest first, whatever the order they were decided
// in.
func TestGrantsExpireInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "requests.jsonl")
		// Decided in an order unrelated to their expiry; two share an until.
		terms := []time.Duration{7 * time.Minute, time.Minute, -3 * time.Minute, 12 * time.Hour, 90 * time.Second,
			-20 * time.Hour, 7 * time.Minute, 168 * time.Hour, 2 * time.Minute, 45 * time.Second}
		ids := grantLog(t, path, terms)
		start := time.Now()
		type expiry struct {
			id string
			at time.Duration
		}
		var want []expiry
		for i, d := range terms {
			want = append(want, expiry{ids[i], max(d, -d)})
		}
		slices.SortStableFunc(want, func(a, b expiry) int { return int(a.at - b.at) })

		out := make(chan messages.GrantsChanged)
		snaps := newTestSnapshots(&Snapshot{Config: &config.Config{MCP: config.MCP{RequestLog: path}}})
		g := NewGrants(GrantsOptions{Snapshots: snaps, LogChanged: make(messages.Doorbell, 1), Out: out})
		if got := len(g.Prime(path)); got != len(terms) {
			t.Fatalf("primed with %d grants, want %d", got, len(terms))
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { g.Run(ctx); close(done) }()

		left := map[string]bool{}
		for _, id := range ids {
			left[id] = true
		}
		for i := 0; i < len(want); {
			m := <-out
			at := time.Since(start)
			// Grants sharing an until leave in one change.
			gone := 0
			for _, r := range m.Grants {
				if !left[r.ID] {
					t.Fatalf("an expired grant %s came back", r.ID)
				}
			}
			for id := range left {
				if !slices.ContainsFunc(m.Grants, func(r *requests.Record) bool { return r.ID == id }) {
					delete(left, id)
					gone++
				}
			}
			for j := i; j < i+gone; j++ {
				if want[j].at != at {
					t.Errorf("change %d at %s, want grant %s to expire at %s", j, at, want[j].id, want[j].at)
				}
			}
			if gone == 0 || m.Cause != "grant_expired" {
				t.Errorf("change at %s: %d gone, cause %q", at, gone, m.Cause)
			}
			i += gone
		}
		cancel()
		<-done
	})
}

// TestGrantsFollowTheLog shows the grants actor re-reading the log on a
// ring: a new grant comes into force, a used once-grant leaves (cause
// grant_used), and an older copy of the log cannot bring it back.
func TestGrantsFollowTheLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "requests.jsonl")
		out := make(chan messages.GrantsChanged)
		bell := make(messages.Doorbell, 1)
		snaps := newTestSnapshots(&Snapshot{Config: &config.Config{MCP: config.MCP{RequestLog: path}}})
		g := NewGrants(GrantsOptions{Snapshots: snaps, LogChanged: bell, Out: out})
		if got := g.Prime(path); len(got) != 0 {
			t.Fatalf("primed with %d grants from no log", len(got))
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { g.Run(ctx); close(done) }()

		ids := grantLog(t, path, []time.Duration{-time.Hour})
		ring(bell)
		if m := <-out; len(m.Grants) != 1 || m.Grants[0].ID != ids[0] || m.Cause != "grant" {
			t.Fatalf("after the decision: %+v", m)
		}
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := requests.Open(path).UseGrant(context.Background(), ids[0], time.Now()); err != nil {
			t.Fatal(err)
		}
		ring(bell)
		if m := <-out; len(m.Grants) != 0 || m.Cause != "grant_used" {
			t.Fatalf("after the use: %+v", m)
		}
		// A restored backup from before the use: the grant stays used.
		configtest.WriteFile(t, path, string(before), 0o600)
		ring(bell)
		synctest.Wait()
		select {
		case m := <-out:
			t.Errorf("an older copy of the log revived a used grant: %+v", m)
		default:
		}
		cancel()
		<-done
	})
}

// TestGrantsAnswerWaits: a wait for a decision is answered once any writer
// decides (here a Log the actor does not own, with no doorbell rung: the
// poll finds it), at once for a request already decided, never for one
// still pending; a wait whose caller stopped is forgotten; a wait still
// registered when the actor stops has its channel closed; Watch fails once
// the actor has stopped.
func TestGrantsAnswerWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "requests.jsonl")
		l := requests.Open(path)
		submit := func(flag string) string {
			s, err := l.Submit(context.Background(), requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{flag}, Rationale: "r"}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			return s.ID
		}
		deny := func(id string) {
			if err := l.Decide(context.Background(), id, requests.Decision{Status: requests.StatusDenied, Reason: "no", DecidedBy: "cli"}, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		early, waited, forgotten, never := submit("--a"), submit("--b"), submit("--c"), submit("--d")
		deny(early)

		snaps := newTestSnapshots(&Snapshot{Config: &config.Config{MCP: config.MCP{RequestLog: path}}})
		waits, stopped := make(chan messages.AwaitDecision), make(chan struct{})
		g := NewGrants(GrantsOptions{Snapshots: snaps, LogChanged: make(messages.Doorbell, 1), Out: make(chan messages.GrantsChanged, 16),
			Waits: waits, Stopped: stopped})
		links := messages.GrantsLinks{Waits: waits, Stopped: stopped}
		g.Prime(path)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { g.Run(ctx); close(done) }()

		watch := func(ctx context.Context, id string) <-chan requests.Record {
			ch, err := links.Watch(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return ch
		}
		if r := <-watch(t.Context(), early); r.ID != early || r.Status != requests.StatusDenied {
			t.Errorf("already decided: %+v", r)
		}

		start := time.Now()
		w := watch(t.Context(), waited)
		stopCtx, stop := context.WithCancel(t.Context())
		f := watch(stopCtx, forgotten)
		n := watch(t.Context(), never)
		stop()
		deny(waited)
		deny(forgotten)
		r := <-w
		if r.ID != waited || r.Status != requests.StatusDenied || r.Reason == nil || *r.Reason != "no" {
			t.Errorf("decided elsewhere: %+v", r)
		}
		if took := time.Since(start); took > DecisionPoll {
			t.Errorf("answered after %v, want within %v", took, DecisionPoll)
		}
		synctest.Wait()
		select {
		case r := <-f:
			// Allowed only if the decision was seen before the stop was:
			// it was not, the stop came first.
			t.Errorf("a forgotten wait was answered: %+v", r)
		case r := <-n:
			t.Errorf("a pending request's wait was answered: %+v", r)
		default:
		}
		time.Sleep(10 * DecisionPoll) // fake time: ten more polls
		synctest.Wait()
		select {
		case r := <-n:
			t.Errorf("a pending request's wait was answered: %+v", r)
		default:
		}
		cancel()
		<-done
		if r, ok := <-n; ok {
			t.Errorf("a wait still registered at the stop got %+v, want its channel closed", r)
		}
		if _, err := links.Watch(t.Context(), never); err == nil {
			t.Errorf("Watch after the actor stopped: no error")
		}
	})
}
