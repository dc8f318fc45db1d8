package jsonl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
)

// Rotating appends whole lines to the file at Path under its lock, and
// rotates it by size: before a line that would take the file past Limit
// bytes, Path becomes Path.1, Path.1 becomes Path.2, and so on up to
// Path.Keep (the oldest, Path.Keep, is dropped), and the line starts a new
// Path. Rotation happens under the lock of the file being rotated, and a
// line is written with one write(2) to one file, so no line is ever split
// across files or lost by a rotation; a line longer than Limit gets a file
// of its own.
//
// Writers in other processes that opened the old file find, once they hold
// its lock, that Path no longer names it, and reopen Path before they
// write: every line lands in the file that is Path when it is written.
//
// A Rotating is not safe for concurrent use: one writer goroutine owns it.
type Rotating struct {
	// Path is the file's path; it is opened with OpenPrivate (mode 0600).
	Path string
	// Limit is the size past which the file rotates; zero or less means
	// never.
	Limit int64
	// Keep is how many rotated files are kept (Path.1 … Path.Keep); zero
	// or less means one.
	Keep int
	// Waiting, when not nil, is called when the lock is found held (see
	// Lock).
	Waiting func()

	f *os.File
}

// Append writes lines (each a whole JSON line ending in "\n", as Encode
// gives) in order, holding the file's lock for the whole batch, and
// rotates between two lines when the next would pass Limit. It waits for
// the lock as Lock does; on an error the lines from the first one not
// written on are not written (n says how many were).
func (r *Rotating) Append(ctx context.Context, lines [][]byte) (n int, err error) {
	if len(lines) == 0 {
		return 0, nil
	}
	if err := r.lock(ctx); err != nil {
		return 0, err
	}
	defer func() {
		if r.f == nil {
			return // a rotation could not open the new file
		}
		if uerr := Unlock(r.f); err == nil && uerr != nil {
			err = uerr
		}
	}()
	if _, err := EndTornLine(r.f); err != nil {
		return 0, fmt.Errorf("append %s: %w", r.Path, err)
	}
	info, err := r.f.Stat()
	if err != nil {
		return 0, fmt.Errorf("append %s: %w", r.Path, err)
	}
	size := info.Size()
	for i, line := range lines {
		if r.Limit > 0 && size > 0 && size+int64(len(line)) > r.Limit {
			if err := r.rotate(ctx); err != nil {
				return i, err
			}
			size = 0
		}
		if _, err := r.f.Write(line); err != nil {
			return i, fmt.Errorf("append %s: %w", r.Path, err)
		}
		size += int64(len(line))
	}
	return len(lines), nil
}

// Close closes the file; the next Append opens it again.
func (r *Rotating) Close() error {
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// lock opens Path when needed and takes its lock, reopening when Path no
// longer names the file held (another writer rotated it meanwhile).
func (r *Rotating) lock(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		if r.f == nil {
			f, err := OpenPrivate(r.Path)
			if err != nil {
				return err
			}
			r.f = f
		}
		if err := Lock(ctx, r.f, r.Waiting); err != nil {
			return err
		}
		current, err := r.isCurrent()
		if err != nil || current {
			if err != nil {
				Unlock(r.f)
			}
			return err
		}
		// Rotated away under us: what we hold is now Path.1.
		r.f.Close()
		r.f = nil
		if attempt >= 100 {
			return fmt.Errorf("append %s: the file keeps being replaced", r.Path)
		}
	}
}

// isCurrent reports whether Path still names the open file.
func (r *Rotating) isCurrent() (bool, error) {
	held, err := r.f.Stat()
	if err != nil {
		return false, fmt.Errorf("append %s: %w", r.Path, err)
	}
	now, err := os.Stat(r.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("append %s: %w", r.Path, err)
	}
	return os.SameFile(held, now), nil
}

// rotate shifts the files by one while holding the current file's lock,
// then opens and locks a new Path. The old file is unlocked and closed
// only once the new one is locked, so a writer waiting on the old one
// finds it renamed and follows to the new.
func (r *Rotating) rotate(ctx context.Context) error {
	keep := max(r.Keep, 1)
	for i := keep - 1; i >= 1; i-- {
		err := os.Rename(r.rotated(i), r.rotated(i+1))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rotate %s: %w", r.Path, err)
		}
	}
	if err := os.Rename(r.Path, r.rotated(1)); err != nil {
		return fmt.Errorf("rotate %s: %w", r.Path, err)
	}
	old := r.f
	defer func() {
		Unlock(old)
		old.Close()
	}()
	r.f = nil
	return r.lock(ctx)
}

// rotated is the path of the i-th rotated file (Path.i).
func (r *Rotating) rotated(i int) string { return r.Path + "." + strconv.Itoa(i) }
