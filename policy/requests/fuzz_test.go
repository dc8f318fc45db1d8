package requests

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzFold checks, for any log contents, that Fold never panics nor fails on
// input that fits its line limit; that every record it returns has a
// non-empty, unique id, a known status, non-nil slices and, once decided,
// a reason and applied flag; that warnings name real lines in order; and that
// folding is deterministic and unaffected by a trailing newline.
func FuzzFold(f *testing.F) {
	seeds := []string{
		"",
		"\n",
		`{"id":"req_0123abcd","created_at":"2025-01-01T00:00:00Z","tool":"git","subcommand":["push"],"flags":["--force"],"rationale":"r","enables":"","status":"pending"}` + "\n",
		`{"id":"req_0123abcd","status":"pending"}` + "\n" + `{"id":"req_0123abcd","status":"approved","decided_at":"2025-01-02T00:00:00Z","reason":"ok","applied":true}` + "\n",
		`{"id":"req_0123abcd","status":"pending"}` + "\n" + `{"id":"req_0123abcd","status":"denied"}` + "\n" + `{"id":"req_0123abcd","status":"approved"}`,
		`{"id":"a","status":"approved"}` + "\n" + `{"id":"a","status":"pending"}` + "\n",
		`{"id":"a","status":"pending"}` + "\n" + `{"id":"a","status":"pending"}` + "\n",
		`{"id":"req_0123abcd","created_at":"2025-01-`,
		`{"id":"a","status":"pending"}{"id":"b","status":"pending"}`,
		`{"id":"a","status":"pending"}]`,
		`[{"id":"a","status":"pending"}]`,
		`{"id":"","status":"pending"}`,
		`{"id":"a","status":"maybe"}`,
		`{"id":"a","status":"pending","created_at":"yesterday"}`,
		`{"id":"a","status":"pending","subcommand":null,"flags":[null]}`,
		`{"id":"a","status":"approved","applied":"yes"}`,
		"null\ngarbage\n42\n\"s\"\r\n\t\n",
		"{\"id\":\"a\",\"status\":\"pending\"}\r\n{\"id\":\"a\",\"status\":\"denied\",\"reason\":null}\r\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, warns, err := Fold(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("Fold failed on %d bytes: %v", len(data), err)
		}
		nLines := strings.Count(string(data), "\n") + 1
		seen := map[string]bool{}
		for _, r := range recs {
			if r == nil {
				t.Fatal("Fold returned a nil record")
			}
			if r.ID == "" {
				t.Errorf("record %+v has an empty id", r)
			}
			if seen[r.ID] {
				t.Errorf("id %q is folded into two records", r.ID)
			}
			seen[r.ID] = true
			switch r.Status {
			case StatusPending:
				if r.DecidedAt != nil || r.Reason != nil || r.Applied != nil {
					t.Errorf("pending record %+v carries decision fields", r)
				}
			case StatusApproved, StatusDenied:
				if r.Reason == nil || r.Applied == nil {
					t.Errorf("decided record %+v lacks reason or applied", r)
				}
			default:
				t.Errorf("record %+v has the unknown status %q", r, r.Status)
			}
			if r.Subcommand == nil || r.Flags == nil {
				t.Errorf("record %+v has a nil slice", r)
			}
		}
		last := 0
		for _, w := range warns {
			if w.Line <= last || w.Line > nLines || w.Err == "" {
				t.Errorf("warning %v: lines must increase, stay within 1..%d and say why", w, nLines)
			}
			last = w.Line
		}

		again, againWarns, err := Fold(bytes.NewReader(data))
		if err != nil || !reflect.DeepEqual(again, recs) || !reflect.DeepEqual(againWarns, warns) {
			t.Errorf("folding twice differs:\n got %s %v\nthen %s %v", show(recs), warns, show(again), againWarns)
		}
		withNL, nlWarns, err := Fold(bytes.NewReader(append(bytes.Clone(data), '\n')))
		if err != nil || !reflect.DeepEqual(withNL, recs) || !reflect.DeepEqual(nlWarns, warns) {
			t.Errorf("a trailing newline changed the fold:\n got %s %v\nthen %s %v", show(recs), warns, show(withNL), nlWarns)
		}
	})
}

func show(recs []*Record) string {
	b, _ := json.Marshal(recs)
	return string(b)
}

