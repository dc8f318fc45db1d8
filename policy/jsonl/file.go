package jsonl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// LockTimeout is the longest Lock waits for another holder: a writer that
// cannot get the lock within it gives up with an error naming the file
// instead of hanging a tool call or a shutdown on a stuck
// process.
const LockTimeout = 5 * time.Second

// The pause between two attempts at a held lock starts at minBackoff and
// doubles up to maxBackoff: a lock held for an append is taken again within
// a few milliseconds, and a long-held one costs a hundred cheap attempts a
// second. A short cap keeps a waiter from being starved by a writer that
// appends back to back.
const (
	minBackoff = time.Millisecond
	maxBackoff = 10 * time.Millisecond
)

// OpenPrivate opens the file at path for reading and appending, creating it
// with mode 0600 (and its missing folders with 0700) when it is missing,
// because these files hold what an assistant asked and ran. A file whose
// mode someone loosened is restricted to 0600 again. A path that is not a
// regular file (after symlinks) is refused with ErrNotRegular, and a FIFO
// is refused without waiting for a peer. Errors are *fs.PathError naming
// the path.
func OpenPrivate(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := openRegular(path, os.O_RDWR|os.O_APPEND|os.O_CREATE)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err == nil && info.Mode().Perm()&0o077 != 0 {
		err = f.Chmod(0o600)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Open opens the file at path for reading, as os.Open does, but refuses a
// path that is not a regular file with ErrNotRegular, and a FIFO without
// waiting for a writer: a reader listing the log must not hang on one.
// A missing file is an error wrapping fs.ErrNotExist, and is not created.
func Open(path string) (*os.File, error) {
	return openRegular(path, os.O_RDONLY)
}

// openRegular opens path with O_NONBLOCK, so that a FIFO cannot block the
// open(2) itself, refuses anything but a regular file, then clears
// O_NONBLOCK again.
func openRegular(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK, 0o600)
	if errors.Is(err, syscall.EISDIR) {
		return nil, &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	if err == nil {
		err = control(f, func(fd int) error { return syscall.SetNonblock(fd, false) })
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Lock takes the exclusive flock on f for a writer about to append. It
// never blocks in the kernel: it makes non-blocking attempts with a growing
// pause between them (a timer, not a sleep), for at most LockTimeout and
// only while ctx lasts, so a shutdown never waits on another process. Its
// errors name the file: one wrapping ErrLockTimeout when the holder kept
// the lock for all of LockTimeout, one wrapping ctx.Err() when ctx ended
// first. It always makes one attempt, even when ctx is already done: a
// writer told to stop waiting still appends when nobody holds the lock.
//
// waiting, when not nil, is called once, when the first attempt finds the
// lock held, so the caller can say why it waits (a request that hangs for
// five seconds should not be a mystery in the server log).
//
// The lock belongs to f's open file description: Unlock or closing f
// releases it, and another File opened on the same path, in this process
// or another, cannot take it meanwhile.
func Lock(ctx context.Context, f *os.File, waiting func()) error {
	giveUp := time.Now().Add(LockTimeout)
	pause := minBackoff
	var retry *time.Timer
	for {
		err := control(f, func(fd int) error { return syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) })
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		if retry == nil && waiting != nil {
			waiting()
		}
		left := time.Until(giveUp)
		if left <= 0 {
			return fmt.Errorf("lock %s: %w; gave up after %v", f.Name(), ErrLockTimeout, LockTimeout)
		}
		if retry == nil {
			retry = time.NewTimer(min(pause, left))
			defer retry.Stop()
		} else {
			retry.Reset(min(pause, left))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lock %s: %w", f.Name(), ctx.Err())
		case <-retry.C:
		}
		pause = min(2*pause, maxBackoff)
	}
}

// Unlock releases the lock Lock took, for a writer that keeps f open
// after appending.
func Unlock(f *os.File) error {
	if err := control(f, func(fd int) error { return syscall.Flock(fd, syscall.LOCK_UN) }); err != nil {
		return fmt.Errorf("unlock %s: %w", f.Name(), err)
	}
	return nil
}

// EndTornLine writes a newline at the end of f when its last line lacks
// one (a writer crashed mid-line), so that the record appended next starts
// a line of its own instead of being glued to the fragment and lost with
// it. It reports whether it wrote. The caller holds the lock and opened f
// for appending.
func EndTornLine(f *os.File) (ended bool, err error) {
	info, err := f.Stat()
	if err != nil || info.Size() == 0 {
		return false, err
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], info.Size()-1); err != nil {
		return false, err
	}
	if last[0] == '\n' {
		return false, nil
	}
	if _, err := f.Write([]byte{'\n'}); err != nil {
		return false, err
	}
	return true, nil
}

// control runs fn on f's descriptor without f.Fd's side effect of putting
// the descriptor in blocking mode for good.
func control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var fnErr error
	if err := rc.Control(func(fd uintptr) { fnErr = fn(int(fd)) }); err != nil {
		return err
	}
	return fnErr
}
