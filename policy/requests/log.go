package requests

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/wraptool/wraptool/policy/jsonl"
)

// Statuses a request can have.
const (
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusDenied   = "denied"
)

// MaxPending is how many requests may await a decision at once.
const MaxPending = 1000

// Record is a request folded with its latest decision: the shape `requests
// list --json` prints and the admin API returns. Slices are never nil, so
// they encode as [].
type Record struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	Tool      string    `json:"tool"`
	// Subcommand and Flags are what the assistant asked for.
	Subcommand []string `json:"subcommand"`
	Flags      []string `json:"flags"`
	Rationale  string   `json:"rationale"`
	Enables    string   `json:"enables"`
	Status     string   `json:"status"`
	// DecidedAt, Reason, Applied and DecidedBy are set once decided.
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	Reason    *string    `json:"reason,omitempty"`
	Applied   *bool      `json:"applied,omitempty"`
	DecidedBy string     `json:"decided_by,omitempty"`
}

// A request line is a pending Record, whose unset decision fields are left
// out; decisionLine always carries every field (id, status,
// decided_at, reason, applied, decided_by), so readers never guess a
// default.
type decisionLine struct {
	ID        string    `json:"id"`
	Status    string    `json:"status"`
	DecidedAt time.Time `json:"decided_at"`
	Reason    string    `json:"reason"`
	Applied   bool      `json:"applied"`
	DecidedBy string    `json:"decided_by"`
}

// line is any log line as read: a request or a decision.
type line struct {
	ID         string     `json:"id"`
	CreatedAt  *time.Time `json:"created_at,omitempty"`
	Tool       string     `json:"tool,omitempty"`
	Subcommand []string   `json:"subcommand,omitempty"`
	Flags      []string   `json:"flags,omitempty"`
	Rationale  string     `json:"rationale,omitempty"`
	Enables    *string    `json:"enables,omitempty"`
	Status     string     `json:"status"`
	DecidedAt  *time.Time `json:"decided_at,omitempty"`
	Reason     *string    `json:"reason,omitempty"`
	Applied    *bool      `json:"applied,omitempty"`
	DecidedBy  string     `json:"decided_by,omitempty"`
}

// Request is what the assistant asks for.
type Request struct {
	Tool       string
	Subcommand []string
	Flags      []string
	Rationale  string
	Enables    string
}

// Key identifies a capability regardless of how it was asked: tool,
// subcommand and the set of flags. Two pending requests with one key are
// duplicates.
func (r Request) Key() string {
	flags := slices.Clone(r.Flags)
	slices.Sort(flags)
	flags = slices.Compact(flags)
	return r.Tool + "\x00" + strings.Join(r.Subcommand, " ") + "\x00" + strings.Join(flags, " ")
}

// Warning is a line a reader skipped.
type Warning struct {
	Line int
	Err  string
}

// String is the warning as logs show it: "line 3: not a complete JSON object".
func (w Warning) String() string { return fmt.Sprintf("line %d: %s", w.Line, w.Err) }

// Fold reads a log and folds it by id, in order of first appearance.
// Lines that are not complete JSON objects, and decisions for unknown ids,
// are skipped and reported. A last line without its newline counts.
func Fold(r io.Reader) ([]*Record, []Warning, error) {
	f := newFolder(true)
	lines := jsonl.NewLineReader(r, math.MaxInt64, MaxLineBytes)
	for {
		l, err := lines.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return f.records, f.warns, err
		}
		f.add(l)
	}
	return f.records, f.warns, nil
}

// folder folds lines one at a time, so that Fold can fold a whole log and a
// Log only what was appended since its last call, with one logic.
type folder struct {
	// keep holds every record whole, in order (Fold). A Log needs only
	// the ids, statuses and keys, and does not hold every rationale.
	keep    bool
	records []*Record           // when keep, in order of first appearance
	byID    map[string]*Record  // when keep
	status  map[string]string   // every request's latest status
	keyOf   map[string]string   // each pending request's Key
	byKey   map[string][]string // each Key's pending ids, oldest first
	lines   int                 // lines folded so far
	warns   []Warning
}

func newFolder(keep bool) *folder {
	f := &folder{keep: keep, status: map[string]string{}, keyOf: map[string]string{}, byKey: map[string][]string{}}
	if keep {
		f.byID = map[string]*Record{}
	}
	return f
}

