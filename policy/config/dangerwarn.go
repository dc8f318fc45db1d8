package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/danger"
)

// DangerWarnings lists, in document order, what an allow rule exposes that
// can hand the operator's credentials away although the rule allows
// exactly what it says (see package danger): each allowed flag the
// catalog classes that no flag_constraints pattern holds, and each rule
// whose subcommand the catalog classes by itself (gh auth token). A flag
// that is seeded or denied, and a rule a deny rule covers, expose nothing
// and are not warned about. A long flag that abbreviates a catalogued one
// (--endpoint for --endpoint-url) is warned about as that flag, since
// getopt-style parsers take unambiguous prefixes. Nothing here runs a
// tool; the catalog is looked up by the tool's binary (danger.CLI).
func (c *Config) DangerWarnings() []Warning { return c.dangerWarnings(dangerCatalog{}) }

// catalog is what the danger warnings read of package danger, so a test
// can give entries the catalog does not hold yet.
type catalog interface {
	LookupFlag(cli string, sub []string, flag string) danger.Finding
	LookupSubcommand(cli string, sub []string) danger.Finding
	Entries() []danger.Entry
}

// dangerCatalog is package danger's catalog.
type dangerCatalog struct{}

func (dangerCatalog) LookupFlag(cli string, sub []string, flag string) danger.Finding {
	return danger.LookupFlag(cli, sub, flag)
}
func (dangerCatalog) LookupSubcommand(cli string, sub []string) danger.Finding {
	return danger.LookupSubcommand(cli, sub)
}
func (dangerCatalog) Entries() []danger.Entry { return danger.Entries() }

// dangerWarnings is DangerWarnings by cat.
func (c *Config) dangerWarnings(cat catalog) []Warning {
	var out []Warning
	warn := func(p fieldPath, msg string) {
		out = append(out, Warning{File: c.File, Line: c.lines.at(p).line, Path: p.String(), Msg: msg})
	}
	entries := cat.Entries() // once: the catalog hands out a copy
	for _, name := range sortedKeys(c.Tools) {
		t := c.Tools[name]
		if t == nil {
			continue
		}
		cli := danger.CLI(name, t.Binary)
		var subs []danger.Entry // the CLI's subcommand entries
		for _, e := range entries {
			if e.CLI == cli && e.Flag == "" {
				subs = append(subs, e)
			}
		}
		tp := fieldPath{}.key("tools").key(name)
		for i, r := range t.Allow {
			if r == nil || deniedRule(t.Deny, r.Subcommand) {
				continue
			}
			rp := tp.key("allow").index(i)
			if f := cat.LookupSubcommand(cli, r.Subcommand); len(f.Classes) > 0 {
				warn(rp.key("subcommand"), subcommandDanger(name, r.Subcommand, f))
			} else if reach := reachable(subs, t.Deny, r); len(reach) > 0 {
				warn(rp.key("subcommand"), reachDanger(name, r.Subcommand, reach))
			}
			for j, flag := range r.Flags {
				if slices.Contains(r.Seeded, flag) || r.Denies(flag) {
					continue
				}
				k := r.FlagConstraints[flag]
				f, as := flagFinding(cat, cli, r.Subcommand, flag)
				// And under the longer subcommands the positionals reach:
				// kubectl config given view runs config --raw view.
				f.Classes = f.Classes.Union(danger.ReachedFlag(cli, r.Subcommand, flag, r.ArgConstraints.CanBe))
				if len(f.Classes) == 0 {
					continue
				}
				if k != nil && k.Pattern != "" {
					if !danger.PatternHolds(k.Pattern, f.Classes) {
						warn(rp.key("flag_constraints").key(flag).key("pattern"), looseDanger(flag, as, k.Pattern, f.Classes))
					}
					continue
				}
				warn(rp.key("flags").index(j), flagDanger(flag, as, f.Classes, isSwitch(flag, k)))
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Warning) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return strings.Compare(a.Path, b.Path)
	})
	return out
}

// reachable lists the catalogued subcommands rule r reaches through its
// positional arguments: wraptool runs the rule's subcommand followed by
// them, so a rule for gh auth that takes any positional runs gh auth
// token. An entry a deny rule covers is not reached (deny rules match the
// whole command, positionals included), nor one the positional limit or
// patterns keep out. subs are the CLI's subcommand entries.
func reachable(subs []danger.Entry, deny []*policy.DenyRule, r *policy.AllowRule) []danger.Entry {
	var out []danger.Entry
	for _, e := range subs {
		if len(e.Subcommand) <= len(r.Subcommand) ||
			!slices.Equal(e.Subcommand[:len(r.Subcommand)], r.Subcommand) || deniedRule(deny, e.Subcommand) {
			continue
		}
		if r.ArgConstraints.CanBe(e.Subcommand[len(r.Subcommand):]) {
			out = append(out, e)
		}
	}
	return out
}

// reachDanger is the warning for a rule whose positional arguments reach
// catalogued subcommands.
func reachDanger(tool string, sub []string, reach []danger.Entry) string {
	var cs danger.Classes
	var names, denies []string
	for _, e := range reach {
		cs = cs.Union(e.Classes)
		names = append(names, strings.TrimSpace(tool+" "+strings.Join(e.Subcommand, " ")))
		denies = append(denies, "{subcommand: "+flowList(e.Subcommand, 0)+"}")
	}
	const most = 4
	if len(names) > most {
		names = append(names[:most], fmt.Sprintf("and %d more", len(names)-most))
		denies = append(denies[:most], "…")
	}
	cmd := strings.TrimSpace(tool + " " + strings.Join(sub, " "))
	return fmt.Sprintf("%s with positional arguments reaches %s, which is %s: it %s; hold the positionals "+
		"(arg_constraints: { positional_max: 0 }, or patterns that leave these out), or add deny rules (deny: [%s])",
		cmd, strings.Join(names, ", "), cs.String(), joinEffects(cs), strings.Join(denies, ", "))
}

