package actors

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
)

// watchRetry is the watchers' Retry in these tests.
const watchRetry = 50 * time.Millisecond

// watching is a snapshot whose WatchPaths are the config at cfg and files
// (as a tool's env files); none of them need exist.
func watching(cfg string, files ...string) *Snapshot {
	return &Snapshot{Config: &config.Config{File: cfg, Tools: map[string]*config.Tool{"fake": {EnvFiles: files}}}}
}

// watchFixture is a running Watcher on a folder holding a config, a token
// file and an unrelated file. FileEvents has room for many rings, so a test
// can count them.
type watchFixture struct {
	dir, config, token, other string
	// marker is an empty folder the snapshot also names (a file in it),
	// which settle removes and re-creates.
	marker          string
	snaps           *testSnapshots
	changed, events messages.Doorbell
	sink            *logSink
	settles         int
}

// startWatcher starts a Watcher on the fixture's config and token files,
// and returns once its first watches are in place.
func startWatcher(t *testing.T) *watchFixture {
	t.Helper()
	dir := t.TempDir()
	f := &watchFixture{
		dir:    dir,
		config: filepath.Join(dir, "config.yaml"),
		token:  filepath.Join(dir, "mcp-token"),
		other:  filepath.Join(dir, "notes.txt"),
		marker: t.TempDir(),
	}
	for _, p := range []string{f.config, f.token, f.other} {
		configtest.WriteFile(t, p, "initial\n", 0o600)
	}
	f.run(t, f.watching(f.config, f.token))
	f.snaps.waitCalls(t, 1) // the first sync has begun
	f.synced(t)
	return f
}

// run starts a Watcher with first in service.
func (f *watchFixture) run(t *testing.T, first *Snapshot) {
	t.Helper()
	f.changed, f.events = make(messages.Doorbell, 1), make(messages.Doorbell, 64)
	f.snaps = newTestSnapshots(first)
	log, sink := newTestLogger()
	f.sink = sink
	start(t, NewWatcher(WatcherOptions{Snapshots: f.snaps, WatchSetChanged: f.changed, FileEvents: f.events, Retry: watchRetry, Log: log}))
	// Once its first watches are in place, the watcher rings once: a change
	// made between the snapshot's load and those watches is not lost.
	select {
	case <-f.events:
	case <-time.After(wait):
		t.Fatalf("the watcher did not ring after its first watches")
	}
}

// watching is a snapshot naming files and the fixture's marker folder.
func (f *watchFixture) watching(cfg string, files ...string) *Snapshot {
	return watching(cfg, append(files, filepath.Join(f.marker, "marker"))...)
}

// synced returns once the watcher has finished what it was doing when
// called: it answers a WatchSetChanged ring (reading the snapshot) only
// between two of its steps. The sync that ring starts may still be running
// (with the same snapshot, it changes nothing unless a wanted folder has
// appeared meanwhile).
func (f *watchFixture) synced(t *testing.T) {
	t.Helper()
	n := f.snaps.calls.Load()
	ring(f.changed)
	f.snaps.waitCalls(t, n+1)
}

// swap puts s in service, rings WatchSetChanged and returns once the
// watcher has applied it.
func (f *watchFixture) swap(t *testing.T, s *Snapshot) {
	t.Helper()
	f.snaps.Store(s)
	f.synced(t) // the watcher is applying s
	f.synced(t) // and is done
}

// settle returns once the watcher has handled every file event caused
// before the call, and returns how many times FileEvents rang since the
// last settle. The watcher handles events in order: it learns from its own
// event that the marker folder is gone (after every earlier event), rings,
// watches the folder again on its next retry, logs that and rings again.
// So absence is proven by a later event that does ring, not by a wait.
func (f *watchFixture) settle(t *testing.T) int {
	t.Helper()
	f.settles++
	if err := os.Remove(f.marker); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(f.marker, 0o700); err != nil {
		t.Fatal(err)
	}
	f.sink.waitForN(t, f.settles, "watching folder again", "dir="+f.marker)
	f.synced(t) // the ring after that log line is rung
	return drain(f.events) - 2
}

func TestWatcherRingsForTheFilesTheSnapshotNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(t *testing.T, f *watchFixture)
		rings  bool
	}{
		{
			name:   "writing the config rings",
			change: func(t *testing.T, f *watchFixture) { configtest.WriteFile(t, f.config, "changed\n", 0o600) },
			rings:  true,
		},
		{
			name: "renaming a new file over the config rings",
			change: func(t *testing.T, f *watchFixture) {
				configtest.ReplaceFile(t, f.config, "changed\n")
			},
			rings: true,
		},
		{
			name:   "writing the token file rings",
			change: func(t *testing.T, f *watchFixture) { configtest.WriteFile(t, f.token, "rotated\n", 0o600) },
			rings:  true,
		},
		{
			name: "removing the token file rings",
			change: func(t *testing.T, f *watchFixture) {
				if err := os.Remove(f.token); err != nil {
					t.Fatal(err)
				}
			},
			rings: true,
		},
		{
			name:   "writing an unrelated file in the same folder does not ring",
			change: func(t *testing.T, f *watchFixture) { configtest.WriteFile(t, f.other, "changed\n", 0o600) },
			rings:  false,
		},
		{
			name: "creating a new file in the same folder does not ring",
			change: func(t *testing.T, f *watchFixture) {
				configtest.WriteFile(t, filepath.Join(f.dir, "new.yaml"), "x\n", 0o600)
			},
			rings: false,
		},
		{
			name: "renaming an unrelated file in the same folder does not ring",
			change: func(t *testing.T, f *watchFixture) {
				if err := os.Rename(f.other, f.other+".old"); err != nil {
					t.Fatal(err)
				}
			},
			rings: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := startWatcher(t)
			if got := f.settle(t); got != 0 {
				t.Fatalf("FileEvents rang %d times before any change, want 0", got)
			}
			tt.change(t, f)
			got := f.settle(t)
			if tt.rings && got < 1 {
				t.Errorf("FileEvents rang %d times, want at least 1", got)
			}
			if !tt.rings && got != 0 {
				t.Errorf("FileEvents rang %d times, want 0", got)
			}
			if warns := f.sink.lines("level=WARN"); len(warns) > 0 {
				t.Errorf("warnings logged: %q, want none", warns)
			}
		})
	}
}

