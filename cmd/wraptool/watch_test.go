package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wraptool/wraptool/policy/requests"
)

// fakeDecider records what the prompter asks of it, and prints as the real
// one does: the request when shown, the outcome when decided.
type fakeDecider struct {
	out   io.Writer
	calls []string
	// fail holds the error a call ("once req_1", `deny req_1 "r"`)
	// returns, the first time it is made.
	fail map[string]error
	// unlisted holds the warning of each request with flags its help does
	// not list, by id.
	warnings map[string]string
	// graves holds the warning of each request that needs i-know, by id.
	graves map[string]string
}

func (f *fakeDecider) unlisted(_ context.Context, r *requests.Record) string {
	return f.warnings[r.ID]
}

func (f *fakeDecider) grave(_ context.Context, r *requests.Record) string {
	return f.graves[r.ID]
}

func (f *fakeDecider) show(_ context.Context, r *requests.Record) {
	fmt.Fprintf(f.out, "[show %s]\n", requests.Token(r.ID))
}

func (f *fakeDecider) approve(_ context.Context, r *requests.Record, ap approval) error {
	kind := "apply"
	switch ap.grant {
	case watchOnce:
		kind = "once"
	case watchHour:
		kind = "hour"
	}
	if ap.unlistedOK {
		kind += "+unlisted"
	}
	if ap.iKnow {
		kind += "+iknow"
	}
	return f.done(kind+" "+r.ID, "approved "+r.ID)
}

func (f *fakeDecider) deny(_ context.Context, r *requests.Record, reason string) error {
	return f.done(fmt.Sprintf("deny %s %q", r.ID, reason), "denied "+r.ID)
}

func (f *fakeDecider) done(call, outcome string) error {
	f.calls = append(f.calls, call)
	if err, ok := f.fail[call]; ok {
		delete(f.fail, call)
		return err
	}
	fmt.Fprintln(f.out, outcome)
	return nil
}

// promptStep is one thing that happens to a running prompter: time
// passes, then the log changes or the operator types (one read).
type promptStep struct {
	wait   time.Duration
	update *logUpdate
	keys   string
	// ends says the prompter must have ended after this step.
	ends bool
}

func pendingRecord(id string) *requests.Record {
	return &requests.Record{ID: id, Tool: "git", Subcommand: []string{"push"}, Flags: []string{}, Status: requests.StatusPending}
}

func exactRecord(id string) *requests.Record {
	r := pendingRecord(id)
	r.Call = &requests.Call{Tool: "git_push", Command: []string{"git", "push", "--force"}}
	return r
}

func decidedRecord(id, status, by string) *requests.Record {
	r := pendingRecord(id)
	r.Status, r.DecidedBy = status, by
	return r
}

// past is a wait that ends a request's first second.
const past = keyGuard + 100*time.Millisecond

