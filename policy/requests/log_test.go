package requests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/policy/config/configtest"
)

// The helper process: TestConcurrentWritersAcrossProcesses re-executes this
// test binary with these variables set, and TestHelperProcess then submits
// requests from a second process.
const (
	helperEnv      = "WRAPTOOL_REQUESTS_HELPER"
	helperPathEnv  = "WRAPTOOL_REQUESTS_PATH"
	helperCountEnv = "WRAPTOOL_REQUESTS_COUNT"
	helperStartEnv = "WRAPTOOL_REQUESTS_START"
)

var idPattern = regexp.MustCompile(`^req_[0-9a-f]{8}$`)

// t0 is a fixed clock reading, deliberately not in UTC.
var t0 = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.FixedZone("CET", 3600))

func logPath(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "requests.jsonl")
}

func submit(t *testing.T, path string, r Request) Submitted {
	t.Helper()
	s, err := Submit(t.Context(), path, r, t0)
	if err != nil {
		t.Fatalf("Submit(t.Context(), %+v): %v", r, err)
	}
	return s
}

// lines splits a log into its lines, requiring the final newline.
func lines(t *testing.T, data []byte) []string {
	t.Helper()
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Fatalf("the log does not end in a newline: ...%q", data[max(0, len(data)-40):])
	}
	s := strings.TrimSuffix(string(data), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// object decodes one line as a JSON object of raw fields.
func object(t *testing.T, line string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("line %q is not a JSON object: %v", line, err)
	}
	return m
}

func keys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// checkUTC checks a raw JSON timestamp: an RFC 3339 string in UTC equal to want.
func checkUTC(t *testing.T, field string, raw json.RawMessage, want time.Time) {
	t.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s = %s, want a string", field, raw)
	}
	got, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%s = %q is not RFC 3339: %v", field, s, err)
	}
	if !strings.HasSuffix(s, "Z") {
		t.Errorf("%s = %q, want UTC (a Z suffix)", field, s)
	}
	if !got.Equal(want) {
		t.Errorf("%s = %v, want %v", field, got, want)
	}
}

func TestSubmitWritesOneRequestLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name           string
		req            Request
		sub, flags     string
		rationale, ens string
	}{
		{"a full request is written field for field",
			Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force-with-lease", "-u"}, Rationale: "rebased a branch", Enables: "push it"},
			`["push"]`, `["--force-with-lease","-u"]`, `"rebased a branch"`, `"push it"`},
		{"nil subcommand and flags are written as empty arrays, never null",
			Request{Tool: "git", Rationale: "why"},
			`[]`, `[]`, `"why"`, `""`},
		{"empty subcommand and flags are written as empty arrays",
			Request{Tool: "git", Subcommand: []string{}, Flags: []string{}, Rationale: "why"},
			`[]`, `[]`, `"why"`, `""`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := logPath(t)
			s := submit(t, path, tc.req)
			if !idPattern.MatchString(s.ID) || s.Existing || len(s.Warnings) != 0 {
				t.Fatalf("Submit = %+v, want a fresh req_xxxxxxxx id and no warnings", s)
			}
			ls := lines(t, configtest.ReadFile(t, path))
			if len(ls) != 1 {
				t.Fatalf("the log has %d lines, want 1:\n%s", len(ls), strings.Join(ls, "\n"))
			}
			m := object(t, ls[0])
			wantKeys := []string{"created_at", "enables", "flags", "id", "rationale", "status", "subcommand", "tool"}
			if got := keys(m); !slices.Equal(got, wantKeys) {
				t.Fatalf("fields %q, want exactly %q", got, wantKeys)
			}
			want := map[string]string{
				"id": strconv.Quote(s.ID), "tool": strconv.Quote(tc.req.Tool), "subcommand": tc.sub, "flags": tc.flags,
				"rationale": tc.rationale, "enables": tc.ens, "status": `"pending"`,
			}
			for k, v := range want {
				if got := string(m[k]); got != v {
					t.Errorf("%s = %s, want %s", k, got, v)
				}
			}
			checkUTC(t, "created_at", m["created_at"], t0.Truncate(time.Millisecond))
		})
	}
}

