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

// Listing is what a subcommand's help says of a flag a request names:
// whether an approval may take the flag at its word. Git and other getopt
// tools accept unambiguous prefixes, so a requested --rece would run as
// --receive-pack; only a flag the help lists, spelled exactly, is the flag
// it appears to be.
type Listing int

const (
	// HelpUnknown: nothing is known of the subcommand's help (no help at
	// all, or none learned for it: no cache entry, and introspection
	// failed or printed nothing parseable). The flag counts as not
	// listed: unknown never reads as "no such flag to worry about". It
	// is the zero value, so a Listing nobody set fails closed.
	HelpUnknown Listing = iota
	// NotListed: the subcommand's help is known and does not list the
	// flag, spelled exactly.
	NotListed
	// Listed: the help lists the flag, spelled exactly (or the operator's
	// overrides file names it).
	Listed
)

// String is the listing's name, for logs and test failures.
func (l Listing) String() string {
	switch l {
	case Listed:
		return "listed"
	case NotListed:
		return "not listed"
	}
	return "help unknown"
}

// ListingOf says whether flag is found, spelled exactly, in the help of
// tool's subcommand sub; an empty sub asks the tool's own help, which
// lists the options a bare rule's flags are. A nil helps, or one that does
// not know sub's help, gives HelpUnknown for every flag, except one the
// operator's overrides name (helps.Flag answers for those without a
// learned help): the operator's word lists a flag as surely as the help.
func ListingOf(helps Helps, tool string, sub []string, flag string) Listing {
	if helps == nil {
		return HelpUnknown
	}
	if _, listed := helps.Flag(tool, sub, flag); listed {
		return Listed
	}
	if _, known := helps.Subcommands(tool, sub); !known {
		return HelpUnknown
	}
	return NotListed
}
