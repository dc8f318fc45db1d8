package policy

import (
	"regexp"
	"slices"
)

// The rule types are the policy as the operator writes it; the config package
// decodes YAML straight into them (hence the tags), and New compiles them.

// AllowRule permits one subcommand with a set of flags.
type AllowRule struct {
	// Subcommand is matched exactly, token by token.
	Subcommand []string `yaml:"subcommand"`
	// Flags is the allowlist. After SeedHelpFlags it also holds the seeded
	// -h and --help unless they are denied or listed by the operator.
	Flags []string `yaml:"flags"`
	// Seeded lists the help flags SeedHelpFlags added to Flags (never
	// written by the operator). A seeded help flag is a boolean that runs
	// alone; a help flag the operator lists is typed like any other flag.
	Seeded []string `yaml:"-"`
	// DenyFlags are refused even when listed in Flags.
	DenyFlags []string `yaml:"deny_flags"`
	// FlagConstraints bound flag values, keyed by the flag as written in
	// Flags ("--depth").
	FlagConstraints map[string]*Constraint `yaml:"flag_constraints"`
	// ArgConstraints bound the positional arguments.
	ArgConstraints ArgConstraints `yaml:"arg_constraints"`
}

// Constraint bounds one flag's value.
type Constraint struct {
	// Required makes the flag mandatory.
	Required bool `yaml:"required"`
	// Type is "integer", "boolean" or "string"; empty lets introspection
	// and the name heuristic decide.
	Type string `yaml:"type"`
	// Min and Max bound an integer value; nil means unbounded.
	Min *int64 `yaml:"min"`
	Max *int64 `yaml:"max"`
	// Pattern is an RE2 expression the whole value must match.
	Pattern string `yaml:"pattern"`
	// Deny refuses the flag outright.
	Deny bool `yaml:"deny"`
	// Redact hides the flag's value wherever wraptool shows a call: the
	// audit log, the server's logs (debug included) and denial texts show
	// Redacted in its place. The child still gets the real value. Use it
	// for tokens and passwords a tool can only take on its command line.
	Redact bool `yaml:"redact"`
}

// Redacted stands in for the value of a flag whose constraint has
// redact: true.
const Redacted = "***"

// Redacts reports whether the rule hides flag's value (a redact: true
// constraint), whether the flag is allowed, denied or not listed.
func (r *AllowRule) Redacts(flag string) bool {
	c := r.FlagConstraints[flag]
	return c != nil && c.Redact
}

// ArgConstraints bound positional arguments. Without Pattern or Patterns a
// positional reaches the tool as it is (only a leading '-', NUL and
// wraptool's own files are refused): `git push origin +HEAD:main` is a force
// push without --force.
type ArgConstraints struct {
	// PositionalMax is the most positional arguments allowed; nil means no
	// limit and 0 means none at all.
	PositionalMax *int `yaml:"positional_max"`
	// Pattern is an RE2 expression every positional argument must match
	// whole; empty means none. It does not combine with Patterns.
	Pattern string `yaml:"pattern"`
	// Patterns are matched in order: the n-th positional argument must
	// match the n-th pattern whole, and the last applies to the rest;
	// empty means none.
	Patterns []string `yaml:"patterns"`
}

// Expressions returns the positional patterns in Patterns' form: Pattern
// alone is a one-element list, since the last pattern applies to the rest.
func (a ArgConstraints) Expressions() []string {
	if a.Pattern != "" {
		return []string{a.Pattern}
	}
	return a.Patterns
}

// CanBe reports whether positional arguments held by a could be the words
// rest: within positional_max, each matching its pattern (the n-th of
// patterns, the last for the rest; pattern for every one), whole. A
// pattern that does not compile counts as matching: validation refuses it
// anyway. The danger catalog asks it of the subcommands a rule's
// positionals reach (a rule for gh auth given token runs gh auth token).
func (a ArgConstraints) CanBe(rest []string) bool {
	if a.PositionalMax != nil && *a.PositionalMax < len(rest) {
		return false
	}
	pats := a.Expressions()
	for i, w := range rest {
		if len(pats) == 0 {
			break
		}
		re, err := regexp.Compile(`^(?:` + pats[min(i, len(pats)-1)] + `)$`)
		if err == nil && !re.MatchString(w) {
			return false
		}
	}
	return true
}

// DenyRule refuses every command whose tokens start with Subcommand.
type DenyRule struct {
	// Subcommand is a token prefix ([auth] covers "auth login").
	Subcommand []string `yaml:"subcommand"`
}

// Denies reports whether the rule refuses flag outright, through deny_flags
// or a deny constraint; deny is checked before the allowlist.
func (r *AllowRule) Denies(flag string) bool {
	if slices.Contains(r.DenyFlags, flag) {
		return true
	}
	c := r.FlagConstraints[flag]
	return c != nil && c.Deny
}

// SeedHelpFlags adds -h and --help to the rule's flags, each on its own and
// after the rule's own flags (-h first), and records them in Seeded. A help
// flag the rule denies (deny_flags or a deny constraint) is not added, so
// deny keeps winning; nor is one whose schema property the rule already uses,
// whether the operator listed the help flag itself (then it is typed like any
// flag) or a flag such as --h takes the property. Seeding twice changes
// nothing.
func SeedHelpFlags(r *AllowRule) {
	for _, h := range []string{ShortHelpFlag, LongHelpFlag} {
		if slices.Contains(r.Seeded, h) || r.Denies(h) || r.usesProperty(PropertyName(h)) {
			continue
		}
		r.Flags = append(r.Flags, h)
		r.Seeded = append(r.Seeded, h)
	}
}

// usesProperty reports whether a listed or denied flag maps to prop.
func (r *AllowRule) usesProperty(prop string) bool {
	for _, list := range [][]string{r.Flags, r.DenyFlags} {
		for _, f := range list {
			if PropertyName(f) == prop {
				return true
			}
		}
	}
	return false
}

// Written returns the flags the operator wrote: Flags without the seeded
// help flags.
func (r *AllowRule) Written() []string {
	out := make([]string, 0, len(r.Flags))
	for _, f := range r.Flags {
		if !slices.Contains(r.Seeded, f) {
			out = append(out, f)
		}
	}
	return out
}