// After a swap the watcher watches what the new snapshot names: a folder
// newly named is watched, a file no longer named no longer rings, and a
// folder no longer named is dropped.
func TestWatcherFollowsTheWatchSet(t *testing.T) {
	t.Parallel()
	f := startWatcher(t)
	elsewhere := t.TempDir()
	newConfig := filepath.Join(elsewhere, "config.yaml")
	write := func(path string) func(t *testing.T) {
		return func(t *testing.T) { configtest.WriteFile(t, path, "changed\n", 0o600) }
	}
	steps := []struct {
		name string
		// swap, when not nil, is put in service before the change.
		swap   *Snapshot
		change func(t *testing.T)
		rings  bool
	}{
		{
			name:   "before any swap, a write in a folder not named does not ring",
			change: write(newConfig),
		},
		{
			name:   "after a swap to a config elsewhere, a write to it rings",
			swap:   f.watching(newConfig, f.token),
			change: write(newConfig),
			rings:  true,
		},
		{
			name:   "a write to the old config, in a folder still watched for the token, does not ring",
			change: write(f.config),
		},
		{
			name:   "a write to the token, still named, rings",
			change: write(f.token),
			rings:  true,
		},
		{
			name:   "after a swap that names nothing in the old folder, a write to the token does not ring",
			swap:   f.watching(newConfig),
			change: write(f.token),
		},
		{
			name: "the old folder is no longer watched: its removal does not ring",
			change: func(t *testing.T) {
				if err := os.RemoveAll(f.dir); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for _, s := range steps {
		if s.swap != nil {
			f.swap(t, s.swap)
		}
		s.change(t)
		got := f.settle(t)
		if s.rings && got < 1 {
			t.Errorf("%s: FileEvents rang %d times, want at least 1", s.name, got)
		}
		if !s.rings && got != 0 {
			t.Errorf("%s: FileEvents rang %d times, want 0", s.name, got)
		}
	}
	if warns := f.sink.lines("level=WARN"); len(warns) > 0 {
		t.Errorf("warnings logged: %q, want none", warns)
	}
}

// A folder the snapshot names but that cannot be watched (removed, or not
// created yet) is tried again every Retry and watched once it is there.
func TestWatcherWatchesAFolderOnceItIsThere(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// gone starts a watcher on a config whose folder is gone, or not
		// there yet, and returns the config's path. Nothing may sync the
		// watcher after that, so only the retry can watch the folder.
		gone func(t *testing.T) (*watchFixture, string)
		// warns is whether the watcher warns that it cannot watch yet.
		warns bool
	}{
		{
			name: "a watched folder removed and re-created is watched again",
			gone: func(t *testing.T) (*watchFixture, string) {
				f := startWatcher(t)
				if err := os.RemoveAll(f.dir); err != nil {
					t.Fatal(err)
				}
				return f, f.config
			},
		},
		{
			name: "a folder named before it exists is watched once it is created",
			gone: func(t *testing.T) (*watchFixture, string) {
				cfg := filepath.Join(t.TempDir(), "later", "config.yaml")
				f := &watchFixture{}
				f.run(t, watching(cfg))
				f.sink.waitFor(t, "level=WARN", "cannot watch folder yet", "dir="+filepath.Dir(cfg))
				return f, cfg
			},
			warns: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, cfg := tt.gone(t)
			dir := filepath.Dir(cfg)
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			f.sink.waitFor(t, "watching folder again", "dir="+dir)
			f.synced(t) // the ring after that log line is rung
			if got := drain(f.events); got < 1 {
				t.Errorf("FileEvents rang %d times while the folder was away and came back, want at least 1 (its files may have changed)", got)
			}
			configtest.WriteFile(t, cfg, "in the folder that came back\n", 0o600)
			receive(t, f.events, "FileEvents ring for the config in the folder that came back")

			warns := f.sink.lines("level=WARN", "cannot watch folder yet", "dir="+dir)
			if got := len(warns) == 1; got != tt.warns {
				t.Errorf("warnings that the folder cannot be watched yet = %q, want one: %v; log:\n%s", warns, tt.warns, f.sink.String())
			}
		})
	}
}
