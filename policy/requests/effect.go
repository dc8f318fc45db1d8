package requests

import (
	"strconv"
	"strings"

	"github.com/wraptool/wraptool/policy"
)

// Effect is what approving a capability request grants: the allow rule as
// it will stand after the merge. One computation serves every place a
// person decides (`requests approve`, `watch`, the review page, the
// question put to a client's user), so none of them can show less than
// another: a person who sees only "'git push' with --exec" does not know
// they are granting code execution.
type Effect struct {
	// Command is the tool and subcommand, escaped.
	Command string
	// Flags are the rule's flags, in the rule's order.
	Flags []EffectFlag
	// Positional says how many positional arguments the rule takes;
	// Patterns lists their patterns ("" when none).
	Positional, Patterns string
}

// EffectFlag is one flag of the rule as it will stand.
type EffectFlag struct {
	// Flag is the flag, escaped.
	Flag string
	// Kind is "a switch", "takes a value (constrained)", "takes any
	// value", or, for a short flag whose value-taking nothing proves (no
	// constraint type, no help), "value-taking unknown: its value counts
	// as a positional argument" (and, with positional_max 0, that it can
	// only be given as a switch). It comes from the help: a flag the help
	// does not describe is never said to take a value it may not take.
	Kind string
	// Help is the flag's line from the subcommand's help, escaped; "" when
	// the help says nothing about it.
	Help string
	// Mark is the mark of a requested flag the help does not list (Mark);
	// "" when listed or not requested.
	Mark string
}

// UnprovenKind is the effect's word for a short flag whose value-taking
// nothing proves; UnprovenSwitchOnly follows it under positional_max 0,
// where such a value has nowhere to go.
const (
	UnprovenKind       = "value-taking unknown: its value counts as a positional argument"
	UnprovenSwitchOnly = " (with positional_max: 0 it can only be given as a switch)"
)

// RuleEffect computes the effect of approving r, whose capability merges
// into rule (the rule as it will stand, help flags not seeded). h is what
// the tools' help says.
func RuleEffect(h policy.Helps, r *Record, rule *policy.AllowRule) Effect {
	e := Effect{Command: strings.TrimSpace(Token(r.Tool) + " " + Subcommand(r.Subcommand))}
	requested := map[string]bool{}
	for _, f := range r.Flags {
		requested[f] = true
	}
	for _, f := range rule.Flags {
		l := EffectFlag{Flag: Token(f)}
		c := rule.FlagConstraints[f]
		typ, proven := policy.TypeOf(c, h, r.Tool, r.Subcommand, f)
		switch {
		case typ == policy.TypeBoolean:
			l.Kind = "a switch"
		case c != nil && (c.Pattern != "" || c.Min != nil || c.Max != nil):
			l.Kind = "takes a value (constrained)"
		case !proven && policy.IsShortFlag(f):
			// Evaluate holds such a value to the positional rules, so
			// the effect says what the server will do with it.
			l.Kind = UnprovenKind
			if n := rule.ArgConstraints.PositionalMax; n != nil && *n == 0 {
				l.Kind += UnprovenSwitchOnly
			}
		default:
			l.Kind = "takes any value"
		}
		if h != nil {
			if fh, ok := h.Flag(r.Tool, r.Subcommand, f); ok && fh.Description != "" {
				l.Help = Text(fh.Description)
			}
		}
		if requested[f] {
			l.Mark = Mark(r.Tool, r.Subcommand, policy.ListingOf(h, r.Tool, r.Subcommand, f))
		}
		e.Flags = append(e.Flags, l)
	}
	switch n := rule.ArgConstraints.PositionalMax; {
	case n != nil && *n == 0:
		e.Positional = "none (positional_max: 0; widen it by hand)"
	case n != nil:
		e.Positional = "at most " + strconv.Itoa(*n)
	default:
		e.Positional = "any number, as they are"
	}
	if pats := rule.ArgConstraints.Expressions(); len(pats) > 0 {
		e.Patterns = strings.Join(Tokens(pats), ", ")
	}
	return e
}

// Lines renders the effect as `requests approve` prints it, one line per
// flag, each indented by two spaces, after a heading.
func (e Effect) Lines() []string {
	lines := []string{"Approving grants " + e.Command + ", as the rule will stand:"}
	for _, f := range e.Flags {
		l := "  " + f.Flag + "  " + f.Kind
		if f.Help != "" {
			l += "  — " + f.Help
		}
		if f.Mark != "" {
			l += "  " + f.Mark
		}
		lines = append(lines, l)
	}
	if len(e.Flags) == 0 {
		lines = append(lines, "  (no flags)")
	}
	lines = append(lines, "  positional arguments: "+e.Positional)
	if e.Patterns != "" {
		lines = append(lines, "  positional patterns: "+e.Patterns)
	}
	return append(lines, "  plus -h and --help, each run alone")
}

// ExactLines renders what granting an exact-call request allows, as
// `requests approve` prints it: exactly its command, in its directory, and
// the flags the help does not list (unlisted, "" when none).
func ExactLines(c *Call, unlisted string) []string {
	lines := []string{
		"Approving allows exactly this call (" + Token(c.Tool) + "), and nothing like it:",
		"  command: " + Command(c.Command),
		"  in:      " + Token(c.Cwd),
	}
	if unlisted != "" {
		lines = append(lines, "  flags the help does not list: "+unlisted)
	}
	return lines
}
