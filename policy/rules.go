package policy

import "slices"

// The rule types are the policy as the operator writes it; the config package
// decodes YAML straight into them (hence the tags), and New compiles them.

// AllowRule permits one subcommand with a set of flags.
type AllowRule struct {
	// Subcommand is matched exactly, token by token.
	Subcommand []string `yaml:"subcommand"`
	// Flags is the allowlist. After Load it also holds the seeded -h and
	// --help unless they are denied.
	Flags []string `yaml:"flags"`
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
}

// ArgConstraints bound positional arguments.
type ArgConstraints struct {
	// PositionalMax is the most positional arguments allowed; nil means no
	// limit and 0 means none at all.
	PositionalMax *int `yaml:"positional_max"`
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
