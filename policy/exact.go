package policy

import (
	"slices"
	"strconv"
	"strings"
)

// Command renders a call as it would run, tool key first ("git", "push",
// "--force", "origin", "main"): the rule's flags in schema order as Evaluate
// would put them in argv, then every other parameter as a flag of its name
// (true gives the bare flag, a scalar value "--name=value" or "-n value";
// null, false and "false" are absent), then the positional arguments. It is
// what an exact-call request records and what an exact-call grant allows,
// byte for byte.
//
// ok is false when a value could not reach argv as written (an array or an
// object where a flag's value belongs, a positional argument that is not a
// string): no exact call can be made of such a call.
func (p *Policy) Command(c Call) (tokens []string, ok bool) {
	tokens, _, ok = p.command(c, false)
	return tokens, ok
}

// ShownCommand is Command as wraptool shows it: the value of every flag
// with redact: true replaced by Redacted. hidden reports whether it
// replaced any; such a call is never named for an exact-call request, since
// the operator could not see what they approve.
func (p *Policy) ShownCommand(c Call) (tokens []string, hidden, ok bool) {
	return p.command(c, true)
}

// command renders the call for Command (mask false) or ShownCommand.
func (p *Policy) command(c Call, mask bool) (tokens []string, hidden, ok bool) {
	t := p.tools[c.Tool]
	if t == nil {
		return nil, false, false
	}
	tokens = append([]string{c.Tool}, c.Subcommand...)
	r := t.rule(c.Subcommand)
	// masked renders v, hiding it when mask is set and the rule redacts
	// the parameter name: a value that reaches argv becomes Redacted.
	masked := func(name string, f *Flag, v any) any {
		if !mask || !r.Redacts(name) || f.Type == TypeBoolean {
			return v
		}
		switch v {
		case nil, false, "false", true, "true":
			return v
		}
		hidden = true
		return Redacted
	}
	seen := map[string]bool{ArgsProperty: true, CwdProperty: true}
	if r != nil {
		for i := range r.flags {
			f := &r.flags[i]
			v, present := c.Params[f.Property]
			if !present {
				continue
			}
			seen[f.Property] = true
			if tokens, ok = f.render(tokens, masked(f.Property, f, v)); !ok {
				return nil, false, false
			}
		}
	}
	for _, b := range strays(c.Params, seen, func(any) bool { return true }) {
		f := Flag{Flag: b.flag, Type: TypeString}
		if v := c.Params[b.name]; v == true || v == "true" {
			f.Type = TypeBoolean
		}
		if tokens, ok = f.render(tokens, masked(b.name, &f, c.Params[b.name])); !ok {
			return nil, false, false
		}
	}
	args, argsOK := positional(c.Params[ArgsProperty])
	if !argsOK {
		return nil, false, false
	}
	return append(tokens, args...), hidden, true
}

// render appends the flag as argv would carry it: a boolean as the bare flag
// when true, anything else as its value in the flag's form. A value of the
// wrong type is rendered as written (a string, or a number in decimal), since
// an exact call lifts the value checks; ok is false for a value no argv
// token can hold.
func (f *Flag) render(tokens []string, v any) ([]string, bool) {
	switch v {
	case nil, false, "false":
		return tokens, true
	}
	if f.Type == TypeBoolean {
		if v == true || v == "true" {
			return append(tokens, f.Flag), true
		}
	}
	val, ok := stringValue(v)
	if !ok {
		if b, isBool := v.(bool); isBool && b {
			val, ok = "true", true
		}
	}
	if !ok {
		return nil, false
	}
	if n, isInt := integer(v); isInt && f.Type == TypeInteger {
		val = strconv.FormatInt(n, 10)
	}
	switch {
	case f.Attached && IsShortFlag(f.Flag):
		return append(tokens, f.Flag+val), true
	case IsShortFlag(f.Flag):
		return append(tokens, f.Flag, val), true
	}
	return append(tokens, f.Flag+"="+val), true
}

// liftable reports whether an exact-call grant lifts a refusal of this
// kind: only the allowlist, a flag's value, a required flag, the number of
// positional arguments and a positional's pattern. Deny rules, denied flags,
// a help flag not alone, the leading-dash and NUL rules, the cwd and the
// protected paths always hold.
func liftable(k Kind) bool {
	switch k {
	case KindFlagNotAllowed, KindValue, KindRequired, KindArgCount, KindArgPattern:
		return true
	}
	return false
}