func TestSubmitCreatesPrivateFiles(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	path := filepath.Join(base, "data", "wraptool", "requests.jsonl")
	submit(t, path, Request{Tool: "git", Subcommand: []string{"push"}, Rationale: "why"})
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode(); got != 0o600 {
		t.Errorf("log mode = %v, want -rw-------", got)
	}
	for _, dir := range []string{filepath.Join(base, "data"), filepath.Join(base, "data", "wraptool")} {
		info, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != 0o700 {
			t.Errorf("folder %s mode = %v, want drwx------", dir, got)
		}
	}
}

func TestSubmitDrawsDistinctIDs(t *testing.T) {
	t.Parallel()
	path := logPath(t)
	seen := map[string]bool{}
	for i := range 100 {
		s := submit(t, path, Request{Tool: "tool" + strconv.Itoa(i), Subcommand: []string{}, Rationale: "why"})
		if !idPattern.MatchString(s.ID) {
			t.Errorf("id %q does not match %s", s.ID, idPattern)
		}
		if seen[s.ID] {
			t.Errorf("id %q was drawn twice", s.ID)
		}
		seen[s.ID] = true
	}
	recs, warns, err := Read(path)
	if err != nil || len(warns) != 0 || len(recs) != 100 {
		t.Errorf("Read: %d records, warnings %v, err %v; want 100, none, nil", len(recs), warns, err)
	}
}

