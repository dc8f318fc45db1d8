package requests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wraptool/wraptool/policy"
)

// Term is a temporary grant's term: once, within MaxOnce, or for Dur. The
// CLI (--once, --for) and the admin UI ("once", "for") parse it
// with ParseTerm, so both refuse the same.
type Term struct {
	Once bool
	Dur  time.Duration
}

// ErrTerm marks terms that do not combine or a duration that is not one:
// the CLI's usage error (exit 2), the API's 400.
var ErrTerm = errors.New("invalid grant terms")

// termError is a refusal of the terms, in the caller's own spelling.
type termError struct{ msg string }

func (e *termError) Error() string { return e.msg }
func (e *termError) Unwrap() error { return ErrTerm }

// ParseTerm checks apply, once and for together: once with for, or either
// with apply, or a for that is not a positive Go duration of at most MaxFor,
// is an error wrapping ErrTerm. spell names a term as the caller's user
// writes it ("--once" for the CLI, "once" for the API). It returns nil for
// a plain approval or an apply.
func ParseTerm(apply, once bool, forArg string, spell func(string) string) (*Term, error) {
	refuse := func(format string, args ...any) (*Term, error) {
		return nil, &termError{fmt.Sprintf(format, args...)}
	}
	switch {
	case once && forArg != "":
		return refuse("%s and %s do not combine: a grant is one or the other", spell("once"), spell("for"))
	case apply && (once || forArg != ""):
		return refuse("%s does not combine with %s or %s: %s changes the config for good", spell("apply"), spell("once"), spell("for"), spell("apply"))
	case once:
		return &Term{Once: true}, nil
	case forArg == "":
		return nil, nil
	}
	d, err := time.ParseDuration(forArg)
	switch {
	case err != nil:
		return refuse("%s %q is not a duration (say 30m, 8h, 72h)", spell("for"), forArg)
	case d <= 0:
		return refuse("%s %s: the duration must be positive", spell("for"), forArg)
	case d > MaxFor:
		return refuse("%s %s: at most %s; for longer, approve with %s", spell("for"), forArg, MaxFor, spell("apply"))
	}
	return &Term{Dur: d}, nil
}

// Until is when a grant decided at now ends.
func (t Term) Until(now time.Time) time.Time {
	if t.Once {
		return now.Add(MaxOnce)
	}
	return now.Add(t.Dur)
}

// String is how a decision confirms the term: "once (within 24h)" or
// "until 2026-03-01 20:00:00Z".
func (t Term) String(now time.Time) string {
	if t.Once {
		return "once (within 24h)"
	}
	return "until " + t.Until(now).UTC().Format("2006-01-02 15:04:05Z")
}

// Grant is the decision's grant for r: the term, the config it is approved
// under (config.CanonicalPath of it), and for an exact-call request the
// policy hash recorded at the denial.
func (t Term) Grant(r *Record, config string, now time.Time) *Grant {
	g := &Grant{Once: t.Once, Until: t.Until(now), Config: config}
	if r.Call != nil {
		g.Exact, g.Policy = true, r.Call.Policy
	}
	return g
}

// Grantable says why an exact-call request cannot be granted for now under
// p, the config's policy as it stands, whose policy hash is hash; nil when
// it can be. The hash must be the one recorded at the denial (otherwise the
// call may no longer be the same), the recorded arguments must build the
// recorded command, and policy.EvaluateExact must allow the call: an exact
// grant lifts only the allowlist, values, required flags and the count and
// patterns of positionals.
func (r *Record) Grantable(p *policy.Policy, hash string) error {
	call := r.Call
	if call == nil {
		return errors.New("not an exact-call request")
	}
	if hash != call.Policy {
		return errors.New("the config, an overrides file or an env file changed since the call was refused, " +
			"so it might no longer be the same call; the assistant must make it again and ask anew")
	}
	params := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(call.Arguments))
	dec.UseNumber()
	if err := dec.Decode(&params); err != nil {
		return fmt.Errorf("the recorded arguments do not decode: %w", err)
	}
	pc := policy.Call{Tool: r.Tool, Subcommand: r.Subcommand, Params: params}
	if cmd, ok := p.Command(pc); !ok || !slices.Equal(cmd, call.Command) {
		return errors.New("the recorded command is not what these arguments build; the request is not one wraptool wrote")
	}
	if d := p.EvaluateExact(pc); !d.Allowed() {
		return fmt.Errorf("no grant can allow it: %s (exact grants lift only the allowlist, values, required flags "+
			"and the count and patterns of positionals)", Text(d.Refusal.Reason))
	}
	return nil
}
