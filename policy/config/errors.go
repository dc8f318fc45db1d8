package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/wraptool/wraptool/policy"
)

// ErrInvalid is wrapped by every *Error: the file was read but is not an
// acceptable config. Callers tell it apart from I/O failures with errors.Is.
var ErrInvalid = errors.New("invalid config")

// ErrServerSection marks a config that still uses the retired top-level
// server: section; the error's Detail carries the migration table.
var ErrServerSection = errors.New("server section is not supported")

// ErrNoHome is returned when a path needs the home directory and none is
// known.
var ErrNoHome = errors.New("home directory is not known")

// ErrEmptyToken is returned for a token file that holds only whitespace: an
// empty bearer token would let anyone in.
var ErrEmptyToken = errors.New("token file is empty")

// Error is one problem in a config file, placed by file, line and field path.
type Error struct {
	// File is the config path as the operator gave it.
	File string
	// Line is 1-based; 0 when the problem has no single line.
	Line int
	// Path is the field path ("tools.git.allow[1].flags[0]"); empty for
	// problems with the document as a whole.
	Path string
	// Msg says what is wrong, in lower case.
	Msg string
	// Detail holds further lines printed after the first (the migration
	// table); empty for most errors.
	Detail string
	// Err is an optional cause; ErrInvalid is always matched as well.
	Err error

	col int // orders problems that share a line
}

// Error renders "file:line: path: msg", then Detail on the following lines.
// Whatever a message quotes from the config or the system (a path, a
// pattern in a regexp error, an OS error) is rendered with escapes for
// what a terminal would act on: an error is printed to the operator's
// terminal, and a config can come from elsewhere.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(shown(e.File, ""))
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(shown(e.Path, ""))
		b.WriteString(": ")
	}
	b.WriteString(shown(e.Msg, ""))
	if e.Detail != "" {
		b.WriteString("\n")
		b.WriteString(shown(e.Detail, "\n\t"))
	}
	return b.String()
}

// shown is s escaped for a terminal (policy.Escape), keeping what
// strconv.IsPrint accepts and the characters in keep. Backslashes stay as
// they are: values a message already quotes are Go-quoted, and doubling
// their escapes would only blur them.
func shown(s, keep string) string {
	return policy.Escape(s, func(r rune) bool { return strconv.IsPrint(r) || strings.ContainsRune(keep, r) })
}

// Unwrap exposes ErrInvalid and the cause, if any.
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalid, e.Err}
	}
	return []error{ErrInvalid}
}

// ErrUnknownTool refuses to apply a request for a tool the config does not
// wrap: which binary runs under a name is the operator's choice, made with
// `wraptool config add`, never an assistant's.
var ErrUnknownTool = errors.New("tool is not in the config")

// ErrDeniedSubcommand refuses to apply a request whose subcommand a deny
// rule covers: deny wins over allow, so the new rule would do nothing, and
// lifting a deny is an edit the operator makes by hand.
var ErrDeniedSubcommand = errors.New("subcommand is denied")

// ErrDeniedFlag refuses to add a flag that the rule itself denies (in
// deny_flags or with deny: true): listing it would change nothing, and
// approving it must not look as if it did.
var ErrDeniedFlag = errors.New("flag is denied by the rule")

// ErrInvalidRequest refuses a request that could never be a rule: a flag
// that is not a flag, a subcommand token outside the allowed set, or no
// subcommand where the tool has no rule for itself.
var ErrInvalidRequest = errors.New("invalid request")

// ErrChangedMeanwhile refuses to write a config that changed after the apply
// read it: writing would silently drop that change. Applying again merges
// into the new text.
var ErrChangedMeanwhile = errors.New("config changed while applying")

// ErrUnsupportedLayout refuses to write an edit that, parsed back, does not
// mean exactly the requested change: the file is written in a way the
// in-place edit does not handle, and the operator edits it by hand.
var ErrUnsupportedLayout = errors.New("config layout not supported by apply")

// ErrToolExists refuses `config add` for a name the config already wraps:
// which binary runs under a name, and its rules, are edited by hand there.
var ErrToolExists = errors.New("tool is already in the config")

// ErrInvalidToolName refuses `config add` for a name no tool may have
// (outside [A-Za-z0-9][A-Za-z0-9_-]*, or in wraptool's reserved prefix).
var ErrInvalidToolName = errors.New("invalid tool name")

// ErrBadBinary refuses `config add` for a binary validation would refuse:
// not an absolute path to an executable regular file, wraptool itself, or
// a file or folder others may write.
var ErrBadBinary = errors.New("binary refused")

// ErrUnknownPreset refuses `config add --preset` for a name the CLI has no
// reviewed preset of; the message lists the ones it has.
var ErrUnknownPreset = errors.New("unknown preset")
