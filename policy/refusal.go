package policy

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind classifies a refusal, for logs, the audit trail and tests; the text
// is what the assistant reads.
type Kind int

// Refusal kinds, in the order Evaluate checks them.
const (
	KindUnknownTool    Kind = iota + 1 // the tool key is not configured
	KindDenyRule                       // a deny rule covers the command
	KindNoRule                         // no allow rule has this subcommand
	KindFlagNotAllowed                 // a parameter is not an allowed flag
	KindFlagDenied                     // a flag is in deny_flags or has deny: true
	KindHelpAlone                      // a seeded help flag came with other flags or arguments
	KindValue                          // a flag's value is of the wrong type or out of bounds
	KindRequired                       // a required flag is missing
	KindArgCount                       // too many positional arguments, or args is not a list of strings
	KindArg                            // a positional argument looks like a flag or holds a NUL
	KindArgPattern                     // a positional argument does not match its pattern
	KindCwd                            // the working directory is refused
	KindProtected                      // a value or argument names one of wraptool's own files
)

var kindNames = map[Kind]string{
	KindUnknownTool: "unknown_tool", KindDenyRule: "deny_rule", KindNoRule: "no_rule",
	KindFlagNotAllowed: "flag_not_allowed", KindFlagDenied: "flag_denied", KindHelpAlone: "help_alone",
	KindValue: "value", KindRequired: "required", KindArgCount: "arg_count", KindArg: "arg",
	KindArgPattern: "arg_pattern", KindCwd: "cwd", KindProtected: "protected_path",
}

// String is a stable snake_case name for logs.
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// RequestTool is the built-in tool every denial points at.
const RequestTool = "wraptool_request_capability"

// Refusal is why a call was refused, with the full text for the assistant.
type Refusal struct {
	Kind Kind
	// Reason is the Policy: line's text, without the final period.
	Reason string
	// Text is the whole denial:
	//
	//	DENIED: 'git push --force origin main' is not permitted.
	//
	//	Policy: flag '--force' is not in the allowlist for 'git push'.
	//	Allowed flags for 'git push': --set-upstream
	//
	//	To request this capability, call the 'wraptool_request_capability' tool.
	Text string
}

func newRefusal(kind Kind, reason, command string, allowed *Rule) *Refusal {
	var b strings.Builder
	b.WriteString("DENIED: '")
	b.WriteString(command)
	b.WriteString("' is not permitted.\n\nPolicy: ")
	b.WriteString(reason)
	b.WriteString(".\n")
	if allowed != nil {
		b.WriteString("Allowed flags for '")
		b.WriteString(allowed.command)
		b.WriteString("': ")
		b.WriteString(allowed.allowedList)
		b.WriteString("\n")
	}
	b.WriteString("\nTo request this capability, call the '" + RequestTool + "' tool.")
	return &Refusal{Kind: kind, Reason: reason, Text: b.String()}
}

// renderCall lists the tokens a call would have run as: the tool key, the
// subcommand, the flags (known ones in schema order, then the rest by name)
// and the positional arguments. The value of every parameter secret's
// redact constraints cover is shown as Redacted (secret is the tool's rule
// for the subcommand, which r may leave out). It runs only for refusals.
func renderCall(c Call, r, secret *Rule) []string {
	tokens := append([]string{c.Tool}, c.Subcommand...)
	seen := map[string]bool{ArgsProperty: true, CwdProperty: true}
	if r != nil {
		for _, f := range r.flags {
			v, ok := c.Params[f.Property]
			if !ok || v == nil {
				continue
			}
			seen[f.Property] = true
			if f.Type == TypeBoolean && (v == true || v == "true") {
				tokens = append(tokens, f.Flag)
			} else if !(f.Type == TypeBoolean && (v == false || v == "false")) {
				if secret.Redacts(f.Property) {
					v = Redacted
				}
				tokens = appendValued(tokens, f.Flag, v)
			}
		}
	}
	for _, b := range strays(c.Params, seen, func(v any) bool { return v != nil }) {
		if v := c.Params[b.name]; v == true {
			tokens = append(tokens, b.flag)
		} else {
			if secret.Redacts(b.name) {
				v = Redacted
			}
			tokens = appendValued(tokens, b.flag, v)
		}
	}
	switch a := c.Params[ArgsProperty].(type) {
	case []any:
		for _, x := range a {
			tokens = append(tokens, display(x))
		}
	case []string:
		tokens = append(tokens, a...)
	case nil:
	default:
		tokens = append(tokens, display(a))
	}
	return tokens
}

// strays are the parameters not in seen whose value keep accepts, as the
// flags they stand for, in a fixed order (see badParam.less).
func strays(params map[string]any, seen map[string]bool, keep func(any) bool) []badParam {
	var rest []badParam
	for name, v := range params {
		if !seen[name] && keep(v) {
			rest = append(rest, badParam{name: name, flag: flagFor(name)})
		}
	}
	slices.SortFunc(rest, func(a, b badParam) int {
		if a.less(b) {
			return -1
		}
		return 1
	})
	return rest
}

func appendValued(tokens []string, flag string, v any) []string {
	if IsShortFlag(flag) {
		return append(tokens, flag, display(v))
	}
	return append(tokens, flag+"="+display(v))
}

// display renders any JSON value the way it would reach argv.
func display(v any) string {
	if s, ok := stringValue(v); ok {
		return s
	}
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case []any, []string:
		return "<array>"
	}
	return "<object>"
}

// quoteCommand joins tokens as a shell would need them quoted.
func quoteCommand(tokens []string) string {
	var b strings.Builder
	for i, t := range tokens {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(shellQuote(t))
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell when it needs it. A token holding a
// character that could fake a line or hide text is shown Go-quoted instead
// ("a\u2028b"), so a denial never carries raw controls, line separators or
// bidirectional overrides.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	if NeedsEscape(s) {
		return strconv.Quote(s)
	}
	for _, c := range s {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.ContainsRune("_@%+=:,./-", c):
		default:
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

// Quote quotes a client-supplied token (or a pattern as the rule writes it)
// for a Policy: line ('-rf'). One holding a character Go's strconv.Quote
// escapes, or a "'" that would close the quote early, is shown Go-quoted
// instead ("--it' x"), so no input can add, split or fake a line.
func Quote(s string) string {
	if NeedsEscape(s) || strings.ContainsRune(s, '\'') {
		return strconv.Quote(s)
	}
	return "'" + s + "'"
}

// NeedsEscape reports whether s holds anything strconv.Quote writes as an
// escape other than a quote or backslash: invalid UTF-8, C0 and C1 controls,
// DEL, U+2028 and U+2029, bidirectional and zero-width characters, tags —
// every character that could repaint a terminal, split a line or hide text.
// Denials, the request tool and the operator's displays share this one rule.
func NeedsEscape(s string) bool {
	for i, c := range s {
		if c == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return true
			}
		}
		if !strconv.IsPrint(c) {
			return true
		}
	}
	return false
}