func TestWatchPrompter(t *testing.T) {
	t.Parallel()
	decidedElsewhere := fmt.Errorf("%w: req_1 is approved", requests.ErrDecided)
	tests := []struct {
		name    string
		pending []*requests.Record
		fail    map[string]error
		unl     map[string]string // the decider's unlisted warnings
		graves  map[string]string // the decider's i-know warnings
		steps   []promptStep
		want    []string // the decisions made, in order
		wantOut []string // in this order in the output
	}{
		{
			name:    "o after the first second grants once",
			pending: []*requests.Record{pendingRecord("req_1")},
			steps:   []promptStep{{wait: past, keys: "o"}},
			want:    []string{"once req_1"},
			wantOut: []string{"1 pending request", "[show req_1]", promptKeys + promptApply, "o\n", "approved req_1", "waiting for requests"},
		},
		{
			name:    "h grants an hour",
			pending: []*requests.Record{pendingRecord("req_1")},
			steps:   []promptStep{{wait: past, keys: "h"}},
			want:    []string{"hour req_1"},
		},
		{
			name:    "a key in the request's first second is ignored",
			pending: []*requests.Record{pendingRecord("req_1")},
			steps:   []promptStep{{keys: "d"}, {wait: keyGuard - time.Millisecond, keys: "h"}, {wait: 2 * time.Millisecond, keys: "o"}},
			want:    []string{"once req_1"},
		},
		{
			name: "keys typed while no request is shown are dropped, and the next one's first second still counts",
			steps: []promptStep{
				{keys: "o"},
				{wait: 5 * time.Second, keys: "h"},
				{update: &logUpdate{Added: []*requests.Record{pendingRecord("req_1")}}, keys: "o"},
				{wait: past, keys: "s"},
			},
			wantOut: []string{"waiting for requests", "[show req_1]", "s\nskipped req_1; it stays pending"},
		},
		{
			name:    "the word apply then Enter applies",
			pending: []*requests.Record{pendingRecord("req_1")},
			steps:   []promptStep{{wait: past, keys: "app"}, {keys: "ly"}, {keys: "\r"}},
			want:    []string{"apply req_1"},
			wantOut: []string{"apply\n", "approved req_1"},
		},
		{
			name:    "backspace corrects the word",
			pending: []*requests.Record{pendingRecord("req_1")},
			steps:   []promptStep{{wait: past, keys: "applx\x7fy\r"}},
			want:    []string{"apply req_1"},
		},
		{
			name:    "a word other than apply is not an answer",
			pending: []*requests.Record{pendingRecord("req_1")},
			steps:   []promptStep{{wait: past, keys: "yes\r"}, {keys: "o"}},
			want:    []string{"once req_1"},
			wantOut: []string{`"yes" is not an answer`, promptKeys, "approved req_1"},
		},
		{
			name:    "apply is neither offered nor taken for an exact-call request",
			pending: []*requests.Record{exactRecord("req_1")},
			steps:   []promptStep{{wait: past, keys: "apply\r"}, {keys: "o"}},
			want:    []string{"once req_1"},
			wantOut: []string{promptKeys + " ", "apply is not offered for an exact-call request", "requests approve req_1 --apply", promptKeys, "approved req_1"},
		},
		{
			name:    "d asks for a reason, which Enter sends",
			pending: []*requests.Record{pendingRecord("req_1")},
			steps:   []promptStep{{wait: past, keys: "d"}, {keys: "use --force-with-lease"}, {keys: "\r"}},
			want:    []string{`deny req_1 "use --force-with-lease"`},
			wantOut: []string{"d\n", reasonPrompt + "use --force-with-lease\n", "denied req_1"},
		},
		{
			name:    "an empty reason is allowed",
			pending: []*requests.Record{pendingRecord("req_1")},
			steps:   []promptStep{{wait: past, keys: "d"}, {keys: "\r"}},
			want:    []string{`deny req_1 ""`},
		},
		{
			name:    "the reason is typed as a line: o and h in it decide nothing",
			pending: []*requests.Record{pendingRecord("req_1")},
			steps:   []promptStep{{wait: past, keys: "d"}, {keys: "oh no, wrong\x7f\x7f\x7f\x7f\x7fright"}, {keys: "\r"}},
			want:    []string{`deny req_1 "oh no, right"`},
		},
		{
			name:    "Esc goes back from the reason without denying",
			pending: []*requests.Record{pendingRecord("req_1")},
			steps:   []promptStep{{wait: past, keys: "d"}, {keys: "x"}, {keys: "\x1b"}, {keys: "s"}},
			wantOut: []string{"(not denied)", promptKeys, "skipped req_1"},
		},
		{
			name:    "Alt+o, arrow keys and function keys decide nothing",
			pending: []*requests.Record{pendingRecord("req_1")},
			steps:   []promptStep{{wait: past, keys: "\x1bo"}, {keys: "\x1b[A"}, {keys: "\x1bOH"}, {keys: "\x1b[1;5D"}, {keys: "s"}},
			wantOut: []string{"skipped req_1"},
		},
		{
			name:    "s skips to the next, oldest first, whose first second starts anew",
			pending: []*requests.Record{pendingRecord("req_1"), pendingRecord("req_2")},
			steps:   []promptStep{{wait: past, keys: "s"}, {keys: "h"}, {wait: past, keys: "o"}},
			want:    []string{"once req_2"},
			wantOut: []string{"2 pending requests, oldest first", "(1 more pending after this one)", "[show req_1]", "skipped req_1", "[show req_2]", "approved req_2"},
		},
		{
			name:    "a key typed after a decision, in the same read, does not decide the next request",
			pending: []*requests.Record{pendingRecord("req_1"), pendingRecord("req_2")},
			steps:   []promptStep{{wait: past, keys: "oo"}, {wait: past, keys: "h"}},
			want:    []string{"once req_1", "hour req_2"},
		},
		{
			name:    "new requests wait their turn",
			pending: []*requests.Record{pendingRecord("req_1")},
			steps: []promptStep{
				{wait: 100 * time.Millisecond, update: &logUpdate{Added: []*requests.Record{pendingRecord("req_2"), decidedRecord("req_3", "denied", "cli")}}},
				{wait: past, keys: "s"}, {wait: past, keys: "o"},
			},
			want:    []string{"once req_2"},
			wantOut: []string{"[show req_1]", "skipped req_1", "[show req_2]", "approved req_2", "waiting for requests"},
		},
		{
			name:    "a request decided elsewhere while shown is left, saying so",
			pending: []*requests.Record{pendingRecord("req_1"), pendingRecord("req_2")},
			steps: []promptStep{
				{wait: 100 * time.Millisecond, update: &logUpdate{Decided: []*requests.Record{decidedRecord("req_1", "approved", "admin")}}},
				{wait: past, keys: "o"},
			},
			want:    []string{"once req_2"},
			wantOut: []string{"[show req_1]", "req_1 was approved meanwhile (decided by admin); moving on", "[show req_2]", "approved req_2"},
		},
		{
			name:    "a request decided elsewhere before its turn is never shown",
			pending: []*requests.Record{pendingRecord("req_1"), pendingRecord("req_2")},
			steps: []promptStep{
				{update: &logUpdate{Decided: []*requests.Record{decidedRecord("req_2", "denied", "client")}}},
				{wait: past, keys: "s"},
			},
			wantOut: []string{"skipped req_1", "waiting for requests"},
		},
		{
			name:    "a decision that finds the request decided is a message, and the next request comes",
			pending: []*requests.Record{pendingRecord("req_1"), pendingRecord("req_2")},
			fail:    map[string]error{"once req_1": decidedElsewhere},
			steps:   []promptStep{{wait: past, keys: "o"}, {wait: past, keys: "o"}},
			want:    []string{"once req_1", "once req_2"},
			wantOut: []string{"the request is already decided: req_1 is approved; moving on", "[show req_2]", "approved req_2"},
		},
		{
			name:    "a refusal keeps the request and asks again, with no new first second",
			pending: []*requests.Record{pendingRecord("req_1")},
			fail:    map[string]error{"once req_1": errors.New("not granted, req_1 stays pending: no such tool")},
			steps:   []promptStep{{wait: past, keys: "o"}, {keys: "d"}, {keys: "\r"}},
			want:    []string{"once req_1", `deny req_1 ""`},
			wantOut: []string{"not granted, req_1 stays pending: no such tool\n" + promptKeys, "denied req_1"},
		},
		{
			name:    "an effect that changed is shown again, with a new first second",
			pending: []*requests.Record{pendingRecord("req_1")},
			fail:    map[string]error{"apply req_1": errShowAgain},
			steps:   []promptStep{{wait: past, keys: "apply\r"}, {keys: "o"}, {wait: past, keys: "apply\r"}},
			want:    []string{"apply req_1", "apply req_1"},
		},
		{
			name:    "the log's problems are printed and the line being typed drawn again",
			pending: []*requests.Record{pendingRecord("req_1")},
			steps: []promptStep{
				{wait: past, keys: "ap"},
				{update: &logUpdate{Problems: []string{"warning: skipped line 3"}}},
				{keys: "ply\r"},
			},
			want:    []string{"apply req_1"},
			wantOut: []string{promptKeys + promptApply + " ap\nwarning: skipped line 3\n" + promptKeys + promptApply + " ap"},
		},
		{
			name:    "what the log holds is escaped",
			pending: []*requests.Record{pendingRecord("req_\x1b[2J\u202e")},
			steps: []promptStep{
				{update: &logUpdate{Decided: []*requests.Record{decidedRecord("req_\x1b[2J\u202e", "approved", "adm\x1b]0;x\x07in")}}},
			},
			wantOut: []string{`req_\x1b[2J\u202e was approved meanwhile (decided by adm\x1b]0;x\ain)`},
		},
		{
			name:    "a request with unlisted flags offers the word unlisted, then o approves once with them",
			pending: []*requests.Record{pendingRecord("req_1")},
			unl:     map[string]string{"req_1": "--rece (NOT IN 'git push --help'): the help does not list it"},
			steps:   []promptStep{{wait: past, keys: "unlisted\r"}, {wait: past, keys: "o"}},
			want:    []string{"once+unlisted req_1"},
			wantOut: []string{"[show req_1]", promptUnlistedKeys + " unlisted\n",
				"warning: --rece (NOT IN 'git push --help'): the help does not list it\n" + unlistedPrompt + "o\n", "approved req_1"},
		},
		{
			name:    "h after the word unlisted approves for an hour with them",
			pending: []*requests.Record{pendingRecord("req_1")},
			unl:     map[string]string{"req_1": "--rece (NOT IN 'git push --help')"},
			steps:   []promptStep{{wait: past, keys: "unlisted\r"}, {wait: past, keys: "h"}},
			want:    []string{"hour+unlisted req_1"},
		},
		{
			name:    "the key after the word unlisted has a first second of its own: unlisted⏎o in one go approves nothing",
			pending: []*requests.Record{pendingRecord("req_1")},
			unl:     map[string]string{"req_1": "--rece (NOT IN 'git push --help')"},
			steps:   []promptStep{{wait: past, keys: "unlisted\ro"}, {keys: "h"}, {wait: past, keys: "\x1b"}, {keys: "s"}},
			wantOut: []string{unlistedPrompt, "(not approved)", promptUnlistedKeys, "skipped req_1"},
		},
		{
			name:    "one key does not approve unlisted flags: o is refused by the decider and asked again",
			pending: []*requests.Record{pendingRecord("req_1")},
			unl:     map[string]string{"req_1": "--rece (NOT IN 'git push --help')"},
			fail:    map[string]error{"once req_1": errors.New("not approved, req_1 stays pending: --rece; approve with " + unlistedHint + " if you are sure")},
			steps:   []promptStep{{wait: past, keys: "o"}, {keys: "s"}},
			want:    []string{"once req_1"},
			wantOut: []string{"type unlisted⏎, then o or h", promptUnlistedKeys, "skipped req_1"},
		},
		{
			name:    "the word unlisted for a request whose flags are all listed says so",
			pending: []*requests.Record{pendingRecord("req_1")},
			steps:   []promptStep{{wait: past, keys: "unlisted\r"}, {keys: "o"}},
			want:    []string{"once req_1"},
			wantOut: []string{"every flag of req_1 is listed in its help", promptKeys + promptApply, "approved req_1"},
		},
		{
			name:    "a request that can hand the credentials away offers the word i-know, then o approves once, confirmed",
			pending: []*requests.Record{pendingRecord("req_1")},
			graves:  map[string]string{"req_1": "approving hands the assistant what can send your credentials away …: --endpoint-url (sends-credentials)"},
			steps:   []promptStep{{wait: past, keys: "i-know\r"}, {wait: past, keys: "o"}},
			want:    []string{"once+iknow req_1"},
			wantOut: []string{"[show req_1]", promptGraveKeys + " i-know\n", "confirmed: approving hands the assistant", promptKeys + promptApply + " o\n", "approved req_1"},
		},
		{
			name:    "after i-know, apply is confirmed too",
			pending: []*requests.Record{pendingRecord("req_1")},
			graves:  map[string]string{"req_1": "approving hands the assistant what can send your credentials away …: --endpoint-url (sends-credentials)"},
			steps:   []promptStep{{wait: past, keys: "i-know\r"}, {wait: past, keys: "apply\r"}},
			want:    []string{"apply+iknow req_1"},
		},
		{
			name:    "the key after i-know has a first second of its own: i-know⏎o in one go approves nothing",
			pending: []*requests.Record{pendingRecord("req_1")},
			graves:  map[string]string{"req_1": "approving hands the assistant what can send your credentials away …: --endpoint-url (sends-credentials)"},
			steps:   []promptStep{{wait: past, keys: "i-know\ro"}, {wait: past, keys: "s"}},
			wantOut: []string{"confirmed: ", "skipped req_1"},
		},
		{
			name:    "one key is not the word: o without i-know goes to the decider unconfirmed, which refuses it",
			pending: []*requests.Record{pendingRecord("req_1")},
			graves:  map[string]string{"req_1": "approving hands the assistant what can send your credentials away …: --endpoint-url (sends-credentials)"},
			fail:    map[string]error{"once req_1": errors.New("not approved, req_1 stays pending: --endpoint-url (sends-credentials); approve with " + iKnowHint + " if you mean it")},
			steps:   []promptStep{{wait: past, keys: "o"}, {keys: "s"}},
			want:    []string{"once req_1"},
			wantOut: []string{"type i-know⏎, then o, h or apply", promptGraveKeys, "skipped req_1"},
		},
		{
			name:    "the confirmation is for one request: the next one asks again",
			pending: []*requests.Record{pendingRecord("req_1"), pendingRecord("req_2")},
			graves:  map[string]string{"req_1": "approving hands the assistant what can send your credentials away …: --endpoint-url (sends-credentials)", "req_2": "approving hands the assistant what can send your credentials away …: --endpoint-url (sends-credentials)"},
			steps:   []promptStep{{wait: past, keys: "i-know\r"}, {wait: past, keys: "o"}, {wait: past, keys: "o"}},
			want:    []string{"once+iknow req_1", "once req_2"},
		},
		{
			name:    "i-know for a request that needs none says so",
			pending: []*requests.Record{pendingRecord("req_1")},
			steps:   []promptStep{{wait: past, keys: "i-know\r"}, {keys: "o"}},
			want:    []string{"once req_1"},
			wantOut: []string{"nothing req_1 allows needs i-know", promptKeys + promptApply, "approved req_1"},
		},
		{
			name:    "Ctrl-C ends it, even in the first second",
			pending: []*requests.Record{pendingRecord("req_1")},
			steps:   []promptStep{{keys: "\x03", ends: true}},
		},
		{
			name:    "Ctrl-D ends it, even while a reason is typed",
			pending: []*requests.Record{pendingRecord("req_1")},
			steps:   []promptStep{{wait: past, keys: "d"}, {keys: "no\x04", ends: true}},
		},
		{
			name:    "Ctrl-C ends it while it waits",
			steps:   []promptStep{{keys: "\x03", ends: true}},
			wantOut: []string{"waiting for requests"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var out bytes.Buffer // written by the prompter's goroutine; read once it ended
				dec := &fakeDecider{out: &out, fail: tt.fail, warnings: tt.unl, graves: tt.graves}
				p := newPrompter(&out, &out, dec, time.Now)
				stdin, typing := io.Pipe()
				keys := make(chan keyEvent, 16)
				done := make(chan struct{})
				go readKeys(stdin, time.Now, keys, done)
				updates := make(chan logUpdate)
				ended := make(chan error, 1)
				go func() { ended <- p.run(t.Context(), keys, updates) }()

				updates <- logUpdate{First: true, Added: tt.pending}
				for i, s := range tt.steps {
					time.Sleep(s.wait)
					if s.update != nil {
						updates <- *s.update
					}
					if s.keys != "" {
						typing.Write([]byte(s.keys))
					}
					synctest.Wait()
					if s.ends {
						select {
						case err := <-ended:
							if err != nil {
								t.Errorf("run = %v, want nil", err)
							}
							ended <- nil
						default:
							t.Fatalf("step %d: the prompter still runs", i)
						}
					}
				}
				typing.Close() // stdin ends: so does the prompter
				if err := <-ended; err != nil {
					t.Errorf("run = %v, want nil", err)
				}
				close(done)

				if !slices.Equal(dec.calls, tt.want) {
					t.Errorf("decisions = %q, want %q", dec.calls, tt.want)
				}
				got := out.String()
				rest := got
				for _, want := range tt.wantOut {
					i := strings.Index(rest, want)
					if i < 0 {
						t.Errorf("output lacks %q (in order):\n%s", want, got)
						break
					}
					rest = rest[i+len(want):]
				}
				if strings.ContainsAny(got, "\x1b\x07\u202e") {
					t.Errorf("a raw control character reached the terminal: %q", got)
				}
			})
		})
	}
}

