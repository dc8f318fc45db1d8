package requests

import (
	"bytes"
	"encoding/json"
	"reflect"
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
