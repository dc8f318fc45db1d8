package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/wraptool/wraptool/policy"
)

// Applied says what an apply merged into the config, for the operator's
// confirmation line and the request log's "applied".
type Applied struct {
	// Tool is the tool the request names.
	Tool string
	// Subcommand is the request's subcommand tokens (nil for the bare tool).
	Subcommand []string
	// Added are the flags added to an existing rule, in request order with
	// duplicates dropped; nil for a new rule (its flags are the rule's).
	Added []string
	// NewRule is true when a new allow rule was appended.
	NewRule bool
	// Present are requested flags the existing rule already allows (it
	// lists them, or seeds them: -h and --help), so nothing was written for
	// them.
	Present []string
}

// Changed reports whether the apply edited the config; a request the rule
// already satisfies changes nothing and writes nothing.
func (a Applied) Changed() bool { return a.NewRule || len(a.Added) > 0 }

// String is the line `requests approve --apply` prints: "added flags --x,
// --y to git push", "appended allow rule for git push", or, when nothing was
// added, "git push already allows --x".
func (a Applied) String() string {
	cmd := command(a.Tool, a.Subcommand)
	switch {
	case a.NewRule:
		return "appended allow rule for " + cmd
	case len(a.Added) > 0:
		return "added flags " + strings.Join(a.Added, ", ") + " to " + cmd
	case len(a.Present) > 0:
		return cmd + " already allows " + strings.Join(a.Present, ", ")
	}
	return cmd + " already has an allow rule"
}

func command(tool string, sub []string) string {
	return strings.Join(append([]string{tool}, sub...), " ")
}

// Merged is a capability request merged into a config's text: what the
// file editor writes, and what a temporary grant parses in memory.
type Merged struct {
	// Out is the new text; the old one when nothing changes.
	Out []byte
	// Rule is the allow rule as it would stand, help flags not seeded.
	Rule *policy.AllowRule
	// Applied says what the merge changes.
	Applied Applied

	config *Config // Out, parsed and validated
}

// MergeRequest merges a capability request into data, the bytes of the
// config at path, writing nothing. The tool must already be in the config
// and no deny rule may cover the subcommand; an allow rule with exactly
// that subcommand gains the new flags and keeps its constraints, otherwise
// a new rule is appended with arg_constraints {positional_max: 0}.
//
// The change is spliced into the file's own text, so every byte outside the
// edited rule stays as written (comments, order, quoting, line endings); the
// result must pass the same validation as any config, and must parse back
// to exactly the requested change. A request the rule already satisfies
// returns data itself with Applied.Changed false.
func MergeRequest(path string, data []byte, tool string, sub, flags []string, o *Options) (*Merged, error) {
	return plan(path, data, tool, sub, flags, o, nil)
}