// newLogDecider is the command's decider on f's config, printing to out.
func newLogDecider(t *testing.T, f *requestsFixture, out *bytes.Buffer) *logDecider {
	t.Helper()
	a := newApp(func(k string) string { return f.env[k] }, out, out)
	a.stdin = strings.NewReader("")
	a.configArg = f.config
	if err := a.setup(); err != nil {
		t.Fatal(err)
	}
	return &logDecider{a: a, logPath: f.log}
}

func (f *requestsFixture) pendingRecord(t *testing.T, id string) *requests.Record {
	t.Helper()
	r := f.record(t, id)
	if r.Status != requests.StatusPending {
		t.Fatalf("%s is %s", id, r.Status)
	}
	return r
}

// The decider records exactly what `requests approve --once`, `--for 1h`,
// `--apply` and `deny` would, with decided_by "watch", and refuses what
// they refuse.
func TestLogDecider(t *testing.T) {
	t.Parallel()
	push := func(flags ...string) requests.Request {
		return requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: flags, Rationale: "r"}
	}
	t.Run("shows the request, escaped, and its effect last", func(t *testing.T) {
		t.Parallel()
		f := newRequestsFixture(t, requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--tags"},
			Rationale: "ok\x1b[2J\x1b[Hall is well\u202e", Enables: "tags\x1b]0;pwned\x07"})
		var out bytes.Buffer
		newLogDecider(t, f, &out).show(t.Context(), f.pendingRecord(t, f.ids[0]))
		got := out.String()
		if strings.ContainsAny(got, "\x1b\x07\u202e") {
			t.Errorf("a raw control character reached the terminal:\n%q", got)
		}
		for _, want := range []string{`rationale: ok\x1b[2J\x1b[Hall is well\u202e`, `enables:   tags\x1b]0;pwned\a`, "asks for:  git push --tags"} {
			if !strings.Contains(got, want) {
				t.Errorf("output lacks %q:\n%s", want, got)
			}
		}
		if !strings.HasSuffix(got, "plus -h and --help, each run alone\n") || strings.Index(got, "rationale:") > strings.Index(got, "Approving grants") {
			t.Errorf("the effect is not shown last:\n%s", got)
		}
	})
	tests := []struct {
		name  string
		ap    approval
		check func(t *testing.T, f *requestsFixture, r *requests.Record, out string)
	}{
		{"o grants once", approval{grant: watchOnce}, func(t *testing.T, f *requestsFixture, r *requests.Record, out string) {
			if r.Grant == nil || !r.Grant.Once || *r.Applied || !strings.Contains(out, "approved "+r.ID+" once (within 24h)") {
				t.Errorf("record %+v grant %+v, output:\n%s", r, r.Grant, out)
			}
		}},
		{"h grants an hour", approval{grant: watchHour}, func(t *testing.T, f *requestsFixture, r *requests.Record, out string) {
			if r.Grant == nil || r.Grant.Once || r.Grant.Until.Sub(*r.DecidedAt) != time.Hour || !strings.Contains(out, "approved "+r.ID+" until ") {
				t.Errorf("record %+v grant %+v, output:\n%s", r, r.Grant, out)
			}
		}},
		{"apply merges into the config", approval{apply: true}, func(t *testing.T, f *requestsFixture, r *requests.Record, out string) {
			cfg, _ := os.ReadFile(f.config)
			if r.Grant != nil || !*r.Applied || !strings.Contains(string(cfg), `["--set-upstream", "--force-with-lease"]`) ||
				!strings.Contains(out, "added flags --force-with-lease to git push") {
				t.Errorf("record %+v, config:\n%s\noutput:\n%s", r, cfg, out)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newRequestsFixture(t, push("--force-with-lease"))
			var out bytes.Buffer
			x := newLogDecider(t, f, &out)
			r := f.pendingRecord(t, f.ids[0])
			x.show(t.Context(), r)
			if err := x.approve(t.Context(), r, tt.ap); err != nil {
				t.Fatalf("approve: %v\n%s", err, out.String())
			}
			got := f.record(t, f.ids[0])
			if got.Status != requests.StatusApproved || got.DecidedBy != requests.DecidedByWatch {
				t.Errorf("status %s decided_by %q, want approved by watch", got.Status, got.DecidedBy)
			}
			tt.check(t, f, got, out.String())
		})
	}
	t.Run("d denies with the reason", func(t *testing.T) {
		t.Parallel()
		f := newRequestsFixture(t, push("--force"))
		var out bytes.Buffer
		if err := newLogDecider(t, f, &out).deny(t.Context(), f.pendingRecord(t, f.ids[0]), "use --force-with-lease"); err != nil {
			t.Fatal(err)
		}
		if r := f.record(t, f.ids[0]); r.Status != requests.StatusDenied || *r.Reason != "use --force-with-lease" || r.DecidedBy != "watch" ||
			out.String() != "denied "+f.ids[0]+"\n" {
			t.Errorf("record %+v, output %q", r, out.String())
		}
	})
	t.Run("a request decided elsewhere cannot be decided again", func(t *testing.T) {
		t.Parallel()
		f := newRequestsFixture(t, push("--tags"))
		var out bytes.Buffer
		x := newLogDecider(t, f, &out)
		r := f.pendingRecord(t, f.ids[0])
		x.show(t.Context(), r)
		if _, stderr, code := f.run(t, "requests", "deny", f.ids[0]); code != 0 {
			t.Fatalf("deny: %s", stderr)
		}
		before, _ := os.ReadFile(f.config)
		for _, ap := range []approval{{grant: watchOnce}, {apply: true}} {
			if err := x.approve(t.Context(), r, ap); !errors.Is(err, requests.ErrDecided) || !strings.Contains(err.Error(), "denied (decided by cli)") {
				t.Errorf("approve %+v = %v, want ErrDecided", ap, err)
			}
		}
		if err := x.deny(t.Context(), r, ""); !errors.Is(err, requests.ErrDecided) {
			t.Errorf("deny = %v, want ErrDecided", err)
		}
		if after, _ := os.ReadFile(f.config); !bytes.Equal(before, after) {
			t.Errorf("apply changed the config of a request decided elsewhere")
		}
	})
	t.Run("a request gone from the log (rotated away) cannot be decided", func(t *testing.T) {
		t.Parallel()
		f := newRequestsFixture(t, push("--tags"))
		var out bytes.Buffer
		x := newLogDecider(t, f, &out)
		r := f.pendingRecord(t, f.ids[0])
		x.show(t.Context(), r)
		if err := os.Rename(f.log, f.log+".1"); err != nil {
			t.Fatal(err)
		}
		if err := x.approve(t.Context(), r, approval{grant: watchOnce}); !errors.Is(err, requests.ErrUnknownID) {
			t.Errorf("approve = %v, want ErrUnknownID", err)
		}
	})
	t.Run("what approve refuses is refused, and the request stays pending", func(t *testing.T) {
		t.Parallel()
		f := newRequestsFixture(t,
			requests.Request{Tool: "git", Subcommand: []string{}, Flags: []string{"-C"}, Rationale: "r"},
			requests.Request{Tool: "gh", Subcommand: []string{"pr", "list"}, Flags: []string{}, Rationale: "r"},
			requests.Request{Tool: "git", Subcommand: []string{"config", "set"}, Flags: []string{}, Rationale: "r"},
		)
		before, _ := os.ReadFile(f.config)
		for i, want := range []string{"bare rule", "not applied", "not granted"} {
			var out bytes.Buffer
			x := newLogDecider(t, f, &out)
			r := f.pendingRecord(t, f.ids[i])
			x.show(t.Context(), r)
			ap := approval{apply: true}
			if i == 2 {
				ap = approval{grant: watchOnce}
			}
			err := x.approve(t.Context(), r, ap)
			if err == nil || !strings.Contains(err.Error(), want) || errors.Is(err, errShowAgain) {
				t.Errorf("%s: approve = %v, want a refusal saying %q", r.ID, err, want)
			}
			f.pendingRecord(t, f.ids[i])
		}
		if after, _ := os.ReadFile(f.config); !bytes.Equal(before, after) {
			t.Errorf("a refused approval changed the config")
		}
	})
	t.Run("a config changed since the request was shown shows the new effect first", func(t *testing.T) {
		t.Parallel()
		f := newRequestsFixture(t, push("--tags"), push("--force-with-lease"))
		var out bytes.Buffer
		x := newLogDecider(t, f, &out)
		r := f.pendingRecord(t, f.ids[1])
		x.show(t.Context(), r)
		if _, stderr, code := f.run(t, "requests", "approve", f.ids[0], "--apply"); code != 0 {
			t.Fatalf("approve --apply: %s", stderr)
		}
		out.Reset()
		if err := x.approve(t.Context(), r, approval{grant: watchOnce}); !errors.Is(err, errShowAgain) {
			t.Fatalf("approve = %v, want errShowAgain", err)
		}
		if got := out.String(); !strings.Contains(got, "The config changed since this request was shown") || !strings.Contains(got, "--tags  a switch") {
			t.Errorf("the new effect is not shown:\n%s", got)
		}
		f.pendingRecord(t, f.ids[1])
		if err := x.approve(t.Context(), r, approval{grant: watchOnce}); err != nil {
			t.Fatalf("approve once shown again: %v", err)
		}
	})
}

