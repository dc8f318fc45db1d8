package policy

import "strings"

// The checks here are the ones Evaluate and EvaluateExact share: an
// exact-call grant never lifts them, so both must refuse alike, with the
// same reasons.

// unsafePositional is why one of positionals can never reach argv, whatever
// a grant lifts: the first that begins with '-' (a tool would read a flag)
// or holds a NUL byte; "" when none does. quote names the i-th in the
// reason, so a redacted value stays hidden.
func unsafePositional(positionals []string, quote func(i int) string) string {
	for i, a := range positionals {
		switch {
		case strings.HasPrefix(a, "-"):
			return "positional argument " + quote(i) + " looks like a flag; pass flags as named parameters"
		case strings.IndexByte(a, 0) >= 0:
			return "positional argument " + quote(i) + " contains a NUL byte"
		}
	}
	return ""
}

// cwdParam reads the call's cwd parameter: "" (the default) when absent or
// null; reason refuses one that is not a string or holds a NUL byte.
func cwdParam(params map[string]any) (cwd, reason string) {
	v, ok := params[CwdProperty]
	if !ok || v == nil {
		return "", ""
	}
	cwd, isString := v.(string)
	switch {
	case !isString:
		return "", "value of 'cwd' must be a string"
	case strings.IndexByte(cwd, 0) >= 0:
		return "", "cwd contains a NUL byte"
	}
	return cwd, ""
}

// denyReason is the refusal's reason for the deny rule deny (its
// subcommand; empty denies every command).
func (t *tool) denyReason(deny []string) string {
	if len(deny) == 0 {
		return "every command is denied for '" + t.name + "'"
	}
	return "subcommand '" + strings.Join(deny, " ") + "' is denied for '" + t.name + "'"
}