func TestSubmitFindsTheIdenticalPendingRequest(t *testing.T) {
	t.Parallel()
	base := Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force", "-u"}, Rationale: "first", Enables: "a"}
	cases := []struct {
		name      string
		req       Request
		identical bool
	}{
		{"the same request is identical", base, true},
		{"flags in another order are identical",
			Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"-u", "--force"}, Rationale: "first"}, true},
		{"repeated flags are identical",
			Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"-u", "--force", "-u", "--force"}, Rationale: "first"}, true},
		{"another rationale and enables are still identical",
			Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force", "-u"}, Rationale: "second", Enables: "b"}, true},
		{"a flag fewer is a new request",
			Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force"}, Rationale: "first"}, false},
		{"a flag more is a new request",
			Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force", "-u", "-n"}, Rationale: "first"}, false},
		{"another subcommand is a new request",
			Request{Tool: "git", Subcommand: []string{"pull"}, Flags: []string{"--force", "-u"}, Rationale: "first"}, false},
		{"a longer subcommand is a new request",
			Request{Tool: "git", Subcommand: []string{"push", "x"}, Flags: []string{"--force", "-u"}, Rationale: "first"}, false},
		{"another tool is a new request",
			Request{Tool: "hg", Subcommand: []string{"push"}, Flags: []string{"--force", "-u"}, Rationale: "first"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := logPath(t)
			first := submit(t, path, base)
			before := configtest.ReadFile(t, path)
			got := submit(t, path, tc.req)
			after := configtest.ReadFile(t, path)
			if tc.identical {
				if !got.Existing || got.ID != first.ID {
					t.Errorf("Submit = %+v, want Existing with id %s", got, first.ID)
				}
				if !bytes.Equal(after, before) {
					t.Errorf("the log changed:\n got %q\nwant %q", after, before)
				}
				return
			}
			if got.Existing || got.ID == first.ID || !idPattern.MatchString(got.ID) {
				t.Errorf("Submit = %+v, want a new id other than %s", got, first.ID)
			}
			if n := len(lines(t, after)); n != 2 {
				t.Errorf("the log has %d lines, want 2", n)
			}
		})
	}
}

func TestSubmitAfterADecisionFilesANewRequest(t *testing.T) {
	t.Parallel()
	for _, status := range []string{StatusApproved, StatusDenied} {
		t.Run("a request "+status+" no longer counts as pending", func(t *testing.T) {
			t.Parallel()
			path := logPath(t)
			req := Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force"}, Rationale: "why"}
			first := submit(t, path, req)
			if err := Decide(t.Context(), path, first.ID, Decision{Status: status, Reason: "", Applied: false, DecidedBy: "cli"}, t0); err != nil {
				t.Fatal(err)
			}
			second := submit(t, path, req)
			if second.Existing || second.ID == first.ID || !idPattern.MatchString(second.ID) {
				t.Errorf("Submit after a decision = %+v, want a new id other than %s", second, first.ID)
			}
			third := submit(t, path, req)
			if !third.Existing || third.ID != second.ID {
				t.Errorf("Submit again = %+v, want Existing with id %s", third, second.ID)
			}
		})
	}
}

// writePending writes n pending request lines straight into a new log, as
// Submit would have, and returns their ids.
func writePending(t *testing.T, path string, n int) []string {
	t.Helper()
	var b bytes.Buffer
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("req_%08x", i)
		line, err := json.Marshal(Record{
			ID: ids[i], CreatedAt: t0.UTC(), Tool: "tool" + strconv.Itoa(i), Subcommand: []string{},
			Flags: []string{}, Rationale: "why", Status: StatusPending,
		})
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestSubmitPendingLimit(t *testing.T) {
	t.Parallel()
	path := logPath(t)
	ids := writePending(t, path, MaxPending)
	fresh := Request{Tool: "fresh", Subcommand: []string{"x"}, Rationale: "why"}

	before := configtest.ReadFile(t, path)
	_, err := Submit(t.Context(), path, fresh, t0)
	if !errors.Is(err, ErrPendingLimit) {
		t.Fatalf("Submit with %d pending: err %v, want ErrPendingLimit", MaxPending, err)
	}
	if after := configtest.ReadFile(t, path); !bytes.Equal(after, before) {
		t.Errorf("a refused Submit wrote %d bytes", len(after)-len(before))
	}

	dup, err := Submit(t.Context(), path, Request{Tool: "tool7", Subcommand: []string{}, Rationale: "again"}, t0)
	if err != nil || !dup.Existing || dup.ID != ids[7] {
		t.Errorf("an identical pending request at the limit: %+v, %v; want Existing with id %s", dup, err, ids[7])
	}

	if err := Decide(t.Context(), path, ids[0], Decision{Status: StatusDenied, Reason: "no", Applied: false, DecidedBy: "cli"}, t0); err != nil {
		t.Fatal(err)
	}
	s, err := Submit(t.Context(), path, fresh, t0)
	if err != nil || s.Existing {
		t.Fatalf("Submit after a decision freed a slot: %+v, %v; want a new request", s, err)
	}
	if _, err := Submit(t.Context(), path, Request{Tool: "another", Subcommand: []string{}, Rationale: "why"}, t0); !errors.Is(err, ErrPendingLimit) {
		t.Errorf("Submit with the freed slot taken: err %v, want ErrPendingLimit", err)
	}
}

func TestDecideWritesADecisionLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		status  string
		reason  string
		applied bool
	}{
		{"an applied approval", StatusApproved, "fine", true},
		{"an approval not applied keeps applied false", StatusApproved, "apply by hand", false},
		{"a denial with an empty reason keeps every field", StatusDenied, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := logPath(t)
			s := submit(t, path, Request{Tool: "git", Subcommand: []string{"push"}, Rationale: "why"})
			decided := t0.Add(time.Hour)
			if err := Decide(t.Context(), path, s.ID, Decision{Status: tc.status, Reason: tc.reason, Applied: tc.applied, DecidedBy: "cli"}, decided); err != nil {
				t.Fatal(err)
			}
			ls := lines(t, configtest.ReadFile(t, path))
			if len(ls) != 2 {
				t.Fatalf("the log has %d lines, want 2", len(ls))
			}
			m := object(t, ls[1])
			wantKeys := []string{"applied", "decided_at", "decided_by", "id", "reason", "status"}
			if got := keys(m); !slices.Equal(got, wantKeys) {
				t.Fatalf("fields %q, want exactly %q", got, wantKeys)
			}
			want := map[string]string{
				"id": strconv.Quote(s.ID), "status": strconv.Quote(tc.status),
				"reason": strconv.Quote(tc.reason), "applied": strconv.FormatBool(tc.applied),
			}
			for k, v := range want {
				if got := string(m[k]); got != v {
					t.Errorf("%s = %s, want %s", k, got, v)
				}
			}
			checkUTC(t, "decided_at", m["decided_at"], decided.Truncate(time.Millisecond))

			recs, warns, err := Read(path)
			if err != nil || len(warns) != 0 || len(recs) != 1 {
				t.Fatalf("Read: %v, warnings %v, err %v", recs, warns, err)
			}
			r := recs[0]
			if r.Status != tc.status || r.Reason == nil || *r.Reason != tc.reason || r.Applied == nil || *r.Applied != tc.applied ||
				r.DecidedAt == nil || !r.DecidedAt.Equal(decided.Truncate(time.Millisecond)) {
				t.Errorf("folded record %+v, want status %s, reason %q, applied %v", r, tc.status, tc.reason, tc.applied)
			}
		})
	}
}

func TestDecideRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		id      string
		status  string
		unknown bool
	}{
		{"an unknown id is ErrUnknownID", "req_00000000", StatusApproved, true},
		{"an empty id is ErrUnknownID", "", StatusDenied, true},
		{"the status pending is not a decision", "", StatusPending, false},
		{"a made-up status is not a decision", "", "maybe", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := logPath(t)
			s := submit(t, path, Request{Tool: "git", Subcommand: []string{"push"}, Rationale: "why"})
			id := tc.id
			if id == "" && !tc.unknown {
				id = s.ID
			}
			before := configtest.ReadFile(t, path)
			err := Decide(t.Context(), path, id, Decision{Status: tc.status, Reason: "r", Applied: true, DecidedBy: "cli"}, t0)
			if err == nil {
				t.Fatal("Decide succeeded, want an error")
			}
			if got := errors.Is(err, ErrUnknownID); got != tc.unknown {
				t.Errorf("errors.Is(%v, ErrUnknownID) = %v, want %v", err, got, tc.unknown)
			}
			if after := configtest.ReadFile(t, path); !bytes.Equal(after, before) {
				t.Errorf("a refused Decide wrote %q", after[len(before):])
			}
		})
	}
	t.Run("a decision on a missing log is ErrUnknownID", func(t *testing.T) {
		t.Parallel()
		if err := Decide(t.Context(), logPath(t), "req_00000000", Decision{Status: StatusApproved, Reason: "", Applied: false, DecidedBy: "cli"}, t0); !errors.Is(err, ErrUnknownID) {
			t.Errorf("err %v, want ErrUnknownID", err)
		}
	})
}

