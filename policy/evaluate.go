package policy

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// Call is one request to run a command, as an MCP tool call carries it.
type Call struct {
	// Tool is the tool key ("git").
	Tool string
	// Subcommand is the rule's subcommand ([push]).
	Subcommand []string
	// Params are the tool call's arguments as decoded from JSON: flags by
	// property name, plus "args" (positional arguments) and "cwd". Numbers
	// may be float64 or json.Number.
	Params map[string]any
}

// Decision is the outcome of Evaluate: the argv to run, or a refusal.
type Decision struct {
	// Argv is the command line to run: the binary, the subcommand, the flags
	// in schema order, then the positional arguments. Nil when refused.
	Argv []string
	// Cwd is the working directory the client asked for, not yet checked
	// (the runner checks it against the filesystem); "" for the default.
	Cwd string
	// Rule is the allow rule that matched; nil when none did.
	Rule *Rule
	// Refusal explains a refused call; nil when allowed.
	Refusal *Refusal
	// Paths are the argv tokens the assistant chose that a tool could read
	// as a path (string flag values and positional arguments, in argv
	// order), for the runner's protected-path check once the working
	// directory is known. Nil when refused.
	Paths []PathArg

	tool string
	// rule is the tool's rule for the call's subcommand, when it has one,
	// even where Rule is left nil (a deny rule covers it): its redact
	// constraints hide values in the denial text.
	rule *Rule
	// masks replace argv tokens that carry a redacted value, for Shown.
	masks []mask
}

// mask replaces argv[at] with shown wherever the argv is displayed.
type mask struct {
	at    int
	shown string
}

// Shown is Argv as wraptool shows it (the audit log, logs, denial texts):
// the value of every flag with redact: true replaced by Redacted
// ("--token=***", "-p", "***"). It is Argv itself when nothing is hidden;
// the child always gets Argv.
func (d Decision) Shown() []string {
	if len(d.masks) == 0 {
		return d.Argv
	}
	out := append([]string(nil), d.Argv...)
	for _, m := range d.masks {
		if m.at < len(out) {
			out[m.at] = m.shown
		}
	}
	return out
}

// Redacted reports whether Shown hides anything.
func (d Decision) Redacted() bool { return len(d.masks) > 0 }

// PathArg is one client-chosen argv token the runner checks against
// wraptool's own files.
type PathArg struct {
	// Flag is the flag whose value Value is; "" for a positional argument
	// (an unproven short flag's value counts as one).
	Flag string
	// Value is the token as it reaches argv.
	Value string
	// Redact marks a value a refusal must not show (an unproven short
	// flag's value, held to the positional rules, whose constraint has
	// redact: true).
	Redact bool
}

// Subject names the token in a refusal: "value of '--output'", or
// "positional argument '~/x'" (quoted as a denial needs). It is built only
// for a refusal, so an allowed call pays nothing for it.
func (a PathArg) Subject() string {
	if a.Flag != "" {
		return "value of '" + a.Flag + "'"
	}
	if a.Redact {
		return "positional argument '" + Redacted + "'"
	}
	return "positional argument " + Quote(a.Value)
}

// Allowed reports whether the call may run.
func (d Decision) Allowed() bool { return d.Refusal == nil }

// Refuse turns an allowed decision into a refusal found after evaluation,
// such as a cwd outside the allowed roots, with the same denial text shape.
func (d Decision) Refuse(kind Kind, reason string) Decision {
	if !d.Allowed() {
		return d
	}
	tokens := append([]string{d.tool}, d.Shown()[1:]...)
	d.Refusal = newRefusal(kind, reason, quoteCommand(tokens), nil)
	d.Argv, d.Paths, d.masks = nil, nil, nil
	return d
}