// pending returns the oldest pending request identical to req.
func (f *folder) pending(req Request) (id string, ok bool) {
	ids := f.byKey[req.Key()]
	if len(ids) == 0 {
		return "", false
	}
	return ids[0], true
}

// add folds the next line.
func (f *folder) add(rl jsonl.Line) {
	f.lines++
	n := f.lines
	if rl.TooLong {
		f.warns = append(f.warns, Warning{n, fmt.Sprintf("longer than %d bytes", MaxLineBytes)})
		return
	}
	raw := bytes.TrimSpace(rl.Text)
	if len(raw) == 0 {
		return
	}
	var l line
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&l); err != nil || dec.InputOffset() != int64(len(raw)) || l.ID == "" {
		msg := "not a complete JSON object"
		if err == nil && dec.InputOffset() == int64(len(raw)) {
			msg = "no id"
		}
		f.warns = append(f.warns, Warning{n, msg})
		return
	}
	switch l.Status {
	case StatusPending:
		if _, dup := f.status[l.ID]; dup {
			f.warns = append(f.warns, Warning{n, "request " + l.ID + " appears twice"})
			return
		}
		key := Request{Tool: l.Tool, Subcommand: l.Subcommand, Flags: l.Flags}.Key()
		f.status[l.ID], f.keyOf[l.ID] = StatusPending, key
		f.byKey[key] = append(f.byKey[key], l.ID)
		if !f.keep {
			return
		}
		rec := &Record{ID: l.ID, Tool: l.Tool, Subcommand: nonNil(l.Subcommand), Flags: nonNil(l.Flags), Rationale: l.Rationale, Status: StatusPending}
		if l.CreatedAt != nil {
			rec.CreatedAt = *l.CreatedAt
		}
		if l.Enables != nil {
			rec.Enables = *l.Enables
		}
		f.byID[l.ID] = rec
		f.records = append(f.records, rec)
	case StatusApproved, StatusDenied:
		was, ok := f.status[l.ID]
		if !ok {
			f.warns = append(f.warns, Warning{n, "decision for unknown request " + l.ID})
			return
		}
		f.status[l.ID] = l.Status
		if was == StatusPending {
			key := f.keyOf[l.ID]
			delete(f.keyOf, l.ID)
			if ids := slices.DeleteFunc(f.byKey[key], func(id string) bool { return id == l.ID }); len(ids) > 0 {
				f.byKey[key] = ids
			} else {
				delete(f.byKey, key)
			}
		}
		if !f.keep {
			return
		}
		rec := f.byID[l.ID]
		rec.Status, rec.DecidedAt, rec.Reason, rec.Applied, rec.DecidedBy = l.Status, l.DecidedAt, l.Reason, l.Applied, l.DecidedBy
		if rec.Applied == nil {
			no := false
			rec.Applied = &no
		}
		if rec.Reason == nil {
			empty := ""
			rec.Reason = &empty
		}
	default:
		f.warns = append(f.warns, Warning{n, fmt.Sprintf("unknown status %q", l.Status)})
	}
}

// MaxLineBytes bounds one log line; a longer one (a stray edit, a pasted
// blob) is skipped with a warning rather than breaking every later read.
const MaxLineBytes = 1 << 20

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Read folds the log at path; a missing file is an empty log.
func Read(path string) ([]*Record, []Warning, error) {
	f, err := jsonl.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return []*Record{}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read request log: %w", err)
	}
	defer f.Close()
	recs, warns, err := Fold(f)
	if err != nil {
		return nil, warns, fmt.Errorf("read request log %s: %w", path, err)
	}
	if recs == nil {
		recs = []*Record{}
	}
	return recs, warns, nil
}

// Submitted is the outcome of Submit.
type Submitted struct {
	// ID is the new request's id, or the pending duplicate's.
	ID string
	// Existing is true when an identical request was already pending and
	// no line was written.
	Existing bool
	// Warnings are lines the read skipped. A Log reports each once, in
	// the first Submit after it read the line.
	Warnings []Warning
}

// Submit records a request in the log at path, as Open(path).Submit does.
// It reads the whole file; a writer that submits again and again (the
// server) keeps a Log instead.
func Submit(ctx context.Context, path string, req Request, now time.Time) (Submitted, error) {
	return Open(path).Submit(ctx, req, now)
}

