package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Tool is one wrapped CLI as New receives it: the tool key, its binary and
// its rules as written (help flags already seeded).
type Tool struct {
	Name   string
	Binary string
	Allow  []*AllowRule
	Deny   []*DenyRule
}

// Policy is a compiled, immutable policy. It is shared by pointer between
// concurrent calls; a call keeps the *Policy it started with.
type Policy struct {
	tools   map[string]*tool
	exposed []*Rule
	byName  map[string]*Rule
}

type tool struct {
	name   string
	binary string
	deny   [][]string
	rules  []*Rule
}

// Rule is one compiled allow rule: what the schema shows and what Evaluate
// checks. It is immutable.
type Rule struct {
	tool          *tool
	name          string
	sub           []string
	command       string // "git push", for messages
	flags         []Flag // allowed flags in schema order
	byProp        map[string]int
	denied        map[string]string // property → denied flag
	redacted      map[string]bool   // properties whose values are shown as Redacted
	positionalMax int               // -1: no limit
	argPatterns   []argPattern      // the n-th applies to the n-th positional, the last to the rest
	exposed       bool
	allowedList   string // the "Allowed flags" line: "--set-upstream" or "(none)"
	description   string // from the tool's help; "" when unknown
}

// argPattern is one compiled positional pattern, with its source as written
// (denials show it that way).
type argPattern struct {
	src string
	re  *regexp.Regexp
}

// Flag is one allowed flag of a rule, as the schema and argv see it.
type Flag struct {
	// Flag is the flag as written ("--depth", "-m").
	Flag string
	// Property is its schema property ("depth", "m").
	Property string
	// Type is TypeBoolean, TypeInteger or TypeString.
	Type Type
	// Required flags must be given (a boolean must be true).
	Required bool
	// Min and Max bound an integer; nil means unbounded.
	Min, Max *int64
	// Pattern is the constraint as written; empty means none.
	Pattern string
	// Help marks a seeded help flag: a boolean that runs alone, so it can
	// never hand a value or an argument to a real option (on psql -h is
	// the host).
	Help bool
	// Description is the flag's help line; "" when unknown.
	Description string
	// Attached marks a flag whose value is optional in the tool's help
	// (--rebase[=<mode>]) but typed by the rule: its value is passed in
	// the same argument (--rebase=merges, -rmerges), because as a separate
	// argument the tool would read it as a positional.
	Attached bool
	// Unproven marks a short flag whose value-taking rests on the default
	// alone (no type, min, max or pattern; no introspection evidence). It
	// is passed as "-X value", but the value is held to the rules of a
	// positional argument: a tool that reads -X as a switch reads that
	// value as a positional (git -P config … runs git config).
	Unproven bool
	// Redact hides the value wherever a call is shown (a redact: true
	// constraint): Redacted stands in its place.
	Redact bool

	re *regexp.Regexp
}

// New compiles tools into a Policy. helps, from the tools' own help, types
// flags and describes rules and flags; it may be nil. The rules should have
// passed config validation; New still refuses what it cannot compile (a bad
// pattern, an invalid name) rather than build a policy that misbehaves.
func New(tools []Tool, helps Helps) (*Policy, error) {
	p := &Policy{tools: map[string]*tool{}, byName: map[string]*Rule{}}
	res := regexps{}
	for _, spec := range tools {
		if !ValidToken(spec.Name) {
			return nil, fmt.Errorf("compile policy: tool name %q is invalid", spec.Name)
		}
		if _, dup := p.tools[spec.Name]; dup {
			return nil, fmt.Errorf("compile policy: tool %q is listed twice", spec.Name)
		}
		t := &tool{name: spec.Name, binary: spec.Binary}
		for _, d := range spec.Deny {
			t.deny = append(t.deny, slices.Clone(d.Subcommand))
		}
		for _, a := range spec.Allow {
			r, err := compileRule(t, a, helps, res)
			if err != nil {
				return nil, fmt.Errorf("compile policy: %s: %w", ToolName(spec.Name, a.Subcommand), err)
			}
			t.rules = append(t.rules, r)
			if !r.exposed {
				continue
			}
			if _, dup := p.byName[r.name]; dup {
				return nil, fmt.Errorf("compile policy: MCP tool name %q is produced twice", r.name)
			}
			p.byName[r.name] = r
			p.exposed = append(p.exposed, r)
		}
		p.tools[spec.Name] = t
	}
	slices.SortFunc(p.exposed, func(a, b *Rule) int { return strings.Compare(a.name, b.name) })
	return p, nil
}

