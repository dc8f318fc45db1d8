package policy

// Helps answers, from the wrapped tools' own --help output, what a flag is,
// what a subcommand does, and what lies below it. The introspect package
// implements it (with the operator's overrides winning over what was
// parsed); a nil Helps means nothing is known, and every answer falls back to
// the rule's constraints and the name heuristic. Implementations are
// immutable once built and safe for concurrent use.
type Helps interface {
	// Flag describes flag (as the rule lists it, "-m" or "--message") of
	// tool's subcommand sub; ok is false when sub's help does not list it.
	Flag(tool string, sub []string, flag string) (f FlagHelp, ok bool)
	// Description is sub's one-line description ("" when unknown); an empty
	// sub describes the tool itself.
	Description(tool string, sub []string) string
	// ShortHelpTaken reports whether -h means something other than help
	// for sub: its own help says so, or, when its help does not list -h,
	// the tool's root help does (psql's -h, --host=HOSTNAME). Then -h is
	// not seeded into the rule.
	ShortHelpTaken(tool string, sub []string) bool
	// Subcommands lists what sub's help advertises below it, name to
	// one-line description; ok is false when sub's help is not known.
	Subcommands(tool string, sub []string) (subs map[string]string, ok bool)
}

// FlagHelp is what a tool's help says of one flag.
type FlagHelp struct {
	// Type is how the flag takes its value: TypeBoolean for a switch,
	// TypeInteger or TypeString for a value; TypeUnknown when the help does
	// not say.
	Type Type
	// OptionalValue marks a flag whose value may be left out
	// (--rebase[=<mode>], --color[=WHEN]). Such a flag is a switch unless
	// the rule's constraint gives it a type; then its value is passed
	// attached (--rebase=merges), never as a separate argument.
	OptionalValue bool
	// Description is the help line's text, one line; "" when none.
	Description string
}

// Unlisted reports whether flag is not found, spelled exactly, in the help
// of tool's subcommand sub, when that help is known (helps not nil, sub not
// empty and its help learned). Git and other getopt tools accept
// unambiguous prefixes, so a requested --rece would be --receive-pack: an
// approval must see that the flag is not one the help names.
func Unlisted(helps Helps, tool string, sub []string, flag string) bool {
	if helps == nil || len(sub) == 0 {
		return false
	}
	if _, known := helps.Subcommands(tool, sub); !known {
		return false
	}
	_, listed := helps.Flag(tool, sub, flag)
	return !listed
}