// The follower reports the pending requests, then each new one once, and
// the decisions of those it reported: across rotation, and from a log that
// does not exist yet.
func TestWatchFollower(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		path := filepath.Join(t.TempDir(), "log", "requests.jsonl")
		submit := func(sub string) string {
			t.Helper()
			s, err := requests.Submit(ctx, path, requests.Request{Tool: "git", Subcommand: []string{sub}, Flags: []string{}, Rationale: sub}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			return s.ID
		}
		updates := make(chan logUpdate)
		go newFollower(path).run(ctx, watchPoll, updates)
		ids := func(recs []*requests.Record) []string {
			var out []string
			for _, r := range recs {
				out = append(out, r.ID)
			}
			return out
		}
		expect := func(what string, added, decided []string) logUpdate {
			t.Helper()
			u := <-updates
			if !slices.Equal(ids(u.Added), added) || !slices.Equal(ids(u.Decided), decided) {
				t.Fatalf("%s: added %q, decided %q; want %q, %q", what, ids(u.Added), ids(u.Decided), added, decided)
			}
			return u
		}
		quiet := func(what string) {
			t.Helper()
			timer := time.NewTimer(4 * watchPoll)
			defer timer.Stop()
			select {
			case u := <-updates:
				t.Fatalf("%s: an update %+v, want none", what, u)
			case <-timer.C:
			}
		}

		if u := expect("a missing log", nil, nil); !u.First {
			t.Errorf("the first update is not marked first: %+v", u)
		}
		one := submit("one")
		expect("the first request", []string{one}, nil)
		if err := requests.Decide(ctx, path, one, requests.Decision{Status: requests.StatusDenied, DecidedBy: "cli"}, time.Now()); err != nil {
			t.Fatal(err)
		}
		expect("its denial", nil, []string{one})
		two := submit("two")
		expect("the second request", []string{two}, nil)

		// Rotation: the file renamed away, a new one started at the path.
		if err := os.Rename(path, path+".1"); err != nil {
			t.Fatal(err)
		}
		three := submit("three")
		expect("a request in the new file", []string{three}, nil)
		// An older copy back in place reports nothing it reported before.
		if err := os.Rename(path+".1", path); err != nil {
			t.Fatal(err)
		}
		quiet("the old file back")

		// A skipped line is said once, escaped: its id is anyone's.
		fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(fh, `{"id":"req_\u001b[2J","status":"denied","decided_at":"2025-01-01T00:00:00Z","reason":"","applied":false,"decided_by":"x"}`)
		fh.Close()
		u := expect("a decision for an unknown request", nil, nil)
		if len(u.Problems) != 1 || !strings.Contains(u.Problems[0], `decision for unknown request req_\x1b[2J`) || strings.Contains(u.Problems[0], "\x1b") {
			t.Errorf("problems %q, want one warning with the id escaped", u.Problems)
		}
		four := submit("four")
		if u := expect("a request after the bad line", []string{four}, nil); len(u.Problems) != 0 {
			t.Errorf("the warning was said again: %q", u.Problems)
		}
	})
}