// Evaluate decides one call against the policy. When several checks fail the
// first in this order is reported: deny rule, a flag not
// allowed or denied, a help flag not alone, a flag's value, a required flag,
// the number of positional arguments, a positional argument beginning with
// '-' or holding NUL, a positional argument's pattern, cwd. The values of
// unproven short flags (see Flag.Unproven) count as positional arguments,
// first and in argv order, for the positional checks and for deny matching.
// It is pure and safe for concurrent use.
func (p *Policy) Evaluate(c Call) Decision {
	d := Decision{tool: c.Tool}
	t := p.tools[c.Tool]
	if t == nil {
		return d.refused(c, nil, KindUnknownTool, "tool "+Quote(c.Tool)+" is not configured")
	}
	args, argsOK := positional(c.Params[ArgsProperty])
	r := t.rule(c.Subcommand)
	d.rule = r
	// Deny rules see the command as it would run: the subcommand, then the
	// unproven short values a tool may read as positionals, then args.
	tokens := args
	if r != nil {
		if short := r.unprovenValues(c.Params); len(short) > 0 {
			tokens = append(short, args...)
		}
	}
	if deny, ok := t.denyRule(c.Subcommand, tokens); ok {
		return d.refused(c, nil, KindDenyRule, t.denyReason(deny))
	}
	if r == nil {
		return d.refused(c, nil, KindNoRule, Quote(strings.Join(append([]string{t.name}, c.Subcommand...), " "))+" is not in the allowlist")
	}
	d.Rule = r

	// A flag not allowed or denied: the first by flag name, so the answer
	// does not depend on map order. A null value counts as absent.
	var bad badParam
	for name, v := range c.Params {
		if name == ArgsProperty || name == CwdProperty || v == nil {
			continue
		}
		if _, ok := r.byProp[name]; ok {
			continue
		}
		if b := r.classify(name); bad.kind == 0 || b.less(bad) {
			bad = b
		}
	}
	if bad.kind != 0 {
		return d.refused(c, r, bad.kind, bad.reason(r))
	}

	help := r.helpCall(c.Params)
	if help != nil && !r.alone(help, c.Params) {
		return d.refused(c, r, KindHelpAlone, "help flag '"+help.Flag+"' runs alone; pass no other flags or arguments")
	}

	argv := make([]string, 0, 1+len(r.sub)+2*len(c.Params)+len(args))
	argv = append(argv, t.binary)
	argv = append(argv, r.sub...)
	var (
		paths = make([]PathArg, 0, len(c.Params))
		// positionals are the tokens held to the positional rules, in
		// argv order: unproven short values, then args.
		positionals []string
		// hidden marks the positionals that are redacted values.
		hidden map[int]bool
	)
	for i := range r.flags {
		f := &r.flags[i]
		v, ok := c.Params[f.Property]
		if !ok {
			continue
		}
		val, present, reason := f.value(v)
		if reason != "" {
			return d.refused(c, r, KindValue, reason)
		}
		switch {
		case !present:
			continue
		case f.Type == TypeBoolean:
			argv = append(argv, f.Flag)
			continue
		case f.Attached && IsShortFlag(f.Flag):
			argv = append(argv, f.Flag+val)
			d.hide(f, len(argv)-1, f.Flag+Redacted)
		case IsShortFlag(f.Flag):
			argv = append(argv, f.Flag, val)
			d.hide(f, len(argv)-1, Redacted)
		default:
			argv = append(argv, f.Flag+"="+val)
			d.hide(f, len(argv)-1, f.Flag+"="+Redacted)
		}
		switch {
		case f.Unproven:
			if f.Redact {
				if hidden == nil {
					hidden = map[int]bool{}
				}
				hidden[len(positionals)] = true
			}
			positionals = append(positionals, val)
		case f.Type == TypeString:
			paths = append(paths, PathArg{Flag: f.Flag, Value: val})
		}
	}
	if help == nil {
		for i := range r.flags {
			f := &r.flags[i]
			if !f.Required {
				continue
			}
			if _, present, _ := f.value(c.Params[f.Property]); !present {
				return d.refused(c, r, KindRequired, "flag '"+f.Flag+"' is required for '"+r.command+"'")
			}
		}
	}

	if !argsOK {
		return d.refused(c, r, KindArgCount, "value of 'args' must be an array of strings")
	}
	if len(positionals) == 0 {
		positionals = args // nothing to prepend: no copy
	} else {
		positionals = append(positionals, args...)
	}
	if n := len(positionals); r.positionalMax >= 0 && n > r.positionalMax {
		noun := "arguments are"
		if r.positionalMax == 1 {
			noun = "argument is"
		}
		return d.refused(c, r, KindArgCount, "at most "+strconv.Itoa(r.positionalMax)+" positional "+noun+
			" allowed for '"+r.command+"' (got "+strconv.Itoa(n)+")")
	}
	// shown quotes the i-th positional for a refusal, hiding a redacted
	// value.
	shown := func(i int) string {
		if hidden[i] {
			return "'" + Redacted + "'"
		}
		return Quote(positionals[i])
	}
	if reason := unsafePositional(positionals, shown); reason != "" {
		return d.refused(c, r, KindArg, reason)
	}
	for i, a := range positionals {
		if pat := r.argPattern(i); pat != nil && !pat.re.MatchString(a) {
			return d.refused(c, r, KindArgPattern, "positional argument "+shown(i)+" does not match pattern "+Quote(pat.src))
		}
	}
	argv = append(argv, args...)
	for i, a := range positionals {
		paths = append(paths, PathArg{Value: a, Redact: hidden[i]})
	}

	cwd, reason := cwdParam(c.Params)
	if reason != "" {
		return d.refused(c, r, KindCwd, reason)
	}
	d.Cwd = cwd
	d.Argv = argv
	d.Paths = paths
	return d
}

