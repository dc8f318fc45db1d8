package webui

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/edit"
	"github.com/wraptool/wraptool/policy/requests"
)

// grantTerms checks apply, once and for together as `requests approve`
// checks --apply, --once and --for (requests.ParseTerm, shared): any two of
// them, or a duration that is not one, not positive or longer than
// requests.MaxFor, is a 400. It returns nil for a plain approval or an
// apply.
func grantTerms(apply, once bool, forArg string) (*requests.Term, error) {
	t, err := requests.ParseTerm(apply, once, forArg, func(name string) string { return name })
	if err != nil {
		return nil, refusef(http.StatusBadRequest, "%v", err)
	}
	return t, nil
}

// formGrants are the review page's grant buttons, by their action value:
// the page offers these terms and no others.
var formGrants = map[string]requests.Term{
	"once": {Once: true},
	"1h":   {Dur: time.Hour},
	"8h":   {Dur: 8 * time.Hour},
}

// grantRefusal says why r cannot be granted for now under s, as `requests
// approve --once|--for` refuses it: for an exact-call request, when the
// policy changed since the denial or the call is refused for a reason no
// exact grant lifts (exactRefusal); for any other, when the capability
// could not be merged into the config, as --apply would be refused
// (edit.PreviewApply: an unknown tool, a deny rule covering the
// subcommand, a merge that does not validate). nil means it can be.
func grantRefusal(ctx context.Context, s site, r *requests.Record) error {
	if r.Call != nil {
		if err := exactRefusal(ctx, s, r); err != nil {
			return &refusal{http.StatusUnprocessableEntity,
				fmt.Sprintf("not granted, %s stays pending: %v", requests.Token(r.ID), err)}
		}
		return nil
	}
	if _, _, err := edit.PreviewApply(s.ConfigPath, r.Tool, r.Subcommand, r.Flags, s.Paths); err != nil {
		return &refusal{applyStatus(err), fmt.Sprintf("not granted, %s stays pending: %v", requests.Token(r.ID), err)}
	}
	return nil
}

// exactRefusal checks an exact-call request against the config as it now
// stands, as the CLI does (requests.Record.Grantable, shared): its policy
// hash must be the one recorded at the denial, the recorded arguments must
// build the recorded command, and policy.EvaluateExact must allow the call.
//
// The config is loaded afresh (the file may have changed since the
// snapshot in service), typed by the help the server holds (s.Helps), so
// the command is built as the server built it at the denial.
func exactRefusal(ctx context.Context, s site, r *requests.Record) error {
	helps := s.Helps
	l, err := config.LoadFile(ctx, s.ConfigPath, &config.LoadOptions{Paths: s.Paths, Tokens: config.TokensOptional,
		Introspect: func(context.Context, *config.Config, bool) (policy.Helps, error) { return helps, nil }})
	if err != nil {
		return fmt.Errorf("the config does not load, so the call cannot be checked against it: %w", err)
	}
	return r.Grantable(l.Policy, l.PolicyHash())
}
