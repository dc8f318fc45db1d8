package requests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/wraptool/wraptool/policy/jsonl"
)

// Log is a writer of the log at one path that remembers what it has folded,
// so that each call reads only what was appended since its last one (by it
// or by any other writer), not the whole file: a submit costs the same with
// ten requests in the log as with ten thousand. It keeps ids, statuses,
// the keys of pending requests, a digest of each request line and the
// decisions that carry grants (for UseGrant), not every rationale. It
// remembers every once-grant it has seen used for its whole life, even
// when the file is replaced.
//
// Every call reads grants.key beside the log (LoadKey) and fails while it
// is unusable (ErrBadKey): a Log whose grants it cannot check would take
// granted requests for pending ones. A key replaced by another makes the
// Log fold the file again; the first key to appear does not (no line
// written before it can carry its signature).
//
// Every call still takes the file lock, opens the path anew and checks that
// the file is the one it folded: the same device and inode, no smaller than
// what it folded, and the start of the last line it folded still in place.
// A file replaced, deleted, truncated or rewritten is folded again from the
// start. (A rewrite in place that keeps the size and those bytes goes
// unnoticed; writers only append.)
//
// A Log is safe for concurrent use, and with other writers in this and other
// processes. A call waits for the lock (another call on the same Log, or
// another writer's flock) only while its context lasts, and at most
// jsonl.LockTimeout for the flock.
type Log struct {
	path    string
	waiting func() // see OnLockWait; nil for none

	// turn is held by the call using the fields below: a semaphore of
	// one rather than a sync.Mutex, so that a call queued behind another
	// one stuck on the flock still ends with its context.
	turn   *semaphore.Weighted
	fold   *folder // what the file held up to offset; nil before the first call
	dev    uint64  // the device and inode of the file folded
	ino    uint64
	offset int64     // the end of the last complete line folded
	markAt int64     // the start of the last non-blank line folded
	mark   []byte    // its first markBytes bytes, to recognise the file
	warns  []Warning // skipped lines no Submit has returned yet
	key    []byte    // the grants key the fold checks grants with
	// used remembers the once-grants seen used, by id, across re-folds
	// of a replaced or truncated file: an older copy of the log cannot
	// revive one. Shared with each folder the Log starts.
	used map[string]time.Time

	// bytesRead counts the bytes read from the file over the Log's life:
	// the tests prove with it that a call reads only what is new.
	bytesRead int64
}

// markBytes is how much of the last line folded a Log reads back to check
// that the file is still the one it folded. A request or decision line
// starts with its id, so this is unlikely to match by chance in another
// file.
const markBytes = 64

// Open returns a Log for the file at path. It does no I/O: the first call
// creates the file (mode 0600, in a 0700 folder) when it is missing, and
// folds it whole.
func Open(path string) *Log {
	return &Log{path: path, turn: semaphore.NewWeighted(1), used: map[string]time.Time{}}
}

// OnLockWait sets fn to be called whenever a call finds the file locked by
// another process and starts waiting (for at most jsonl.LockTimeout), so
// the server can log why a request is slow. Set it before the Log's first
// use; it returns l.
func (l *Log) OnLockWait(fn func()) *Log {
	l.waiting = fn
	return l
}

// Submit records a request unless an identical one is pending, all under
// the file lock so the check and the append are one step even across
// processes. now is the creation time (UTC is applied). When ctx ends
// before the lock is taken, or the lock stays held for jsonl.LockTimeout,
// it writes nothing and returns an error naming the file (wrapping
// ctx.Err() or jsonl.ErrLockTimeout).
func (l *Log) Submit(ctx context.Context, req Request, now time.Time) (Submitted, error) {
	if req.Call != nil {
		c, err := req.Call.checked()
		if err != nil {
			return Submitted{}, fmt.Errorf("submit: %w", err)
		}
		req.Call = c
	}
	release, err := l.take(ctx)
	if err != nil {
		return Submitted{}, err
	}
	defer release()
	var out Submitted
	err = l.withFile(ctx, func(f *os.File) error {
		if id, ok := l.fold.pending(req); ok {
			out.ID, out.Existing = id, true
			return nil
		}
		if n := len(l.fold.keyOf); n >= MaxPending {
			return fmt.Errorf("%w: %d requests await a decision", ErrPendingLimit, n)
		}
		id, err := newID(l.fold.status)
		if err != nil {
			return err
		}
		out.ID = id
		rec := Record{
			ID: id, CreatedAt: now.UTC().Truncate(time.Millisecond), Tool: req.Tool, Subcommand: nonNil(req.Subcommand),
			Flags: nonNil(req.Flags), Rationale: req.Rationale, Enables: req.Enables, Call: req.Call, Status: StatusPending,
		}
		line, err := l.append(f, rec)
		if err == nil {
			out.Record, out.Line = rec, line
		}
		return err
	})
	out.Warnings, l.warns = l.warns, nil
	return out, err
}

