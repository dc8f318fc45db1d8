package requeststest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy/requests"
)

func TestFindAndRecords(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	s, err := requests.Submit(t.Context(), path, requests.Request{Tool: "git", Subcommand: []string{"push"}, Rationale: "why"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, id string
		found    bool
	}{
		{"the request submitted is found", s.ID, true},
		{"an id the log does not hold is nil", "req_00000000", false},
		{"an empty id is nil", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := Find(t, path, tc.id)
			if (r != nil) != tc.found {
				t.Fatalf("Find(%q) = %+v, want found %v", tc.id, r, tc.found)
			}
			if tc.found && Record(t, path, tc.id).Status != requests.StatusPending {
				t.Errorf("Record(%q).Status = %q, want pending", tc.id, r.Status)
			}
		})
	}
	if n := len(Records(t, path)); n != 1 {
		t.Errorf("Records holds %d records, want 1", n)
	}
}