func TestWatchFollowerStartsWithThePendingOnly(t *testing.T) {
	t.Parallel()
	f := newRequestsFixture(t,
		requests.Request{Tool: "git", Subcommand: []string{"push"}, Rationale: "pending"},
		requests.Request{Tool: "git", Subcommand: []string{"pull"}, Rationale: "to be denied"},
	)
	if _, stderr, code := f.run(t, "requests", "deny", f.ids[1]); code != 0 {
		t.Fatal(stderr)
	}
	u := newFollower(f.log).poll(t.Context())
	if !u.First || len(u.Added) != 1 || u.Added[0].ID != f.ids[0] || len(u.Decided) != 0 {
		t.Errorf("first update %+v, want only %s added", u, f.ids[0])
	}
}

// lineSink passes each complete line written to it on lines.
type lineSink struct {
	mu    sync.Mutex
	part  []byte
	lines chan string
}

func (s *lineSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.part = append(s.part, p...)
	for {
		i := bytes.IndexByte(s.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		s.lines <- string(s.part[:i])
		s.part = s.part[i+1:]
	}
}

// next returns the next line, waiting at most 10 s.
func (s *lineSink) next(t *testing.T, what string) string {
	t.Helper()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case line := <-s.lines:
		return line
	case <-timer.C:
		t.Fatalf("%s: no line within 10s", what)
		return ""
	}
}

