package requests

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/wraptool/wraptool/policy/jsonl"
)

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
