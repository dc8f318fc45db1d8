package requests

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy/config/configtest"
)

// readSlack is what a Log may read beyond the bytes appended since its last
// call: the few bytes it reads back to check the file is still the one it
// folded.
const readSlack = 256

func logSubmit(t *testing.T, l *Log, r Request) Submitted {
	t.Helper()
	s, err := l.Submit(t.Context(), r, t0)
	if err != nil {
		t.Fatalf("Log.Submit(t.Context(), %+v): %v", r, err)
	}
	return s
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

// appendRaw appends s as another process that takes no lock would.
func appendRaw(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// pendingLog is a log of n pending requests for tool0…tool(n-1), with the
// ids req_00000000…, as writePending writes it.
func pendingLog(t *testing.T, n int) []byte {
	t.Helper()
	dir := t.TempDir()
	writePending(t, dir+"/log", n)
	return configtest.ReadFile(t, dir+"/log")
}

func TestWritesKeepHTMLCharactersRaw(t *testing.T) {
	t.Parallel()
	const raw = `<script>&</script>`
	cases := []struct {
		name  string
		write func(t *testing.T, path string)
		want  []string
	}{
		{"a request keeps <, > and & raw in every field",
			func(t *testing.T, path string) {
				submit(t, path, Request{Tool: "a<b>", Subcommand: []string{"<sub>"}, Flags: []string{"--x&y"}, Rationale: raw, Enables: "a<b>&c"})
			},
			[]string{`"tool":"a<b>"`, `"subcommand":["<sub>"]`, `"flags":["--x&y"]`, `"rationale":"<script>&</script>"`, `"enables":"a<b>&c"`}},
		{"a decision keeps them raw in its reason",
			func(t *testing.T, path string) {
				s := submit(t, path, Request{Tool: "git", Subcommand: []string{}, Rationale: "why"})
				if err := Decide(t.Context(), path, s.ID, Decision{Status: StatusDenied, Reason: raw, Applied: false, DecidedBy: "cli"}, t0); err != nil {
					t.Fatal(err)
				}
			},
			[]string{`"reason":"<script>&</script>"`}},
		{"a request through a Log keeps them raw",
			func(t *testing.T, path string) {
				logSubmit(t, Open(path), Request{Tool: "git", Subcommand: []string{}, Rationale: raw})
			},
			[]string{`"rationale":"<script>&</script>"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := logPath(t)
			tc.write(t, path)
			data := configtest.ReadFile(t, path)
			for _, w := range tc.want {
				if !bytes.Contains(data, []byte(w)) {
					t.Errorf("the log does not hold %s as written:\n%s", w, data)
				}
			}
			if bytes.Contains(data, []byte(`\u00`)) {
				t.Errorf("the log escapes characters:\n%s", data)
			}
			for i, l := range lines(t, data) {
				if l == "" {
					t.Errorf("line %d is blank, want one record a line:\n%q", i+1, data)
				}
			}
			recs, warns, err := Read(path)
			if err != nil || len(warns) != 0 || len(recs) != 1 {
				t.Fatalf("Read = %v, %v, %v; want one record, no warnings", recs, warns, err)
			}
		})
	}
}

func TestWritesOfHTMLCharactersStaySmall(t *testing.T) {
	t.Parallel()
	path := logPath(t)
	rationale := strings.Repeat("<>", 2048)
	s := submit(t, path, Request{Tool: "git", Subcommand: []string{"push"}, Rationale: rationale})
	if err := Decide(t.Context(), path, s.ID, Decision{Status: StatusDenied, Reason: rationale, Applied: false, DecidedBy: "cli"}, t0); err != nil {
		t.Fatal(err)
	}
	size, limit := len(configtest.ReadFile(t, path)), 2*len(rationale)*11/10
	if size > limit {
		t.Errorf("a request and a decision with %d bytes of <> each take %d bytes, want at most %d", len(rationale), size, limit)
	}
}

// Lines written before the log stopped escaping HTML still read the same.
func TestReadsOldHTMLEscapedLines(t *testing.T) {
	t.Parallel()
	path := logPath(t)
	old := `{"id":"req_0000abcd","created_at":"2025-01-01T00:00:00Z","tool":"a\u003cb\u003e","subcommand":[],"flags":[],` +
		`"rationale":"\u003cscript\u003e\u0026\u003c/script\u003e","enables":"","status":"pending"}` + "\n"
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	recs, warns, err := Read(path)
	if err != nil || len(warns) != 0 || len(recs) != 1 || recs[0].Tool != "a<b>" || recs[0].Rationale != "<script>&</script>" {
		t.Fatalf("Read = %s, %v, %v; want the tool a<b> and the rationale <script>&</script>", show(recs), warns, err)
	}
	s := logSubmit(t, Open(path), Request{Tool: "a<b>", Subcommand: []string{}, Rationale: "again"})
	if !s.Existing || s.ID != "req_0000abcd" {
		t.Errorf("Submit of the same request = %+v, want Existing with id req_0000abcd", s)
	}
}

func TestLogReadsOnlyWhatWasAppended(t *testing.T) {
	t.Parallel()
	path := logPath(t)
	l, other := Open(path), Open(path)
	big := strings.Repeat("<>", 2048)
	req := func(name string) Request { return Request{Tool: "tool", Subcommand: []string{name}, Rationale: big} }
	ids := make([]string, 200)
	for i := range ids {
		ids[i] = logSubmit(t, l, req("n"+strconv.Itoa(i))).ID
	}
	var otherID string
	steps := []struct {
		name  string
		other func(t *testing.T) // another writer's appends before l's call
		call  func(t *testing.T) // l's call and what it must see
	}{
		{"a request after 200 large ones reads none of them", nil,
			func(t *testing.T) {
				if s := logSubmit(t, l, req("next")); s.Existing {
					t.Errorf("Submit = %+v, want a new request", s)
				}
			}},
		{"a duplicate of a pending request is found without reading the log", nil,
			func(t *testing.T) {
				if s := logSubmit(t, l, req("n5")); !s.Existing || s.ID != ids[5] {
					t.Errorf("Submit = %+v, want Existing with id %s", s, ids[5])
				}
			}},
		{"a decision by another process frees its request",
			func(t *testing.T) {
				if err := Decide(t.Context(), path, ids[0], Decision{Status: StatusDenied, Reason: "no", Applied: false, DecidedBy: "cli"}, t0); err != nil {
					t.Fatal(err)
				}
			},
			func(t *testing.T) {
				if s := logSubmit(t, l, req("n0")); s.Existing || s.ID == ids[0] {
					t.Errorf("Submit of a decided request = %+v, want a new id other than %s", s, ids[0])
				}
			}},
		{"a request filed by another writer is found as a duplicate",
			func(t *testing.T) { otherID = logSubmit(t, other, req("elsewhere")).ID },
			func(t *testing.T) {
				if s := logSubmit(t, l, req("elsewhere")); !s.Existing || s.ID != otherID {
					t.Errorf("Submit = %+v, want Existing with id %s", s, otherID)
				}
			}},
		{"a decision by another writer makes Decide refuse",
			func(t *testing.T) {
				if err := other.Decide(t.Context(), ids[1], Decision{Status: StatusApproved, Reason: "ok", Applied: true, DecidedBy: "cli"}, t0); err != nil {
					t.Fatal(err)
				}
			},
			func(t *testing.T) {
				if err := l.Decide(t.Context(), ids[1], Decision{Status: StatusDenied, Reason: "no", Applied: false, DecidedBy: "cli"}, t0); !errors.Is(err, ErrDecided) {
					t.Errorf("Decide of a decided request: err %v, want ErrDecided", err)
				}
			}},
		{"a decision reads only what was appended", nil,
			func(t *testing.T) {
				if err := l.Decide(t.Context(), ids[2], Decision{Status: StatusApproved, Reason: "ok", Applied: true, DecidedBy: "cli"}, t0); err != nil {
					t.Errorf("Decide: %v", err)
				}
			}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			size, read := fileSize(t, path), l.bytesRead
			if st.other != nil {
				st.other(t)
			}
			st.call(t)
			grown, got := fileSize(t, path)-size, l.bytesRead-read
			if got > grown+readSlack {
				t.Errorf("the call read %d bytes of a %d-byte log, want at most the %d appended + %d", got, fileSize(t, path), grown, readSlack)
			}
		})
	}
}

func TestLogSeesASlotFreedByAnotherProcess(t *testing.T) {
	t.Parallel()
	path := logPath(t)
	ids := writePending(t, path, MaxPending)
	l := Open(path)
	fresh := Request{Tool: "fresh", Subcommand: []string{"x"}, Rationale: "why"}
	if _, err := l.Submit(t.Context(), fresh, t0); !errors.Is(err, ErrPendingLimit) {
		t.Fatalf("Submit with %d pending: err %v, want ErrPendingLimit", MaxPending, err)
	}
	size, read := fileSize(t, path), l.bytesRead
	if err := Decide(t.Context(), path, ids[0], Decision{Status: StatusDenied, Reason: "no", Applied: false, DecidedBy: "cli"}, t0); err != nil {
		t.Fatal(err)
	}
	if s, err := l.Submit(t.Context(), fresh, t0); err != nil || s.Existing {
		t.Fatalf("Submit after another process freed a slot: %+v, %v; want a new request", s, err)
	}
	if _, err := l.Submit(t.Context(), Request{Tool: "another", Subcommand: []string{}, Rationale: "why"}, t0); !errors.Is(err, ErrPendingLimit) {
		t.Errorf("Submit with the freed slot taken: err %v, want ErrPendingLimit", err)
	}
	if grown, got := fileSize(t, path)-size, l.bytesRead-read; got > grown+2*readSlack {
		t.Errorf("two calls read %d bytes of a %d-byte log, want at most the %d appended + %d", got, fileSize(t, path), grown, 2*readSlack)
	}
}

func TestLogRebuildsWhenTheFileIsReplaced(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		replace func(t *testing.T, path string, content []byte)
		content bool // whether the new file holds requests
	}{
		{"a file renamed over the log (another inode) is folded anew",
			func(t *testing.T, path string, content []byte) {
				if err := os.WriteFile(path+".new", content, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(path+".new", path); err != nil {
					t.Fatal(err)
				}
			}, true},
		{"a file deleted and written anew is folded anew",
			func(t *testing.T, path string, content []byte) {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, content, 0o600); err != nil {
					t.Fatal(err)
				}
			}, true},
		{"a file rewritten in place, longer, on the same inode is folded anew",
			func(t *testing.T, path string, content []byte) {
				if err := os.WriteFile(path, content, 0o600); err != nil {
					t.Fatal(err)
				}
			}, true},
		{"a file truncated to zero is folded anew",
			func(t *testing.T, path string, _ []byte) {
				if err := os.Truncate(path, 0); err != nil {
					t.Fatal(err)
				}
			}, false},
		{"a deleted file is created anew",
			func(t *testing.T, path string, _ []byte) {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := logPath(t)
			l := Open(path)
			mine := Request{Tool: "mine", Subcommand: []string{}, Rationale: "why"}
			old := logSubmit(t, l, mine)
			logSubmit(t, l, Request{Tool: "mine2", Subcommand: []string{}, Rationale: "why"})
			logSubmit(t, l, Request{Tool: "mine3", Subcommand: []string{}, Rationale: "why"})
			content := pendingLog(t, 10)
			if len(content) <= int(fileSize(t, path)) {
				t.Fatalf("the new content (%d bytes) must outgrow the old log (%d bytes)", len(content), fileSize(t, path))
			}
			tc.replace(t, path, content)

			// A rationale larger than the slack, so that a Log that read the
			// whole file on every call would be caught.
			again := mine
			again.Rationale = strings.Repeat("r", 2*readSlack)
			if s := logSubmit(t, l, again); s.Existing || s.ID == old.ID {
				t.Errorf("Submit of a request the new file lacks = %+v, want a new id other than %s", s, old.ID)
			}
			if err := l.Decide(t.Context(), old.ID, Decision{Status: StatusDenied, Reason: "", Applied: false, DecidedBy: "cli"}, t0); !errors.Is(err, ErrUnknownID) {
				t.Errorf("Decide of a request only the old file held: err %v, want ErrUnknownID", err)
			}
			if tc.content {
				if s := logSubmit(t, l, Request{Tool: "tool3", Subcommand: []string{}, Rationale: "again"}); !s.Existing || s.ID != "req_00000003" {
					t.Errorf("Submit of a request pending in the new file = %+v, want Existing with id req_00000003", s)
				}
				if err := l.Decide(t.Context(), "req_00000005", Decision{Status: StatusDenied, Reason: "", Applied: false, DecidedBy: "cli"}, t0); err != nil {
					t.Errorf("Decide of a request in the new file: %v", err)
				}
			}
			size, read := fileSize(t, path), l.bytesRead
			logSubmit(t, l, Request{Tool: "later", Subcommand: []string{}, Rationale: "why"})
			if grown, got := fileSize(t, path)-size, l.bytesRead-read; got > grown+readSlack {
				t.Errorf("a Submit after the rebuild read %d bytes of a %d-byte log, want at most the %d appended + %d", got, fileSize(t, path), grown, readSlack)
			}
			recs, warns, err := Read(path)
			want := 2
			if tc.content {
				want += 10
			}
			if err != nil || len(warns) != 0 || len(recs) != want {
				t.Errorf("Read: %d records, warnings %v, err %v; want %d, none, nil", len(recs), warns, err, want)
			}
		})
	}
}

func TestLogRepairsATornLineOnce(t *testing.T) {
	t.Parallel()
	const torn = `{"id":"req_deadbeef","status":"pen`
	second := Request{Tool: "second", Subcommand: []string{}, Rationale: "why"}
	cases := []struct {
		name string
		// end runs after the torn line is appended; it returns the id of
		// the request second and the warnings of the call that folded the
		// torn line.
		end func(t *testing.T, path string, l *Log) (string, []Warning)
	}{
		{"the Log ends the torn line before its own record",
			func(t *testing.T, _ string, l *Log) (string, []Warning) {
				s := logSubmit(t, l, second)
				return s.ID, s.Warnings
			}},
		{"another writer ends the torn line and the Log folds the record after it",
			func(t *testing.T, path string, l *Log) (string, []Warning) {
				id := submit(t, path, second).ID
				s := logSubmit(t, l, second)
				if !s.Existing || s.ID != id {
					t.Errorf("Submit of the request another writer filed after the torn line = %+v, want Existing with id %s", s, id)
				}
				return id, s.Warnings
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := logPath(t)
			l := Open(path)
			first := logSubmit(t, l, Request{Tool: "first", Subcommand: []string{}, Rationale: "why"})
			appendRaw(t, path, torn)

			id, warns := tc.end(t, path, l)
			if want := []Warning{{2, "not a complete JSON object"}}; !slices.Equal(warns, want) {
				t.Errorf("warnings %v, want %v", warns, want)
			}
			if ls := lines(t, configtest.ReadFile(t, path)); len(ls) != 3 || ls[1] != torn {
				t.Fatalf("log lines:\n%s\nwant the first record, the torn fragment alone on line 2, then the second", strings.Join(ls, "\n"))
			}
			for _, r := range []Request{{Tool: "third", Subcommand: []string{}, Rationale: "why"}, second} {
				if s := logSubmit(t, l, r); len(s.Warnings) != 0 {
					t.Errorf("a later Submit warned again: %v", s.Warnings)
				}
			}
			if s := logSubmit(t, l, second); !s.Existing || s.ID != id {
				t.Errorf("Submit of the second request again = %+v, want Existing with id %s", s, id)
			}
			if err := l.Decide(t.Context(), first.ID, Decision{Status: StatusApproved, Reason: "", Applied: true, DecidedBy: "cli"}, t0); err != nil {
				t.Errorf("Decide of the first request: %v", err)
			}
		})
	}
}

// A last line that lacks only its newline (a hand edit) counts before a
// Log decides, as it does for Read.
func TestLogSeesALastLineWithoutItsNewline(t *testing.T) {
	t.Parallel()
	path := logPath(t)
	l := Open(path)
	s := logSubmit(t, l, Request{Tool: "git", Subcommand: []string{"push"}, Rationale: "why"})
	appendRaw(t, path, `{"id":"`+s.ID+`","status":"denied","decided_at":"2025-01-01T00:00:00Z","reason":"by hand","applied":false}`)
	if err := l.Decide(t.Context(), s.ID, Decision{Status: StatusApproved, Reason: "", Applied: true, DecidedBy: "cli"}, t0); !errors.Is(err, ErrDecided) {
		t.Errorf("Decide of a request denied on the last line: err %v, want ErrDecided", err)
	}
	recs, warns, err := Read(path)
	if err != nil || len(warns) != 0 || len(recs) != 1 || recs[0].Status != StatusDenied {
		t.Errorf("Read = %s, %v, %v; want one denied record, no warnings", show(recs), warns, err)
	}
}

// A file renamed over the log that differs only before the last line the
// Log folded, so that the bytes it reads back match, is still another file.
func TestLogRebuildsForAnotherInodeThatLooksTheSame(t *testing.T) {
	t.Parallel()
	path := logPath(t)
	l := Open(path)
	first := logSubmit(t, l, Request{Tool: "first", Subcommand: []string{}, Rationale: "why"})
	logSubmit(t, l, Request{Tool: "second", Subcommand: []string{}, Rationale: "why"})
	const other = "req_0000000f"
	data := bytes.Replace(configtest.ReadFile(t, path), []byte(first.ID), []byte(other), 1)
	if err := os.WriteFile(path+".new", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	if err := l.Decide(t.Context(), first.ID, Decision{Status: StatusDenied, Reason: "", Applied: false, DecidedBy: "cli"}, t0); !errors.Is(err, ErrUnknownID) {
		t.Errorf("Decide of a request only the old file held: err %v, want ErrUnknownID", err)
	}
	if err := l.Decide(t.Context(), other, Decision{Status: StatusDenied, Reason: "", Applied: false, DecidedBy: "cli"}, t0); err != nil {
		t.Errorf("Decide of a request in the new file: %v", err)
	}
}

// A file cut short within the last line the Log folded, past the bytes it
// reads back, is folded anew: that line is now a torn one.
func TestLogRebuildsAFileCutWithinItsLastLine(t *testing.T) {
	t.Parallel()
	path := logPath(t)
	l := Open(path)
	first := logSubmit(t, l, Request{Tool: "first", Subcommand: []string{}, Rationale: "why"})
	second := Request{Tool: "second", Subcommand: []string{}, Rationale: strings.Repeat("r", 2*markBytes)}
	cut := logSubmit(t, l, second)
	if err := os.Truncate(path, fileSize(t, path)-10); err != nil {
		t.Fatal(err)
	}
	s := logSubmit(t, l, second)
	if s.Existing || s.ID == cut.ID {
		t.Errorf("Submit of the request whose line was cut = %+v, want a new id other than %s", s, cut.ID)
	}
	if want := []Warning{{2, "not a complete JSON object"}}; !slices.Equal(s.Warnings, want) {
		t.Errorf("warnings %v, want %v", s.Warnings, want)
	}
	if err := l.Decide(t.Context(), first.ID, Decision{Status: StatusApproved, Reason: "", Applied: true, DecidedBy: "cli"}, t0); err != nil {
		t.Errorf("Decide of the first request: %v", err)
	}
}

// One Log shared by goroutines, beside other writers, files a request once.
func TestLogSharedByGoroutinesFilesARequestOnce(t *testing.T) {
	t.Parallel()
	path := logPath(t)
	l := Open(path)
	req := Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force"}, Rationale: "why"}
	const n = 32
	results := make([]Submitted, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if i%4 == 0 { // another writer
				results[i], errs[i] = Submit(t.Context(), path, req, t0)
				return
			}
			results[i], errs[i] = l.Submit(t.Context(), req, t0)
		})
	}
	wg.Wait()
	fresh := 0
	for i := range n {
		if errs[i] != nil || results[i].ID != results[0].ID {
			t.Errorf("Submit %d = %+v, %v; want id %s like the others", i, results[i], errs[i], results[0].ID)
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

// Pending answers from the fold, reading only what was appended: decided
// and unknown ids are not pending, an identical request is found whatever
// its rationale, and a request written by another writer is seen.
func TestLogPending(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	l := Open(path)
	now := time.Now()
	submit := func(w *Log, sub string) string {
		s, err := w.Submit(context.Background(), Request{Tool: "git", Subcommand: []string{sub}, Rationale: "r"}, now)
		if err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	a, b := submit(l, "a"), submit(l, "b")
	if err := l.Decide(context.Background(), a, Decision{Status: StatusDenied, DecidedBy: DecidedByCLI}, now); err != nil {
		t.Fatal(err)
	}
	c := submit(Open(path), "c") // another writer
	still, identical, err := l.Pending(context.Background(), []string{a, b, c, "req_00000000"}, Request{Tool: "git", Subcommand: []string{"b"}, Rationale: "other words"})
	if err != nil || !slices.Equal(still, []string{b, c}) || !identical {
		t.Errorf("Pending = %v, %v, %v; want [%s %s], identical, no error", still, identical, err, b, c)
	}
	if _, identical, _ := l.Pending(context.Background(), nil, Request{Tool: "git", Subcommand: []string{"a"}}); identical {
		t.Errorf("a decided request counted as an identical pending one")
	}
}
