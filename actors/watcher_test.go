package actors

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wraptool/wraptool/messages"
)

// watchFixture is a folder holding a config, a token file, an unrelated
// file and a "ready" file, watched by a running Watcher.
type watchFixture struct {
	dir, config, token, other, ready string
	out                              chan messages.FileChanged
	sink                             *logSink

	mu    sync.Mutex
	paths []string
	calls int
}

func (f *watchFixture) setPaths(paths ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paths = paths
}

func (f *watchFixture) pathsCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// startWatcher starts a Watcher on the fixture's config, token and ready
// files, and returns once it is watching.
func startWatcher(t *testing.T) *watchFixture {
	t.Helper()
	dir := t.TempDir()
	f := &watchFixture{
		dir:    dir,
		config: filepath.Join(dir, "config.yaml"),
		token:  filepath.Join(dir, "mcp-token"),
		other:  filepath.Join(dir, "notes.txt"),
		ready:  filepath.Join(dir, "ready"),
		out:    make(chan messages.FileChanged, 64),
	}
	for _, p := range []string{f.config, f.token, f.other, f.ready} {
		writeFile(t, p, "initial\n")
	}
	f.setPaths(f.config, f.token, f.ready)
	log, sink := newTestLogger()
	f.sink = sink
	w := NewWatcher(func() []string {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls++
		return slices.Clone(f.paths)
	}, f.out, log)
	start(t, w)
	f.waitUntilWatching(t)
	return f
}

// waitUntilWatching writes the ready file until the watcher reports it:
// Run adds its watches asynchronously and nothing else says when they are
// in place. Once one event has come through, the initial watches exist.
func (f *watchFixture) waitUntilWatching(t *testing.T) {
	t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		writeFile(t, f.ready, "ready\n")
		select {
		case ev := <-f.out:
			if ev.Path == f.ready {
				return
			}
			t.Fatalf("first event is %+v, want one for %s", ev, f.ready)
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("the watcher reported nothing within %v", wait)
		}
	}
}

// next returns the next event that is not about the ready file.
func (f *watchFixture) next(t *testing.T) messages.FileChanged {
	t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case ev := <-f.out:
			if ev.Path != f.ready {
				return ev
			}
		case <-timeout:
			t.Fatalf("no FileChanged within %v", wait)
		}
	}
}

func TestWatcherReportsTheConfigAndTokenFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(t *testing.T, f *watchFixture)
		// want is the path reported, "" for none.
		want func(f *watchFixture) string
	}{
		{
			name:   "writing the config is reported",
			change: func(t *testing.T, f *watchFixture) { writeFile(t, f.config, "changed\n") },
			want:   func(f *watchFixture) string { return f.config },
		},
		{
			name: "renaming a new file over the config is reported",
			change: func(t *testing.T, f *watchFixture) {
				tmp := filepath.Join(f.dir, ".config.yaml.tmp")
				writeFile(t, tmp, "changed\n")
				if err := os.Rename(tmp, f.config); err != nil {
					t.Fatal(err)
				}
			},
			want: func(f *watchFixture) string { return f.config },
		},
		{
			name:   "writing the token file is reported",
			change: func(t *testing.T, f *watchFixture) { writeFile(t, f.token, "rotated\n") },
			want:   func(f *watchFixture) string { return f.token },
		},
		{
			name:   "removing the token file is reported",
			change: func(t *testing.T, f *watchFixture) { os.Remove(f.token) },
			want:   func(f *watchFixture) string { return f.token },
		},
		{
			name:   "writing an unrelated file in the same folder is not reported",
			change: func(t *testing.T, f *watchFixture) { writeFile(t, f.other, "changed\n") },
			want:   func(*watchFixture) string { return "" },
		},
		{
			name:   "creating a new file in the same folder is not reported",
			change: func(t *testing.T, f *watchFixture) { writeFile(t, filepath.Join(f.dir, "new.yaml"), "x\n") },
			want:   func(*watchFixture) string { return "" },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := startWatcher(t)
			tt.change(t, f)
			want := tt.want(f)
			if want != "" {
				if ev := f.next(t); ev.Path != want || ev.Op == "" {
					t.Errorf("got %+v, want an event for %s", ev, want)
				}
				return
			}
			// Absence has no event to wait for: watch for a while.
			timeout := time.After(quiet)
			for {
				select {
				case ev := <-f.out:
					if ev.Path != f.ready {
						t.Errorf("got %+v, want no event", ev)
					}
				case <-timeout:
					return
				}
			}
		})
	}
}

func TestWatcherAsksForThePathsAgainAfterAnEvent(t *testing.T) {
	t.Parallel()
	f := startWatcher(t)
	// A reload names a new token file, in a folder not watched yet.
	elsewhere := t.TempDir()
	admin := filepath.Join(elsewhere, "admin-token")
	writeFile(t, admin, "admin\n")
	f.setPaths(f.config, f.token, f.ready, admin)
	before := f.pathsCalls()

	writeFile(t, f.config, "changed\n")
	if ev := f.next(t); ev.Path != f.config {
		t.Fatalf("got %+v, want an event for %s", ev, f.config)
	}
	// The watcher re-reads the paths after sending an event and before
	// taking the next one, so once a second event arrives the new folder
	// is watched.
	writeFile(t, f.config, "changed again\n")
	if ev := f.next(t); ev.Path != f.config {
		t.Fatalf("got %+v, want an event for %s", ev, f.config)
	}
	if got := f.pathsCalls(); got <= before {
		t.Errorf("paths was called %d times in all after an event, want more than %d", got, before)
	}

	writeFile(t, admin, "rotated\n")
	for {
		// Late events from the config writes may come first.
		ev := f.next(t)
		if ev.Path == admin {
			break
		}
		if ev.Path != f.config {
			t.Fatalf("got %+v, want an event for %s", ev, admin)
		}
	}
	if warns := f.sink.lines("level=WARN"); len(warns) > 0 {
		t.Errorf("warnings logged: %q, want none", warns)
	}
}
