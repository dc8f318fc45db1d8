package requests

import (
	"slices"
	"strconv"
	"strings"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/danger"
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
	// Danger is what the catalog (policy/danger) says running the
	// subcommand does by itself, whatever its flags (gh auth token prints
	// the token); none for most subcommands. It comes from the catalog
	// alone, never from what the request says.
	Danger danger.Classes
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
	// Danger is what the catalog (policy/danger) says the flag can do
	// with the operator's credentials (sends-credentials, runs-code, …);
	// none when it says nothing. It is looked up by the flag's own bytes,
	// so a flag spelled with control or bidirectional characters matches
	// only what the catalog's names match, and the class shown is the
	// catalog's word, never the request's.
	Danger danger.Classes
	// Held says a flag_constraints pattern holds the flag's value, so the
	// value can only be what the operator's pattern admits.
	Held bool
	// Requested says the request names the flag: approving it is what
	// allows it (the others are in the rule already).
	Requested bool
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
// the tools' help says. The catalog's CLI is named by the tool key alone
// (danger.CLI(r.Tool, "")); a caller who knows the tool's binary uses
// RuleEffectFor, so tools.mygit with binary /usr/bin/git reads as git.
func RuleEffect(h policy.Helps, r *Record, rule *policy.AllowRule) Effect {
	return RuleEffectFor(h, danger.CLI(r.Tool, ""), r, rule)
}

// RuleEffectFor is RuleEffect with the catalog's CLI named by the caller
// (danger.CLI of the tool key and its binary): each flag and the
// subcommand carry what the catalog says they can do.
func RuleEffectFor(h policy.Helps, cli string, r *Record, rule *policy.AllowRule) Effect {
	e := Effect{Command: strings.TrimSpace(Token(r.Tool) + " " + Subcommand(r.Subcommand))}
	if len(r.Subcommand) > 0 {
		e.Danger = danger.Subcommand(cli, r.Subcommand)
	}
	requested := map[string]bool{}
	for _, f := range r.Flags {
		requested[f] = true
	}
	for _, f := range rule.Flags {
		c := rule.FlagConstraints[f]
		// Under the rule's subcommand, and under the longer ones its
		// positionals reach (kubectl config given view runs config view).
		classes := danger.Flag(cli, r.Subcommand, f).Union(danger.ReachedFlag(cli, r.Subcommand, f, rule.ArgConstraints.CanBe))
		l := EffectFlag{Flag: Token(f), Danger: classes, Requested: requested[f]}
		// A pattern holds the value only if it keeps out the escapes of
		// the flag's classes: '.*' or 'git-receive-pack.*' does not.
		l.Held = c != nil && c.Pattern != "" && danger.PatternHolds(c.Pattern, l.Danger)
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
	if len(e.Danger) > 0 {
		lines = append(lines, "  ! the subcommand itself: "+DangerText(e.Danger))
	}
	for _, f := range e.Flags {
		l := "  " + f.Flag + "  " + f.Kind
		if f.Help != "" {
			l += "  — " + f.Help
		}
		if f.Mark != "" {
			l += "  " + f.Mark
		}
		if len(f.Danger) > 0 {
			l += "  ! " + DangerText(f.Danger)
			if f.Held {
				l += " " + HeldNote
			}
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

// HeldNote follows the classes of a flag whose value a pattern holds.
const HeldNote = "(its pattern holds the value)"

// DangerText renders classes for an operator, each name with its effect:
// "sends-credentials: sends your credentials to the host it names", two
// classes joined by "; ". Every word is the catalog's.
func DangerText(cs danger.Classes) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = string(c) + ": " + c.Effect()
	}
	return strings.Join(parts, "; ")
}

// Unconfirmed lists what approving the effect hands to the assistant with
// nothing to hold it: the subcommand when it is grave by itself (nothing
// can constrain gh auth token), then each flag the request names that is
// grave (danger.Class.Grave) and whose value no pattern holds, as display
// strings ("--endpoint-url (sends-credentials)"). Flags already in the
// rule are the operator's own choice and are not listed. Approving any of
// them by a grant or an apply needs a typed confirmation (DangerRefusal);
// recording the approval alone allows nothing and needs none.
func (e Effect) Unconfirmed() []string {
	var out []string
	if e.Danger.Grave() {
		out = append(out, "the subcommand "+e.Command+" itself ("+e.Danger.String()+")")
	}
	for _, f := range e.Flags {
		if f.Requested && !f.Held && f.Danger.Grave() {
			out = append(out, f.Flag+" ("+f.Danger.String()+")")
		}
	}
	return out
}

// ExactLines renders what granting an exact-call request allows, as
// `requests approve` prints it: exactly its command, in its directory, and
// the flags the help does not list (unlisted, "" when none). It knows no
// catalog classes; ExactLinesFor adds them.
func ExactLines(c *Call, unlisted string) []string {
	return exactLines(c, unlisted, nil)
}

// ExactLinesFor is ExactLines for exact-call request r with what the
// catalog says of its subcommand (with the call's positional arguments:
// a bare gh rule called with auth token runs gh auth token) and of each
// flag the call gives (cli as for RuleEffectFor), one line each.
func ExactLinesFor(cli string, r *Record, unlisted string) []string {
	return exactLines(r.Call, unlisted, exactTouches(cli, r))
}

// exactTouches is what the catalog says of exact-call request r's command:
// its subcommand with the call's positionals (the path that runs), and
// each flag under the rule's subcommand and under that path (the flags
// come before the positionals, and kubectl and gh apply them to the
// subcommand the positionals name: config --raw=1 view).
func exactTouches(cli string, r *Record) []danger.Touch {
	path := slices.Concat(r.Subcommand, r.Call.Args())
	touches := danger.Explain(cli, r.Subcommand, r.Flags)
	if f := danger.LookupSubcommand(cli, path); len(f.Classes) > 0 {
		if len(touches) > 0 && touches[0].Flag == "" {
			touches[0].Classes = touches[0].Classes.Union(f.Classes)
		} else {
			touches = append([]danger.Touch{{Finding: f}}, touches...)
		}
	}
	for _, deeper := range danger.Explain(cli, path, r.Flags) {
		if deeper.Flag == "" {
			continue
		}
		i := slices.IndexFunc(touches, func(t danger.Touch) bool { return t.Flag == deeper.Flag })
		if i < 0 {
			touches = append(touches, deeper)
		} else {
			touches[i].Classes = touches[i].Classes.Union(deeper.Classes)
		}
	}
	return touches
}

// ExactUnconfirmed is Unconfirmed for a grant of exact-call request r: its
// grave findings, as display strings. The call's values are fixed, but an
// operator in a hurry confirms a host or a program no more than a flag, so
// granting them takes the same typed confirmation. hidden says a word of
// the command is longer than the screens show whole (Whole): then no
// confirmation can be an informed one, and the grant is refused
// (ExactHiddenRefusal) — a long --upload-pack value can end in "; id".
func ExactUnconfirmed(cli string, r *Record) (unconfirmed []string, hidden bool) {
	for _, t := range exactTouches(cli, r) {
		if !t.Classes.Grave() {
			continue
		}
		what := "the subcommand itself"
		if t.Flag != "" {
			what = Token(t.Flag)
		}
		unconfirmed = append(unconfirmed, what+" ("+t.Classes.String()+")")
	}
	if len(unconfirmed) > 0 {
		hidden = slices.ContainsFunc(r.Call.Command, func(w string) bool { return !Whole(w) }) || !Whole(r.Call.Cwd)
	}
	return unconfirmed, hidden
}

// ExactHiddenRefusal is why a grant of exact-call request id is refused
// whatever is confirmed: it hands the assistant what can send the
// credentials away, and part of its command cannot be shown whole.
func ExactHiddenRefusal(id string, unconfirmed []string) string {
	return "not granted, " + Token(id) + " stays pending: it allows what can hand your credentials away (" +
		strings.Join(unconfirmed, ", ") + "), and a word of its command is longer than the " +
		strconv.Itoa(MaxTokenDisplay) + " characters shown whole, so nobody can read what it grants; " +
		"deny it, or allow what you mean with a rule and a pattern"
}

// exactLines renders an exact call with the catalog's findings touches.
func exactLines(c *Call, unlisted string, touches []danger.Touch) []string {
	lines := []string{
		"Approving allows exactly this call (" + Token(c.Tool) + "), and nothing like it:",
		"  command: " + Command(c.Command),
		"  in:      " + Token(c.Cwd),
	}
	if unlisted != "" {
		lines = append(lines, "  flags the help does not list: "+unlisted)
	}
	for _, t := range touches {
		what := "the subcommand itself"
		if t.Flag != "" {
			what = Token(t.Flag)
		}
		lines = append(lines, "  ! "+what+": "+DangerText(t.Classes))
	}
	return lines
}
