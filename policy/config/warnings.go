package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/wraptool/wraptool/policy"
)

// Warning is something in a valid config the operator should know about:
// it loads and runs as written, but perhaps not as meant.
type Warning struct {
	// File is the config path as the operator gave it.
	File string
	// Line is 1-based; 0 when the warning has no single line.
	Line int
	// Path is the field path ("tools.git.allow[0].flags[1]").
	Path string
	// Msg says what to look at, in lower case.
	Msg string
}

// String renders "file:line: path: msg", as an *Error does.
func (w Warning) String() string {
	e := Error{File: w.File, Line: w.Line, Path: w.Path, Msg: w.Msg}
	return e.Error()
}

// Warnings lists, in document order, what `config validate` and the server
// warn about in a loaded config: each short flag whose value-taking rests on
// the default alone (its value is then checked like a positional argument,
// see policy.Flag.Unproven), each env file others may read, and each of
// wraptool's protected files (see Protected, with wraptool's own executable
// as self) inside an allowed cwd root or a working_dir, where the folders
// above it cannot take new entries. helps answers from introspection and
// may be nil; o locates the default folders (nil: the real environment).
// Nothing here runs a tool.
func (c *Config) Warnings(helps policy.Helps, o *Options) []Warning {
	var out []Warning
	warn := func(p fieldPath, format string, args ...any) {
		at := c.lines.at(p)
		out = append(out, Warning{File: c.File, Line: at.line, Path: p.String(), Msg: fmt.Sprintf(format, args...)})
	}
	for _, name := range sortedKeys(c.Tools) {
		t := c.Tools[name]
		tp := fieldPath{}.key("tools").key(name)
		for i, f := range t.EnvFiles {
			if readableByOthers(f) {
				warn(tp.key("env_files").index(i), "%s is readable by group or others, and env files usually hold secrets; fix with: chmod 600 %s", f, f)
			}
		}
		for i, r := range t.Allow {
			for j, f := range r.Flags {
				if !policy.IsShortFlag(f) || slices.Contains(r.Seeded, f) || r.Denies(f) {
					continue
				}
				typ, proven := policy.TypeOf(r.FlagConstraints[f], helps, name, r.Subcommand, f)
				if proven || typ != policy.TypeString {
					continue
				}
				warn(tp.key("allow").index(i).key("flags").index(j),
					"%s has no type, so wraptool passes it as \"%s value\" and checks that value like a positional argument "+
						"(a tool that reads %s as a switch would take the value as an argument); say which it is with "+
						"flag_constraints[%s].type: boolean for a switch, string or integer for a value",
					f, f, f, strconv.Quote(f))
			}
		}
	}
	for _, name := range sortedKeys(c.MCPServers) {
		s := c.MCPServers[name]
		sp := fieldPath{}.key("mcp_servers").key(name)
		for i, f := range s.EnvFiles {
			if readableByOthers(f) {
				warn(sp.key("env_files").index(i),
					"%s is readable by group or others, and env files usually hold secrets; fix with: chmod 600 %s", f, f)
			}
		}
		for i, ref := range s.Allow {
			if ref.Tool == "" {
				continue
			}
			if problem := policy.ExposedNameProblem(s.NamePrefix + "_" + ref.Tool); problem != "" {
				warn(sp.key("allow").index(i).key("tool"), "is not exposed: %s", problem)
			}
		}
	}
	c.protectedWarnings(o, warn)
	slices.SortStableFunc(out, func(a, b Warning) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return strings.Compare(a.Path, b.Path)
	})
	return out
}

// PositionalWarnings lists, in document order, each allow rule that takes
// positional arguments with neither a limit nor a pattern: every one
// reaches the tool as written, which the operator may not have meant.
// `config validate` prints them; the server does not log them on every
// reload, since a rule may take free positionals on purpose.
func (c *Config) PositionalWarnings() []Warning {
	var out []Warning
	for _, name := range sortedKeys(c.Tools) {
		for i, r := range c.Tools[name].Allow {
			ac := r.ArgConstraints
			if ac.PositionalMax != nil || ac.Pattern != "" || len(ac.Patterns) != 0 {
				continue
			}
			p := fieldPath{}.key("tools").key(name).key("allow").index(i)
			out = append(out, Warning{File: c.File, Line: c.lines.at(p).line, Path: p.String(), Msg: fmt.Sprintf(
				"rule %s (subcommand %s) takes any number of positional arguments, and each reaches %s as written "+
					"(git push origin +HEAD:main force-pushes without --force); limit them with "+
					"arg_constraints: { positional_max: 0 } for none, or a positional_max and a pattern or patterns "+
					"that say what may pass",
				policy.ToolName(name, r.Subcommand), flowList(r.Subcommand, 0), name)})
		}
	}
	slices.SortStableFunc(out, func(a, b Warning) int { return a.Line - b.Line })
	return out
}