// plan decides what the request changes in data, the config at path, and
// produces the new text, refusing anything an apply must refuse. It is
// the one merge: the file editor writes its text, and a temporary grant
// (Loaded.Overlay) parses it in memory. cache, when not nil, holds the
// files the config names, as a load read them.
func plan(path string, data []byte, tool string, sub, flags []string, o *Options, cache *files) (*Merged, error) {
	if err := checkRequest(sub, flags); err != nil {
		return nil, err
	}
	c, err := parse(path, data, o, cache)
	if err != nil {
		return nil, fmt.Errorf("cannot apply to a config that does not load; fix it first: %w", err)
	}
	t := c.Tools[tool]
	if t == nil {
		return nil, unknownTool(tool)
	}
	if err := c.checkDeny(tool, t, sub); err != nil {
		return nil, err
	}

	a := Applied{Tool: tool, Subcommand: slices.Clone(sub)}
	requested := dedup(flags)
	idx := slices.IndexFunc(t.Allow, func(r *policy.AllowRule) bool { return slices.Equal(r.Subcommand, sub) })
	if idx >= 0 {
		r := t.Allow[idx]
		for _, f := range requested {
			switch {
			case r.Denies(f):
				return nil, c.deniedFlag(tool, idx, r, f)
			case slices.Contains(r.Flags, f):
				a.Present = append(a.Present, f)
			default:
				a.Added = append(a.Added, f)
			}
		}
		if !a.Changed() {
			return &Merged{Out: data, Rule: unseeded(r), Applied: a, config: c}, nil
		}
	} else {
		if len(sub) == 0 {
			return nil, &applyError{ErrInvalidRequest, fmt.Sprintf(
				"a request with no subcommand can only add flags to the rule for %s itself (subcommand: []), and the config has none", tool)}
		}
		a.NewRule = true
	}
	add := a.Added
	if a.NewRule {
		add = newRuleFlags(requested)
	}

	out, err := spliceRequest(data, tool, idx, sub, add)
	if err != nil {
		return nil, unsupported(path, err)
	}
	if len(out) > maxConfigBytes {
		return nil, fmt.Errorf("%s: the merged config would be %d bytes; at most %d are read", path, len(out), maxConfigBytes)
	}
	after, err := parse(path, out, o, cache)
	if err != nil {
		return nil, fmt.Errorf("the merged config would be invalid (lines as merged): %w", err)
	}
	if err := sameChange(c, after, tool, idx, sub, add); err != nil {
		return nil, unsupported(path, err)
	}
	for _, r := range after.Tools[tool].Allow {
		if slices.Equal(r.Subcommand, sub) {
			return &Merged{Out: out, Rule: unseeded(r), Applied: a, config: after}, nil
		}
	}
	return nil, unsupported(path, errors.New("the merged rule is missing"))
}

// checkRequest refuses flags and tokens no rule could hold, before the
// config is even read: they come from the assistant.
func checkRequest(sub, flags []string) error {
	for _, tok := range sub {
		if !policy.ValidToken(tok) {
			return &applyError{ErrInvalidRequest, fmt.Sprintf("subcommand token %s must match [A-Za-z0-9][A-Za-z0-9_-]*", quoteToken(tok, true))}
		}
	}
	for _, f := range flags {
		if !policy.ValidFlag(f) {
			return &applyError{ErrInvalidRequest, fmt.Sprintf("%s is not a flag: want -X (one letter or digit) or --name", quoteToken(f, true))}
		}
	}
	return nil
}

func unknownTool(tool string) error {
	if !policy.ValidToken(tool) {
		return &applyError{ErrUnknownTool, fmt.Sprintf("tool %s is not in the config, and is not a valid tool name", quoteToken(tool, true))}
	}
	return &applyError{ErrUnknownTool, fmt.Sprintf("tool %s is not in the config; add it first (wraptool config add %s)", quoteToken(tool, false), tool)}
}

// checkDeny refuses a subcommand that one of the tool's deny rules covers:
// deny rules match by token prefix, as the policy matches them.
func (c *Config) checkDeny(tool string, t *Tool, sub []string) error {
	for i, d := range t.Deny {
		if len(d.Subcommand) > len(sub) || !slices.Equal(d.Subcommand, sub[:len(d.Subcommand)]) {
			continue
		}
		p := fieldPath{}.key("tools").key(tool).key("deny").index(i)
		return &applyError{ErrDeniedSubcommand, fmt.Sprintf(
			"deny rule %s (subcommand: %s) at %s:%d covers %s; deny wins over allow, so remove or narrow that rule by hand first",
			p, flowList(d.Subcommand, 0), c.File, c.lines.at(p).line, command(tool, sub))}
	}
	return nil
}

// deniedFlag refuses a flag the rule denies.
func (c *Config) deniedFlag(tool string, idx int, r *policy.AllowRule, f string) error {
	p := fieldPath{}.key("tools").key(tool).key("allow").index(idx)
	where := p.key("deny_flags")
	if !slices.Contains(r.DenyFlags, f) {
		where = p.key("flag_constraints").key(f)
	}
	return &applyError{ErrDeniedFlag, fmt.Sprintf(
		"flag %s is denied by %s at %s:%d; listing it would change nothing, so lift that deny by hand first",
		f, where, c.File, c.lines.at(where).line)}
}

