package config

import (
	"regexp"
	"slices"
	"strings"

	"github.com/wraptool/wraptool/policy"
)

// The checks of the tools: and mcp_servers: sections: binaries, allow and
// deny rules, flags and their constraints, upstream servers.

func (v *validator) tool(name string, t *Tool) {
	p := fieldPath{}.key("tools").key(name)
	v.name(p, "tool name", name)
	switch {
	case t.Binary == "":
		v.fail(p.key("binary"), "is required: the absolute path of the tool's executable")
	case !strings.HasPrefix(t.Binary, "/"):
		v.fail(p.key("binary"), "must be an absolute path, got %q", t.Binary)
	default:
		v.executable(p.key("binary"), t.Binary)
	}
	if t.Introspection.OverridesFile != "" {
		// Overrides decide which flags take values.
		v.private(p.key("introspection").key("overrides_file"), t.Introspection.OverridesFile, decides)
	}
	if t.WorkingDir != "" {
		v.dir(p.key("working_dir"), t.WorkingDir)
	}
	v.positive(p.key("timeout"), t.Timeout.Seconds())
	v.positive(p.key("introspection").key("cache_ttl"), t.Introspection.CacheTTL.Seconds())
	v.env(p, t.Env, t.EnvFiles)
	for i, r := range t.Allow {
		v.allow(name, p.key("allow").index(i), r)
	}
	for i, r := range t.Deny {
		rp := p.key("deny").index(i)
		for j, tok := range r.Subcommand {
			v.token(rp.key("subcommand").index(j), "subcommand token", tok)
		}
	}
}

func (v *validator) allow(tool string, p fieldPath, r *policy.AllowRule) {
	for j, tok := range r.Subcommand {
		v.token(p.key("subcommand").index(j), "subcommand token", tok)
	}
	v.expose(p, policy.ToolName(tool, r.Subcommand))

	props := map[string]string{}
	for j, f := range r.Flags {
		fp := p.key("flags").index(j)
		if !v.flag(fp, f) {
			continue
		}
		prop := policy.PropertyName(f)
		switch other, dup := props[prop]; {
		case dup && other == f:
			v.fail(fp, "flag %s is listed twice", f)
		case dup:
			v.fail(fp, "flags %s and %s give the same schema property %q", other, f, prop)
		case prop == policy.ArgsProperty || prop == policy.CwdProperty:
			v.fail(fp, "flag %s would become the schema property %q, which wraptool reserves for the %s", f, prop, reservedUse(prop))
		default:
			props[prop] = f
		}
	}
	for j, f := range r.DenyFlags {
		v.flag(p.key("deny_flags").index(j), f)
	}
	for _, f := range sortedKeys(r.FlagConstraints) {
		cp := p.key("flag_constraints").key(f)
		if !v.flag(cp, f) {
			continue
		}
		v.constraint(cp, f, r.FlagConstraints[f], r)
	}
	ap := p.key("arg_constraints")
	if n := r.ArgConstraints.PositionalMax; n != nil && *n < 0 {
		v.fail(ap.key("positional_max"), "must not be negative, got %d", *n)
	}
	if r.ArgConstraints.Pattern != "" {
		if len(r.ArgConstraints.Patterns) > 0 {
			v.fail(ap.key("pattern"), "pattern and patterns do not combine: use patterns alone (its last entry applies to the rest)")
		}
		v.pattern(ap.key("pattern"), r.ArgConstraints.Pattern)
	}
	for j, pat := range r.ArgConstraints.Patterns {
		if pat == "" {
			v.fail(ap.key("patterns").index(j), "must not be empty: it would match only an empty argument")
			continue
		}
		v.pattern(ap.key("patterns").index(j), pat)
	}
}

// pattern checks an RE2 expression as it will be applied: anchored, so it
// must match a whole value.
func (v *validator) pattern(p fieldPath, pat string) {
	err, seen := v.patterns[pat]
	if !seen {
		_, err = regexp.Compile(policy.AnchorPattern(pat))
		if v.patterns == nil {
			v.patterns = map[string]error{}
		}
		v.patterns[pat] = err
	}
	if err != nil {
		v.fail(p, "invalid regular expression: %v", regexpReason(err))
	}
}

