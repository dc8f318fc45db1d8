package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/requests"
)

// pushEntry is the path of the introspection cache's entry for git push's
// help in f's cache.
func (f *requestsFixture) pushEntry(t *testing.T) string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(f.cacheDir(t), "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Subcommand []string `json:"subcommand"`
		}
		if json.Unmarshal(data, &e) == nil && slices.Equal(e.Subcommand, []string{"push"}) {
			return name
		}
	}
	t.Fatalf("no cache entry for git push among %q", names)
	return ""
}

// exactPush is an exact-call request for `git push --rece=x`, as the server
// records one under f's config: the command as the call builds it, the
// config's policy hash.
func (f *requestsFixture) exactPush(t *testing.T) requests.Request {
	t.Helper()
	l, err := config.LoadFile(t.Context(), f.config, &config.LoadOptions{Paths: &config.Options{Getenv: func(k string) string { return f.env[k] }}})
	if err != nil {
		t.Fatal(err)
	}
	command, ok := l.Policy.Command(policy.Call{Tool: "git", Subcommand: []string{"push"}, Params: map[string]any{"rece": "x"}})
	if !ok {
		t.Fatalf("the fixture builds no command of git push --rece=x")
	}
	return requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--rece"}, Rationale: "exactly",
		Call: &requests.Call{Tool: "git_push", Arguments: []byte(`{"rece":"x"}`), Command: command, Cwd: "/", Dir: "1:2", Policy: l.PolicyHash()}}
}

// markCase is one run of a requests command on a fixture holding one
// request.
type markCase struct {
	name       string
	req        requests.Request // unless exact
	exact      bool             // the request is f.exactPush
	damage     string           // how git push's cache entry is damaged first; "" leaves the cache whole
	args       []string
	wantCode   int
	wantOut    []string // substrings of stdout ("ID" is the request's id)
	wantErr    []string // substrings of stderr; nil means stderr must be empty
	wantStatus string   // the request's status afterwards
}

// A flag its subcommand's help does not list is marked in `requests list`
// and refused by `requests approve` without --unlisted-ok; where that help
// is unknown (no rule named the subcommand, or its cache entry is broken)
// every flag is marked HELP UNKNOWN and refused alike.
func TestRequestsMarkAndRefuseFlagsTheHelpDoesNotList(t *testing.T) {
	t.Parallel()
	push := func(flags ...string) requests.Request {
		return requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: flags, Rationale: "r"}
	}
	fetch := requests.Request{Tool: "git", Subcommand: []string{"fetch"}, Flags: []string{"--prune"}, Rationale: "r"}
	// breakPush damages git push's cache entry as the operator's own
	// processes could.
	breakPush := map[string]func(t *testing.T, path string){
		"holding garbage": func(t *testing.T, path string) { writeEntry(t, path, []byte("\x00\xffnot json")) },
		"emptied":         func(t *testing.T, path string) { writeEntry(t, path, nil) },
		"with its help blanked and its key kept": func(t *testing.T, path string) {
			// Numbers stay json.Number, so the key (its modification
			// time in nanoseconds) is kept to the digit.
			var e map[string]any
			dec := json.NewDecoder(bytes.NewReader(readEntry(t, path)))
			dec.UseNumber()
			if err := dec.Decode(&e); err != nil {
				t.Fatal(err)
			}
			e["help"] = map[string]any{"Flags": []any{}}
			data, _ := json.Marshal(e)
			writeEntry(t, path, data)
		},
	}
	tests := []markCase{
		{name: "list marks a prefix of a listed flag NOT IN", req: push("--tags", "--rece"), args: []string{"list"},
			wantOut: []string{"--tags --rece (NOT IN 'git push --help')"}, wantStatus: "pending"},
		{name: "list marks every flag of a subcommand whose help is unknown HELP UNKNOWN", req: fetch, args: []string{"list"},
			wantOut: []string{"--prune (HELP UNKNOWN for 'git fetch')"}, wantStatus: "pending"},
		{name: "list marks the unlisted flags of an exact call after its command", exact: true, args: []string{"list"},
			wantOut: []string{"exactly: git push --rece=x; --rece (NOT IN 'git push --help')"}, wantStatus: "pending"},
		{name: "approve takes a flag the help lists", req: push("--tags"), args: []string{"approve", "ID"},
			wantOut: []string{"asks for:  git push --tags\n", "--tags  a switch  — push tags", "approved ID"}, wantStatus: "approved"},
		{name: "approve refuses a prefix of a listed flag without --unlisted-ok", req: push("--rece"), args: []string{"approve", "ID", "--once"},
			wantCode: 1, wantOut: []string{"--rece  takes any value  (NOT IN 'git push --help')"},
			wantErr: []string{"not approved, ID stays pending: --rece (NOT IN 'git push --help'): the help does not list it"}, wantStatus: "pending"},
		{name: "approve shows HELP UNKNOWN in the effect and refuses without --unlisted-ok", req: fetch, args: []string{"approve", "ID"},
			wantCode: 1, wantOut: []string{"asks for:  git fetch --prune (HELP UNKNOWN for 'git fetch')", "--prune  takes any value  (HELP UNKNOWN for 'git fetch')"},
			wantErr: []string{"not approved, ID stays pending: --prune (HELP UNKNOWN for 'git fetch'): the subcommand's help is not known, " +
				"so no flag counts as listed", "--unlisted-ok"}, wantStatus: "pending"},
		// approve learns a help the cache lacks on demand; git fetch's
		// prints nothing parseable, which is logged.
		{name: "approve with --unlisted-ok takes a flag whose help is unknown", req: fetch, args: []string{"approve", "ID", "--once", "--unlisted-ok"},
			wantOut: []string{"--prune  takes any value  (HELP UNKNOWN for 'git fetch')", "approved ID once"},
			wantErr: []string{"introspection failed"}, wantStatus: "approved"},
		{name: "approve of an exact call shows and refuses its unlisted flag", exact: true, args: []string{"approve", "ID", "--once"},
			wantCode: 1, wantOut: []string{"flags the help does not list: --rece (NOT IN 'git push --help')"},
			wantErr: []string{"--rece (NOT IN 'git push --help')"}, wantStatus: "pending"},
	}
	for damage := range breakPush {
		tests = append(tests,
			markCase{name: "git push's cache entry " + damage + " makes its help unknown in list", req: push("--rece"), damage: damage,
				args: []string{"list"}, wantOut: []string{"--rece (HELP UNKNOWN for 'git push')"},
				wantErr: []string{"introspection cache entry unusable; the help counts as missing"}, wantStatus: "pending"},
			// approve learns the help again on demand (the entry counts as
			// missing), and the learned help does not list --rece.
			markCase{name: "git push's cache entry " + damage + " makes approve learn the help and refuse --rece without --unlisted-ok", req: push("--rece"), damage: damage,
				args: []string{"approve", "ID", "--once"}, wantCode: 1, wantOut: []string{"--rece  takes any value  (NOT IN 'git push --help')"},
				wantErr: []string{"--rece (NOT IN 'git push --help'): the help does not list it"}, wantStatus: "pending"},
		)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newRequestsFixture(t)
			r := tt.req
			if tt.exact {
				r = f.exactPush(t)
			}
			s, err := requests.Submit(t.Context(), f.log, r, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if tt.damage != "" {
				breakPush[tt.damage](t, f.pushEntry(t))
			}
			id := s.ID
			args := []string{"requests"}
			for _, a := range tt.args {
				args = append(args, strings.ReplaceAll(a, "ID", id))
			}
			out, stderr, code := f.run(t, args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr %q", code, tt.wantCode, stderr)
			}
			for _, want := range tt.wantOut {
				if want = strings.ReplaceAll(want, "ID", id); !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
			for _, want := range tt.wantErr {
				if want = strings.ReplaceAll(want, "ID", id); !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if tt.wantErr == nil && stderr != "" {
				t.Errorf("stderr %q, want none", stderr)
			}
			if got := f.record(t, id).Status; got != tt.wantStatus {
				t.Errorf("the request is %s, want %s", got, tt.wantStatus)
			}
		})
	}
}