// regexps compiles each anchored pattern once per New: a large config repeats
// a few patterns across thousands of rules, and a copy per rule was most of
// a load's time and memory. A *regexp.Regexp is safe for concurrent use and
// holds no per-match state, so rules sharing one still decide independently.
// The cache lives only as long as New, so nothing outlives the policy built.
type regexps map[string]*regexp.Regexp

func (c regexps) compile(src string) (*regexp.Regexp, error) {
	if re, ok := c[src]; ok {
		return re, nil
	}
	re, err := regexp.Compile(AnchorPattern(src))
	if err != nil {
		return nil, err
	}
	c[src] = re
	return re, nil
}

func compileRule(t *tool, a *AllowRule, helps Helps, res regexps) (*Rule, error) {
	r := &Rule{
		tool:          t,
		name:          ToolName(t.name, a.Subcommand),
		sub:           slices.Clone(a.Subcommand),
		command:       strings.Join(append([]string{t.name}, a.Subcommand...), " "),
		byProp:        map[string]int{},
		denied:        map[string]string{},
		redacted:      map[string]bool{},
		positionalMax: -1,
	}
	for _, tok := range a.Subcommand {
		if !ValidToken(tok) {
			return nil, fmt.Errorf("subcommand token %q is invalid", tok)
		}
	}
	if n := a.ArgConstraints.PositionalMax; n != nil {
		r.positionalMax = max(*n, 0)
	}
	if a.ArgConstraints.Pattern != "" && len(a.ArgConstraints.Patterns) > 0 {
		return nil, fmt.Errorf("arg_constraints: pattern and patterns do not combine")
	}
	for _, src := range a.ArgConstraints.Expressions() {
		re, err := res.compile(src)
		if err != nil {
			return nil, fmt.Errorf("arg_constraints: %w", err)
		}
		r.argPatterns = append(r.argPatterns, argPattern{src, re})
	}
	r.exposed = !t.denies(a.Subcommand, nil)
	if helps != nil {
		r.description = helps.Description(t.name, a.Subcommand)
	}
	for _, f := range a.DenyFlags {
		r.denied[PropertyName(f)] = f
	}
	for f, c := range a.FlagConstraints {
		if c != nil && c.Deny {
			r.denied[PropertyName(f)] = f
		}
		if c != nil && c.Redact {
			// By property, so a stray spelling ("--token" for "token")
			// or a denied flag is hidden too.
			r.redacted[PropertyName(f)] = true
		}
	}
	var listed []string
	for _, f := range a.Flags {
		if !ValidFlag(f) {
			return nil, fmt.Errorf("flag %q is invalid", f)
		}
		prop := PropertyName(f)
		if _, denied := r.denied[prop]; denied {
			continue
		}
		if _, dup := r.byProp[prop]; dup || prop == ArgsProperty || prop == CwdProperty {
			return nil, fmt.Errorf("flag %s gives a property that is taken", f)
		}
		c := a.FlagConstraints[f]
		fl := Flag{Flag: f, Property: prop}
		if IsHelpFlag(f) && slices.Contains(a.Seeded, f) {
			// Whatever a constraint or introspection says: a seeded
			// help flag is a switch.
			fl.Type, fl.Help = TypeBoolean, true
			r.byProp[prop] = len(r.flags)
			r.flags = append(r.flags, fl)
			continue
		}
		var proven bool
		fl.Type, proven = TypeOf(c, helps, t.name, a.Subcommand, f)
		fl.Unproven = !proven && fl.Type == TypeString && IsShortFlag(f)
		if helps != nil {
			if h, ok := helps.Flag(t.name, a.Subcommand, f); ok {
				fl.Description = h.Description
				fl.Attached = h.OptionalValue && fl.Type != TypeBoolean
			}
		}
		if c != nil {
			fl.Required, fl.Min, fl.Max, fl.Pattern, fl.Redact = c.Required, c.Min, c.Max, c.Pattern, c.Redact
			if c.Pattern != "" {
				re, err := res.compile(c.Pattern)
				if err != nil {
					return nil, fmt.Errorf("flag %s: %w", f, err)
				}
				fl.re = re
			}
		}
		r.byProp[prop] = len(r.flags)
		r.flags = append(r.flags, fl)
		listed = append(listed, f)
	}
	r.allowedList = "(none)"
	if len(listed) > 0 {
		r.allowedList = strings.Join(listed, ", ")
	}
	return r, nil
}

