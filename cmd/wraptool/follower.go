package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/wraptool/wraptool/policy/requests"
)

// logUpdate is what the follower found in one look at the log.
type logUpdate struct {
	// First marks the first look: Added then holds the pending requests
	// only (a missing log holds none).
	First bool
	// Added are the requests seen for the first time, in log order,
	// folded with their decision if they have one.
	Added []*requests.Record
	// Decided are requests seen pending before and decided since.
	Decided []*requests.Record
	// Problems are lines for stderr, each said once: lines the fold
	// skipped, and why the log could not be read.
	Problems []string
}

func (u logUpdate) empty() bool {
	return !u.First && len(u.Added) == 0 && len(u.Decided) == 0 && len(u.Problems) == 0
}

// follower reads the request log again whenever it changed, and reports
// what is new. It remembers every id it reported for its whole life, so a
// request is reported once even when the log is rotated (renamed away and
// started anew) or replaced by an older copy.
type follower struct {
	path string
	log  *requests.Log
	// looked is true after the first look; stamp is the file the last
	// fold read.
	looked bool
	stamp  fileStamp
	status map[string]string // every id reported, with its status then
	said   map[string]bool   // problems reported
}

// fileStamp tells a file changed: appended to, replaced or rewritten.
type fileStamp struct {
	dev, ino uint64
	size     int64
	mtime    time.Time
}

func newFollower(path string) *follower {
	return &follower{path: path, log: requests.Open(path), status: map[string]string{}, said: map[string]bool{}}
}

// run looks at the log now and every interval until ctx ends, sending each
// update that holds anything (and the first, always).
func (f *follower) run(ctx context.Context, interval time.Duration, updates chan<- logUpdate) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		if u := f.poll(ctx); !u.empty() {
			select {
			case updates <- u:
			case <-ctx.Done():
				return nil
			}
		}
		timer.Reset(interval)
	}
}

// poll looks at the log once: one stat, and a fold when the file changed.
func (f *follower) poll(ctx context.Context) logUpdate {
	var u logUpdate
	info, err := os.Stat(f.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Nothing filed yet, or a rotation between its rename and the
		// new file's first line: nothing changed.
		u.First, f.looked = !f.looked, true
		return u
	case err != nil:
		u.Problems = f.once(fmt.Sprintf("warning: request log: %s", safeText(err.Error())))
		return u
	}
	stamp := stampOf(info)
	if f.looked && stamp == f.stamp {
		return u
	}
	recs, warns, err := f.log.Records(ctx)
	if err != nil {
		u.Problems = f.once("warning: " + safeText(err.Error()))
		return u
	}
	u.First, f.looked, f.stamp = !f.looked, true, stamp
	for _, w := range warns {
		// A warning quotes what it skipped, which anything that could
		// write the log chose.
		u.Problems = append(u.Problems, f.once(fmt.Sprintf("warning: %s: skipped %s", f.path, requests.Text(w.String())))...)
	}
	for _, r := range recs {
		was, seen := f.status[r.ID]
		f.status[r.ID] = r.Status
		switch {
		case !seen && (!u.First || r.Status == requests.StatusPending):
			u.Added = append(u.Added, r)
		case seen && was == requests.StatusPending && r.Status != requests.StatusPending:
			u.Decided = append(u.Decided, r)
		}
	}
	return u
}

// once returns s the first time it is given, nothing after.
func (f *follower) once(s string) []string {
	if f.said[s] {
		return nil
	}
	f.said[s] = true
	return []string{s}
}

func stampOf(info fs.FileInfo) fileStamp {
	s := fileStamp{size: info.Size(), mtime: info.ModTime()}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		s.dev, s.ino = uint64(st.Dev), uint64(st.Ino)
	}
	return s
}