func readEntry(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func writeEntry(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// `requests watch` shows the marks as list does: printing without a
// terminal, and in the prompter, where the effect is shown last and an
// approval of an unlisted flag is refused (watch has no --unlisted-ok).
func TestWatchMarksFlagsTheHelpDoesNotList(t *testing.T) {
	t.Parallel()
	fetch := requests.Request{Tool: "git", Subcommand: []string{"fetch"}, Flags: []string{"--prune"}, Rationale: "r"}
	tests := []struct {
		name string
		req  requests.Request
		want string // the asks for: line
		mark string
	}{
		{"a flag of a subcommand whose help is unknown is marked HELP UNKNOWN", fetch,
			"  asks for:  git fetch --prune (HELP UNKNOWN for 'git fetch')", "(HELP UNKNOWN for 'git fetch')"},
		{"a prefix of a listed flag is marked NOT IN", requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--rece"}, Rationale: "r"},
			"  asks for:  git push --rece (NOT IN 'git push --help')", "(NOT IN 'git push --help')"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" in what watch prints", func(t *testing.T) {
			t.Parallel()
			f := newRequestsFixture(t)
			out, _, stop := startWatch(t, f)
			if line := out.next(t, "the start"); line != "no pending requests" {
				t.Fatalf("first line %q", line)
			}
			if _, err := requests.Submit(t.Context(), f.log, tt.req, time.Now()); err != nil {
				t.Fatal(err)
			}
			out.next(t, "the request")
			if line := out.next(t, "the request's flags"); line != tt.want {
				t.Errorf("printed %q, want %q", line, tt.want)
			}
			if code := stop(); code != 0 {
				t.Errorf("exit status %d, want 0", code)
			}
		})
		t.Run(tt.name+" in the prompter, and refused", func(t *testing.T) {
			t.Parallel()
			f := newRequestsFixture(t, tt.req)
			var out bytes.Buffer
			x := newLogDecider(t, f, &out)
			r := f.pendingRecord(t, f.ids[0])
			x.show(t.Context(), r)
			shown := out.String()
			if !strings.Contains(shown, tt.want+"\n") || !strings.Contains(shown, "takes any value  "+tt.mark) {
				t.Errorf("show lacks the marks:\n%s", shown)
			}
			for _, ap := range []approval{{grant: watchOnce}, {grant: watchHour}, {apply: true}} {
				if err := x.approve(t.Context(), r, ap); err == nil || !strings.Contains(err.Error(), tt.mark) {
					t.Errorf("approve %+v = %v, want a refusal naming %s", ap, err, tt.mark)
				}
			}
			f.pendingRecord(t, f.ids[0])
		})
	}
}
