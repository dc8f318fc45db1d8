package policy

import "strings"

// Type is how a flag takes its value; it decides both the schema property's
// JSON type and how the flag is written into argv.
type Type int

// Flag types. TypeUnknown is only an answer from a FlagTypes source; a
// compiled flag is always boolean, integer or string.
const (
	TypeUnknown Type = iota
	TypeBoolean
	TypeInteger
	TypeString
)

// String returns the config spelling ("boolean", "integer", "string").
func (t Type) String() string {
	switch t {
	case TypeBoolean:
		return "boolean"
	case TypeInteger:
		return "integer"
	case TypeString:
		return "string"
	}
	return "unknown"
}

// ParseType reads a flag_constraints type; anything else is TypeUnknown.
func ParseType(s string) Type {
	switch s {
	case "boolean":
		return TypeBoolean
	case "integer":
		return TypeInteger
	case "string":
		return TypeString
	}
	return TypeUnknown
}

// TypeOf decides a flag's type in this order, first match wins: an explicit type
// (min/max imply integer, a pattern implies a value), then the tool's help,
// then the name heuristic. proven is false when the type rests on the
// heuristic alone: for a short flag that default ("takes a value") may be
// wrong, and a tool that reads -X as a switch would read its "value" as a
// positional argument, so Evaluate holds such a value to the positional
// rules. A flag whose help gives its value as optional (--rebase[=<mode>])
// is a switch unless the constraint types it.
//
// Compiling a rule and `config validate`'s warnings share it. A seeded help
// flag is not decided here: it is always a boolean.
func TypeOf(c *Constraint, helps Helps, tool string, sub []string, flag string) (t Type, proven bool) {
	if c != nil {
		if t := ParseType(c.Type); t != TypeUnknown {
			return t, true
		}
		if c.Min != nil || c.Max != nil {
			return TypeInteger, true
		}
		if c.Pattern != "" {
			return TypeString, true
		}
	}
	if helps != nil {
		if h, ok := helps.Flag(tool, sub, flag); ok && h.Type != TypeUnknown {
			if h.OptionalValue {
				return TypeBoolean, true
			}
			return h.Type, true
		}
	}
	if LooksBoolean(flag) {
		return TypeBoolean, false
	}
	return TypeString, false
}

// LooksBoolean is the name heuristic for valueless flags: --no-*,
// --enable-*, --disable-*, the well-known switches listed below, and --help.
// Short -f is deliberately not one: it names a file as often as it forces;
// nor is -h, which is the host on psql, mysql and redis-cli (a seeded -h is
// a boolean anyway, and runs alone).
func LooksBoolean(flag string) bool {
	switch flag {
	case LongHelpFlag, "--yes", "-y", "--force", "--dry-run", "--quiet", "--verbose":
		return true
	}
	for _, p := range []string{"--no-", "--enable-", "--disable-"} {
		if strings.HasPrefix(flag, p) && len(flag) > len(p) {
			return true
		}
	}
	return false
}
