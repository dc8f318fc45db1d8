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

// FlagTypes answers, from a tool's own --help, whether a flag takes a value.
// The introspection package implements it; a nil FlagTypes, or an answer of
// TypeUnknown, defers to the name heuristic.
type FlagTypes interface {
	FlagType(tool string, subcommand []string, flag string) Type
}

// flagType decides a flag's type in the reference's order: an explicit type
// (min/max imply integer, a pattern implies a value), then introspection, then
// the name heuristic. The help flags are booleans unless the operator types
// them: introspection must not turn a seeded -h into a valued flag (on psql
// -h is the host to connect to).
func flagType(c *Constraint, types FlagTypes, tool string, sub []string, flag string) Type {
	if c != nil && ParseType(c.Type) != TypeUnknown {
		return ParseType(c.Type)
	}
	if IsHelpFlag(flag) {
		return TypeBoolean
	}
	if c != nil {
		if c.Min != nil || c.Max != nil {
			return TypeInteger
		}
		if c.Pattern != "" {
			return TypeString
		}
	}
	if types != nil {
		if t := types.FlagType(tool, sub, flag); t != TypeUnknown {
			return t
		}
	}
	if LooksBoolean(flag) {
		return TypeBoolean
	}
	return TypeString
}

// LooksBoolean is the name heuristic for valueless flags: the help flags,
// --no-*, --enable-*, --disable-* and the well-known switches. Short -f is
// deliberately not one: it names a file as often as it forces.
func LooksBoolean(flag string) bool {
	switch flag {
	case ShortHelpFlag, LongHelpFlag, "--yes", "-y", "--force", "--dry-run", "--quiet", "--verbose":
		return true
	}
	for _, p := range []string{"--no-", "--enable-", "--disable-"} {
		if strings.HasPrefix(flag, p) && len(flag) > len(p) {
			return true
		}
	}
	return false
}