// FuzzFoldInChunks checks that a Log, folding a log in two reads split at
// any byte, ends where a whole fold ends: the first read stops after the
// last newline it saw (a torn line is not a line yet), and the two reads
// together give Fold's records and warnings, line numbers included. It also
// checks that the Log's lean fold (ids, statuses, pending keys) agrees with
// the records Read would show.
func FuzzFoldInChunks(f *testing.F) {
	f.Add([]byte(`{"id":"a","status":"pending","tool":"git"}`+"\n"+`garbage`+"\n"+`{"id":"a","status":"denied"}`+"\n"), uint(50))
	f.Add([]byte(`{"id":"a","status":"pending"}`+"\n"+`{"id":"b","status":"pending"}`+"\n"+`{"id":"a","status":"approved"}`), uint(31))
	f.Add([]byte("\n\n"+`{"id":"a","status":"pending","flags":["-b","-a"]}`+"\r\n"+`{"id":"b","status":"pending","flags":["-a","-b"]}`), uint(3))
	f.Fuzz(func(t *testing.T, data []byte, split uint) {
		want, wantWarns, err := Fold(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("Fold: %v", err)
		}
		// A trailing newline does not change the fold (FuzzFold), and
		// makes the last line one a Log folds.
		whole := data
		if len(whole) > 0 && whole[len(whole)-1] != '\n' {
			whole = append(bytes.Clone(whole), '\n')
		}
		k := int(split % uint(len(whole)+1))
		for _, keep := range []bool{true, false} {
			l := &Log{fold: newFolder(keep, nil)}
			if err := l.consume(bytes.NewReader(whole[:k]), int64(k)); err != nil {
				t.Fatalf("consume(first %d bytes): %v", k, err)
			}
			if wantOff := int64(bytes.LastIndexByte(whole[:k], '\n') + 1); l.offset != wantOff {
				t.Fatalf("after the first %d bytes the offset is %d, want %d (just past the last newline)", k, l.offset, wantOff)
			}
			if err := l.consume(bytes.NewReader(whole[l.offset:]), int64(len(whole))-l.offset); err != nil {
				t.Fatalf("consume(the rest): %v", err)
			}
			if l.offset != int64(len(whole)) {
				t.Fatalf("after all %d bytes the offset is %d", len(whole), l.offset)
			}
			if !reflect.DeepEqual(l.warns, wantWarns) {
				t.Errorf("warnings split at %d: %v, want %v", k, l.warns, wantWarns)
			}
			if keep && !reflect.DeepEqual(l.fold.records, want) {
				t.Errorf("records split at %d:\n got %s\nwant %s", k, show(l.fold.records), show(want))
			}
			if len(l.fold.status) != len(want) {
				t.Errorf("the fold knows %d ids, want %d", len(l.fold.status), len(want))
			}
			pending := 0
			for _, r := range want {
				if got := l.fold.status[r.ID]; got != r.Status {
					t.Errorf("status of %s = %q, want %q", r.ID, got, r.Status)
				}
				if r.Status != StatusPending {
					continue
				}
				pending++
				first := want[slices.IndexFunc(want, func(o *Record) bool {
					return o.Status == StatusPending && asRequest(o).Key() == asRequest(r).Key()
				})]
				if id, ok := l.fold.pending(asRequest(r)); !ok || id != first.ID {
					t.Errorf("pending(%s) = %q, %v; want the oldest identical pending request %s", r.ID, id, ok, first.ID)
				}
			}
			if len(l.fold.keyOf) != pending {
				t.Errorf("the fold counts %d pending, want %d", len(l.fold.keyOf), pending)
			}
		}
	})
}

func asRequest(r *Record) Request {
	return Request{Tool: r.Tool, Subcommand: r.Subcommand, Flags: r.Flags, Rationale: r.Rationale, Enables: r.Enables}
}

// fuzzKey signs the grants of FuzzFoldGrants' seeds; otherKey is a key
// the fuzzer's lines were never signed with.
var (
	fuzzKey  = bytes.Repeat([]byte{0x42}, keySize)
	otherKey = bytes.Repeat([]byte{0xa5}, keySize)
)

