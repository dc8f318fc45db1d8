package requests

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
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
	// DecidedAt, Reason and Applied are set once decided.
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	Reason    *string    `json:"reason,omitempty"`
	Applied   *bool      `json:"applied,omitempty"`
}

// A request line is a pending Record, whose unset decision fields are left
// out; decisionLine is written exactly as CONTRACT §7 lists it, every field
// present.
type decisionLine struct {
	ID        string    `json:"id"`
	Status    string    `json:"status"`
	DecidedAt time.Time `json:"decided_at"`
	Reason    string    `json:"reason"`
	Applied   bool      `json:"applied"`
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

func (r *Record) request() Request {
	return Request{Tool: r.Tool, Subcommand: r.Subcommand, Flags: r.Flags, Rationale: r.Rationale, Enables: r.Enables}
}

// Warning is a line a reader skipped.
type Warning struct {
	Line int
	Err  string
}

func (w Warning) String() string { return fmt.Sprintf("line %d: %s", w.Line, w.Err) }

// Fold reads a log and folds it by id, in order of first appearance.
// Lines that are not complete JSON objects, and decisions for unknown ids,
// are skipped and reported.
func Fold(r io.Reader) ([]*Record, []Warning, error) {
	var (
		records []*Record
		byID    = map[string]*Record{}
		warns   []Warning
	)
	lines := &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: MaxLineBytes}
	for n := 1; ; n++ {
		raw, tooLong, err := lines.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return records, warns, err
		}
		if tooLong {
			warns = append(warns, Warning{n, fmt.Sprintf("longer than %d bytes", MaxLineBytes)})
			continue
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		var l line
		dec := json.NewDecoder(bytes.NewReader(raw))
		if err := dec.Decode(&l); err != nil || dec.InputOffset() != int64(len(raw)) || l.ID == "" {
			msg := "not a complete JSON object"
			if err == nil && dec.InputOffset() == int64(len(raw)) {
				msg = "no id"
			}
			warns = append(warns, Warning{n, msg})
			continue
		}
		switch l.Status {
		case StatusPending:
			if _, dup := byID[l.ID]; dup {
				warns = append(warns, Warning{n, "request " + l.ID + " appears twice"})
				continue
			}
			rec := &Record{ID: l.ID, Tool: l.Tool, Subcommand: nonNil(l.Subcommand), Flags: nonNil(l.Flags), Rationale: l.Rationale, Status: StatusPending}
			if l.CreatedAt != nil {
				rec.CreatedAt = *l.CreatedAt
			}
			if l.Enables != nil {
				rec.Enables = *l.Enables
			}
			byID[l.ID] = rec
			records = append(records, rec)
		case StatusApproved, StatusDenied:
			rec := byID[l.ID]
			if rec == nil {
				warns = append(warns, Warning{n, "decision for unknown request " + l.ID})
				continue
			}
			rec.Status, rec.DecidedAt, rec.Reason, rec.Applied = l.Status, l.DecidedAt, l.Reason, l.Applied
			if rec.Applied == nil {
				f := false
				rec.Applied = &f
			}
			if rec.Reason == nil {
				empty := ""
				rec.Reason = &empty
			}
		default:
			warns = append(warns, Warning{n, fmt.Sprintf("unknown status %q", l.Status)})
		}
	}
	return records, warns, nil
}

// MaxLineBytes bounds one log line; a longer one (a stray edit, a pasted
// blob) is skipped with a warning rather than breaking every later read.
const MaxLineBytes = 1 << 20

// lineReader yields lines of at most max bytes; the rest of a longer line
// is read and dropped, so memory stays bounded.
type lineReader struct {
	r   *bufio.Reader
	max int
}

// next returns the next line without its newline; tooLong reports a line
// that was dropped. It returns io.EOF after the last line.
func (lr *lineReader) next() (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > lr.max+1 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(buf, []byte("\n")), tooLong, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && (len(buf) > 0 || tooLong):
			return buf, tooLong, nil
		default:
			return nil, false, err
		}
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Read folds the log at path; a missing file is an empty log.
func Read(path string) ([]*Record, []Warning, error) {
	f, err := os.Open(path)
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
	// Warnings are lines the read skipped.
	Warnings []Warning
}

