package requests

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
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
	// Call is the exact call an exact-call request asks for; nil for a
	// request for a capability.
	Call   *Call  `json:"call,omitempty"`
	Status string `json:"status"`
	// DecidedAt, Reason, Applied and DecidedBy are set once decided.
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	Reason    *string    `json:"reason,omitempty"`
	Applied   *bool      `json:"applied,omitempty"`
	DecidedBy string     `json:"decided_by,omitempty"`
	// Client names the client whose user decided (decided_by "client").
	Client string `json:"client,omitempty"`
	// Grant is the temporary approval the latest decision carries, once
	// its signature verified; UsedAt is set once a once-grant was used.
	// Nil for a decision without one.
	Grant *Grant `json:"grant,omitempty"`
}

// A request line is a pending Record, whose unset decision fields are left
// out; decisionLine always carries every field (id, status,
// decided_at, reason, applied, decided_by), so readers never guess a
// default, and client, grant and sig when set.
type decisionLine struct {
	ID        string    `json:"id"`
	Status    string    `json:"status"`
	DecidedAt time.Time `json:"decided_at"`
	Reason    string    `json:"reason"`
	Applied   bool      `json:"applied"`
	DecidedBy string    `json:"decided_by"`
	Client    string    `json:"client,omitempty"`
	Grant     *Grant    `json:"grant,omitempty"`
	// Sig signs a decision that carries a grant; see sign.
	Sig string `json:"sig,omitempty"`
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
	Call       *Call      `json:"call,omitempty"`
	Status     string     `json:"status"`
	DecidedAt  *time.Time `json:"decided_at,omitempty"`
	Reason     *string    `json:"reason,omitempty"`
	Applied    *bool      `json:"applied,omitempty"`
	DecidedBy  string     `json:"decided_by,omitempty"`
	Client     string     `json:"client,omitempty"`
	Grant      *Grant     `json:"grant,omitempty"`
	Sig        string     `json:"sig,omitempty"`
}

// decision is l, a decision line, with absent fields at their zero value.
func (l *line) decision() decisionLine {
	d := decisionLine{ID: l.ID, Status: l.Status, DecidedBy: l.DecidedBy, Client: l.Client, Grant: l.Grant, Sig: l.Sig}
	if l.DecidedAt != nil {
		d.DecidedAt = *l.DecidedAt
	}
	if l.Reason != nil {
		d.Reason = *l.Reason
	}
	if l.Applied != nil {
		d.Applied = *l.Applied
	}
	return d
}

// Request is what the assistant asks for.
type Request struct {
	Tool       string
	Subcommand []string
	Flags      []string
	Rationale  string
	Enables    string
	// Call, when set, makes this an exact-call request: the call the
	// assistant was denied, with the Tool, Subcommand and Flags it used.
	// Submit checks it (ErrInvalidCall).
	Call *Call
}