// grantSeeds writes a log with grants signed with fuzzKey: a once-grant
// used and then replayed, a timed grant, an exact-call once-grant, and a
// pending request; it returns the log and variants of it.
func grantSeeds(f *testing.F) [][]byte {
	path := filepath.Join(f.TempDir(), "requests.jsonl")
	if err := os.WriteFile(KeyPath(path), fuzzKey, 0o600); err != nil {
		f.Fatal(err)
	}
	ctx := context.Background()
	l := Open(path)
	exact := Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force"}, Rationale: "r", Call: &Call{
		Tool: "git_push", Arguments: json.RawMessage(`{"force":true}`), Command: []string{"git", "push", "--force"}, Cwd: "/w", Dir: "1:2", Policy: "p"}}
	for _, s := range []struct {
		req Request
		g   *Grant
	}{
		{Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force"}, Rationale: "r"}, &Grant{Once: true, Until: t0.Add(time.Hour), Config: "/c.yaml"}},
		{Request{Tool: "git", Subcommand: []string{"fetch"}, Rationale: "r"}, &Grant{Until: t0.Add(MaxFor), Config: "/c.yaml"}},
		{exact, &Grant{Once: true, Exact: true, Policy: "p", Until: t0.Add(MaxOnce), Config: "/c.yaml"}},
		{Request{Tool: "ls", Rationale: "r"}, nil},
	} {
		sub, err := l.Submit(ctx, s.req, t0)
		if err != nil {
			f.Fatal(err)
		}
		if s.g != nil {
			if err := l.Decide(ctx, sub.ID, Decision{Status: StatusApproved, DecidedBy: "cli", Grant: s.g}, t0); err != nil {
				f.Fatal(err)
			}
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	if recs, warns, err := FoldKeyed(bytes.NewReader(data), fuzzKey); err != nil || len(warns) != 0 || len(ActiveGrants(recs, t0)) != 3 {
		f.Fatalf("the seed log folds to %s, %v, %v; want three grants in force", show(recs), warns, err)
	}
	ls := strings.SplitAfter(string(data), "\n")
	id := string(ls[0][len(`{"id":"`):][:12])
	if _, err := l.UseGrant(ctx, id, t0); err != nil {
		f.Fatal(err)
	}
	used, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	replayed := append(bytes.Clone(used), ls[1]...)
	return [][]byte{
		data, used, replayed,
		[]byte(strings.Replace(string(used), `"until":"2025-03-14T15:09`, `"until":"2025-03-14T16:09`, 1)),
		[]byte(strings.Replace(string(used), `"flags":["--force"]`, `"flags":["--force","-x"]`, 1)),
		[]byte(strings.Replace(string(used), id, "req_00000000", -1)),
		[]byte(strings.Join([]string{ls[2], ls[3], ls[0], ls[1]}, "")),
		[]byte(ls[1] + ls[0] + ls[1]),
		[]byte(strings.Replace(string(data), `"once":true,`, ``, -1)),
		[]byte(ls[0] + `{"id":"` + id + `","status":"approved","decided_at":"2025-03-14T14:09:26.535Z","applied":false,"grant":{"once":true,"until":"2025-03-14T15:00:00Z","config":"/c"},"sig":"00"}` + "\n"),
	}
}

// grantLine parses text as the folder does and reports whether it is a
// decision that carries a grant.
func grantLine(text string) (line, bool) {
	raw := bytes.TrimSpace([]byte(text))
	var l line
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&l); err != nil || dec.InputOffset() != int64(len(raw)) || l.ID == "" {
		return l, false
	}
	return l, (l.Status == StatusApproved || l.Status == StatusDenied) && l.Grant != nil
}

// FuzzFoldGrants checks, for any log, that no line without a valid
// signature grants anything: folded with a key none of its lines was
// signed with, or with none, the log folds exactly as it does with every
// decision that carries a grant removed (such a line neither grants nor
// decides); and folded with the key, every grant in force comes from a line
// whose sig verifies over it and the request's first line, lasting no
// longer than its kind allows.
func FuzzFoldGrants(f *testing.F) {
	for _, s := range grantSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		texts := strings.Split(string(data), "\n")
		requests := map[string]*line{}
		var grants []line
		blanked := slices.Clone(texts)
		for i, text := range texts {
			l, isGrant := grantLine(text)
			if isGrant {
				grants = append(grants, l)
				blanked[i] = ""
			} else if l.ID != "" && l.Status == StatusPending && requests[l.ID] == nil {
				requests[l.ID] = &l
			}
		}
		want, _, err := Fold(strings.NewReader(strings.Join(blanked, "\n")))
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range [][]byte{nil, otherKey} {
			got, _, err := FoldKeyed(bytes.NewReader(data), key)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("folded with key %x:\n got %s\nwant the fold without grant lines %s", key, show(got), show(want))
			}
		}

		recs, _, err := FoldKeyed(bytes.NewReader(data), fuzzKey)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			g := r.Grant
			if g == nil {
				continue
			}
			if r.Status != StatusApproved || r.DecidedAt == nil || !g.Until.After(*r.DecidedAt) || g.Until.Sub(*r.DecidedAt) > g.limit() {
				t.Errorf("record %s: a grant that is not an approval within its kind's limit", show([]*Record{r}))
			}
			signedBy := slices.ContainsFunc(grants, func(l line) bool {
				req := requests[l.ID]
				d := l.decision()
				return l.ID == r.ID && req != nil && verify(fuzzKey, &d, requestDigest(req), l.Sig) &&
					l.Grant.Until.Equal(g.Until) && l.Grant.Once == g.Once && l.Grant.Exact == g.Exact &&
					l.Grant.Policy == g.Policy && l.Grant.Config == g.Config && l.DecidedAt != nil && l.DecidedAt.Equal(*r.DecidedAt)
			})
			if !signedBy {
				t.Errorf("record %s holds a grant no signed line gives", show([]*Record{r}))
			}
		}
	})
}