func (v *validator) constraint(p fieldPath, flag string, k *policy.Constraint, r *policy.AllowRule) {
	switch k.Type {
	case "", "integer", "boolean", "string":
	default:
		v.fail(p.key("type"), "unknown type %q (want integer, boolean or string)", k.Type)
	}
	if k.Min != nil && k.Max != nil && *k.Min > *k.Max {
		v.fail(p, "min %d is greater than max %d", *k.Min, *k.Max)
	}
	if (k.Min != nil || k.Max != nil) && (k.Type == "boolean" || k.Type == "string") {
		v.fail(p, "min and max apply only to integer flags, but type is %s", k.Type)
	}
	if k.Pattern != "" {
		if k.Type == "boolean" {
			v.fail(p.key("pattern"), "a pattern does not apply to a boolean flag")
		}
		v.pattern(p.key("pattern"), k.Pattern)
	}
	if k.Redact {
		switch {
		case k.Type == "boolean":
			v.fail(p.key("redact"), "flag %s is a boolean: it has no value to redact", flag)
		case !slices.Contains(r.Flags, flag) && !k.Deny && !slices.Contains(r.DenyFlags, flag):
			v.fail(p.key("redact"), "flag %s is not in flags or deny_flags, so no value of it is ever shown", flag)
		}
	}
	if slices.Contains(r.Seeded, flag) && (k.Type != "" || k.Min != nil || k.Max != nil || k.Pattern != "" || k.Required || k.Redact) {
		v.fail(p, "constrains the help flag %s, which the rule does not list: a seeded help flag is a switch that runs alone; "+
			"list %s in flags to give it a type (on psql, -h is the host), or use deny: true to refuse it", flag, flag)
	}
	if k.Required {
		switch {
		case k.Deny || slices.Contains(r.DenyFlags, flag):
			v.fail(p.key("required"), "flag %s is both required and denied, so no call could pass", flag)
		case !slices.Contains(r.Flags, flag):
			v.fail(p.key("required"), "flag %s is required but not in flags, so no call could pass", flag)
		}
	}
}

func (v *validator) server(name string, s *MCPServer) {
	p := fieldPath{}.key("mcp_servers").key(name)
	v.name(p, "server name", name)
	if s.NamePrefix != name {
		v.name(p.key("name_prefix"), "name_prefix", s.NamePrefix)
	}
	if s.Command == "" {
		v.fail(p.key("command"), "is required")
	} else if cmd, ok := lookCommand(s.Command, s.WorkingDir, v.c.opts, s.FileEnv, s.Env); ok && exists(cmd) {
		// Checked where the upstream will find it (after its PATH
		// lookup); a command not found fails its start, with the reason.
		v.program(p.key("command"), cmd)
	}
	// A script argument (server.py) is taken from the upstream's working
	// directory, where the process opens it.
	v.scripts(s.Args, s.WorkingDir, p.key("args").index)
	if s.WorkingDir != "" {
		v.dir(p.key("working_dir"), s.WorkingDir)
	}
	v.positive(p.key("timeout"), s.Timeout.Seconds())
	v.positive(p.key("init_timeout"), s.InitTimeout.Seconds())
	v.env(p, s.Env, s.EnvFiles)
	seen := map[string]bool{}
	for i, ref := range s.Allow {
		rp := p.key("allow").index(i).key("tool")
		switch {
		case ref.Tool == "":
			v.fail(rp, "is required: the upstream tool's exact name")
		case seen[ref.Tool]:
			v.fail(rp, "tool %q is listed twice", ref.Tool)
		default:
			seen[ref.Tool] = true
			// A name that breaks the name rules is not exposed (a warning,
			// see Warnings), so it cannot collide either.
			if exposed := s.NamePrefix + "_" + ref.Tool; policy.ExposedNameProblem(exposed) == "" {
				v.expose(rp, exposed)
			}
		}
	}
	for i, ref := range s.Deny {
		if ref.Tool == "" {
			v.fail(p.key("deny").index(i).key("tool"), "is required: the upstream tool's exact name")
		}
	}
}

func (v *validator) env(p fieldPath, env map[string]string, files []string) {
	for _, k := range sortedKeys(env) {
		kp := p.key("env").key(k)
		switch {
		case !ValidEnvName(k):
			v.fail(kp, "%q is not a valid variable name: want [A-Za-z_][A-Za-z0-9_]*", k)
		case strings.ContainsRune(env[k], 0):
			v.fail(kp, "the value contains a NUL byte")
		}
	}
	for i, f := range files {
		if _, err := v.c.readEnvFile(f); err != nil {
			v.fail(p.key("env_files").index(i), "%v", err)
			continue
		}
		v.private(p.key("env_files").index(i), f, decides)
	}
}

func reservedUse(prop string) string {
	if prop == policy.ArgsProperty {
		return "positional arguments"
	}
	return "working directory"
}

func regexpReason(err error) string {
	return strings.TrimPrefix(err.Error(), "error parsing regexp: ")
}