// deniedRule reports whether a deny rule covers an allow rule for sub: a
// deny rule's tokens are a prefix of sub (deny: [auth] covers auth token).
func deniedRule(deny []*policy.DenyRule, sub []string) bool {
	return slices.ContainsFunc(deny, func(d *policy.DenyRule) bool {
		return d != nil && len(d.Subcommand) <= len(sub) && slices.Equal(sub[:len(d.Subcommand)], d.Subcommand)
	})
}

// flagFinding is what the catalog says about flag under sub, and the
// catalogued flag it stands for when the CLI takes it as an abbreviation
// of that one ("--endpoint-url" for "--endpoint-u"; the catalog knows
// which CLIs do). as is "" when the finding is the flag's own.
func flagFinding(cat catalog, cli string, sub []string, flag string) (f danger.Finding, as string) {
	f = cat.LookupFlag(cli, sub, flag)
	if rest, ok := strings.CutPrefix(f.Why, "abbreviates "); ok {
		as, _, _ = strings.Cut(rest, ":")
	}
	return f, as
}

// isSwitch reports whether flag takes no value, so no pattern can hold
// it: its constraint types it boolean, or its name is a well-known switch.
func isSwitch(flag string, k *policy.Constraint) bool {
	if k != nil && k.Type != "" {
		return k.Type == "boolean"
	}
	return policy.LooksBoolean(flag)
}

// flagDanger is the warning for an allowed flag the catalog classes.
func flagDanger(flag, as string, cs danger.Classes, sw bool) string {
	shown := quoteFlag(flag)
	what := shown
	if as != "" {
		what = shown + " abbreviates " + as + ", which"
	}
	head := fmt.Sprintf("%s is %s: it %s", what, cs.String(), joinEffects(cs))
	if sw {
		return head + ", and a switch takes no pattern; leave it out"
	}
	return head + ", and nothing holds its value; " + fixFor(cs, flag)
}

// looseDanger is the warning for a catalogued flag whose pattern lets the
// escapes of its classes through ('.*', 'git-receive-pack.*', a pattern
// that takes a host hidden in a URL).
func looseDanger(flag, as, pattern string, cs danger.Classes) string {
	what := quoteFlag(flag)
	if as != "" {
		what += " abbreviates " + as + ", which"
	}
	if cs.Has(danger.PrintsCredentials) {
		return fmt.Sprintf("%s is %s: it %s, and no pattern can hold that; leave it out", what, cs.String(), joinEffects(cs))
	}
	return fmt.Sprintf("%s is %s: it %s, and its pattern %s lets through more than you mean (another host, shell syntax, "+
		"a path elsewhere or any long value); spell out what it may be (see the danger catalog's docs), or leave it out",
		what, cs.String(), joinEffects(cs), quoteToken(pattern, false))
}

// subcommandDanger is the warning for a rule whose subcommand the catalog
// classes by itself.
func subcommandDanger(tool string, sub []string, f danger.Finding) string {
	cmd := strings.TrimSpace(tool + " " + strings.Join(sub, " "))
	return fmt.Sprintf("%s is %s: it %s, whatever flags the rule allows (%s); remove the rule, and add a deny rule "+
		"(deny: [{subcommand: %s}]) so that no rule allows it",
		cmd, f.Classes.String(), joinEffects(f.Classes), CommentText(f.Why, 200), flowList(sub, 0))
}

// joinEffects joins the classes' effects as a sentence does: "a", "a and
// b", "a, b and c".
func joinEffects(cs danger.Classes) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.Effect()
	}
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// fixOrder is which class's fix a flag of several classes gets: the one
// that constrains most (a flag that prints credentials cannot be held by
// any pattern; one that runs code only by a pattern naming what may run).
var fixOrder = []danger.Class{danger.PrintsCredentials, danger.RunsCode, danger.SendsCredentials, danger.WritesFiles, danger.ReadsFiles}

// fixFor is the fix for a flag of classes cs, naming the flag's
// flag_constraints entry where the fix is a pattern.
func fixFor(cs danger.Classes, flag string) string {
	fix := "leave it out"
	for _, c := range fixOrder {
		if slices.Contains(cs, c) {
			fix = c.Fix()
			break
		}
	}
	name := danger.FlagName(flag)
	key := strconv.Quote(name)
	if !policy.ValidFlag(name) || len(name) > 200 {
		key = quoteToken(name, true)
	}
	field := "flag_constraints[" + key + "].pattern"
	switch {
	case strings.Contains(fix, "flag_constraints pattern"):
		return strings.Replace(fix, "flag_constraints pattern", field, 1)
	case strings.Contains(fix, "a pattern"):
		return strings.Replace(fix, "a pattern", "a "+field, 1)
	}
	return fix
}

// quoteFlag shows a flag as written when it is a flag's plain spelling,
// else with Go's escapes (control, non-ASCII and invisible characters
// cannot hide in a warning), cut when very long.
func quoteFlag(flag string) string {
	if policy.ValidFlag(flag) && len(flag) <= 200 {
		return flag
	}
	return quoteToken(flag, true)
}