// Decide appends a decision for a pending request. It returns ErrUnknownID
// for an id the log does not hold and ErrDecided for one already decided, so
// two operators (the CLI and the web UI) cannot both decide one request.
// A decision with a Grant it refuses (see Decision.Grant) is an error
// wrapping ErrInvalidGrant; one it accepts is signed (creating grants.key
// when missing). Lines it skips are reported by the next Submit. It waits
// for the lock as Submit does.
func (l *Log) Decide(ctx context.Context, id string, d Decision, now time.Time) error {
	if d.Status != StatusApproved && d.Status != StatusDenied {
		return fmt.Errorf("decide %s: status %q is not approved or denied", id, d.Status)
	}
	if d.DecidedBy == "" {
		return fmt.Errorf("decide %s: who decides is not said", id)
	}
	decided := now.UTC().Truncate(time.Millisecond)
	if d.Grant != nil {
		g := *d.Grant
		g.Until = g.Until.UTC().Truncate(time.Millisecond)
		d.Grant = &g
		if err := d.checkGrant(decided); err != nil {
			return fmt.Errorf("decide %s: %w", id, err)
		}
	}
	release, err := l.take(ctx)
	if err != nil {
		return err
	}
	defer release()
	return l.withFile(ctx, func(f *os.File) error {
		switch was, ok := l.fold.status[id]; {
		case !ok:
			return fmt.Errorf("%w: %s", ErrUnknownID, id)
		case was != StatusPending:
			return fmt.Errorf("%w: %s is %s", ErrDecided, id, was)
		}
		line := decisionLine{ID: id, Status: d.Status, DecidedAt: decided, Reason: d.Reason, Applied: d.Applied,
			DecidedBy: d.DecidedBy, Client: d.Client, Grant: d.Grant}
		if g := d.Grant; g != nil {
			req := l.fold.reqs[id]
			switch {
			case g.Exact && !req.call:
				return fmt.Errorf("decide %s: %w: an exact grant on a request for no exact call", id, ErrInvalidGrant)
			case g.Exact && g.Policy != req.policy:
				return fmt.Errorf("decide %s: %w: the policy hash %q is not the one recorded at the denial (%q)", id, ErrInvalidGrant, g.Policy, req.policy)
			case !g.Exact && req.call:
				return fmt.Errorf("decide %s: %w: a request for an exact call takes only an exact grant", id, ErrInvalidGrant)
			}
			key, err := l.needKey()
			if err != nil {
				return err
			}
			if line, err = signed(key, line, req.digest); err != nil {
				return fmt.Errorf("decide %s: %w", id, err)
			}
		}
		_, err := l.append(f, line)
		return err
	})
}

// Pending says which of ids are still pending, and whether a request
// identical to req is, reading only what was appended since the last call
// (the per-session limit's re-check: no whole-file read per call). It
// waits for the lock as Submit does.
func (l *Log) Pending(ctx context.Context, ids []string, req Request) (still []string, identical bool, err error) {
	release, err := l.take(ctx)
	if err != nil {
		return nil, false, err
	}
	defer release()
	err = l.withFile(ctx, func(*os.File) error {
		for _, id := range ids {
			if l.fold.status[id] == StatusPending {
				still = append(still, id)
			}
		}
		_, identical = l.fold.pending(req)
		return nil
	})
	return still, identical, err
}

