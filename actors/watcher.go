package actors

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/wraptool/wraptool/messages"
)

// WatchRetry is how often the watcher tries again to watch a folder it
// wants but cannot watch (deleted, not yet created).
const WatchRetry = time.Second

// Watcher reports changes to the files a reload reads: the config, and the
// token, env and overrides files it names; and, apart, changes to the
// request log, whose grants the grants actor re-reads. It watches their folders rather
// than the files, so editors that save by writing a new file and renaming it
// over the old one are seen, and it drops every event on other files before
// it rings. The set follows the snapshot in service: after each swap the
// policy holder rings WatchSetChanged, and the watcher adds the folders now
// needed and drops those no longer needed. A watched folder that is deleted
// is watched again once it is re-created.
type Watcher struct {
	snapshots Snapshots
	changed   messages.Doorbell
	out       messages.Doorbell
	logOut    messages.Doorbell
	retry     time.Duration
	log       *slog.Logger
}

// WatcherOptions configure a Watcher.
type WatcherOptions struct {
	// Snapshots gives the files to watch (Snapshot.WatchPaths).
	Snapshots Snapshots
	// WatchSetChanged is rung by the policy holder after each swap.
	WatchSetChanged messages.Doorbell
	// FileEvents is rung for each event on a watched file.
	FileEvents messages.Doorbell
	// LogChanged is rung for each event on the request log (which carries
	// the temporary grants): a change of the log alone re-reads only
	// the grants, never the config. Nil leaves the log unwatched.
	LogChanged messages.Doorbell
	// Retry is how often a wanted folder that cannot be watched is tried
	// again; zero means WatchRetry.
	Retry time.Duration
	// Log receives warnings; nil discards them.
	Log *slog.Logger
}

// NewWatcher watches what o.Snapshots' current snapshot names.
func NewWatcher(o WatcherOptions) *Watcher {
	if o.Retry <= 0 {
		o.Retry = WatchRetry
	}
	return &Watcher{snapshots: o.Snapshots, changed: o.WatchSetChanged, out: o.FileEvents, logOut: o.LogChanged, retry: o.Retry, log: logger(o.Log, "watcher")}
}

// watchSet is the Watcher's state, owned by Run.
type watchSet struct {
	fw      *fsnotify.Watcher
	files   map[string]bool // absolute paths whose events reload
	logs    map[string]bool // absolute paths whose events re-read the grants
	watched map[string]bool // folders with a live watch
	lost    map[string]bool // folders wanted but not watched (yet)
}

// Run watches until ctx is done. If file watching cannot start, it logs a
// warning and waits: reloads then come from SIGHUP only.
func (w *Watcher) Run(ctx context.Context) error {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		w.log.Warn("file watching is unavailable; reload with SIGHUP", "error", err)
		<-ctx.Done()
		return nil
	}
	defer fw.Close()
	s := &watchSet{fw: fw, files: map[string]bool{}, logs: map[string]bool{}, watched: map[string]bool{}, lost: map[string]bool{}}
	// retry fires while some wanted folder is not watched; one timer, owned
	// by this loop.
	retry := time.NewTimer(w.retry)
	retry.Stop()
	defer retry.Stop()
	resync := func() {
		w.sync(s)
		if len(s.lost) > 0 {
			retry.Reset(w.retry)
		}
	}
	resync()
	// A change between the snapshot's load and these first watches would
	// otherwise go unseen until the next one: ring once, and the loader
	// reloads, or skips when the files hash the same.
	ring(w.out)
	w.ringLog()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.changed:
			resync()
		case <-retry.C:
			if w.rewatch(s) {
				ring(w.out) // the folder is back: its files may have changed
				w.ringLog()
			}
			if len(s.lost) > 0 {
				retry.Reset(w.retry)
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return errors.New("file watcher closed its error channel")
			}
			w.log.Warn("file watch error", "error", err)
		case ev, ok := <-fw.Events:
			if !ok {
				return errors.New("file watcher closed its event channel")
			}
			name := filepath.Clean(ev.Name)
			if s.watched[name] && ev.Has(fsnotify.Remove|fsnotify.Rename) {
				// The folder itself went away, and its watch with it.
				delete(s.watched, name)
				s.lost[name] = true
				retry.Reset(w.retry)
				ring(w.out)
				w.ringLog()
				continue
			}
			if s.files[name] {
				ring(w.out)
			}
			if s.logs[name] {
				w.ringLog()
			}
		}
	}
}

// sync makes the watches match the current snapshot: folders now needed are
// added (or marked lost when they cannot be), folders no longer needed are
// dropped.
func (w *Watcher) sync(s *watchSet) {
	want := map[string]bool{}
	s.files, s.logs = map[string]bool{}, map[string]bool{}
	snap := w.snapshots.Current()
	for _, p := range snap.WatchPaths() {
		p = absPath(p)
		s.files[p] = true
		want[filepath.Dir(p)] = true
	}
	if w.logOut != nil && snap.Config != nil && snap.Config.MCP.RequestLog != "" {
		p := absPath(snap.Config.MCP.RequestLog)
		s.logs[p] = true
		want[filepath.Dir(p)] = true
	}
	for dir := range s.watched {
		if !want[dir] {
			s.fw.Remove(dir) // the folder may be gone already: nothing to undo then
			delete(s.watched, dir)
		}
	}
	for dir := range s.lost {
		if !want[dir] {
			delete(s.lost, dir)
		}
	}
	for dir := range want {
		if s.watched[dir] {
			continue
		}
		if err := s.fw.Add(dir); err != nil {
			if !s.lost[dir] {
				w.log.Warn("cannot watch folder yet; trying again", "dir", dir, "error", err)
			}
			s.lost[dir] = true
			continue
		}
		delete(s.lost, dir)
		s.watched[dir] = true
	}
}

// ringLog rings LogChanged, when the log is watched at all.
func (w *Watcher) ringLog() {
	if w.logOut != nil {
		ring(w.logOut)
	}
}

// rewatch tries the lost folders again and reports whether one came back.
func (w *Watcher) rewatch(s *watchSet) bool {
	back := false
	for dir := range s.lost {
		if err := s.fw.Add(dir); err == nil {
			delete(s.lost, dir)
			s.watched[dir] = true
			back = true
			w.log.Debug("watching folder again", "dir", dir)
		}
	}
	return back
}
