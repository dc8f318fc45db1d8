package toolset

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/toolset/runner"
)

// Grants are the temporary grants in force with a snapshot.
// A call the config alone refuses may be allowed by one of them; which one
// is decided per call, at the call's time, so a grant stops allowing calls
// at its until whether or not a new snapshot came meanwhile.
type Grants struct {
	// Timed is the config's policy with every timed capability grant
	// merged; it decides only while now is before TimedUntil (the first of
	// their untils), after which each grant is tried alone.
	Timed      *policy.Policy
	TimedUntil time.Time
	// Capability lists the capability grants in force, timed ones first,
	// each group oldest first, each with the policy of the config and that
	// grant alone.
	Capability []CapabilityGrant
	// Exact lists the exact-call grants in force, timed ones first, each
	// group oldest first.
	Exact []ExactGrant
}

// CapabilityGrant is one capability grant in force.
type CapabilityGrant struct {
	ID    string
	Once  bool
	Until time.Time
	// Approved is when it was decided: among once-grants of both kinds
	// that allow a call, the oldest is used.
	Approved time.Time
	// Tool and Subcommand are the request's: a combined timed policy's
	// call is credited to the oldest timed grant for its rule.
	Tool       string
	Subcommand []string
	// Policy is the config with this grant merged.
	Policy *policy.Policy
}

// ExactGrant is one exact-call grant in force.
type ExactGrant struct {
	ID    string
	Once  bool
	Until time.Time
	// Approved is when it was decided (see CapabilityGrant.Approved).
	Approved time.Time
	Call     requests.Call
}

// GrantUser consumes a once-grant: one step under the request log's lock
// (re-read, check it is unused and unexpired, append its used_at line).
// An error wrapping requests.ErrGrantUsed or requests.ErrGrantExpired means
// another call had it; any other means the line could not be written.
type GrantUser func(ctx context.Context, id string) error

// grantUse is the grant a call runs under. until is when it stops
// allowing the call: for several grants together, the first of their
// untils.
type grantUse struct {
	id    string
	once  bool
	until time.Time
	// approved is when the grant was decided: among once-grants of both
	// kinds the oldest is used.
	approved time.Time
	exact    *requests.Call
	// policy is a capability grant's (the config with it alone merged),
	// remembered once a once-grant is used; nil for the others.
	policy *policy.Policy
	// all lists, oldest first, every grant a call needed together (each
	// adds a flag it gives); nil when one grant alone allows it.
	all []string
}

// errNotAdmitted wraps why a call allowed by a grant did not start: the
// grant expired while it waited for a slot, another call used the
// once-grant, or its working directory is no longer the approved one.
type errNotAdmitted struct{ err error }

func (e errNotAdmitted) Error() string { return e.err.Error() }
func (e errNotAdmitted) Unwrap() error { return e.err }

// errDirChanged refuses an exact-call grant whose working directory is not
// the approved one (another directory now at that path).
var errDirChanged = errors.New("the working directory is not the one the exact call was approved in")

// grantFor finds the grant that allows a call the config alone refuses:
// timed capability grants first, then timed exact-call grants, then
// once-grants, the oldest first of either kind (capability first when two
// were approved at the same instant), so a once-grant
// is kept whenever a timed grant allows the call. A call is credited to the
// grant whose capability covers what the config refused: the oldest timed
// grant that allows it alone; when only several timed grants together do
// (while none has expired), to those it needs (see needed). It returns the
// decision under that grant, or nil when none allows the call.
func (st *State) grantFor(name string, call policy.Call, canonical json.RawMessage, now time.Time) (policy.Decision, *grantUse) {
	g := st.Grants
	if g == nil {
		return policy.Decision{}, nil
	}
	timedFirst := func(once bool) []CapabilityGrant {
		var out []CapabilityGrant
		for _, c := range g.Capability {
			if c.Once == once && now.Before(c.Until) {
				out = append(out, c)
			}
		}
		return out
	}
	timed := timedFirst(false)
	capability := func(list []CapabilityGrant) (policy.Decision, *grantUse) {
		for _, c := range list {
			if d := c.Policy.Evaluate(call); d.Allowed() {
				return d, &grantUse{id: c.ID, once: c.Once, until: c.Until, approved: c.Approved, policy: c.Policy}
			}
		}
		return policy.Decision{}, nil
	}
	if d, u := capability(timed); u != nil {
		return d, u
	}
	if g.Timed != nil && now.Before(g.TimedUntil) && len(timed) > 0 {
		if d := g.Timed.Evaluate(call); d.Allowed() {
			return d, st.needed(name, call, g.Timed, timed)
		}
	}
	exact := func(once bool) (policy.Decision, *grantUse) {
		var command []string
		for i := range g.Exact {
			e := &g.Exact[i]
			if e.Once != once || !now.Before(e.Until) || e.Call.Tool != name || e.Call.Policy != st.PolicyHash ||
				!bytes.Equal(e.Call.Arguments, canonical) {
				continue
			}
			if command == nil {
				var ok bool
				if command, ok = st.base().Command(call); !ok {
					return policy.Decision{}, nil
				}
			}
			if !slices.Equal(command, e.Call.Command) {
				continue
			}
			if d := st.base().EvaluateExact(call); d.Allowed() {
				return d, &grantUse{id: e.ID, once: e.Once, until: e.Until, approved: e.Approved, exact: &e.Call}
			}
		}
		return policy.Decision{}, nil
	}
	if d, u := exact(false); u != nil {
		return d, u
	}
	// Among once-grants the oldest is used, whichever its kind.
	dc, uc := capability(timedFirst(true))
	de, ue := exact(true)
	if uc != nil && (ue == nil || !ue.approved.Before(uc.approved)) {
		return dc, uc
	}
	return de, ue
}