// Decide records a decision in the log at path, as Open(path).Decide does.
// It reads the whole file; the CLI and the admin UI decide too rarely to
// keep a Log.
func Decide(ctx context.Context, path, id string, d Decision, now time.Time) error {
	return Open(path).Decide(ctx, id, d, now)
}

// Decision is an operator's answer to a request, as its decision line
// records it.
type Decision struct {
	// Status is StatusApproved or StatusDenied.
	Status string
	// Reason is the operator's word to the assistant (it reads it back
	// with wraptool_request_status); may be empty.
	Reason string
	// Applied is true when the capability was merged into the config.
	Applied bool
	// DecidedBy names who decided: DecidedByCLI, "watch", "admin" or
	// "client". Required.
	DecidedBy string
}

// DecidedByCLI marks a decision made with `wraptool requests approve|deny`.
const DecidedByCLI = "cli"

// Log is a writer of the log at one path that remembers what it has folded,
// so that each call reads only what was appended since its last one (by it
// or by any other writer), not the whole file: a submit costs the same with
// ten requests in the log as with ten thousand. It keeps ids, statuses and
// the keys of pending requests, not every rationale.
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

	// turn is held (a value in it) by the call using the fields below:
	// a one-slot semaphore rather than a sync.Mutex, so that a call
	// queued behind another one stuck on the flock still ends with its
	// context.
	turn   chan struct{}
	fold   *folder // what the file held up to offset; nil before the first call
	dev    uint64  // the device and inode of the file folded
	ino    uint64
	offset int64     // the end of the last complete line folded
	markAt int64     // the start of the last non-blank line folded
	mark   []byte    // its first markBytes bytes, to recognise the file
	warns  []Warning // skipped lines no Submit has returned yet

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
func Open(path string) *Log { return &Log{path: path, turn: make(chan struct{}, 1)} }

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
		return l.append(f, Record{
			ID: id, CreatedAt: now.UTC().Truncate(time.Millisecond), Tool: req.Tool, Subcommand: nonNil(req.Subcommand),
			Flags: nonNil(req.Flags), Rationale: req.Rationale, Enables: req.Enables, Status: StatusPending,
		})
	})
	out.Warnings, l.warns = l.warns, nil
	return out, err
}

// Decide appends a decision for a pending request. It returns ErrUnknownID
// for an id the log does not hold and ErrDecided for one already decided, so
// two operators (the CLI and the web UI) cannot both decide one request.
// Lines it skips are reported by the next Submit. It waits for the lock as
// Submit does.
func (l *Log) Decide(ctx context.Context, id string, d Decision, now time.Time) error {
	if d.Status != StatusApproved && d.Status != StatusDenied {
		return fmt.Errorf("decide %s: status %q is not approved or denied", id, d.Status)
	}
	if d.DecidedBy == "" {
		return fmt.Errorf("decide %s: who decides is not said", id)
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
		return l.append(f, decisionLine{ID: id, Status: d.Status, DecidedAt: now.UTC().Truncate(time.Millisecond),
			Reason: d.Reason, Applied: d.Applied, DecidedBy: d.DecidedBy})
	})
}

// take waits for the Log's turn while ctx lasts; release ends it. A free
// turn is taken even when ctx is already done, as jsonl.Lock takes a free
// lock: only waiting ends with ctx.
func (l *Log) take(ctx context.Context) (release func(), err error) {
	select {
	case l.turn <- struct{}{}:
		return func() { <-l.turn }, nil
	default:
	}
	select {
	case l.turn <- struct{}{}:
		return func() { <-l.turn }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("request log: lock %s: %w", l.path, ctx.Err())
	}
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
		l.fold, l.offset, l.markAt, l.mark = newFolder(false), 0, 0, nil
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
func (l *Log) append(f *os.File, v any) error {
	data, err := jsonl.Encode(v)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("request log: append: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("request log: sync: %w", err)
	}
	// A writer that ignored the lock may have appended too; then the
	// next call reads the file instead.
	if end, err := f.Seek(0, io.SeekCurrent); err != nil || end != l.offset+int64(len(data)) {
		return nil
	}
	return l.consume(bytes.NewReader(data), int64(len(data)))
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

// newID draws req_ and 8 lowercase hex digits from crypto/rand, avoiding ids
// already used.
func newID(used map[string]string) (string, error) {
	for range 100 {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		id := "req_" + hex.EncodeToString(b[:])
		if _, ok := used[id]; !ok {
			return id, nil
		}
	}
	return "", errors.New("request log: could not draw an unused id")
}
