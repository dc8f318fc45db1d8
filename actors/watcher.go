package actors

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/wraptool/wraptool/messages"
)

// Watcher reports changes to the config and the token files it names. It
// watches their folders rather than the files, so editors that save by
// writing a new file and renaming it over the old one are seen, and it drops
// every event on other files before they become messages.
type Watcher struct {
	paths func() []string
	out   chan<- messages.FileChanged
	log   *slog.Logger
}

// NewWatcher watches the files paths returns (the current snapshot's).
// It asks again on every event and once more a while after each event it
// forwards, when the reload that event caused has been swapped in, so a
// reload that names a new token file, even in a new folder, widens the watch.
func NewWatcher(paths func() []string, out chan<- messages.FileChanged, log *slog.Logger) *Watcher {
	return &Watcher{paths: paths, out: out, log: log.With("component", "watcher")}
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
	dirs := map[string]bool{}
	var files []string
	sync := func() {
		files = files[:0]
		for _, p := range w.paths() {
			p = absPath(p)
			files = append(files, p)
			dir := filepath.Dir(p)
			if dirs[dir] {
				continue
			}
			if err := fw.Add(dir); err != nil {
				w.log.Warn("cannot watch folder; changes there need SIGHUP", "dir", dir, "error", err)
				continue
			}
			dirs[dir] = true
		}
	}
	sync()
	// resync fires once after a forwarded event, by when the reload it
	// triggers has normally been swapped in.
	resync := time.NewTimer(resyncDelay)
	resync.Stop()
	defer resync.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-resync.C:
			sync()
		case err, ok := <-fw.Errors:
			if !ok {
				return errors.New("file watcher closed its error channel")
			}
			w.log.Warn("file watch error", "error", err)
		case ev, ok := <-fw.Events:
			if !ok {
				return errors.New("file watcher closed its event channel")
			}
			sync() // a reload since the last event may name new files
			if !slices.Contains(files, filepath.Clean(ev.Name)) {
				continue
			}
			select {
			case w.out <- messages.FileChanged{Path: ev.Name, Op: ev.Op.String()}:
			case <-ctx.Done():
				return nil
			}
			resync.Reset(resyncDelay)
		}
	}
}

// resyncDelay is comfortably longer than the debounce plus a reload.
const resyncDelay = 5 * DebounceDelay
