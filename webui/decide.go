package webui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/requests"
)

// maxReasonBytes bounds a deny reason, as the request tool bounds what the
// assistant writes.
const maxReasonBytes = 4096

// refusal is a decision the UI would not make (or could not record), with
// the status the API answers and the sentence the operator reads.
type refusal struct {
	status int
	msg    string
}

func (e *refusal) Error() string { return e.msg }

func refusef(status int, format string, args ...any) *refusal {
	return &refusal{status, fmt.Sprintf(format, args...)}
}

// statusOf is the HTTP status for err: a refusal's own, else 500.
func statusOf(err error) int {
	var r *refusal
	if errors.As(err, &r) {
		return r.status
	}
	return http.StatusInternalServerError
}

// records reads the request log folded by id.
func (u *UI) records(s site) ([]*requests.Record, error) {
	recs, warns, err := requests.Read(s.RequestLog)
	u.logWarnings(s.RequestLog, warns)
	if err != nil {
		return nil, err
	}
	return recs, nil
}

// record finds the request id in the log.
func (u *UI) record(s site, id string) (*requests.Record, error) {
	recs, err := u.records(s)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(recs, func(r *requests.Record) bool { return r.ID == id })
	if i < 0 {
		return nil, refusef(http.StatusNotFound, "no request has the id %s", requests.Token(id))
	}
	return recs[i], nil
}

// pending finds a request that can still be decided.
func (u *UI) pending(s site, id string) (*requests.Record, error) {
	r, err := u.record(s, id)
	if err != nil {
		return nil, err
	}
	if r.Status != requests.StatusPending {
		return nil, refusef(http.StatusConflict, "%s is already %s", requests.Token(id), r.Status)
	}
	return r, nil
}

// take waits for the UI's decision turn while ctx lasts; release ends it.
func (u *UI) take(ctx context.Context) (release func(), err error) {
	if err := u.turn.Acquire(ctx, 1); err != nil {
		return nil, refusef(http.StatusServiceUnavailable, "another decision is being made: %v", err)
	}
	return func() { u.turn.Release(1) }, nil
}

// approval is what an approve asks for.
type approval struct {
	apply      bool // merge into the config first
	unlistedOK bool // the operator accepts flags the help does not list
	// grant makes the approval temporary; nil for a plain approval or an
	// apply, which it never combines with.
	grant *requests.Term
	// iKnow confirms a grant or an apply of what can hand the credentials
	// away with no pattern holding it (requests.Effect.Unconfirmed);
	// confirmWith is how a refusal names that confirmation ("" names the
	// API's i_know).
	iKnow       bool
	confirmWith string
}

// approved is a recorded approval.
type approved struct {
	rec     *requests.Record // folded after the decision
	applied string           // the merge line ("added flags --x to git push"); "" without apply
	granted string           // the grant's term ("once (within 24h)", "until …"); "" without a grant
}

// approve approves request id as `wraptool requests approve` does: a
// request for no subcommand only where the tool has a bare rule, flags the
// help does not list (any flag, where that help is unknown) only with
// unlistedOK, a grant or an apply of what can hand the credentials away
// with no pattern holding it only with iKnow (dangerRefusal), and with
// apply the config is merged first and the decision recorded only once the
// merge is written.
// A refused apply leaves the config untouched and the request pending.
// With a grant the config is never touched: the decision carries the grant,
// refused (422, the request stays pending) where --once or --for would be
// (see grantRefusal).
func (u *UI) approve(ctx context.Context, s site, id string, a approval) (approved, error) {
	if r, err := u.pending(s, id); err == nil {
		// Before the turn: learning may take seconds, and must not hold
		// up another decision.
		u.learnHelps(ctx, &s, []*requests.Record{r}, learnWait)
	}
	release, err := u.take(ctx)
	if err != nil {
		return approved{}, err
	}
	defer release()
	r, err := u.pending(s, id)
	if err != nil {
		return approved{}, err
	}
	if len(r.Subcommand) == 0 && !hasBareRule(s.Policy, r.Tool) {
		return approved{}, refusef(http.StatusUnprocessableEntity,
			"%s asks for %s <ANY SUBCOMMAND>: that can be approved only where the tool already has a bare rule (subcommand: [])",
			requests.Token(id), requests.Token(r.Tool))
	}
	if a.grant != nil {
		if err := grantRefusal(ctx, s, r); err != nil {
			u.log.Warn("grant refused", "id", id, "err", err)
			return approved{}, err
		}
	}
	if unl, l := requests.Unlisted(s.Helps, r.Tool, r.Subcommand, r.Flags); len(unl) > 0 && !a.unlistedOK {
		return approved{}, &refusal{http.StatusUnprocessableEntity, requests.UnlistedRefusal(id, r.Tool, r.Subcommand, unl, l, "unlisted_ok")}
	}
	if err := dangerRefusal(s, r, a); err != nil {
		u.log.Warn("approval needs a typed confirmation", "id", id, "err", err)
		return approved{}, err
	}
	var out approved
	if a.apply {
		applied, err := u.apply(ctx, s.ConfigPath, r.Tool, r.Subcommand, r.Flags, s.Paths)
		if err != nil {
			u.log.Warn("apply refused", "id", id, "err", err)
			return approved{}, &refusal{applyStatus(err), fmt.Sprintf("not applied, %s stays pending: %v", requests.Token(id), err)}
		}
		out.applied = applied
		u.log.Info("request applied to the config", "id", id, "applied", out.applied)
	}
	// The decision is written only after the config write succeeded.
	now := u.now()
	d := requests.Decision{Status: requests.StatusApproved, Applied: a.apply, DecidedBy: decidedBy}
	if a.grant != nil {
		d.Grant = a.grant.Grant(r, config.CanonicalPath(s.ConfigPath), now)
	}
	if err := u.decide(ctx, id, d); err != nil {
		st, msg := decideFailure(id, err)
		if a.apply {
			msg = fmt.Sprintf("the config was changed (%s), but the decision could not be recorded: %s", out.applied, msg)
		}
		return approved{}, &refusal{st, msg}
	}
	if a.grant != nil {
		out.granted = a.grant.String(now)
		u.log.Info("request granted", "id", id, "grant", a.grant.String(now), "exact", r.Call != nil)
	} else {
		u.log.Info("request approved", "id", id, "applied", a.apply)
	}
	rec, err := u.record(s, id)
	if err != nil {
		return approved{}, err
	}
	out.rec = rec
	return out, nil
}