// argPattern is the pattern the i-th positional must match, or nil.
func (r *Rule) argPattern(i int) *argPattern {
	if len(r.argPatterns) == 0 {
		return nil
	}
	return &r.argPatterns[min(i, len(r.argPatterns)-1)]
}

// unprovenValues are the values of the unproven short flags the call gives,
// in argv order, as they would reach argv; values of the wrong type are left
// out (they are refused later, but are no token deny rules could see).
func (r *Rule) unprovenValues(params map[string]any) []string {
	var out []string
	for i := range r.flags {
		f := &r.flags[i]
		if !f.Unproven {
			continue
		}
		if v := params[f.Property]; v != nil {
			if s, ok := stringValue(v); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// given reports whether a parameter value asks for its flag: null and false
// (or "false") count as absent.
func given(v any) bool {
	return v != nil && v != false && v != "false"
}

// helpCall returns the first seeded help flag, in schema order, that the
// call gives; nil when it gives none.
func (r *Rule) helpCall(params map[string]any) *Flag {
	for i := range r.flags {
		if f := &r.flags[i]; f.Help && given(params[f.Property]) {
			return f
		}
	}
	return nil
}

// alone reports whether help is the only flag given and no positional
// argument is: the call is then "binary subcommand… <help flag>". Only cwd
// may come with it.
func (r *Rule) alone(help *Flag, params map[string]any) bool {
	for i := range r.flags {
		if f := &r.flags[i]; f != help && given(params[f.Property]) {
			return false
		}
	}
	switch a := params[ArgsProperty].(type) {
	case nil:
		return true
	case []any:
		return len(a) == 0
	case []string:
		return len(a) == 0
	}
	return false
}

// refused builds a refusal; r is the matched rule when the reason warrants
// the "Allowed flags" line.
func (d Decision) refused(c Call, r *Rule, kind Kind, reason string) Decision {
	var allowed *Rule
	switch kind {
	case KindFlagNotAllowed, KindFlagDenied, KindRequired:
		allowed = r
	}
	d.Refusal = newRefusal(kind, reason, quoteCommand(renderCall(c, r, d.rule)), allowed)
	d.Argv, d.Paths, d.masks = nil, nil, nil
	return d
}

// hide records that argv[at], the value of f, is shown as shown when f's
// constraint has redact: true.
func (d *Decision) hide(f *Flag, at int, shown string) {
	if f.Redact {
		d.masks = append(d.masks, mask{at: at, shown: shown})
	}
}

// positional reads the "args" parameter: absent or null is none; anything
// but an array of strings is reported (ok false) along with the strings it
// did hold, so deny rules still see them.
func positional(v any) ([]string, bool) {
	switch a := v.(type) {
	case nil:
		return nil, true
	case []string:
		return a, true
	case []any:
		out := make([]string, 0, len(a))
		ok := true
		for _, x := range a {
			s, isString := x.(string)
			if !isString {
				ok = false
				continue
			}
			out = append(out, s)
		}
		return out, ok
	}
	return nil, false
}

// value checks one flag value and renders it. present is false for an
// absent value or a boolean false; reason is the refusal, if any.
func (f *Flag) value(v any) (val string, present bool, reason string) {
	switch f.Type {
	case TypeBoolean:
		switch v {
		case nil:
			return "", false, ""
		case true, "true":
			return "", true, ""
		case false, "false":
			return "", false, ""
		}
		return "", false, "value of '" + f.Flag + "' must be true or false"
	case TypeInteger:
		if v == nil {
			return "", false, ""
		}
		n, ok := integer(v)
		if !ok {
			return "", false, "value of '" + f.Flag + "' must be an integer"
		}
		if f.Min != nil && n < *f.Min {
			return "", false, "value of '" + f.Flag + "' must be >= " + strconv.FormatInt(*f.Min, 10)
		}
		if f.Max != nil && n > *f.Max {
			return "", false, "value of '" + f.Flag + "' must be <= " + strconv.FormatInt(*f.Max, 10)
		}
		val = strconv.FormatInt(n, 10)
	default:
		if v == nil {
			return "", false, ""
		}
		s, ok := stringValue(v)
		if !ok {
			return "", false, "value of '" + f.Flag + "' must be a string"
		}
		val = s
	}
	switch {
	case f.Unproven:
		// Held to the positional rules instead (see Flag.Unproven).
	case strings.IndexByte(val, 0) >= 0:
		return "", false, "value of '" + f.Flag + "' contains a NUL byte"
	case IsShortFlag(f.Flag) && strings.HasPrefix(val, "-"):
		return "", false, "value of '" + f.Flag + "' must not begin with '-'"
	case f.re != nil && !f.re.MatchString(val):
		return "", false, "value of '" + f.Flag + "' does not match pattern " + Quote(f.Pattern)
	}
	return val, true, ""
}

// maxExact is the largest integer a float64 holds exactly; a JSON number
// beyond it may already have been rounded by the decoder.
const maxExact = 1 << 53

// integer accepts a JSON integer (float64 with no fraction, json.Number) or a
// string of decimal digits.
func integer(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > maxExact {
			return 0, false
		}
		return int64(n), true
	case int:
		return int64(n), true
	case int64:
		return n, true
	case json.Number:
		i, err := strconv.ParseInt(string(n), 10, 64)
		return i, err == nil
	case string:
		if !isDigits(n) {
			return 0, false
		}
		i, err := strconv.ParseInt(n, 10, 64)
		return i, err == nil
	}
	return 0, false
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// stringValue accepts a string, or a number written in decimal (never in
// exponent form, so 1e3 becomes "1000").
func stringValue(v any) (string, bool) {
	switch s := v.(type) {
	case string:
		return s, true
	case float64:
		return strconv.FormatFloat(s, 'f', -1, 64), true
	case int:
		return strconv.Itoa(s), true
	case int64:
		return strconv.FormatInt(s, 10), true
	case json.Number:
		if !strings.ContainsAny(string(s), "eE") {
			return string(s), true // already decimal: keep every digit
		}
		f, err := strconv.ParseFloat(string(s), 64)
		if err != nil || math.IsInf(f, 0) {
			return "", false
		}
		return strconv.FormatFloat(f, 'f', -1, 64), true
	}
	return "", false
}

// badParam is a parameter that is not an allowed flag's property.
type badParam struct {
	name, flag string
	kind       Kind
}

// classify names the flag a stray parameter stands for and why it is
// refused. A name written with dashes ("--force") stands for that flag, so a
// denied flag is reported as denied however it is spelled.
func (r *Rule) classify(name string) badParam {
	flag := flagFor(name)
	if denied, ok := r.denied[PropertyName(flag)]; ok && (denied == flag || !strings.HasPrefix(name, "-")) {
		return badParam{name, denied, KindFlagDenied}
	}
	return badParam{name, flag, KindFlagNotAllowed}
}

// less orders stray parameters by flag, then plain names before dashed
// spellings, then by name.
func (b badParam) less(o badParam) bool {
	if b.flag != o.flag {
		return b.flag < o.flag
	}
	if bd, od := strings.HasPrefix(b.name, "-"), strings.HasPrefix(o.name, "-"); bd != od {
		return od
	}
	return b.name < o.name
}

func (b badParam) reason(r *Rule) string {
	if b.kind == KindFlagDenied {
		return "flag " + Quote(b.flag) + " is denied for '" + r.command + "'"
	}
	if i, ok := r.byProp[PropertyName(b.flag)]; ok && r.flags[i].Flag == b.flag {
		// An allowed flag spelled with its dashes: say how to pass it.
		return "flag " + Quote(b.flag) + " must be passed as the parameter '" + r.flags[i].Property + "'"
	}
	return "flag " + Quote(b.flag) + " is not in the allowlist for '" + r.command + "'"
}

// flagFor names the flag a parameter stands for: "force" is --force, "m" is
// -m, and a name that already starts with a dash is taken as written.
func flagFor(name string) string {
	switch {
	case strings.HasPrefix(name, "-"):
		return name
	case len(name) == 1:
		return "-" + name
	}
	return "--" + name
}