// UseGrant consumes the once-grant of request id for one call at now, as
// one step under the file lock: it folds what was appended since its last
// call, checks that the latest decision on id is an approval with a
// once-grant, unused (in the file, or in this Log's memory) and unexpired
// (now before Until), then appends the same decision again with used_at
// (now, UTC, truncated to the millisecond), signed, and returns the grant
// as used. Of any number of calls at once, from this or other Logs and
// processes, exactly one succeeds; the others get ErrGrantUsed.
//
// Errors wrap ErrNoGrant (unknown id, not approved, no grant, a timed
// grant), ErrGrantUsed or ErrGrantExpired, naming the id; or the error that
// kept the line from being written (the lock, the write, the sync): then
// the grant may not be used, and the call must not run. It waits for the
// lock as Submit does.
func (l *Log) UseGrant(ctx context.Context, id string, now time.Time) (Grant, error) {
	release, err := l.take(ctx)
	if err != nil {
		return Grant{}, err
	}
	defer release()
	var out Grant
	err = l.withFile(ctx, func(f *os.File) error {
		d := l.fold.grants[id]
		switch {
		case d == nil || !d.Grant.Once:
			return fmt.Errorf("use grant: %w: %s", ErrNoGrant, id)
		case d.Grant.UsedAt != nil:
			return fmt.Errorf("use grant: %w: %s was used at %s", ErrGrantUsed, id, d.Grant.UsedAt.UTC().Format(time.RFC3339))
		case !now.Before(d.Grant.Until):
			return fmt.Errorf("use grant: %w: %s expired at %s", ErrGrantExpired, id, d.Grant.Until.UTC().Format(time.RFC3339))
		}
		used := *d
		g := *d.Grant
		at := now.UTC().Truncate(time.Millisecond)
		g.UsedAt, used.Grant = &at, &g
		key, err := l.needKey()
		if err != nil {
			return err
		}
		if used, err = signed(key, used, l.fold.reqs[id].digest); err != nil {
			return fmt.Errorf("use grant %s: %w", id, err)
		}
		if _, err := l.append(f, used); err != nil {
			return err
		}
		// append folded the line (or the next call will); either way the
		// use is remembered.
		if _, ok := l.used[id]; !ok && l.used != nil {
			l.used[id] = at
		}
		out = g
		return nil
	})
	return out, err
}