// startWatch runs `requests watch args…` in-process on f's config until the
// test ends it with the returned stop, which returns its exit status.
func startWatch(t *testing.T, f *requestsFixture, args ...string) (*lineSink, *bytes.Buffer, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	out := &lineSink{lines: make(chan string, 64)}
	var stderr bytes.Buffer // written until exec returns; read after
	ended := make(chan int, 1)
	go func() {
		err := exec(ctx, append([]string{"--config", f.config, "requests", "watch"}, args...),
			func(k string) string { return f.env[k] }, strings.NewReader(""), out, &stderr)
		ended <- exitCode(err, &stderr)
	}()
	var once sync.Once
	code := -1
	stop := func() int {
		once.Do(func() {
			cancel()
			timer := time.NewTimer(10 * time.Second)
			defer timer.Stop()
			select {
			case code = <-ended:
			case <-timer.C:
				t.Errorf("requests watch did not end within 10s of its interrupt")
			}
		})
		return code
	}
	t.Cleanup(func() { stop() })
	return out, &stderr, stop
}

// --json prints each record as `requests list --json` does, one line each:
// the pending ones, then each new one, across rotation; an interrupt ends it
// with status 0.
func TestWatchJSON(t *testing.T) {
	t.Parallel()
	f := newRequestsFixture(t,
		requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--tags"}, Rationale: "ok\x1b[2J<b>"},
		requests.Request{Tool: "git", Subcommand: []string{"pull"}, Rationale: "decided before"},
	)
	if _, stderr, code := f.run(t, "requests", "deny", f.ids[1]); code != 0 {
		t.Fatal(stderr)
	}
	list, _, _ := f.run(t, "requests", "list", "--json")
	out, stderr, stop := startWatch(t, f, "--json")
	if line := out.next(t, "the pending request"); line+"\n" != list {
		t.Errorf("watch --json printed\n%s\nwant the line list --json prints:\n%s", line, list)
	}

	submit := func(sub string) string {
		t.Helper()
		s, err := requests.Submit(t.Context(), f.log, requests.Request{Tool: "git", Subcommand: []string{sub}, Flags: []string{}, Rationale: sub}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	record := func(what string) map[string]any {
		t.Helper()
		line := out.next(t, what)
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%s: not a JSON line: %q", what, line)
		}
		return m
	}
	filed := submit("fetch")
	if m := record("a request filed while it runs"); m["id"] != filed || m["status"] != "pending" {
		t.Errorf("got %v, want %s pending", m, filed)
	}
	if err := os.Rename(f.log, f.log+".1"); err != nil {
		t.Fatal(err)
	}
	rotated := submit("merge")
	if m := record("a request in the rotated log"); m["id"] != rotated {
		t.Errorf("got %v, want %s", m, rotated)
	}
	if code := stop(); code != 0 {
		t.Errorf("exit status %d after an interrupt, want 0", code)
	}
	if len(out.lines) > 0 {
		t.Errorf("more lines: %q", <-out.lines)
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr: %s", stderr)
	}
}

// Without a terminal, and without --json, it prints each request as text,
// escaped.
func TestWatchPrintsWithoutATerminal(t *testing.T) {
	t.Parallel()
	f := newRequestsFixture(t)
	out, _, stop := startWatch(t, f)
	if line := out.next(t, "the start"); line != "no pending requests" {
		t.Errorf("first line %q", line)
	}
	s, err := requests.Submit(t.Context(), f.log, requests.Request{Tool: "gіt", Subcommand: []string{"push"}, Flags: []string{"--tags"},
		Rationale: "fine\n\x1b[1A\x1b[2Kapproved req_00000000"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for range 3 {
		lines = append(lines, out.next(t, "the request"))
	}
	// The config has no gіt, so nothing is known of its help: the flag is
	// marked so, the tool escaped in the mark too.
	want := []string{"Request " + s.ID + ", filed ", `  asks for:  g\u0456t push --tags (HELP UNKNOWN for 'g\u0456t push')`,
		`  rationale: fine \x1b[1A\x1b[2Kapproved req_00000000`}
	if len(lines) != 3 || !strings.HasPrefix(lines[0], want[0]) || !slices.Equal(lines[1:], want[1:]) {
		t.Errorf("printed\n%q\nwant\n%q", lines, want)
	}
	if code := stop(); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
}

func TestWatchCommandLine(t *testing.T) {
	t.Parallel()
	f := newRequestsFixture(t)
	for _, tt := range []struct {
		args     []string
		code     int
		inStderr string
	}{
		{[]string{"--config", f.config, "requests", "watch", "req_1"}, 2, `requests watch takes no arguments, got "req_1"`},
		{[]string{"--config", f.config, "requests", "watch", "--frobnicate"}, 2, "frobnicate"},
		{[]string{"--config", filepath.Join(f.dir, "missing.yaml"), "requests", "watch"}, 1, "missing.yaml"},
	} {
		if _, stderr, code := run(t, f.env, tt.args...); code != tt.code || !strings.Contains(stderr, tt.inStderr) {
			t.Errorf("%q: exit %d, stderr %q; want %d, %q", tt.args, code, stderr, tt.code, tt.inStderr)
		}
	}
	if out, _, code := f.run(t, "requests", "watch", "--help"); code != 0 || !strings.Contains(out, promptKeys+promptApply) {
		t.Errorf("--help: exit %d\n%s", code, out)
	}
}

func TestEscapeLen(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		rest string
		want int
	}{
		{"", 0}, {"o", 1}, {"[A", 2}, {"[1;5D", 5}, {"OH", 2}, {"O", 1}, {"[12", 3}, {"[Ao", 2},
	} {
		if got := escapeLen([]byte(tt.rest)); got != tt.want {
			t.Errorf("escapeLen(%q) = %d, want %d", tt.rest, got, tt.want)
		}
	}
}

func TestSafeText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"plain text\nsecond line", "plain text\nsecond line"},
		{"a\x1b[2Jb", `a\x1b[2Jb`},
		{"bidi\u202eoverride", `bidi\u202eoverride`},
		{"bad \xff byte", `bad \xff byte`},
		{`already \x1b escaped`, `already \x1b escaped`},
	} {
		if got := safeText(tt.in); got != tt.want {
			t.Errorf("safeText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCRLF(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if n, err := (crlf{&b}).Write([]byte("a\nb\n")); n != 4 || err != nil || b.String() != "a\r\nb\r\n" {
		t.Errorf("wrote %q (%d, %v)", b.String(), n, err)
	}
}
