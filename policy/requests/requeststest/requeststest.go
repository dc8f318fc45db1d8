// Package requeststest reads a capability request log in tests, as every
// reader does (folded by id, the latest status winning), so the tests of
// the actors, the review UI and the CLI check what they wrote one way.
package requeststest

import (
	"testing"

	"github.com/wraptool/wraptool/policy/requests"
)

// Records is the log at path folded by id, failing t when it cannot be
// read. Lines that are not records are skipped, as requests.Read does.
func Records(t testing.TB, path string) []*requests.Record {
	t.Helper()
	recs, _, err := requests.Read(path)
	if err != nil {
		t.Fatalf("requests.Read(%s): %v", path, err)
	}
	return recs
}

// Find is request id as the log at path folds it, or nil when the log does
// not hold it.
func Find(t testing.TB, path, id string) *requests.Record {
	t.Helper()
	for _, r := range Records(t, path) {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// Record is request id as the log at path folds it, failing t when the log
// does not hold it.
func Record(t testing.TB, path, id string) *requests.Record {
	t.Helper()
	r := Find(t, path, id)
	if r == nil {
		t.Fatalf("no request %s in %s", id, path)
	}
	return r
}