func TestReadMissingFileIsAnEmptyLog(t *testing.T) {
	t.Parallel()
	recs, warns, err := Read(logPath(t))
	if err != nil || warns != nil || recs == nil || len(recs) != 0 {
		t.Errorf("Read = %v, %v, %v; want an empty non-nil slice, no warnings, no error", recs, warns, err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestFoldLatestStatusWins(t *testing.T) {
	t.Parallel()
	log := strings.Join([]string{
		`{"id":"req_aaaaaaaa","created_at":"2025-01-01T00:00:00Z","tool":"git","subcommand":["push"],"flags":["--force"],"rationale":"r","enables":"e","status":"pending"}`,
		`{"id":"req_bbbbbbbb","created_at":"2025-01-02T00:00:00Z","tool":"git","subcommand":[],"flags":[],"rationale":"r","enables":"","status":"pending"}`,
		`{"id":"req_aaaaaaaa","status":"approved","decided_at":"2025-01-03T00:00:00Z","reason":"ok","applied":true}`,
		`{"id":"req_cccccccc","created_at":"2025-01-04T00:00:00Z","tool":"kubectl","subcommand":["get"],"flags":[],"rationale":"r","enables":"","status":"pending"}`,
		`{"id":"req_aaaaaaaa","status":"denied","decided_at":"2025-01-05T00:00:00Z","reason":"changed my mind","applied":false}`,
		`{"id":"req_bbbbbbbb","status":"approved","decided_at":"2025-01-06T00:00:00Z"}`,
		`{"id":"req_dddddddd","status":"approved","decided_at":"2025-01-07T00:00:00Z","reason":"","applied":false}`,
		`{"id":"req_cccccccc","tool":"kubectl","status":"pending"}`,
	}, "\n") + "\n"
	recs, warns, err := Fold(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	day := func(d int) *time.Time { return ptr(time.Date(2025, 1, d, 0, 0, 0, 0, time.UTC)) }
	want := []*Record{
		{ID: "req_aaaaaaaa", CreatedAt: *day(1), Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force"}, Rationale: "r", Enables: "e",
			Status: StatusDenied, DecidedAt: day(5), Reason: ptr("changed my mind"), Applied: ptr(false)},
		{ID: "req_bbbbbbbb", CreatedAt: *day(2), Tool: "git", Subcommand: []string{}, Flags: []string{}, Rationale: "r",
			Status: StatusApproved, DecidedAt: day(6), Reason: ptr(""), Applied: ptr(false)},
		{ID: "req_cccccccc", CreatedAt: *day(4), Tool: "kubectl", Subcommand: []string{"get"}, Flags: []string{}, Rationale: "r",
			Status: StatusPending},
	}
	gotJSON, _ := json.MarshalIndent(recs, "", "  ")
	wantJSON, _ := json.MarshalIndent(want, "", "  ")
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("folded records:\n got %s\nwant %s", gotJSON, wantJSON)
	}
	wantWarns := []Warning{{7, "decision for unknown request req_dddddddd"}, {8, "request req_cccccccc appears twice"}}
	if !slices.Equal(warns, wantWarns) {
		t.Errorf("warnings %v, want %v", warns, wantWarns)
	}
}

func TestSubmitRepairsATornLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		torn  string
		write func(t *testing.T, path, firstID string)
	}{
		{"Submit ends a torn request line before its own",
			`{"id":"req_deadbeef","created_at":"2025-01-`,
			func(t *testing.T, path, _ string) {
				submit(t, path, Request{Tool: "second", Subcommand: []string{}, Rationale: "why"})
			}},
		{"Decide ends a torn decision line before its own",
			`{"id":"req_deadbeef","status":"appr`,
			func(t *testing.T, path, id string) {
				if err := Decide(t.Context(), path, id, Decision{Status: StatusApproved, Reason: "", Applied: true, DecidedBy: "cli"}, t0); err != nil {
					t.Fatal(err)
				}
			}},
		{"a torn line that is a lone brace is ended too",
			`{`,
			func(t *testing.T, path, _ string) {
				submit(t, path, Request{Tool: "second", Subcommand: []string{}, Rationale: "why"})
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := logPath(t)
			first := submit(t, path, Request{Tool: "first", Subcommand: []string{}, Rationale: "why"})
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(tc.torn); err != nil {
				t.Fatal(err)
			}
			f.Close()

			tc.write(t, path, first.ID)
			ls := lines(t, configtest.ReadFile(t, path))
			if len(ls) != 3 || ls[1] != tc.torn {
				t.Fatalf("log lines:\n%s\nwant the first record, the torn fragment %q alone on line 2, then the new record", strings.Join(ls, "\n"), tc.torn)
			}
			object(t, ls[2])

			recs, warns, err := Read(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) != 1 || warns[0].Line != 2 || !strings.HasPrefix(warns[0].String(), "line 2: ") {
				t.Errorf("warnings %v, want one naming line 2", warns)
			}
			if len(recs) == 0 || recs[0].ID != first.ID {
				t.Errorf("records %v, want %s first", recs, first.ID)
			}
		})
	}
}

func TestFoldSkipsLinesThatAreNotCompleteObjects(t *testing.T) {
	t.Parallel()
	before := `{"id":"req_11111111","tool":"git","subcommand":["push"],"status":"pending"}`
	after := `{"id":"req_22222222","tool":"git","subcommand":["pull"],"status":"pending"}`
	decision := `{"id":"req_11111111","status":"approved","reason":"ok","applied":true}`
	cases := []struct {
		name string
		bad  string
	}{
		{"garbage is skipped", `this is not json`},
		{"a truncated object is skipped", `{"id":"req_33333333","tool":"git","subcommand":["pu`},
		{"an object missing its closing brace is skipped", `{"id":"req_33333333","status":"pending"`},
		{"two objects on one line are skipped", `{"id":"req_33333333","status":"pending"}{"id":"req_44444444","status":"pending"}`},
		{"two objects separated by a space are skipped", `{"id":"req_33333333","status":"pending"} {"id":"req_44444444","status":"pending"}`},
		{"an object followed by garbage is skipped", `{"id":"req_33333333","status":"pending"} x`},
		{"an object followed by a stray bracket is skipped", `{"id":"req_33333333","status":"pending"}]`},
		{"an object followed by a stray brace is skipped", `{"id":"req_33333333","status":"pending"}}`},
		{"a JSON array is skipped", `[{"id":"req_33333333","status":"pending"}]`},
		{"a JSON string is skipped", `"req_33333333"`},
		{"a JSON number is skipped", `42`},
		{"null is skipped", `null`},
		{"an empty id is skipped", `{"id":"","status":"pending"}`},
		{"a missing id is skipped", `{"tool":"git","status":"pending"}`},
		{"an id of the wrong type is skipped", `{"id":7,"status":"pending"}`},
		{"flags of the wrong type are skipped", `{"id":"req_33333333","flags":"--force","status":"pending"}`},
		{"an unknown status is skipped", `{"id":"req_33333333","status":"maybe"}`},
		{"a missing status is skipped", `{"id":"req_33333333","tool":"git"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			log := before + "\n" + tc.bad + "\n" + after + "\n" + decision + "\n"
			recs, warns, err := Fold(strings.NewReader(log))
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) != 1 || warns[0].Line != 2 {
				t.Errorf("warnings %v, want exactly one, for line 2", warns)
			}
			var got []string
			for _, r := range recs {
				got = append(got, r.ID+"="+r.Status)
			}
			want := []string{"req_11111111=approved", "req_22222222=pending"}
			if !slices.Equal(got, want) {
				t.Errorf("records %q, want %q", got, want)
			}
		})
	}
}

func TestFoldIgnoresBlankLinesAndCarriageReturns(t *testing.T) {
	t.Parallel()
	log := "\n  \n" + `{"id":"req_11111111","status":"pending"}` + "\r\n\n\t\n" + `{"id":"req_11111111","status":"denied"}` + "\r\n"
	recs, warns, err := Fold(strings.NewReader(log))
	if err != nil || len(warns) != 0 || len(recs) != 1 || recs[0].Status != StatusDenied {
		t.Errorf("Fold = %v, %v, %v; want one denied record, no warnings", recs, warns, err)
	}
}

// A reader skips every line that is not a complete JSON object, whatever
// its length: one huge stray line must not hide the rest of the log, nor
// make every later Submit fail.
func TestFoldSkipsAnOverlongLine(t *testing.T) {
	t.Parallel()
	path := logPath(t)
	first := submit(t, path, Request{Tool: "first", Subcommand: []string{}, Rationale: "why"})
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(bytes.Repeat([]byte("x"), 17<<20))
	f.WriteString("\n")
	f.Close()
	second, err := Submit(t.Context(), path, Request{Tool: "second", Subcommand: []string{}, Rationale: "why"}, t0)
	if err != nil {
		t.Fatalf("Submit after an overlong line: %v", err)
	}
	recs, warns, err := Read(path)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if len(recs) != 2 || recs[0].ID != first.ID || recs[1].ID != second.ID || len(warns) != 1 || warns[0].Line != 2 {
		t.Errorf("records %v, warnings %v; want %s and %s with a warning for line 2", recs, warns, first.ID, second.ID)
	}
}

func TestConcurrentSubmitsOfOneRequestFileItOnce(t *testing.T) {
	t.Parallel()
	path := logPath(t)
	req := Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force"}, Rationale: "why"}
	const n = 32
	results := make([]Submitted, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], errs[i] = Submit(t.Context(), path, req, t0) })
	}
	wg.Wait()
	fresh := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Submit %d: %v", i, errs[i])
		}
		if results[i].ID != results[0].ID {
			t.Errorf("Submit %d got id %s, want %s like the others", i, results[i].ID, results[0].ID)
		}
		if !results[i].Existing {
			fresh++
		}
	}
	if fresh != 1 {
		t.Errorf("%d submits filed a new request, want exactly 1", fresh)
	}
	if ls := lines(t, configtest.ReadFile(t, path)); len(ls) != 1 {
		t.Errorf("the log has %d lines, want 1", len(ls))
	}
}

// TestHelperProcess is not a test: it is the second writer of
// TestConcurrentWritersAcrossProcesses, run in a child process.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("runs only as the helper process of TestConcurrentWritersAcrossProcesses")
	}
	path := os.Getenv(helperPathEnv)
	n, err := strconv.Atoi(os.Getenv(helperCountEnv))
	if err != nil || path == "" {
		fmt.Fprintf(os.Stderr, "helper: bad environment: path %q, count: %v\n", path, err)
		os.Exit(2)
	}
	// Start with the parent's goroutines: wait for the start file.
	awaitStartSignal()
	for i := range n {
		r := Request{Tool: "proc", Subcommand: []string{"n" + strconv.Itoa(i)}, Rationale: strings.Repeat("p", 300)}
		if _, err := Submit(t.Context(), path, r, time.Now()); err != nil {
			fmt.Fprintf(os.Stderr, "helper: Submit %d: %v\n", i, err)
			os.Exit(1)
		}
	}
	os.Exit(0)
}

func TestConcurrentWritersAcrossProcesses(t *testing.T) {
	t.Parallel()
	// Enough writers to interleave across the processes many times, few
	// enough that none waits near the lock's 5 s bound on a slow machine
	// under -race (at 8 × 20 + 80, CI's 2-core VM once had three writers
	// give up).
	const (
		goroutines = 4
		perWorker  = 15
		inHelper   = 40
	)
	path := logPath(t)
	// A torn line from a "crash" that the writers must repair exactly once.
	if err := os.WriteFile(path, []byte(`{"id":"req_deadbeef","status":"pen`), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	startFile := path + ".start"
	cmd.Env = append(os.Environ(), helperEnv+"=1", helperPathEnv+"="+path,
		helperCountEnv+"="+strconv.Itoa(inHelper), helperStartEnv+"="+startFile)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, goroutines*perWorker)
	for g := range goroutines {
		wg.Go(func() {
			<-start
			for i := range perWorker {
				r := Request{Tool: "goroutine" + strconv.Itoa(g), Subcommand: []string{"n" + strconv.Itoa(i)}, Rationale: strings.Repeat("g", 300)}
				if _, err := Submit(t.Context(), path, r, time.Now()); err != nil {
					errs <- err
				}
			}
		})
	}
	if err := os.WriteFile(startFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Submit: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper process: %v\n%s", err, stderr.Bytes())
	}

	ls := lines(t, configtest.ReadFile(t, path))
	want := 1 + goroutines*perWorker + inHelper
	if len(ls) != want {
		t.Errorf("the log has %d lines, want %d (the torn one and every request)", len(ls), want)
	}
	ids := map[string]bool{}
	for i, l := range ls[1:] {
		var rl Record
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rl); err != nil || dec.More() {
			t.Errorf("line %d is not one request object: %v: %.80q", i+2, err, l)
			continue
		}
		if ids[rl.ID] {
			t.Errorf("id %s appears twice", rl.ID)
		}
		ids[rl.ID] = true
	}
	recs, warns, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != want-1 || len(warns) != 1 || warns[0].Line != 1 {
		t.Errorf("Read: %d records and warnings %v; want %d records and one warning for line 1", len(recs), warns, want-1)
	}
	perTool := map[string]int{}
	switches := 0
	for i, r := range recs {
		perTool[r.Tool]++
		if i > 0 && (r.Tool == "proc") != (recs[i-1].Tool == "proc") {
			switches++
		}
	}
	t.Logf("the writes alternated between the processes %d times", switches)
	for g := range goroutines {
		if got := perTool["goroutine"+strconv.Itoa(g)]; got != perWorker {
			t.Errorf("goroutine %d has %d records, want %d", g, got, perWorker)
		}
	}
	if got := perTool["proc"]; got != inHelper {
		t.Errorf("the helper process has %d records, want %d", got, inHelper)
	}
}

func TestDecideRefusesADecidedRequest(t *testing.T) {
	t.Parallel()
	path := logPath(t)
	s := submit(t, path, Request{Tool: "git", Subcommand: []string{"push"}, Rationale: "why"})
	if err := Decide(t.Context(), path, s.ID, Decision{Status: StatusDenied, Reason: "no", Applied: false, DecidedBy: "cli"}, t0); err != nil {
		t.Fatal(err)
	}
	before := configtest.ReadFile(t, path)
	err := Decide(t.Context(), path, s.ID, Decision{Status: StatusApproved, Reason: "", Applied: true, DecidedBy: "cli"}, t0)
	if !errors.Is(err, ErrDecided) {
		t.Errorf("second decision: error %v, want ErrDecided", err)
	}
	if after := configtest.ReadFile(t, path); !bytes.Equal(after, before) {
		t.Errorf("a refused decision wrote to the log:\n%s", after)
	}
}

func TestSubmitRestrictsALoosenedLog(t *testing.T) {
	t.Parallel()
	path := logPath(t)
	submit(t, path, Request{Tool: "a", Subcommand: []string{}, Rationale: "why"})
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	submit(t, path, Request{Tool: "b", Subcommand: []string{}, Rationale: "why"})
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != 0o600 {
		t.Errorf("mode after a write = %v, want 0600", got)
	}
}

// awaitStartSignal holds a helper process until its parent creates the start
// file, so every process's writers start together; it exits 2 after a
// minute without it.
func awaitStartSignal() {
	if err := (waittest.Poll{Every: time.Millisecond}).Within(time.Minute, func() error {
		_, err := os.Stat(os.Getenv(helperStartEnv))
		return err
	}); err != nil {
		fmt.Fprintln(os.Stderr, "helper: no start signal:", err)
		os.Exit(2)
	}
}