// needed is the use of a call that no timed grant allows alone but all of
// them (merged) do: the grants it needs, found flag by flag. A grant is
// needed when it made the rule (the config has no exposed rule of that
// name) or is the oldest to add a flag the call gives that the config's
// rule lacks. The line names the one approved last, the grant that
// completed what the call needed, and lists them all; the call is allowed
// until the first of their untils. When the flags explain nothing (they
// always should), the call is credited to the oldest grant on its rule, else
// to the oldest timed grant, until the first of all their untils.
func (st *State) needed(name string, call policy.Call, merged *policy.Policy, timed []CapabilityGrant) *grantUse {
	flagsOf := func(p *policy.Policy) (map[string]bool, bool) {
		r, ok := p.Rule(name)
		if !ok {
			return nil, false
		}
		set := map[string]bool{}
		for _, f := range r.Flags() {
			set[f.Flag] = true
		}
		return set, true
	}
	base, hasRule := flagsOf(st.base())
	granted := make([]map[string]bool, len(timed))
	for i, c := range timed {
		granted[i], _ = flagsOf(c.Policy)
	}
	need := make([]bool, len(timed))
	if !hasRule {
		for i := range timed {
			if granted[i] != nil {
				need[i] = true
				break
			}
		}
	}
	for _, f := range merged.CallFlags(call) {
		if base[f] {
			continue
		}
		for i := range timed {
			if granted[i][f] {
				need[i] = true
				break
			}
		}
	}
	u := &grantUse{}
	for i, c := range timed {
		if need[i] {
			u.all = append(u.all, c.ID)
			u.id = c.ID
			if u.until.IsZero() || c.Until.Before(u.until) {
				u.until = c.Until
			}
		}
	}
	if u.id != "" {
		if len(u.all) == 1 {
			u.all = nil
		}
		return u
	}
	credit := timed[0]
	for _, c := range timed {
		if c.Tool == call.Tool && slices.Equal(c.Subcommand, call.Subcommand) {
			credit = c
			break
		}
	}
	until := credit.Until
	for _, c := range timed {
		if c.Until.Before(until) {
			until = c.Until
		}
	}
	return &grantUse{id: credit.ID, until: until}
}

// admit is the last check of a call allowed by a grant, made once it has a
// slot and its working directory is pinned (dir; nil for the server's own),
// just before the child starts: the grant must still be in force, an
// exact-call grant's directory must be the approved one (same device and
// inode), and a once-grant is consumed.
func (st *State) admit(ctx context.Context, u *grantUse) func(dir *os.File) error {
	return func(dir *os.File) error {
		if !time.Now().Before(u.until) {
			return errNotAdmitted{fmt.Errorf("grant %s: %w", u.id, requests.ErrGrantExpired)}
		}
		if u.exact != nil {
			id, err := dirID(dir)
			if err != nil || id != u.exact.Dir {
				return errNotAdmitted{errDirChanged}
			}
		}
		if u.once {
			if st.UseGrant == nil {
				return errors.New("once-grants cannot be used: no request log writer")
			}
			if err := st.UseGrant(ctx, u.id); err != nil {
				if errors.Is(err, requests.ErrGrantUsed) || errors.Is(err, requests.ErrGrantExpired) || errors.Is(err, requests.ErrNoGrant) {
					return errNotAdmitted{err}
				}
				return err
			}
			st.Used.add(UsedGrant{ID: u.id, At: time.Now(), Policy: u.policy})
		}
		return nil
	}
}

// dirID names a directory by device and inode, "DEV:INO": the open handle's
// when there is one, else the server's working directory's.
func dirID(dir *os.File) (string, error) {
	var info os.FileInfo
	var err error
	if dir != nil {
		info, err = dir.Stat()
	} else {
		info, err = os.Stat(".")
	}
	if err != nil {
		return "", err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return "", errors.New("no device and inode")
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino), nil
}

