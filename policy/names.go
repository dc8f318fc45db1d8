package policy

import (
	"fmt"
	"strings"
)

// MaxToolNameLen is the longest exposed MCP tool name. Common LLM APIs refuse
// tool names beyond 64 characters, so a longer name would break clients in ways
// the operator could not see from wraptool's side.
const MaxToolNameLen = 64

// ReservedPrefix starts the names of wraptool's own built-in tools; wrapped
// tools may not use it, so a config can never shadow or impersonate them.
const ReservedPrefix = "wraptool"

// Reserved schema properties: they carry positional arguments and the working
// directory, so no flag may map onto them.
const (
	ArgsProperty = "args"
	CwdProperty  = "cwd"
)

// ValidToken reports whether s may be a tool name or a subcommand token:
// [A-Za-z0-9][A-Za-z0-9_-]*. The set is small on purpose: such tokens become
// parts of MCP tool names and argv entries, and must never look like a flag,
// a path or shell syntax.
func ValidToken(s string) bool {
	if s == "" || !isAlnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// ExposedNameProblem says why name cannot be an exposed MCP tool name, or ""
// when it can: it must be a valid token (ValidToken) of at most
// MaxToolNameLen characters. Upstream tools (mcp_servers) whose names break
// these rules are not exposed.
func ExposedNameProblem(name string) string {
	switch {
	case !ValidToken(name):
		return fmt.Sprintf("the exposed name %q does not match [A-Za-z0-9][A-Za-z0-9_-]*", name)
	case len(name) > MaxToolNameLen:
		return fmt.Sprintf("the exposed name %q is %d characters; the limit is %d", name, len(name), MaxToolNameLen)
	}
	return ""
}

// ValidFlag reports whether s is a flag wraptool can allow, deny or request:
// a short flag "-X" (one letter or digit) or a long flag "--name" with the name
// in [A-Za-z0-9][A-Za-z0-9_.-]*. Anything else ("force", "-rf", "--a b",
// "--x=1") could smuggle a value or several switches past the allowlist.
func ValidFlag(s string) bool {
	switch {
	case len(s) == 2 && s[0] == '-':
		return isAlnum(s[1])
	case len(s) > 2 && strings.HasPrefix(s, "--"):
		name := s[2:]
		if !isAlnum(name[0]) {
			return false
		}
		for i := 1; i < len(name); i++ {
			if c := name[i]; !isAlnum(c) && c != '_' && c != '.' && c != '-' {
				return false
			}
		}
		return true
	}
	return false
}

// IsShortFlag reports whether flag is a single-dash flag such as "-m". Short
// flags take their value as a separate argument.
func IsShortFlag(flag string) bool {
	return len(flag) == 2 && flag[0] == '-'
}

// ToolName is the MCP tool name for a wrapped tool's allow rule: the tool key
// and the subcommand tokens joined by "_" ("git" + [pull] gives "git_pull";
// an empty subcommand gives "git").
func ToolName(tool string, subcommand []string) string {
	if len(subcommand) == 0 {
		return tool
	}
	return tool + "_" + strings.Join(subcommand, "_")
}

// PropertyName is the input-schema property for a flag: the flag without its
// leading dashes ("--set-upstream" gives "set-upstream", "-m" gives "m").
func PropertyName(flag string) string {
	return strings.TrimLeft(flag, "-")
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// The help flags are seeded into every allow rule at load, so any approved
// subcommand can show its help; denial texts leave them out of the list of
// allowed flags because the operator never wrote them.
const (
	ShortHelpFlag = "-h"
	LongHelpFlag  = "--help"
)

// IsHelpFlag reports whether flag is one of the seeded help flags.
func IsHelpFlag(flag string) bool {
	return flag == ShortHelpFlag || flag == LongHelpFlag
}

// AnchorPattern makes a flag_constraints pattern match the whole value:
// "[a-z]+" must not accept "abc--x".
func AnchorPattern(pattern string) string {
	return "^(?:" + pattern + ")$"
}
