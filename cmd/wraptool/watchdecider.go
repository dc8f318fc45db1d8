package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wraptool/wraptool/policy/requests"
)

// decider carries out the prompter's decisions and shows what they
// would do. It prints to the prompter's output.
type decider interface {
	// show prints r and, last, what approving it does.
	show(ctx context.Context, r *requests.Record)
	// approve records an approval of r: a grant (ap.grant) or a merge into
	// the config (ap.apply). An error wrapping errShowAgain means it
	// printed a new effect instead; one wrapping requests.ErrDecided or
	// requests.ErrUnknownID that r can no longer be decided; any other
	// says why it was refused, and r stays pending.
	approve(ctx context.Context, r *requests.Record, ap approval) error
	// deny records a denial of r with reason; its errors are approve's.
	deny(ctx context.Context, r *requests.Record, reason string) error
	// unlisted is the warning approving r's flags the help does not list
	// gives (as --unlisted-ok's refusal says it); "" when every flag is
	// listed.
	unlisted(ctx context.Context, r *requests.Record) string
	// grave is the warning approving r gives when it hands the assistant
	// what can send the credentials away, run code with them or print
	// them, with no pattern holding it (it needs the word i-know); "" when
	// nothing does.
	grave(ctx context.Context, r *requests.Record) string
}

// unlistedHint is how watch's refusal of unlisted flags says to approve
// them: deliberately, by a word and then a key, never by one key.
const unlistedHint = "the word unlisted (type unlisted⏎, then o or h)"

// iKnowHint is how watch's refusal of what can hand the credentials away
// says to approve it: by a word typed after reading the effect.
const iKnowHint = "the word i-know (type i-know⏎, then o, h or apply)"

// errShowAgain says the effect of an approval changed since it was shown
// (the config changed): the new one was printed, and the operator must
// look again before deciding.
var errShowAgain = errors.New("the effect changed since it was shown")

// logDecider is the decider requests watch runs with: it decides as
// `requests approve` and `deny` do, with their checks, and writes each
// decision to the request log with decided_by "watch".
type logDecider struct {
	a       *app
	logPath string // the log watch follows, as the config named it at the start
	// shownID and shownEffect are the request shown last and the effect
	// it was shown with, which an approval must still have.
	shownID, shownEffect string
}

func (x *logDecider) show(ctx context.Context, r *requests.Record) {
	out := x.a.stdout
	x.shownID, x.shownEffect = r.ID, ""
	o, err := x.a.configOperator(ctx)
	if err != nil {
		(&operator{}).describe(out, r, time.Now())
		fmt.Fprintf(out, "\nThe config does not load, so approving is refused until it does: %s\n", safeText(err.Error()))
		return
	}
	x.a.learnHelps(ctx, o, r)
	o.describe(out, r, time.Now())
	effect, err := x.a.approvalEffect(o, r, r.Call != nil)
	x.shownEffect = effect
	fmt.Fprint(out, effect)
	if err != nil && r.Call != nil {
		fmt.Fprintf(out, "  it cannot be granted: %s\n", safeText(err.Error()))
	}
}

func (x *logDecider) approve(ctx context.Context, r *requests.Record, ap approval) error {
	id := requests.Token(r.ID)
	o, err := x.a.configOperator(ctx)
	if err != nil {
		return fmt.Errorf("not approved, %s stays pending: the config does not load: %w", id, err)
	}
	if o.requestLog() != x.logPath {
		return fmt.Errorf("not approved: the config now names another request log (%s); restart wraptool requests watch", o.requestLog())
	}
	// The request as the log holds it now: a decision made elsewhere
	// since it was shown must not be followed by a merge into the
	// config that no decision records.
	recs, _, err := requests.Read(x.logPath)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(recs, func(c *requests.Record) bool { return c.ID == r.ID })
	switch {
	case i < 0:
		return fmt.Errorf("%w: %s is no longer in %s", requests.ErrUnknownID, id, x.logPath)
	case recs[i].Status != requests.StatusPending:
		return fmt.Errorf("%w: %s is %s (decided by %s)", requests.ErrDecided, id, requests.GrantStatus(recs[i], time.Now()), requests.Token(recs[i].DecidedBy))
	}
	cur := recs[i]
	if err := o.bareRuleRefusal(cur); err != nil {
		return err
	}
	x.a.learnHelps(ctx, o, cur)
	effect, previewErr := x.a.approvalEffect(o, cur, cur.Call != nil)
	if cur.ID != x.shownID || effect != x.shownEffect {
		fmt.Fprint(x.a.stdout, "\nThe config changed since this request was shown; approving it now does this instead:"+effect)
		x.shownID, x.shownEffect = cur.ID, effect
		return errShowAgain
	}
	if err := o.refusal(cur, ap, previewErr); err != nil {
		if unl, l := requests.Unlisted(o.loaded.Helps, cur.Tool, cur.Subcommand, cur.Flags); len(unl) > 0 && !ap.unlistedOK {
			if o.refusal(cur, withUnlistedOK(ap), previewErr) == nil {
				// Refused for its unlisted flags alone: say how watch
				// approves them, not the CLI's option.
				return errors.New(requests.UnlistedRefusal(cur.ID, cur.Tool, cur.Subcommand, unl, l, unlistedHint))
			}
		}
		return err
	}
	switch unc, hidden := x.a.unconfirmed(o, cur, ap); {
	case hidden:
		return errors.New(requests.ExactHiddenRefusal(cur.ID, unc))
	case len(unc) > 0 && !ap.iKnow:
		return errors.New(requests.DangerRefusal(cur.ID, unc, iKnowHint))
	}
	return x.a.recordApproval(ctx, o, cur, ap, requests.DecidedByWatch)
}

// withUnlistedOK is ap accepting the flags the help does not list.
func withUnlistedOK(ap approval) approval {
	ap.unlistedOK = true
	return ap
}

func (x *logDecider) unlisted(ctx context.Context, r *requests.Record) string {
	o, err := x.a.configOperator(ctx)
	if err != nil {
		// Approving is refused until the config loads: nothing to warn
		// of yet.
		return ""
	}
	unl, l := requests.Unlisted(o.loaded.Helps, r.Tool, r.Subcommand, r.Flags)
	if len(unl) == 0 {
		return ""
	}
	return requests.UnlistedWarning(r.Tool, r.Subcommand, unl, l)
}

func (x *logDecider) grave(ctx context.Context, r *requests.Record) string {
	o, err := x.a.configOperator(ctx)
	if err != nil {
		return ""
	}
	unc, hidden := x.a.unconfirmed(o, r, approval{grant: watchOnce})
	if len(unc) == 0 || hidden {
		return "" // a hidden one is refused whatever is typed
	}
	return "approving hands the assistant what can send your credentials away, run code with them or print them, " +
		"and no pattern holds it: " + strings.Join(unc, ", ")
}

func (x *logDecider) deny(ctx context.Context, r *requests.Record, reason string) error {
	return x.a.recordDenial(ctx, x.logPath, r.ID, reason, requests.DecidedByWatch)
}