// newRuleFlags are the flags written into a new rule: the requested ones,
// but not a help flag the load seeds into every rule anyway (listing it
// would make it a typed flag instead of a switch that runs alone).
func newRuleFlags(requested []string) []string {
	var written []string
	for _, f := range requested {
		if !policy.IsHelpFlag(f) {
			written = append(written, f)
		}
	}
	probe := &policy.AllowRule{Flags: slices.Clone(written)}
	policy.SeedHelpFlags(probe)
	var out []string
	for _, f := range requested {
		if !policy.IsHelpFlag(f) || !slices.Contains(probe.Seeded, f) {
			out = append(out, f)
		}
	}
	return out
}

func dedup(s []string) []string {
	var out []string
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// unseeded is r as written: its own flags, without the seeded help flags.
func unseeded(r *policy.AllowRule) *policy.AllowRule {
	c := *r
	c.Flags = r.Written()
	c.Seeded = nil
	return &c
}

// sameChange checks that after, the merged config parsed back, differs from
// before in exactly the requested way and nothing else. It is what makes a
// text splice safe to write: a layout the splice misjudged shows up here.
func sameChange(before, after *Config, tool string, idx int, sub, add []string) error {
	want := before.Tools[tool]
	if idx >= 0 {
		want.Allow[idx].Flags = append(want.Allow[idx].Written(), add...)
		want.Allow[idx].Seeded = nil
	} else {
		zero := 0
		want.Allow = append(want.Allow, &policy.AllowRule{
			Subcommand: sub, Flags: add, ArgConstraints: policy.ArgConstraints{PositionalMax: &zero},
		})
	}
	switch {
	case !reflect.DeepEqual(unseededTools(before), unseededTools(after)):
		return errors.New("the edit does not parse back to the requested rule alone")
	case !reflect.DeepEqual(before.MCP, after.MCP), !reflect.DeepEqual(before.Admin, after.Admin),
		!reflect.DeepEqual(before.MCPServers, after.MCPServers):
		return errors.New("the edit changed settings outside the tool")
	}
	return nil
}

// unseededTools copies c's tools with their rules as written (help flags
// not seeded), leaving c as it is: after is kept, seeded, for the overlay.
func unseededTools(c *Config) map[string]*Tool {
	out := make(map[string]*Tool, len(c.Tools))
	for name, t := range c.Tools {
		cp := *t
		cp.Allow = make([]*policy.AllowRule, len(t.Allow))
		for i, r := range t.Allow {
			cp.Allow[i] = unseeded(r)
		}
		out[name] = &cp
	}
	return out
}

// applyError is a refusal with a sentence of its own that still matches
// its sentinel with errors.Is.
type applyError struct {
	err error
	msg string
}

func (e *applyError) Error() string { return e.msg }
func (e *applyError) Unwrap() error { return e.err }

func unsupported(path string, cause error) error {
	return &applyError{ErrUnsupportedLayout, fmt.Sprintf(
		"%s: cannot merge the request into this file's layout in place (%v); add it by hand", path, cause)}
}

// quoteToken shows a token the assistant chose in a message: 'gh' when it
// is plain printable ASCII, else Go-quoted with every non-ASCII character
// escaped ("g\u0456t"), cut after 200 characters, so a request can neither
// repaint the operator's terminal nor pass for another name. always quotes
// with double quotes.
func quoteToken(s string, always bool) string {
	cut := ""
	if utf8.RuneCountInString(s) > 200 {
		cut = "…(" + strconv.Itoa(len(s)) + " bytes)"
		s = string([]rune(s)[:200])
	}
	plain := !always
	for i := 0; i < len(s) && plain; i++ {
		plain = s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\'' && s[i] != '\\'
	}
	if plain {
		return "'" + s + "'" + cut
	}
	return strconv.QuoteToASCII(s) + cut
}
