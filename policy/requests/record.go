package requests

import (
	"slices"
	"strings"
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