// EvaluateExact decides a call an exact-call grant allows: it is Evaluate
// with the liftable refusals lifted (see liftable), and argv is the binary
// followed by Command's tokens after the tool key, so what runs is exactly
// what the operator approved. Every check that is never lifted still
// applies, with Evaluate's reasons: deny rules, a denied flag, a help flag
// not alone, a value or positional argument that begins with '-' where a
// flag could be read or holds a NUL byte, and cwd's type. The runner still
// checks the cwd against the roots and the protected paths.
func (p *Policy) EvaluateExact(c Call) Decision {
	d := p.Evaluate(c)
	if d.Allowed() || !liftable(d.Refusal.Kind) {
		return d
	}
	t := p.tools[c.Tool]
	r := t.rule(c.Subcommand)
	refused := Decision{tool: c.Tool, rule: r}
	tokens, ok := p.Command(c)
	if !ok {
		return refused.refused(c, r, KindValue, "an exact call needs every value to be a string, a number or a boolean")
	}
	// What Evaluate did not reach once the first liftable refusal was found.
	for name, v := range c.Params {
		if name == ArgsProperty || name == CwdProperty || v == nil {
			continue
		}
		if _, known := r.byProp[name]; known {
			continue
		}
		if b := r.classify(name); b.kind == KindFlagDenied {
			return refused.refused(c, r, KindFlagDenied, b.reason(r))
		}
	}
	if help := r.helpCall(c.Params); help != nil && (!r.alone(help, c.Params) || strayGiven(r, c.Params)) {
		return refused.refused(c, r, KindHelpAlone, "help flag '"+help.Flag+"' runs alone; pass no other flags or arguments")
	}
	var paths []PathArg
	values := map[string]string{} // flag → its value, for the dash and NUL rules
	for name, v := range c.Params {
		if name == ArgsProperty || name == CwdProperty {
			continue
		}
		f := Flag{Flag: flagFor(name), Type: TypeString}
		if i, known := r.byProp[name]; known {
			f = r.flags[i]
		}
		if f.Type == TypeBoolean || v == nil || v == false || v == "false" || v == true || v == "true" {
			continue
		}
		val, _ := stringValue(v)
		values[f.Flag] = val
		switch {
		case strings.IndexByte(val, 0) >= 0:
			return refused.refused(c, r, KindValue, "value of '"+f.Flag+"' contains a NUL byte")
		case IsShortFlag(f.Flag) && strings.HasPrefix(val, "-"):
			return refused.refused(c, r, KindValue, "value of '"+f.Flag+"' must not begin with '-'")
		}
		paths = append(paths, PathArg{Flag: f.Flag, Value: val})
	}
	args, _ := positional(c.Params[ArgsProperty])
	if reason := unsafePositional(args, func(i int) string { return Quote(args[i]) }); reason != "" {
		return refused.refused(c, r, KindArg, reason)
	}
	for _, a := range args {
		paths = append(paths, PathArg{Value: a})
	}
	cwd, reason := cwdParam(c.Params)
	if reason != "" {
		return refused.refused(c, r, KindCwd, reason)
	}
	refused.Cwd = cwd
	// Deny rules saw the unproven short values and args in Evaluate; an
	// unknown short flag's value is a token a tool may read as a
	// positional too, so deny rules see those as well.
	var shortVals []string
	for flag, val := range values {
		if IsShortFlag(flag) {
			shortVals = append(shortVals, val)
		}
	}
	slices.Sort(shortVals)
	if deny, denied := t.denyRule(c.Subcommand, append(shortVals, args...)); denied {
		return refused.refused(c, nil, KindDenyRule, t.denyReason(deny))
	}
	refused.Rule = r
	refused.Argv = append([]string{t.binary}, tokens[1:]...)
	refused.Paths = paths
	if shown, hidden, _ := p.ShownCommand(c); hidden && len(shown) == len(tokens) {
		for i := range shown {
			if shown[i] != tokens[i] {
				refused.masks = append(refused.masks, mask{at: i, shown: shown[i]})
			}
		}
	}
	return refused
}

// strayGiven reports whether the call gives a parameter that is not one of
// the rule's flags (nor args or cwd): with a help flag, that is not alone.
func strayGiven(r *Rule, params map[string]any) bool {
	for name, v := range params {
		if name == ArgsProperty || name == CwdProperty {
			continue
		}
		if _, known := r.byProp[name]; !known && given(v) {
			return true
		}
	}
	return false
}

// CallFlags lists the flags a call gives, in Command's order: the rule's
// own in schema order, then every other parameter as the flag it stands
// for. Absent ones (null, false, "false") are left out. An exact-call
// request records them as the capability the call used.
func (p *Policy) CallFlags(c Call) []string {
	var out []string
	seen := map[string]bool{ArgsProperty: true, CwdProperty: true}
	if t := p.tools[c.Tool]; t != nil {
		if r := t.rule(c.Subcommand); r != nil {
			for i := range r.flags {
				f := &r.flags[i]
				seen[f.Property] = true
				if v, ok := c.Params[f.Property]; ok && given(v) {
					out = append(out, f.Flag)
				}
			}
		}
	}
	for _, b := range strays(c.Params, seen, given) {
		if !slices.Contains(out, b.flag) {
			out = append(out, b.flag)
		}
	}
	return out
}
