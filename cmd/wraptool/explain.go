package main

import (
	"slices"
	"strings"

	"github.com/wraptool/wraptool/policy/danger"
)

// touch is one thing a checked command line touches that the danger
// catalog names, as check --explain prints it.
type touch struct {
	// Flag is the flag (without its value); "" for the subcommand itself.
	Flag string `json:"flag,omitempty"`
	// Subcommand is set, to the subcommand's words, for the subcommand's
	// own finding.
	Subcommand string `json:"subcommand,omitempty"`
	// Classes are the catalog's classes for it.
	Classes []string `json:"classes"`
	// Effect is what the classes let the assistant do.
	Effect string `json:"effect"`
	// Why is the catalog's line for this tool's flag or subcommand.
	Why string `json:"why"`
	// Held says a pattern of the deciding rule holds the flag's value.
	Held bool `json:"held"`
}

// explain lists what v's command line touches: its subcommand (as the
// deciding rule has it, else as far as the rules' paths go) and each word
// after it that is a flag. The classes come from the catalog by the
// tool's binary, never from the words' spelling beyond the flag's name.
func (c *checker) explain(v verdict) []touch {
	tool := v.words[0]
	sub := v.missing
	if v.rule != nil {
		sub = v.rule.Subcommand()
	}
	binary := ""
	if t := c.cfg.Tools[tool]; t != nil {
		binary = t.Binary
	}
	var flags []string
	if len(v.words) > 1+len(sub) {
		for _, w := range v.words[1+len(sub):] {
			if w == "--" {
				break
			}
			if strings.HasPrefix(w, "-") && w != "-" {
				flags = append(flags, w)
			}
		}
	}
	written := c.writtenRule(tool, sub)
	cli := danger.CLI(tool, binary)
	touches := danger.Explain(cli, sub, flags)
	if len(touches) == 0 || touches[0].Flag != "" {
		// The rule's subcommand and the positionals after it run as one
		// command line: a rule for gh auth given token runs gh auth token.
		if path, f := positionalPath(cli, sub, v.words[min(1+len(sub), len(v.words)):]); len(f.Classes) > 0 {
			sub = path
			touches = append([]danger.Touch{{Finding: f}}, touches...)
		}
	}
	var out []touch
	for _, t := range touches {
		e := touch{Flag: t.Flag, Classes: t.Classes.Names(), Effect: t.Classes.Effect(), Why: t.Why}
		if t.Flag == "" {
			e.Subcommand = strings.Join(sub, " ")
		} else if written != nil {
			if fc := written.FlagConstraints[t.Flag]; fc != nil && fc.Pattern != "" && danger.PatternHolds(fc.Pattern, t.Classes) {
				e.Held = true
			}
		}
		out = append(out, e)
	}
	return out
}

// explainText renders touches for the terminal, after the verdict.
func explainText(touches []touch) string {
	if len(touches) == 0 {
		return "explain: nothing in this command line is in the danger catalog\n"
	}
	var b strings.Builder
	b.WriteString("explain: what this command line touches that can hand your credentials away:\n")
	for _, t := range touches {
		what := shellWord(t.Flag)
		if t.Flag == "" {
			what = "the subcommand " + shellWord(t.Subcommand)
		}
		b.WriteString("  " + what + "  " + strings.Join(t.Classes, ", ") + ": " + t.Effect)
		switch {
		case t.Flag == "":
		case t.Held:
			b.WriteString(" (a pattern holds its value)")
		default:
			b.WriteString(" (no pattern holds its value)")
		}
		b.WriteString("\n    " + t.Why + "\n")
	}
	return b.String()
}

// positionalPath finds a catalogued subcommand that sub and the words
// after it reach: the leading words that are not flags, else every such
// word (a flag's value among them can only add a finding, never hide
// one). It returns the path and what the catalog says of it.
func positionalPath(cli string, sub, rest []string) ([]string, danger.Finding) {
	var leading, all []string
	inLeading := true
	for _, w := range rest {
		if w == "--" {
			continue
		}
		if strings.HasPrefix(w, "-") {
			inLeading = false
			continue
		}
		if inLeading {
			leading = append(leading, w)
		}
		all = append(all, w)
	}
	for _, words := range [][]string{leading, all} {
		for n := len(words); n > 0; n-- {
			path := append(slices.Clone(sub), words[:n]...)
			if f := danger.LookupSubcommand(cli, path); len(f.Classes) > 0 {
				return path, f
			}
		}
	}
	return nil, danger.Finding{}
}