// deny denies request id with reason, for the assistant to read back.
func (u *UI) deny(ctx context.Context, s site, id, reason string) (*requests.Record, error) {
	if len(reason) > maxReasonBytes {
		return nil, refusef(http.StatusBadRequest, "the reason is %d bytes; at most %d are kept", len(reason), maxReasonBytes)
	}
	release, err := u.take(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	if _, err := u.pending(s, id); err != nil {
		return nil, err
	}
	d := requests.Decision{Status: requests.StatusDenied, Reason: reason, DecidedBy: decidedBy}
	if err := u.decide(ctx, id, d); err != nil {
		st, msg := decideFailure(id, err)
		return nil, &refusal{st, msg}
	}
	u.log.Info("request denied", "id", id)
	return u.record(s, id)
}

// decideFailure words a failed decision: another writer may have decided
// first, or held the log's lock too long, or the server is stopping.
func decideFailure(id string, err error) (int, string) {
	switch {
	case errors.Is(err, requests.ErrUnknownID):
		return http.StatusNotFound, fmt.Sprintf("no request has the id %s", requests.Token(id))
	case errors.Is(err, requests.ErrDecided):
		return http.StatusConflict, fmt.Sprintf("%s was decided meanwhile: %v", requests.Token(id), err)
	case errors.Is(err, requests.ErrLocked), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, messages.ErrStopped), errors.Is(err, errReadOnly):
		return http.StatusServiceUnavailable, fmt.Sprintf("%s stays pending: %v", requests.Token(id), err)
	}
	return http.StatusInternalServerError, fmt.Sprintf("%s stays pending: %v", requests.Token(id), err)
}

// errReadOnly refuses a decision of a UI built without a way to record it.
var errReadOnly = errors.New("this review UI records no decisions: it was started without the server's request-log writer")

// decide records d on request id through the request-log writer. Once
// sent, the decision is the writer's to finish (its lock wait is bounded),
// so the answer waits for the writer's outcome even when the browser has
// gone: a reply of "stays pending" must never hide a decision recorded.
func (u *UI) decide(ctx context.Context, id string, d requests.Decision) error {
	if u.decider == nil {
		return errReadOnly
	}
	return u.decider(context.WithoutCancel(ctx), id, d)
}

// apply merges a request's capability into the config file through the
// config editor.
func (u *UI) apply(ctx context.Context, path, tool string, sub, flags []string, paths *config.Options) (string, error) {
	if u.applier == nil {
		return "", errReadOnly
	}
	// As for decide: "not applied" must never hide an edit the editor made.
	return u.applier(context.WithoutCancel(ctx), path, tool, sub, flags, paths)
}

// applyStatus is 422 for an apply the config refuses (the operator can act
// on the message), 503 while the server stops, 500 for a failure to read or
// write.
func applyStatus(err error) int {
	if errors.Is(err, messages.ErrStopped) || errors.Is(err, errReadOnly) {
		return http.StatusServiceUnavailable
	}
	for _, refused := range []error{config.ErrUnknownTool, config.ErrDeniedSubcommand, config.ErrDeniedFlag,
		config.ErrInvalidRequest, config.ErrChangedMeanwhile, config.ErrUnsupportedLayout, config.ErrInvalid} {
		if errors.Is(err, refused) {
			return http.StatusUnprocessableEntity
		}
	}
	return http.StatusInternalServerError
}

// hasBareRule reports whether tool has an allow rule for itself
// (subcommand: []), the only rule a request for no subcommand may widen.
func hasBareRule(p *policy.Policy, tool string) bool {
	if p == nil {
		return false
	}
	return slices.ContainsFunc(p.ToolRules(tool), func(r *policy.Rule) bool { return len(r.Subcommand()) == 0 })
}