// Submit records a request unless an identical one is pending, all under
// the file lock so the check and the append are one step even across
// processes. now is the creation time (UTC is applied).
func Submit(path string, req Request, now time.Time) (Submitted, error) {
	var out Submitted
	err := withLock(path, func(f *os.File) error {
		recs, warns, err := Fold(io.NewSectionReader(f, 0, 1<<62))
		out.Warnings = warns
		if err != nil {
			return err
		}
		pending, ids, key := 0, map[string]bool{}, req.Key()
		for _, r := range recs {
			ids[r.ID] = true
			if r.Status != StatusPending {
				continue
			}
			pending++
			if r.request().Key() == key {
				out.ID, out.Existing = r.ID, true
				return nil
			}
		}
		if pending >= MaxPending {
			return fmt.Errorf("%w: %d requests await a decision", ErrPendingLimit, pending)
		}
		id, err := newID(ids)
		if err != nil {
			return err
		}
		out.ID = id
		return appendLine(f, Record{
			ID: id, CreatedAt: now.UTC().Truncate(time.Millisecond), Tool: req.Tool, Subcommand: nonNil(req.Subcommand),
			Flags: nonNil(req.Flags), Rationale: req.Rationale, Enables: req.Enables, Status: StatusPending,
		})
	})
	return out, err
}

// Decide appends a decision for a pending request. It returns ErrUnknownID
// for an id the log does not hold and ErrDecided for one already decided, so
// two operators (the CLI and the web UI) cannot both decide one request.
func Decide(path, id, status, reason string, applied bool, now time.Time) error {
	if status != StatusApproved && status != StatusDenied {
		return fmt.Errorf("decide %s: status %q is not approved or denied", id, status)
	}
	return withLock(path, func(f *os.File) error {
		recs, _, err := Fold(io.NewSectionReader(f, 0, 1<<62))
		if err != nil {
			return err
		}
		i := slices.IndexFunc(recs, func(r *Record) bool { return r.ID == id })
		switch {
		case i < 0:
			return fmt.Errorf("%w: %s", ErrUnknownID, id)
		case recs[i].Status != StatusPending:
			return fmt.Errorf("%w: %s is %s", ErrDecided, id, recs[i].Status)
		}
		return appendLine(f, decisionLine{ID: id, Status: status, DecidedAt: now.UTC().Truncate(time.Millisecond), Reason: reason, Applied: applied})
	})
}

// withLock opens (creating, mode 0600, in a 0700 folder) and locks the log
// for fn.
func withLock(path string, fn func(*os.File) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("request log: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("request log: %w", err)
	}
	defer f.Close()
	// The log holds what the assistant asked for; keep it private even if
	// someone loosened its mode.
	if info, err := f.Stat(); err == nil && info.Mode().Perm()&0o077 != 0 {
		if err := f.Chmod(0o600); err != nil {
			return fmt.Errorf("request log: restrict mode: %w", err)
		}
	}
	if err := flock(f); err != nil {
		return fmt.Errorf("request log: lock %s: %w", path, err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return fn(f)
}

// flock takes the exclusive lock, retrying when a signal interrupts the wait.
func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// appendLine writes l as one line. A file that does not end in a newline (a
// torn line from a crash) gets one first, so the new record starts clean.
// The caller holds the lock.
func appendLine(f *os.File, l any) error {
	data, err := json.Marshal(l)
	if err != nil {
		return err
	}
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if size := info.Size(); size > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, size-1); err != nil {
			return err
		}
		if last[0] != '\n' {
			data = append([]byte{'\n'}, data...)
		}
	}
	data = append(data, '\n')
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("request log: append: %w", err)
	}
	return f.Sync()
}

// newID draws req_ and 8 lowercase hex digits from crypto/rand, avoiding ids
// already used.
func newID(used map[string]bool) (string, error) {
	for range 100 {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		id := "req_" + hex.EncodeToString(b[:])
		if !used[id] {
			return id, nil
		}
	}
	return "", errors.New("request log: could not draw an unused id")
}
