package helptext

import (
	"strings"

	"github.com/wraptool/wraptool/policy"
)

// ValueKind says whether a flag takes a value. It decides how wraptool writes
// the flag into argv (a bare switch, "--flag=value", or "-f value"), which
// matters more than the value's type: a switch given a value would swallow
// the next argument.
type ValueKind int

// Value kinds.
const (
	// ValueUnknown: the text does not say (the fallback parser, kpt's
	// "--dry-run:"). The policy's name heuristic decides.
	ValueUnknown ValueKind = iota
	// ValueNone: a switch ("-v, --verbose", kubectl's "--watch=false:").
	ValueNone
	// ValueRequired: "--depth <depth>", "--file=ARCHIVE", "-m <msg>",
	// pflag's "--limit int".
	ValueRequired
	// ValueOptional: "--rebase[=<mode>]", "--color[=WHEN]"; the value, when
	// given, must be attached ("--color=always").
	ValueOptional
)

// String returns the kind's name, for test output and logs.
func (v ValueKind) String() string {
	switch v {
	case ValueNone:
		return "none"
	case ValueRequired:
		return "required"
	case ValueOptional:
		return "optional"
	}
	return "unknown"
}

// Style names, as Help.Style reports them. They say which layout a text was
// read as, for logs and for judging a misparse.
const (
	StyleGit      = "git"
	StyleCobra    = "cobra"
	StyleGNU      = "gnu" // also man pages
	StyleFallback = "fallback"
)

// Flag is one flag a help text lists. Spellings always satisfy
// policy.ValidFlag, so they can be compared with the flags of a rule.
type Flag struct {
	// Short and Long are the flag's spellings ("-m", "--message"); either
	// may be "". Single-dash long options ("-name", wget's "-nv") are not
	// flags wraptool can allow and are left out.
	Short, Long string
	// Value says whether the flag takes a value.
	Value ValueKind
	// Placeholder is the value's name as printed ("<msg>", "ARCHIVE",
	// "string", "WHEN"); "" for a switch and for kubectl's default form.
	Placeholder string
	// Type is a guess at the policy type: TypeBoolean for ValueNone and
	// ValueOptional (an optional value is left out unless a constraint
	// types it), TypeInteger for pflag's integer types, for placeholders
	// such as N, NUM, NUMBER, COUNT, INT and <n>, and for a numeric kubectl
	// default; TypeString for any other value; TypeUnknown with
	// ValueUnknown.
	Type policy.Type
	// Default is the default the option line itself states (kubectl's
	// "--chunk-size=500:" gives "500"); "" when it states none. Defaults
	// mentioned in the description are not extracted.
	Default string
	// Description is the flag's help, one line: wrapped lines joined with
	// single spaces; for a man page, the first paragraph.
	Description string
	// Negatable marks Git's "--[no-]verify" (or "--edit, --no-edit" on one
	// line): Long is "--verify" and "--no-verify" is a switch too.
	Negatable bool
}

// Subcommand is one command a help text lists, as the next level of a
// tool's command tree.
type Subcommand struct {
	// Name is the command as printed; only names matching
	// [A-Za-z0-9][A-Za-z0-9_-]* (policy.ValidToken) are listed. Docker's
	// plugin marker (a trailing "*") is removed.
	Name string
	// Description is the command's help, one line.
	Description string
}

// Help is what one help text says about the command it documents.
type Help struct {
	// Style is the layout the text was read as: StyleGit, StyleCobra,
	// StyleGNU or StyleFallback.
	Style string
	// Description is the command's one-line summary when the text gives
	// one (Cobra's first paragraph, the line after GNU's usage line, a man
	// page's NAME), else "". A usage line is never a description.
	Description string
	// Subcommands are the commands listed, in order, each once.
	Subcommands []Subcommand
	// Flags are the flags listed, in order, each once: a flag listed twice
	// (kpt's flag notes, then pflag's table) is merged, the first listing
	// winning and the later one filling what it left unknown.
	Flags []Flag
	// HelpCommand reports that the text points to "<tool> help …" in prose
	// (git's root help says "See 'git help <command>'" without listing
	// help among its commands); see HasSubcommand.
	HelpCommand bool
}

// Parse reads a help text of any supported style. ok is false when nothing
// parseable was found (no flags and no subcommands): the caller then tries
// the next way of asking for help. Parse never fails otherwise; what it
// cannot read it leaves out.
func Parse(text string) (h Help, ok bool) {
	lines, ok := prepare(text)
	if !ok {
		return Help{}, false
	}
	switch detect(lines) {
	case StyleGit:
		h = parseLines(lines, gitConfig)
	case StyleCobra:
		h = parseLines(lines, cobraConfig)
	case styleMan:
		h = parseLines(lines, manConfig)
	default:
		h = parseLines(lines, gnuConfig)
	}
	if h.Empty() {
		h = parseLines(lines, fallbackConfig)
	}
	if h.Empty() {
		return Help{}, false
	}
	return h, true
}

// Empty reports whether h lists nothing: no flags and no subcommands.
// Parse never returns an empty Help as parsed, so one that is empty did not
// come from a tool's help text (a blanked cache entry, say).
func (h Help) Empty() bool { return len(h.Flags) == 0 && len(h.Subcommands) == 0 }

// Flag finds a flag by one of its spellings: "-m", "--message", or
// "--no-verify" for a Negatable "--verify", which is then reported as a
// switch named "--no-verify" (its Short left out: "-n" belongs to the
// positive form). A spelling listed in its own right wins over a negation.
func (h Help) Flag(spelling string) (Flag, bool) {
	if spelling == "" {
		return Flag{}, false
	}
	for _, f := range h.Flags {
		if f.Short == spelling || f.Long == spelling {
			return f, true
		}
	}
	if name, ok := strings.CutPrefix(spelling, "--no-"); ok && name != "" {
		for _, f := range h.Flags {
			if f.Negatable && f.Long == "--"+name {
				return Flag{
					Long:        spelling,
					Value:       ValueNone,
					Type:        policy.TypeBoolean,
					Description: f.Description,
				}, true
			}
		}
	}
	return Flag{}, false
}

// ShortHelpTaken reports whether the text lists -h as a flag that takes a
// value (psql's "-h, --host=HOSTNAME"). Then "binary -h" is not a way to ask
// for help: introspection skips that form. A -h that is a switch meaning
// something else (ls's "-h, --human-readable") does not count here; see
// ShortHelpReused.
func (h Help) ShortHelpTaken() bool {
	f, ok := h.Flag("-h")
	return ok && f.Short == "-h" && (f.Value == ValueRequired || f.Value == ValueOptional)
}

// ShortHelpReused reports whether the text lists -h as anything but a help
// switch: it takes a value, or its long form is not --help (ls's "-h,
// --human-readable", tar's "-h, --dereference"). A rule should then not
// treat -h as a help flag. A bare "-h" with no long form (gcloud's) counts
// as help.
func (h Help) ShortHelpReused() bool {
	f, ok := h.Flag("-h")
	if !ok || f.Short != "-h" {
		return false
	}
	return f.Value == ValueRequired || f.Value == ValueOptional || (f.Long != "" && f.Long != "--help")
}

// HasSubcommand reports whether name is listed as a command. For "help" it
// also counts a prose mention (HelpCommand), since that is what decides
// whether "binary help sub…" may be tried.
func (h Help) HasSubcommand(name string) bool {
	for _, s := range h.Subcommands {
		if s.Name == name {
			return true
		}
	}
	return name == "help" && h.HelpCommand
}
