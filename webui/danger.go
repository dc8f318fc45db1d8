package webui

import (
	"net/http"
	"slices"
	"strings"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/edit"
	"github.com/wraptool/wraptool/policy/danger"
	"github.com/wraptool/wraptool/policy/requests"
)

// IKnow is what the operator types in a review form's i_know field to
// grant or apply a request that can hand the credentials away with no
// pattern holding it (requests.Effect.Unconfirmed).
const IKnow = "i-know"

// formIKnowOption is how a refusal on the page names the confirmation.
const formIKnowOption = `"` + IKnow + `" typed in the confirmation field`

// option names the confirmation a refusal asks for: the form's words, or
// the API's field.
func (a approval) option() string {
	if a.confirmWith == "" {
		return "i_know"
	}
	return a.confirmWith
}

// catalogCLI names the catalog's CLI for tool (danger.CLI): by its binary
// in the policy in service, rules or none, else by its key.
func catalogCLI(p *policy.Policy, tool string) string {
	binary := ""
	if p != nil {
		binary = p.Binary(tool)
	}
	return danger.CLI(tool, binary)
}

// effects computes what approving requests grants, with the catalog's
// classes (requests.RuleEffectFor), from the config file as read once: a
// page or an API list of many requests parses it once per request, never
// reads it again.
type effects struct {
	s    site
	data []byte // the config file; nil when it could not be read
	memo map[string]requests.Effect
}

func newEffects(s site) *effects {
	x := &effects{s: s, memo: map[string]requests.Effect{}}
	if s.ConfigPath != "" {
		if data, err := config.ReadFile(s.ConfigPath); err == nil {
			x.data = data
		}
	}
	return x
}

// of is the effect of approving r: its capability merged into the config
// as an apply or a grant would merge it. Where the merge is refused (an
// unknown tool, a deny rule; approving is refused then too) the rule is
// the requested flags alone, unconstrained, so the page still shows what
// the catalog says of each.
func (x *effects) of(r *requests.Record) requests.Effect {
	key := strings.Join([]string{r.Tool, strings.Join(r.Subcommand, "\x00"), strings.Join(r.Flags, "\x00")}, "\x01")
	if e, ok := x.memo[key]; ok {
		return e
	}
	rule := &policy.AllowRule{Subcommand: r.Subcommand, Flags: dedup(r.Flags)}
	if x.data != nil {
		if m, err := config.MergeRequest(x.s.ConfigPath, x.data, r.Tool, r.Subcommand, r.Flags, x.s.Paths); err == nil {
			rule = m.Rule
		}
	}
	e := requests.RuleEffectFor(x.s.Helps, catalogCLI(x.s.Policy, r.Tool), r, rule)
	x.memo[key] = e
	return e
}

// dedup is flags without repeats, in their order.
func dedup(flags []string) []string {
	var out []string
	for _, f := range flags {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// dangerJSON is one element of a listed request's "danger": what the
// catalog says of a requested flag or of the subcommand itself, with the
// config in service. Flag and Subcommand are as stored (JSON escaping
// only), as the record's own fields are.
type dangerJSON struct {
	Flag       string   `json:"flag,omitempty"`
	Subcommand string   `json:"subcommand,omitempty"`
	Classes    []string `json:"classes"`
	Effect     string   `json:"effect"`
	// Held says a flag_constraints pattern holds the flag's value.
	Held bool `json:"held"`
}

// listedRequest is an element of GET /api/requests: the folded record as
// `requests list --json` prints it, plus "danger" (always an array).
type listedRequest struct {
	*requests.Record
	Danger []dangerJSON `json:"danger"`
}

// dangerOf lists what the catalog says of r's subcommand and of each flag
// it requests, from e (x.of(r)): the classes come from the catalog by the
// request's tool, binary and flag names, never from its words.
func dangerOf(r *requests.Record, e requests.Effect) []dangerJSON {
	out := []dangerJSON{}
	if len(e.Danger) > 0 {
		out = append(out, dangerJSON{Subcommand: strings.Join(r.Subcommand, " "), Classes: e.Danger.Names(), Effect: e.Danger.Effect()})
	}
	for _, f := range dedup(r.Flags) {
		i := slices.IndexFunc(e.Flags, func(ef requests.EffectFlag) bool { return ef.Requested && ef.Flag == requests.Token(f) })
		if i < 0 || len(e.Flags[i].Danger) == 0 {
			continue
		}
		ef := e.Flags[i]
		out = append(out, dangerJSON{Flag: f, Classes: ef.Danger.Names(), Effect: ef.Danger.Effect(), Held: ef.Held})
	}
	return out
}

// dangerRefusal refuses a grant or an apply of r, under the config as it
// now stands (read afresh, as the apply will read it), while what it would
// hand the assistant with no pattern holding it is not confirmed
// (a.confirmWith names how to confirm; "" the API's i_know). An exact-call
// grant is judged by its own command (requests.ExactUnconfirmed), and one
// whose command cannot be shown whole is refused whatever is confirmed.
// nil when nothing needs one,
// or when the merge is refused (the grant or apply then refuses in its own
// words).
func dangerRefusal(s site, r *requests.Record, a approval) error {
	if r.Call != nil && a.grant != nil {
		unc, hidden := requests.ExactUnconfirmed(catalogCLI(s.Policy, r.Tool), r)
		switch {
		case hidden:
			return &refusal{http.StatusUnprocessableEntity, requests.ExactHiddenRefusal(r.ID, unc)}
		case len(unc) > 0 && !a.iKnow:
			return &refusal{http.StatusUnprocessableEntity, requests.DangerRefusal(r.ID, unc, a.option())}
		}
		return nil
	}
	if a.iKnow || !(a.apply || a.grant != nil) {
		return nil
	}
	rule, _, err := edit.PreviewApply(s.ConfigPath, r.Tool, r.Subcommand, r.Flags, s.Paths)
	if err != nil {
		return nil
	}
	if unc := requests.RuleEffectFor(s.Helps, catalogCLI(s.Policy, r.Tool), r, rule).Unconfirmed(); len(unc) > 0 {
		return &refusal{http.StatusUnprocessableEntity, requests.DangerRefusal(r.ID, unc, a.option())}
	}
	return nil
}