// Tools returns the tool keys, sorted.
func (p *Policy) Tools() []string {
	names := make([]string, 0, len(p.tools))
	for name := range p.tools {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Binary returns tool's binary as the config names it, with rules or
// without; "" for an unknown tool. The danger catalog knows a tool by its
// binary (tools.mygit with /usr/bin/git is git).
func (p *Policy) Binary(tool string) string {
	if t := p.tools[tool]; t != nil {
		return t.binary
	}
	return ""
}

// HasTool reports whether the config has tool, with rules or without.
func (p *Policy) HasTool(tool string) bool {
	_, ok := p.tools[tool]
	return ok
}

// ToolRules returns every allow rule of tool, exposed or covered by a deny
// rule, in the config's order; nil for an unknown tool.
func (p *Policy) ToolRules(tool string) []*Rule {
	if t := p.tools[tool]; t != nil {
		return slices.Clone(t.rules)
	}
	return nil
}

// Denies reports whether a deny rule of tool covers the subcommand sub.
func (p *Policy) Denies(tool string, sub []string) bool {
	t := p.tools[tool]
	return t != nil && t.denies(sub, nil)
}

// Rules returns the exposed rules (those no deny rule covers), sorted by MCP
// tool name. The slice is shared: do not modify it.
func (p *Policy) Rules() []*Rule { return p.exposed }

// Rule returns the exposed rule behind an MCP tool name.
func (p *Policy) Rule(name string) (*Rule, bool) {
	r, ok := p.byName[name]
	return r, ok
}

// Description is what the tool's help says the subcommand does; "" when
// unknown.
func (r *Rule) Description() string { return r.description }

// Name is the rule's MCP tool name ("git_pull").
func (r *Rule) Name() string { return r.name }

// Tool is the tool key ("git").
func (r *Rule) Tool() string { return r.tool.name }

// Binary is the wrapped tool's absolute path.
func (r *Rule) Binary() string { return r.tool.binary }

// Subcommand returns a copy of the rule's subcommand tokens.
func (r *Rule) Subcommand() []string { return slices.Clone(r.sub) }

// Command is the tool key and subcommand as a user would type them
// ("gcloud compute instances list").
func (r *Rule) Command() string { return r.command }

// Flags returns the allowed flags in schema order, help flags included and
// denied flags left out. The slice is shared: do not modify it.
func (r *Rule) Flags() []Flag { return r.flags }

// ArgPatterns returns the positional patterns as written: the n-th applies
// to the n-th positional argument (an unproven short flag's value counts as
// one), the last to the rest. Empty means none.
func (r *Rule) ArgPatterns() []string {
	out := make([]string, len(r.argPatterns))
	for i, p := range r.argPatterns {
		out[i] = p.src
	}
	return out
}

// Redacts reports whether the parameter name (a property, or a flag
// written with its dashes) stands for a flag whose value the rule hides.
func (r *Rule) Redacts(name string) bool {
	return r != nil && r.redacted[PropertyName(name)]
}

// Exposed reports whether the rule is served (no deny rule covers it).
func (r *Rule) Exposed() bool { return r.exposed }

// PositionalMax is the most positional arguments allowed; ok is false when
// there is no limit.
func (r *Rule) PositionalMax() (n int, ok bool) {
	return r.positionalMax, r.positionalMax >= 0
}

// denies reports whether a deny rule covers the command made of sub followed
// by args: deny rules match by token prefix.
func (t *tool) denies(sub, args []string) bool {
	_, ok := t.denyRule(sub, args)
	return ok
}

// denyRule returns the first deny rule covering sub+args.
func (t *tool) denyRule(sub, args []string) ([]string, bool) {
	for _, d := range t.deny {
		if len(d) > len(sub)+len(args) {
			continue
		}
		match := true
		for i, tok := range d {
			var got string
			if i < len(sub) {
				got = sub[i]
			} else {
				got = args[i-len(sub)]
			}
			if got != tok {
				match = false
				break
			}
		}
		if match {
			return d, true
		}
	}
	return nil, false
}

// rule finds the allow rule whose subcommand is exactly sub.
func (t *tool) rule(sub []string) *Rule {
	for _, r := range t.rules {
		if slices.Equal(r.sub, sub) {
			return r
		}
	}
	return nil
}