// Bounds of the denial memory.
const (
	// MaxDenials is how many refused calls are remembered.
	MaxDenials = 1000
	// DenialTTL is how long one is.
	DenialTTL = time.Hour
	// MaxExactArguments bounds the arguments of a call that gets a call_id.
	MaxExactArguments = 64 << 10
)

// DeniedCall is a refused call an exact-call request can name.
type DeniedCall struct {
	// Call is what the request line records.
	Call requests.Call
	// Tool, Subcommand and Flags are the capability the call used.
	Tool       string
	Subcommand []string
	Flags      []string
	// At is when it was refused.
	At time.Time
}

// Denials remembers the last MaxDenials refused calls for DenialTTL, in
// memory, by call_id. One lives for the server's lifetime; it is safe for
// concurrent use.
type Denials struct {
	mu    sync.Mutex
	byID  map[string]DeniedCall
	order []string // call_ids, oldest first
}

// NewDenials returns an empty memory.
func NewDenials() *Denials { return &Denials{byID: map[string]DeniedCall{}} }

// Add remembers c and returns its new call_id: "call_" and 8 lowercase hex
// digits from a cryptographic source.
func (m *Denials) Add(c DeniedCall) (string, error) {
	if m == nil {
		return "", errors.New("no denial memory")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expire(c.At)
	var id string
	for {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		if id = "call_" + hex.EncodeToString(b[:]); m.byID[id].At.IsZero() {
			break
		}
	}
	for len(m.order) >= MaxDenials {
		delete(m.byID, m.order[0])
		m.order = m.order[1:]
	}
	m.byID[id] = c
	m.order = append(m.order, id)
	return id, nil
}

// Get returns the refused call with that call_id, if it is remembered and
// not older than DenialTTL at now.
func (m *Denials) Get(id string, now time.Time) (DeniedCall, bool) {
	if m == nil {
		return DeniedCall{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expire(now)
	c, ok := m.byID[id]
	return c, ok
}

// expire drops what is older than DenialTTL at now.
func (m *Denials) expire(now time.Time) {
	n := 0
	for n < len(m.order) && now.Sub(m.byID[m.order[n]].At) > DenialTTL {
		delete(m.byID, m.order[n])
		n++
	}
	m.order = m.order[n:]
}

// Denial is a refused call's structuredContent: the run's output schema
// admits it too, since clients validate structuredContent against the
// output schema even on errors.
type Denial struct {
	Denied bool `json:"denied"`
	// CallID names the call for an exact-call request; "" when none was
	// issued (arguments over 64 KiB, a value no argv token can hold, a
	// working directory that cannot be resolved).
	CallID string `json:"call_id,omitempty"`
	// Command is the call as it would have run, tool key first.
	Command []string `json:"command,omitempty"`
	// Reason is the Policy: line's reason.
	Reason string `json:"reason"`
}

// denial renders a refusal for the assistant, with its structuredContent,
// remembering the call for an exact-call request when it can be named.
func (st *State) denial(name string, call policy.Call, raw json.RawMessage, rt Runtime, r *policy.Refusal) *mcp.CallToolResult {
	d := Denial{Denied: true, Reason: r.Reason}
	if shown, hidden, ok := st.base().ShownCommand(call); ok {
		d.Command = shown
		// A call that gives a redacted flag is never named for an
		// exact-call request: the operator could not see what they
		// would approve.
		if !hidden {
			d.CallID = st.remember(name, call, raw, rt, shown)
		}
	}
	res := errorResult(r.Text)
	res.StructuredContent = d
	return res
}

// remember records a refused call in the denial memory and returns its
// call_id, or "" when it cannot be named exactly.
func (st *State) remember(name string, call policy.Call, raw json.RawMessage, rt Runtime, command []string) string {
	if st.Denials == nil || len(raw) > MaxExactArguments {
		return ""
	}
	flags := st.base().CallFlags(call)
	for _, f := range flags {
		if !policy.ValidFlag(f) {
			return "" // no capability request could name it
		}
	}
	canonical, err := requests.CanonicalArguments(raw)
	if err != nil {
		return ""
	}
	requested, _ := call.Params[policy.CwdProperty].(string)
	dir, real, err := runner.OpenWorkdir(requested, rt.defaultDir(), rt.Roots)
	if err != nil {
		return ""
	}
	if dir != nil {
		defer dir.Close()
	} else if real, err = os.Getwd(); err != nil {
		return ""
	}
	id, err := dirID(dir)
	if err != nil {
		return ""
	}
	callID, err := st.Denials.Add(DeniedCall{
		Call:       requests.Call{Tool: name, Arguments: canonical, Command: command, Cwd: real, Dir: id, Policy: st.PolicyHash},
		Tool:       call.Tool,
		Subcommand: slices.Clone(call.Subcommand),
		Flags:      flags,
		At:         time.Now(),
	})
	if err != nil {
		return ""
	}
	return callID
}
