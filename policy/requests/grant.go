package requests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Grant is a temporary approval carried by a decision: the
// capability (or, when Exact, the one call) may be used once or until a
// time, without touching the config. A decision line carrying one also
// carries a "sig"; see sign for what it covers.
type Grant struct {
	// Once: one call may use it; false for a timed grant.
	Once bool `json:"once,omitempty"`
	// Until is when it stops allowing calls (UTC, milliseconds).
	Until time.Time `json:"until"`
	// UsedAt is set once a once-grant was used (the line UseGrant appends).
	UsedAt *time.Time `json:"used_at,omitempty"`
	// Exact: the grant allows exactly the request's Call, nothing like it.
	Exact bool `json:"exact,omitempty"`
	// Policy, for exact grants, is the policy hash recorded at the denial
	// (Call.Policy); empty otherwise.
	Policy string `json:"policy,omitempty"`
	// Config is the absolute path of the config it was approved under: it
	// applies only to a server serving that config.
	Config string `json:"config"`
}

// Limits of a grant's Until measured from its decision's decided_at: a
// line whose grant lasts longer grants nothing.
const (
	MaxOnce = 24 * time.Hour
	MaxFor  = 168 * time.Hour
)

// limit is the longest a grant of g's kind may last.
func (g *Grant) limit() time.Duration {
	if g.Once {
		return MaxOnce
	}
	return MaxFor
}

// kind names g's kind and its limit for messages: "a once-grant (24h)".
func (g *Grant) kind() string {
	if g.Once {
		return "a once-grant (at most 24h)"
	}
	return "a timed grant (at most 168h)"
}

// Call is the exact call an exact-call request asks for.
type Call struct {
	// Tool is the MCP tool name, "git_push".
	Tool string `json:"tool"`
	// Arguments are the call's arguments as CanonicalArguments writes
	// them: compact JSON, object keys sorted.
	Arguments json.RawMessage `json:"arguments"`
	// Command is the argv the call built: ["git","push","--force","origin","main"].
	Command []string `json:"command"`
	// Cwd is the resolved working directory.
	Cwd string `json:"cwd"`
	// Dir is "DEV:INO" of that directory at the denial.
	Dir string `json:"dir"`
	// Policy is the policy hash at the denial.
	Policy string `json:"policy"`
}

// Bounds of a Call that Submit accepts: the arguments' canonical JSON, and
// the command's tokens.
const (
	MaxArgumentsBytes = 64 << 10
	MaxCommandTokens  = 1000
)

// CanonicalArguments returns a call's arguments in the one form a request
// line records and a later call is compared in: the JSON object re-encoded
// compact, object keys sorted (at every depth), numbers exactly as written,
// strings with no HTML escaping (encoding/json's other escapes apply, and
// invalid UTF-8 becomes U+FFFD). Empty input and null are the empty object
// {}. Anything but one JSON object is an error.
func CanonicalArguments(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("arguments: more than one JSON value")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errors.New("arguments: not a JSON object")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	return json.RawMessage(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// checked returns a copy of c fit to record, or an error wrapping
// ErrInvalidCall: arguments in canonical form (none or null stand for {})
// of at most MaxArgumentsBytes, a command of 1 to MaxCommandTokens tokens,
// an absolute cwd, and a tool, dir and policy.
// Args are the call's positional arguments, as its arguments give them
// ("args"); nil when there are none or they do not decode.
func (c *Call) Args() []string {
	var a struct {
		Args []string `json:"args"`
	}
	if c == nil || json.Unmarshal(c.Arguments, &a) != nil {
		return nil
	}
	return a.Args
}

func (c *Call) checked() (*Call, error) {
	bad := func(format string, args ...any) (*Call, error) {
		return nil, fmt.Errorf("%w: %s", ErrInvalidCall, fmt.Sprintf(format, args...))
	}
	args, err := CanonicalArguments(c.Arguments)
	switch raw := bytes.TrimSpace(c.Arguments); {
	case err != nil:
		return bad("%v", err)
	case len(args) > MaxArgumentsBytes:
		return bad("the arguments take %d bytes, more than %d", len(args), MaxArgumentsBytes)
	case len(raw) > 0 && string(raw) != "null" && !bytes.Equal(args, c.Arguments):
		return bad("the arguments are not in canonical form (use CanonicalArguments)")
	case c.Tool == "":
		return bad("no tool")
	case len(c.Command) == 0:
		return bad("no command")
	case len(c.Command) > MaxCommandTokens:
		return bad("the command has %d tokens, more than %d", len(c.Command), MaxCommandTokens)
	case !filepath.IsAbs(c.Cwd):
		return bad("the working directory %q is not an absolute path", c.Cwd)
	case c.Dir == "":
		return bad("no directory identity (dir)")
	case c.Policy == "":
		return bad("no policy hash")
	}
	out := *c
	out.Arguments, out.Command = args, slices.Clone(c.Command)
	return &out, nil
}

// key is the part of a request's Key that an exact call adds: every field,
// each quoted, so that no two calls share one.
func (c *Call) key() string {
	var b strings.Builder
	b.WriteString("\x00call")
	for _, s := range append([]string{c.Tool, string(c.Arguments), c.Cwd, c.Dir, c.Policy, strconv.Itoa(len(c.Command))}, c.Command...) {
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(s))
	}
	return b.String()
}

// checkGrant checks a grant an operator gives on a decision made at
// decided (UTC, milliseconds), before the request it decides is known.
func (d *Decision) checkGrant(decided time.Time) error {
	g := d.Grant
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidGrant, fmt.Sprintf(format, args...))
	}
	switch {
	case d.Status != StatusApproved:
		return bad("only an approval carries a grant")
	case d.Applied:
		return bad("a grant is not applied to the config")
	case g.UsedAt != nil:
		return bad("a new grant is not used yet")
	case !g.Until.After(decided):
		return bad("until %s is not after now", g.Until.Format(time.RFC3339))
	case g.Until.Sub(decided) > g.limit():
		return bad("until %s is further than %s allows", g.Until.Format(time.RFC3339), g.kind())
	case g.Config == "" || !filepath.IsAbs(g.Config):
		return bad("the config %q is not an absolute path", g.Config)
	case !g.Exact && g.Policy != "":
		return bad("only an exact grant records a policy hash")
	}
	return nil
}

// ActiveGrants returns the records whose grant is in force at now: approved
// with a grant, not used, Until after now; oldest decision first (among
// once-grants the oldest is used first). It returns nil for none.
func ActiveGrants(recs []*Record, now time.Time) []*Record {
	var out []*Record
	for _, r := range recs {
		if r.Status == StatusApproved && r.Grant != nil && r.Grant.UsedAt == nil && now.Before(r.Grant.Until) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b *Record) int { return decidedAt(a).Compare(decidedAt(b)) })
	return out
}

func decidedAt(r *Record) time.Time {
	if r.DecidedAt == nil {
		return time.Time{}
	}
	return *r.DecidedAt
}
