package webui

import (
	"context"
	"errors"
	"time"

	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/requests"
)

// Learner has the help of requested subcommands learned (specs: the
// requests' tool, subcommand and flags) and waits, while ctx lasts, until
// the state in service knows it or it could not be learned, as the policy
// holder's LearnHelps does.
type Learner func(ctx context.Context, specs []config.GrantSpec) error

// How long a screen waits for a requested subcommand's help. The review
// page renders after pageLearnWait with what is known, says that some help
// is still being learned, and refreshes itself until it is; a decision and
// the apply preview wait up to learnWait, since what they show or check
// (the effect, the unlisted-flag refusal) is computed from that help: each
// help form runs 5 s at most, a form that times out ends them, and at most
// 4 run at once.
const (
	pageLearnWait = 2 * time.Second
	learnWait     = 20 * time.Second
	// learnRefresh is how often, in seconds, the review page refreshes
	// itself while help is being learned.
	learnRefresh = 1
)

// learnHelps has the server learn the help of the pending requests in
// recs whose subcommand's help s lacks, when the config lets wraptool run
// it (a tool the config has, a subcommand no deny rule covers): a
// request's subcommand is often one no rule names, and its effect and its
// flags' marks come from that help. It waits up to wait, then takes the
// help in service into s. still reports that the wait ended before the
// help was learned or tried (an error of any other kind, or no learner,
// leaves what is known: the marks then fail closed, HELP UNKNOWN).
//
// Only a person looking at a request makes wraptool run its subcommand's
// help here: filing a request runs nothing.
func (u *UI) learnHelps(ctx context.Context, s *site, recs []*requests.Record, wait time.Duration) (still bool) {
	if u.learner == nil {
		return false
	}
	base := s.Base
	if base == nil {
		base = s.Policy
	}
	var specs []config.GrantSpec
	for _, r := range recs {
		if r.Status == requests.StatusPending && config.HelpWanted(base, s.Helps, r.Tool, r.Subcommand) {
			specs = append(specs, config.GrantSpec{ID: r.ID, Tool: r.Tool, Subcommand: r.Subcommand, Flags: r.Flags})
		}
		if len(specs) == maxPendingShown {
			break
		}
	}
	if len(specs) == 0 {
		return false
	}
	lctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	err := u.learner(lctx, specs)
	if err != nil {
		u.log.Debug("help not learned yet", "requests", len(specs), "err", err)
	}
	s.Helps = u.src.Current().Helps
	return errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
}