// Key identifies a capability regardless of how it was asked: tool,
// subcommand and the set of flags, and for an exact-call request every
// field of the call. Two pending requests with one key are duplicates.
func (r Request) Key() string {
	flags := slices.Clone(r.Flags)
	slices.Sort(flags)
	flags = slices.Compact(flags)
	key := r.Tool + "\x00" + strings.Join(r.Subcommand, " ") + "\x00" + strings.Join(flags, " ")
	if r.Call != nil {
		key += r.Call.key()
	}
	return key
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
// are skipped and reported. A last line without its newline counts. It has
// no grants key, so every decision that carries a grant is skipped with a
// warning too: FoldKeyed folds a log with grants.
func Fold(r io.Reader) ([]*Record, []Warning, error) {
	return FoldKeyed(r, nil)
}

// FoldKeyed folds a log as Fold does, checking the decisions that carry a
// grant with key (the contents of grants.key; nil for none). Such a
// decision is skipped as a whole (it neither grants nor decides: the
// request stays as it was), with a warning, when key is nil, when its sig
// does not verify (see sign), when it is not an approval left unapplied,
// when its until is not after its decided_at or lies further from it than
// its kind allows (MaxOnce, MaxFor), when its config is not an absolute
// path, when an exact grant does not match the request's call, and when it
// records a use (used_at) of anything but the once-grant in force. A
// once-grant whose use was folded stays used: a later copy of its decision
// without used_at (a replay) is folded as used, with a warning.
func FoldKeyed(r io.Reader, key []byte) ([]*Record, []Warning, error) {
	f := newFolder(true, key)
	err := f.addAll(r)
	return f.records, f.warns, err
}

// addAll folds every line of r.
func (f *folder) addAll(r io.Reader) error {
	lines := jsonl.NewLineReader(r, math.MaxInt64, MaxLineBytes)
	for {
		l, err := lines.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		f.add(l)
	}
}

// folder folds lines one at a time, so that Fold can fold a whole log and a
// Log only what was appended since its last call, with one logic.
type folder struct {
	// keep holds every record whole, in order (Fold). A Log needs only
	// the ids, statuses, keys and grants, and does not hold every
	// rationale.
	keep    bool
	key     []byte              // grants.key; nil: every grant is skipped
	records []*Record           // when keep, in order of first appearance
	byID    map[string]*Record  // when keep
	status  map[string]string   // every request's latest status
	keyOf   map[string]string   // each pending request's Key
	byKey   map[string][]string // each Key's pending ids, oldest first
	reqs    map[string]reqInfo  // every request's digest and call, to check grants
	// grants holds, for each id whose latest decision carries a grant,
	// that decision (with UsedAt set once used), for UseGrant.
	grants map[string]*decisionLine
	// used holds the once-grants whose use was seen, by id, and when. A
	// Log shares one map with each folder it starts, so that a use is
	// remembered across re-folds of a replaced file; usedHere holds those
	// seen in this fold.
	used     map[string]time.Time
	usedHere map[string]bool
	keyless  int // grant lines skipped for want of a key
	lines    int // lines folded so far
	warns    []Warning
}

// reqInfo is what checking a grant needs of the request it decides.
type reqInfo struct {
	digest [sha256.Size]byte // requestDigest of its line
	call   bool              // whether it asks for an exact call
	policy string            // that call's policy hash
}

func newFolder(keep bool, key []byte) *folder {
	f := &folder{keep: keep, key: key, status: map[string]string{}, keyOf: map[string]string{}, byKey: map[string][]string{},
		reqs: map[string]reqInfo{}, grants: map[string]*decisionLine{}, used: map[string]time.Time{}, usedHere: map[string]bool{}}
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
		key := Request{Tool: l.Tool, Subcommand: l.Subcommand, Flags: l.Flags, Call: l.Call}.Key()
		f.status[l.ID], f.keyOf[l.ID] = StatusPending, key
		f.byKey[key] = append(f.byKey[key], l.ID)
		info := reqInfo{digest: requestDigest(&l)}
		if l.Call != nil {
			info.call, info.policy = true, l.Call.Policy
		}
		f.reqs[l.ID] = info
		if !f.keep {
			return
		}
		rec := &Record{ID: l.ID, Tool: l.Tool, Subcommand: nonNil(l.Subcommand), Flags: nonNil(l.Flags), Rationale: l.Rationale,
			Call: l.Call, Status: StatusPending}
		if rec.Call != nil {
			rec.Call.Command = nonNil(rec.Call.Command)
		}
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
		d := l.decision()
		if d.Grant != nil {
			if why := f.checkGrant(&d); why != "" {
				f.warns = append(f.warns, Warning{n, "decision for " + l.ID + " ignored: " + why})
				return
			}
			f.noteUse(n, &d)
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
		if d.Grant != nil {
			f.grants[l.ID] = &d
		} else {
			delete(f.grants, l.ID)
		}
		if !f.keep {
			return
		}
		rec := f.byID[l.ID]
		rec.Status, rec.DecidedAt, rec.Reason, rec.Applied, rec.DecidedBy = l.Status, l.DecidedAt, l.Reason, l.Applied, l.DecidedBy
		rec.Client, rec.Grant = l.Client, nil
		if d.Grant != nil {
			g := *d.Grant
			rec.Grant = &g
		}
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

// checkGrant returns why d, a decision carrying a grant, is to be skipped,
// or "" when it stands.
func (f *folder) checkGrant(d *decisionLine) string {
	g, req := d.Grant, f.reqs[d.ID]
	switch {
	case f.key == nil:
		f.keyless++
		return "it carries a grant, and there is no grants key to check it with"
	case !verify(f.key, d, req.digest, d.Sig):
		return "its grant's signature does not verify"
	case d.Status != StatusApproved || d.Applied:
		return "a grant on a decision other than an approval left unapplied"
	case d.DecidedAt.IsZero():
		return "a grant without decided_at"
	case !g.Until.After(d.DecidedAt):
		return "its grant's until is not after decided_at"
	case g.Until.Sub(d.DecidedAt) > g.limit():
		return "its grant lasts longer than " + g.kind()
	case g.Config == "" || !filepath.IsAbs(g.Config):
		return "its grant's config is not an absolute path"
	case g.Exact && !req.call:
		return "an exact grant on a request for no exact call"
	case g.Exact && g.Policy != req.policy:
		return "its exact grant's policy hash is not the call's"
	case !g.Exact && g.Policy != "":
		return "a policy hash on a grant that is not exact"
	case g.UsedAt != nil && !g.Once:
		return "used_at on a timed grant"
	case g.UsedAt != nil && !f.inForce(d):
		return "it records the use of a grant not in force"
	}
	return ""
}

// inForce reports whether d, a used-at line, is the decision in force for
// its id apart from used_at: "the same decision again".
func (f *folder) inForce(d *decisionLine) bool {
	cur := f.grants[d.ID]
	if cur == nil {
		return false
	}
	a, b := *cur.Grant, *d.Grant
	a.UsedAt, b.UsedAt = nil, nil
	return cur.Status == d.Status && cur.DecidedAt.Equal(d.DecidedAt) && cur.Reason == d.Reason && cur.Applied == d.Applied &&
		cur.DecidedBy == d.DecidedBy && cur.Client == d.Client &&
		a.Once == b.Once && a.Until.Equal(b.Until) && a.Exact == b.Exact && a.Policy == b.Policy && a.Config == b.Config
}

// noteUse remembers the use a once-grant's line n records, or marks its
// grant used when its use was seen before: an older copy of the decision
// does not revive it.
func (f *folder) noteUse(n int, d *decisionLine) {
	g := d.Grant
	if !g.Once {
		return
	}
	if g.UsedAt != nil {
		if _, ok := f.used[d.ID]; !ok {
			f.used[d.ID] = *g.UsedAt
		}
		f.usedHere[d.ID] = true
		return
	}
	at, ok := f.used[d.ID]
	if !ok {
		return
	}
	g.UsedAt = &at
	if f.usedHere[d.ID] {
		f.warns = append(f.warns, Warning{n, fmt.Sprintf("the once-grant of %s was used at %s; this copy of its decision stays used",
			d.ID, at.UTC().Format(time.RFC3339))})
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

// Read folds the log at path as FoldKeyed does, with the grants key beside
// it (LoadKey: none when missing, an error when unusable); a missing file
// is an empty log.
func Read(path string) ([]*Record, []Warning, error) {
	return read(path, nil)
}

// read is Read; used, when not nil, is shared with the fold (see
// folder.used).
func read(path string, used map[string]time.Time) ([]*Record, []Warning, error) {
	f, err := jsonl.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return []*Record{}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read request log: %w", err)
	}
	defer f.Close()
	key, err := LoadKey(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read request log %s: %w", path, err)
	}
	fo := newFolder(true, key)
	if used != nil {
		fo.used = used
	}
	err = fo.addAll(f)
	recs, warns := fo.records, fo.warns
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
	// Record and Line are the new request as appended (Line is its JSON
	// line, newline included): what the operator's hook is given. Both
	// are zero when Existing.
	Record Record
	Line   []byte
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
	// Client names the client whose user decided, for DecidedBy
	// "client" (interactive approval); empty otherwise.
	Client string
	// Grant, when set, makes an approval temporary: Status approved,
	// Applied false, Until after now and at most MaxOnce (Once) or MaxFor
	// ahead, Config an absolute path, UsedAt nil; Exact (with Policy equal
	// to the call's) exactly when the request has a Call. Until is stored
	// in UTC, truncated to the millisecond. The line is signed with
	// grants.key, which the first such Decide creates.
	Grant *Grant
}

// DecidedByCLI marks a decision made with `wraptool requests approve|deny`.
const DecidedByCLI = "cli"

// DecidedByWatch marks a decision made at the prompt of `wraptool requests
// watch`.
const DecidedByWatch = "watch"

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
	return &Log{path: path, turn: make(chan struct{}, 1), used: map[string]time.Time{}}
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
