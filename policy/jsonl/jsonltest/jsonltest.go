// Package jsonltest holds test helpers for packages that write JSON Lines
// files through jsonl: they stand in for the other writers a test needs.
package jsonltest

import (
	"os"
	"sync"
	"syscall"
	"testing"
)

// HoldLock takes the exclusive flock on the existing file at path through
// an open file of its own, as another writer (a stuck CLI, another server)
// would, and keeps it until release is called or the test ends. flock locks
// belong to the open file description, so writers in the test's own
// process contend with it just as with another process.
func HoldLock(t testing.TB, path string) (release func()) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		t.Fatalf("hold the lock on %s: %v", path, err)
	}
	release = sync.OnceFunc(func() { f.Close() })
	t.Cleanup(release)
	return release
}