// Records folds the whole file, as Read does, with this Log's memory of
// used once-grants: one it has seen used stays used even when the file was
// replaced by an older copy. Uses it folds are remembered in turn. Like
// Read it takes no file lock, but it waits for the Log's turn while ctx
// lasts. The warnings are its own (not kept for Submit).
func (l *Log) Records(ctx context.Context) ([]*Record, []Warning, error) {
	release, err := l.take(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	return read(l.path, l.used)
}

// needKey returns the grants key, creating it when missing. Grants the
// fold skipped for want of a key stay skipped without a re-fold: no line
// written before the key existed can carry its signature.
func (l *Log) needKey() ([]byte, error) {
	if l.key != nil {
		return l.key, nil
	}
	key, err := ensureKey(l.path)
	if err != nil {
		return nil, fmt.Errorf("request log %s: %w", l.path, err)
	}
	l.key, l.fold.key = key, key
	return key, nil
}

// useKey makes key the one the fold checks grants with. A fold made with
// another key, or that skipped grants for want of one, starts again: its
// grants are judged anew.
func (l *Log) useKey(key []byte) {
	if bytes.Equal(key, l.key) {
		return
	}
	if l.fold != nil && (l.key != nil || l.fold.keyless > 0) {
		l.fold = nil
	}
	l.key = key
	if l.fold != nil {
		l.fold.key = key
	}
}

// take waits for the Log's turn while ctx lasts; release ends it. A free
// turn is taken even when ctx is already done, as jsonl.Lock takes a free
// lock: only waiting ends with ctx.
func (l *Log) take(ctx context.Context) (release func(), err error) {
	// Acquire fails on a done context even when the turn is free, so the
	// free turn is tried first.
	if !l.turn.TryAcquire(1) {
		if err := l.turn.Acquire(ctx, 1); err != nil {
			return nil, fmt.Errorf("request log: lock %s: %w", l.path, err)
		}
	}
	return func() { l.turn.Release(1) }, nil
}

// withFile opens the log privately (creating it), locks it, ends a torn
// last line, brings the fold up to date with the file and runs fn. The
// caller has its turn; waiting for the lock ends with ctx.
func (l *Log) withFile(ctx context.Context, fn func(*os.File) error) error {
	f, err := jsonl.OpenPrivate(l.path)
	if err != nil {
		return fmt.Errorf("request log: %w", err)
	}
	defer f.Close()
	if err := jsonl.Lock(ctx, f, l.waiting); err != nil {
		return fmt.Errorf("request log: %w", err)
	}
	defer jsonl.Unlock(f)
	if _, err := jsonl.EndTornLine(f); err != nil {
		return fmt.Errorf("request log %s: end a torn line: %w", l.path, err)
	}
	key, err := LoadKey(l.path)
	if err != nil {
		return fmt.Errorf("request log %s: %w", l.path, err)
	}
	l.useKey(key)
	if err := l.catchUp(f); err != nil {
		return fmt.Errorf("read request log %s: %w", l.path, err)
	}
	return fn(f)
}

// catchUp folds what was appended to f since the last call, or all of f
// when it is not the file folded. The caller holds the lock and has ended
// a torn last line, so every line is complete: the checks that follow see
// what Read sees.
func (l *Log) catchUp(f *os.File) error {
	size, err := l.recognise(f)
	if err != nil {
		return err
	}
	return l.consume(l.section(f, size))
}

// recognise returns f's size, first starting the fold afresh unless f is
// the file folded so far.
func (l *Log) recognise(f *os.File) (int64, error) {
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := info.Size()
	st, ok := info.Sys().(*syscall.Stat_t)
	same := ok && l.fold != nil && uint64(st.Dev) == l.dev && uint64(st.Ino) == l.ino && size >= l.offset
	if same && len(l.mark) > 0 {
		buf := make([]byte, len(l.mark))
		n, err := f.ReadAt(buf, l.markAt)
		l.bytesRead += int64(n)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		same = bytes.Equal(buf[:n], l.mark)
	}
	if !same {
		l.fold, l.offset, l.markAt, l.mark = newFolder(false, l.key), 0, 0, nil
		if l.used != nil {
			l.fold.used = l.used
		}
		if ok {
			l.dev, l.ino = uint64(st.Dev), uint64(st.Ino)
		}
	}
	return size, nil
}

// section reads f from l.offset to end, counting the bytes; consume takes
// its result.
func (l *Log) section(f *os.File, end int64) (io.Reader, int64) {
	return countingReader{io.NewSectionReader(f, l.offset, end-l.offset), &l.bytesRead}, end - l.offset
}

// consume folds the lines r holds, which continue the file at l.offset,
// and stops before a last line without its newline: that is a torn write
// the next writer will end, not a line yet.
func (l *Log) consume(r io.Reader, size int64) error {
	defer func() { l.warns, l.fold.warns = append(l.warns, l.fold.warns...), nil }()
	lines := jsonl.NewLineReader(r, size, MaxLineBytes)
	for {
		rl, err := lines.Next()
		if errors.Is(err, io.EOF) || err == nil && !rl.Ended {
			return nil
		}
		if err != nil {
			return err
		}
		l.fold.add(rl)
		if !rl.TooLong && len(bytes.TrimSpace(rl.Text)) > 0 {
			l.markAt, l.mark = l.offset, bytes.Clone(rl.Text[:min(len(rl.Text), markBytes)])
		}
		l.offset += rl.Size
	}
}

// append writes v as one line, then folds that line from memory rather than
// reading it back: catchUp left the file ending at l.offset, and the lock
// keeps other writers out.
// It returns the line written.
func (l *Log) append(f *os.File, v any) ([]byte, error) {
	data, err := jsonl.Encode(v)
	if err != nil {
		return nil, err
	}
	if len(data)-1 > MaxLineBytes {
		return nil, fmt.Errorf("request log: %w: %d bytes, at most %d", ErrTooLarge, len(data)-1, MaxLineBytes)
	}
	if _, err := f.Write(data); err != nil {
		return nil, fmt.Errorf("request log: append: %w", err)
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("request log: sync: %w", err)
	}
	// A writer that ignored the lock may have appended too; then the
	// next call reads the file instead.
	if end, err := f.Seek(0, io.SeekCurrent); err != nil || end != l.offset+int64(len(data)) {
		return data, nil
	}
	return data, l.consume(bytes.NewReader(data), int64(len(data)))
}

// countingReader counts the bytes read through it into *n.
type countingReader struct {
	r io.Reader
	n *int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}
