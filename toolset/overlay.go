package toolset

import (
	"errors"
	"slices"
	"time"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/requests"
)

// ErrPolicyChanged is why an exact-call grant is void: the config, an
// overrides file or an env file changed since the denial it names.
var ErrPolicyChanged = errors.New("the policy changed since the refused call was recorded; the assistant must ask again")

// Overlay is what the grants in force make of one load: the policy clients
// see, the grants a call may run under, and why each grant approved under
// this config that is not in force is not.
type Overlay struct {
	// Policy is the load's policy with every capability grant in force
	// merged; the load's own policy when none is.
	Policy *policy.Policy
	// Grants are the grants in force; nil when none was given.
	Grants *Grants
	// Dormant maps each grant approved under this config and not in force
	// to why (its tool is gone, a deny rule covers it, the policy an exact
	// grant was approved under changed).
	Dormant map[string]error
}

// ErrLearningHelp is why a capability grant is not in force yet: the help
// of its subcommand is being learned (introspected as a config rule is),
// and until it is, its flags' value-taking would rest on guesses.
var ErrLearningHelp = errors.New("its subcommand's help is being learned; it is in force once it is")

// GrantHelps is what the server learned of the grants' subcommands for one
// load. The zero value has learned nothing.
type GrantHelps struct {
	// Helps is the load's help plus the grants' subcommands'
	// (config.Loaded.LearnGrants); nil means the load's alone.
	Helps policy.Helps
	// Tried are the subcommands (config.HelpKey) already learned or tried:
	// a failed introspection is not retried for the same load, and the
	// grant then comes into force on the rules' types and the heuristic,
	// as a config rule does.
	Tried map[string]bool
}

// For is the help the grants are compiled with under l: g's, else the load's.
func (g GrantHelps) For(l *config.Loaded) policy.Helps {
	if g.Helps != nil {
		return g.Helps
	}
	return l.Helps
}

// Unlearned lists the capability grants approved under l's config whose
// subcommand's help neither the load nor learned knows and that were not
// tried yet (all lists all of them, to learn in one run); none when the
// load does not introspect. Exact-call grants change no rule and need no
// help.
func Unlearned(l *config.Loaded, grants []*requests.Record, learned GrantHelps) (need, all []config.GrantSpec) {
	if !l.Introspects() {
		return nil, nil
	}
	served := config.CanonicalPath(l.Config.File)
	h := learned.For(l)
	for _, r := range grants {
		if r.Grant == nil || r.Grant.Exact || r.Grant.Config != served {
			continue
		}
		spec := config.GrantSpec{ID: r.ID, Tool: r.Tool, Subcommand: r.Subcommand, Flags: r.Flags}
		all = append(all, spec)
		if !config.HelpKnown(h, r.Tool, r.Subcommand) && !learned.Tried[config.HelpKey(r.Tool, r.Subcommand)] {
			need = append(need, spec)
		}
	}
	return need, all
}

// OverlayGrants merges the grants approved under l's config into its
// policy, as ApplyRequest would merge them into the file (through
// config.Loaded.Overlay, the one merge), and lists, per kind, which grant
// may allow what the config alone refuses. Grants approved under another
// config are left out; policyHash is the load's (Loaded.PolicyHash), which
// an exact-call grant must have been approved under. The merged rules are
// compiled with learned's help; a capability grant whose subcommand's help
// is still to be learned (Unlearned) is not in force (ErrLearningHelp).
func OverlayGrants(l *config.Loaded, grants []*requests.Record, policyHash string, learned GrantHelps) Overlay {
	o := Overlay{Policy: l.Policy, Dormant: map[string]error{}}
	if len(grants) == 0 {
		return o
	}
	need, _ := Unlearned(l, grants, learned)
	learning := map[string]bool{}
	for _, spec := range need {
		learning[spec.ID] = true
	}
	served := config.CanonicalPath(l.Config.File)
	var timed, once []config.GrantSpec
	g := &Grants{}
	byID := map[string]*requests.Record{}
	for _, r := range grants {
		if r.Grant == nil || r.Grant.Config != served {
			continue // approved under another config
		}
		byID[r.ID] = r
		if r.Grant.Exact {
			if r.Call == nil || r.Call.Policy != policyHash {
				o.Dormant[r.ID] = ErrPolicyChanged
				continue
			}
			g.Exact = append(g.Exact, ExactGrant{ID: r.ID, Once: r.Grant.Once, Until: r.Grant.Until, Approved: decided(r), Call: *r.Call})
			continue
		}
		if learning[r.ID] {
			o.Dormant[r.ID] = ErrLearningHelp
			continue
		}
		spec := config.GrantSpec{ID: r.ID, Tool: r.Tool, Subcommand: r.Subcommand, Flags: r.Flags}
		if r.Grant.Once {
			once = append(once, spec)
		} else {
			timed = append(timed, spec)
		}
	}
	ov := l.OverlayWith(learned.For(l), timed, once)
	for id, err := range ov.Dormant {
		o.Dormant[id] = err
	}
	for _, spec := range append(append([]config.GrantSpec{}, timed...), once...) {
		p, ok := ov.Each[spec.ID]
		if !ok {
			continue
		}
		r := byID[spec.ID]
		g.Capability = append(g.Capability, CapabilityGrant{ID: r.ID, Once: r.Grant.Once, Until: r.Grant.Until,
			Approved: decided(r), Tool: r.Tool, Subcommand: r.Subcommand, Policy: p})
		if !r.Grant.Once && (g.TimedUntil.IsZero() || r.Grant.Until.Before(g.TimedUntil)) {
			g.TimedUntil = r.Grant.Until
		}
	}
	// Exact grants, timed ones first, like capability grants.
	slices.SortStableFunc(g.Exact, func(a, b ExactGrant) int {
		switch {
		case a.Once == b.Once:
			return 0
		case !a.Once:
			return -1
		}
		return 1
	})
	g.Timed = ov.Timed
	o.Policy = ov.Policy
	o.Grants = g
	return o
}

// decided is when r was decided; the zero time when the log does not say.
func decided(r *requests.Record) time.Time {
	if r.DecidedAt == nil {
		return time.Time{}
	}
	return *r.DecidedAt
}
