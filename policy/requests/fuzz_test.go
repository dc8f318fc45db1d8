package requests

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
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
			l := &Log{fold: newFolder(keep)}
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
