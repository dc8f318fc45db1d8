package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/toolset/runner"
)

// Validate runs every semantic check of the contract on a loaded config and
// returns the first problem in document order as an *Error, or nil. It reads
// the filesystem (binaries, folders, env and token files) but writes nothing,
// and may be called again on a config Load returned.
func (c *Config) Validate() error {
	if errs := c.problems(); len(errs) > 0 {
		return first(errs)
	}
	return nil
}

// problems runs every check and returns all problems found, in no order.
func (c *Config) problems() []*Error {
	v := &validator{c: c}
	v.mcp()
	v.admin()
	for _, name := range sortedKeys(c.Tools) {
		v.tool(name, c.Tools[name])
	}
	for _, name := range sortedKeys(c.MCPServers) {
		v.server(name, c.MCPServers[name])
	}
	v.collisions()
	return v.errs
}

type validator struct {
	c    *Config
	errs []*Error
	// exposed collects every MCP tool name the config would produce, for
	// the collision check once all are known.
	exposed []exposedName
	// patterns memoizes each pattern's compile error: a large config
	// repeats a few patterns across thousands of rules, and compiling
	// each copy was most of a load's time and garbage.
	patterns map[string]error
}

type exposedName struct {
	name string
	path fieldPath
	at   pos // where path was written, looked up once for the sort
}

func (v *validator) fail(p fieldPath, format string, args ...any) {
	v.errs = append(v.errs, v.c.errorAt(p, format, args...))
}

func (v *validator) mcp() {
	m, p := &v.c.MCP, fieldPath{}.key("mcp")
	switch m.Transport {
	case "sse", "unix":
	default:
		v.fail(p.key("transport"), "unknown transport %q (want sse or unix)", m.Transport)
	}
	switch {
	case m.Listen == "":
		v.fail(p.key("listen"), "is required: host:port for sse, a socket path for unix")
	case m.Transport == "sse":
		host, err := splitHostPort(m.Listen)
		if err != nil {
			v.fail(p.key("listen"), "%v", err)
		} else if m.AuthTokenFile == "" && !IsLoopback(host) {
			v.fail(p.key("listen"), "%s is not a loopback address, so mcp.auth_token_file is required", m.Listen)
		}
	}
	switch m.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		v.fail(p.key("log_level"), "unknown log level %q (want debug, info, warn or error)", m.LogLevel)
	}
	switch m.Confinement {
	case ConfinementRequired, ConfinementOff:
	default:
		v.fail(p.key("confinement"), "unknown confinement %q (want %s or %s)", m.Confinement, ConfinementRequired, ConfinementOff)
	}
	for i, r := range m.AllowedCwdRoots {
		v.dir(p.key("allowed_cwd_roots").index(i), r)
	}
	if m.MaxConcurrentCalls < 1 {
		v.fail(p.key("max_concurrent_calls"), "must be at least 1, got %d", m.MaxConcurrentCalls)
	}
	if info, err := os.Stat(m.RequestLog); err == nil && info.IsDir() {
		v.fail(p.key("request_log"), "%s is a directory", m.RequestLog)
	} else {
		// The request log carries decisions (and grants): it decides what
		// runs, like the config.
		v.private(p.key("request_log"), m.RequestLog, decides)
		// The grants key signs every grant: a key others may read lets
		// them forge one.
		v.private(p.key("request_log"), GrantsKeyPath(m.RequestLog), secret)
	}
	v.auditLog(p.key("audit_log"), m)
	v.tokenFile(p.key("auth_token_file"), m.AuthTokenFile)
	v.onRequest(p.key("on_request"), m.OnRequest)
	names := map[string]bool{}
	for i, ec := range m.ElicitClients {
		ep := p.key("elicit_clients").index(i)
		switch {
		case ec.Name == "":
			v.fail(ep.key("name"), "is required: it is shown in the client's prompt and recorded with its decisions")
		case !validClientName(ec.Name):
			v.fail(ep.key("name"), "%q must be 1 to 64 characters: letters, digits, spaces and _ . - (it is shown in the client's prompt)", ec.Name)
		case names[ec.Name]:
			v.fail(ep.key("name"), "%q is listed twice", ec.Name)
		}
		names[ec.Name] = true
		if ec.TokenFile == "" {
			v.fail(ep.key("token_file"), "is required: the client's own bearer token")
			continue
		}
		v.tokenFile(ep.key("token_file"), ec.TokenFile)
	}
	v.distinctTokens()
}

// auditLog checks mcp.audit_log: a file of its own, not the request log
// (their lines differ, and readers of either would skip the other's), nor
// a directory.
func (v *validator) auditLog(p fieldPath, m *MCP) {
	if m.AuditLog == AuditOff || m.AuditLog == "" {
		return
	}
	if same(m.AuditLog, m.RequestLog) {
		v.fail(p, "%s is the request log; the audit log needs a file of its own (or \"off\")", m.AuditLog)
		return
	}
	if info, err := os.Stat(m.AuditLog); err == nil && info.IsDir() {
		v.fail(p, "%s is a directory", m.AuditLog)
	}
}

// same reports whether a and b name one file: equal once cleaned, or the
// same file on disk.
func same(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ai, aerr := os.Stat(a)
	bi, berr := os.Stat(b)
	return aerr == nil && berr == nil && os.SameFile(ai, bi)
}

// validClientName accepts what may stand in a prompt and a decision line:
// printable ASCII words, nothing that could fake a line or hide text.
func validClientName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ' ' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// distinctTokens refuses two token files (MCP, admin, elicitation clients)
// that are the same file or hold the same token: a token identifies who
// may do what, so one must never stand for two.
func (v *validator) distinctTokens() {
	type named struct {
		path fieldPath
		file string
	}
	var all []named
	if f := v.c.MCP.AuthTokenFile; f != "" {
		all = append(all, named{fieldPath{}.key("mcp").key("auth_token_file"), f})
	}
	for i, ec := range v.c.MCP.ElicitClients {
		if ec.TokenFile != "" {
			all = append(all, named{fieldPath{}.key("mcp").key("elicit_clients").index(i).key("token_file"), ec.TokenFile})
		}
	}
	if f := v.c.Admin.AuthTokenFile; f != "" {
		// The admin pair is checked by admin(), with its own message.
		all = append(all, named{fieldPath{}.key("admin").key("auth_token_file"), f})
	}
	for i := 1; i < len(all); i++ {
		for j := 0; j < i; j++ {
			a, b := all[j], all[i]
			if a.path.String() == "mcp.auth_token_file" && b.path.String() == "admin.auth_token_file" {
				continue
			}
			if a.file == b.file {
				v.fail(b.path, "must not be the same file as %s: each token must differ", a.path)
				continue
			}
			at, aerr := v.c.readToken(a.file)
			bt, berr := v.c.readToken(b.file)
			if aerr == nil && berr == nil && at == bt {
				v.fail(b.path, "holds the same token as %s: each token must differ", a.path)
			}
		}
	}
}

// summaryPlaceholders were the hook's placeholders for the assistant's
// words. No argument may carry them: a program that runs its arguments as a
// command (rbash -c, setpriv sh -c, make -E) would run a $(…) rationale, and
// no list of such programs can be complete.
var summaryPlaceholders = []string{"{summary}", "{summary_json}"}

// onRequest checks the operator's hook: no argument that would carry the
// assistant's words, not wraptool itself, and a program (and any script it
// is given) that only the operator or root can change.
func (v *validator) onRequest(p fieldPath, argv []string) {
	if len(argv) == 0 {
		return
	}
	for i, a := range argv {
		for _, ph := range summaryPlaceholders {
			if strings.Contains(a, ph) {
				v.fail(p.index(i), "%q: %s is not a placeholder: no argument ever carries the assistant's words (a shell or a program "+
					"that runs its arguments would run them); the summary is in the hook's environment as WRAPTOOL_SUMMARY and the "+
					"request's JSON line on its stdin, e.g. [\"/bin/sh\", \"-c\", \"notify-send wraptool \\\"$WRAPTOOL_SUMMARY\\\"\"]", a, ph)
				return
			}
		}
	}
	if argv[0] == "" {
		v.fail(p.index(0), "is empty: the hook's first element is its command")
		return
	}
	if filepath.Base(argv[0]) == "wraptool" || isSelf(argv[0]) {
		v.fail(p.index(0), "%q is wraptool itself: a hook that decides requests would approve whatever the assistant asks", argv[0])
		return
	}
	if strings.Contains(argv[0], "/") {
		// A path (load made it absolute): the file must be an
		// executable only the operator can change, as a tool's binary.
		v.executable(p.index(0), argv[0])
	} else if cmd, ok := lookCommand(argv[0], "", v.c.opts, nil, nil); ok {
		// A bare name is found where the hook will find it; one not
		// found is logged when the hook runs.
		if isSelf(cmd) {
			v.fail(p.index(0), "%q is wraptool itself (%s): a hook that decides requests would approve whatever the assistant asks", argv[0], cmd)
			return
		}
		v.program(p.index(0), cmd)
	}
	// A script the hook is given (python3 notify.py) decides what runs as
	// much as its command; the hook runs in the config's folder.
	v.scripts(argv[1:], v.c.Dir, func(i int) fieldPath { return p.index(i + 1) })
}

// scripts checks each of args that names an existing regular file as a
// program (runner.CheckScripts: a relative one taken from dir, the process's
// working directory, "" for the server's own); at gives each one's field.
func (v *validator) scripts(args []string, dir string, at func(int) fieldPath) {
	if i, err := runner.CheckScripts(args, dir); err != nil {
		v.fail(at(i), "%v", err)
	}
}

// exists reports whether path names something on disk.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// program refuses a program others could change or replace.
func (v *validator) program(p fieldPath, path string) {
	if err := runner.CheckProgram(path); err != nil {
		v.fail(p, "%v", err)
	}
}

func (v *validator) admin() {
	a, p := &v.c.Admin, fieldPath{}.key("admin")
	if a.Listen != "" {
		if _, err := splitHostPort(a.Listen); err != nil {
			v.fail(p.key("listen"), "%v", err)
		}
		if a.AuthTokenFile == "" {
			v.fail(p.key("auth_token_file"), "is required when admin.listen is set")
		}
	}
	v.tokenFile(p.key("auth_token_file"), a.AuthTokenFile)
	mcpTok := v.c.MCP.AuthTokenFile
	if a.AuthTokenFile == "" || mcpTok == "" {
		return
	}
	if a.AuthTokenFile == mcpTok {
		v.fail(p.key("auth_token_file"), "must not be the same file as mcp.auth_token_file: the admin token must differ from the MCP token")
		return
	}
	at, aerr := v.c.readToken(a.AuthTokenFile)
	mt, merr := v.c.readToken(mcpTok)
	if aerr == nil && merr == nil && at == mt {
		v.fail(p.key("auth_token_file"), "holds the same token as mcp.auth_token_file: the admin token must differ from the MCP token")
	}
}

// tokenFile accepts a missing file (serve creates it) but not an empty or
// unreadable one.
func (v *validator) tokenFile(p fieldPath, path string) {
	if path == "" {
		return
	}
	_, err := v.c.readToken(path)
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist):
		v.private(p, path, secret)
	default:
		v.fail(p, "%v", err)
	}
}

// private refuses a file that decides what runs when anyone but its owner
// may write (or, for a secret, read) it or replace it, or when another user
// owns it.
func (v *validator) private(p fieldPath, path string, kind fileKind) {
	if msg := checkFile(path, kind); msg != "" {
		v.fail(p, "%s", msg)
	}
}

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

// name checks a tool or server name: a valid token, not in wraptool's
// reserved namespace.
func (v *validator) name(p fieldPath, what, s string) {
	if !v.token(p, what, s) {
		return
	}
	if strings.HasPrefix(strings.ToLower(s), policy.ReservedPrefix) {
		v.fail(p, "%s %q starts with %q, which is reserved for wraptool's built-in tools", what, s, policy.ReservedPrefix)
	}
}

func (v *validator) token(p fieldPath, what, s string) bool {
	if policy.ValidToken(s) {
		return true
	}
	v.fail(p, "%s %q must match [A-Za-z0-9][A-Za-z0-9_-]*", what, s)
	return false
}

func (v *validator) flag(p fieldPath, f string) bool {
	if policy.ValidFlag(f) {
		return true
	}
	v.fail(p, "%q is not a flag: want -X (one letter or digit) or --name", f)
	return false
}

// expose records an MCP tool name for the length and collision checks.
func (v *validator) expose(p fieldPath, name string) {
	if len(name) > policy.MaxToolNameLen {
		v.fail(p, "the MCP tool name %q is %d characters; the limit is %d", name, len(name), policy.MaxToolNameLen)
		return
	}
	v.exposed = append(v.exposed, exposedName{name, p, v.c.lines.at(p)})
}

// collisions reports every exposed name after the first, in document order,
// that repeats an earlier one.
func (v *validator) collisions() {
	slices.SortStableFunc(v.exposed, func(a, b exposedName) int {
		pa, pb := a.at, b.at
		if pa.line != pb.line {
			return pa.line - pb.line
		}
		if pa.col != pb.col {
			return pa.col - pb.col
		}
		return strings.Compare(a.path.String(), b.path.String())
	})
	owner := map[string]fieldPath{}
	for _, e := range v.exposed {
		if prev, dup := owner[e.name]; dup {
			v.fail(e.path, "gives the MCP tool name %q, already given by %s", e.name, prev)
			continue
		}
		owner[e.name] = e.path
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

func (v *validator) executable(p fieldPath, path string) {
	if msg := binaryProblem(path); msg != "" {
		v.fail(p, "%s", msg)
	}
}

// binaryProblem says why path may not be a tool's binary, or "": it must be
// an executable regular file that only its owner (the operator or root) may
// change, under folders up to "/" only they may write (runner.CheckProgram),
// and not wraptool itself.
func binaryProblem(path string) string {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s does not exist", path)
	case err != nil:
		return err.Error()
	case !info.Mode().IsRegular():
		return fmt.Sprintf("%s is not a regular file", path)
	case info.Mode().Perm()&0o111 == 0:
		return fmt.Sprintf("%s is not executable", path)
	case isSelf(path):
		return fmt.Sprintf("%s is wraptool itself; wrapping it would let the assistant act as the operator", path)
	}
	if err := runner.CheckProgram(path); err != nil {
		return err.Error()
	}
	return ""
}

func (v *validator) dir(p fieldPath, path string) {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		v.fail(p, "%s does not exist", path)
	case err != nil:
		v.fail(p, "%v", err)
	case !info.IsDir():
		v.fail(p, "%s is not a directory", path)
	}
}

func (v *validator) positive(p fieldPath, seconds float64) {
	if seconds <= 0 {
		v.fail(p, "must be a positive duration such as 30s")
	}
}

// splitHostPort checks a host:port listen address and returns the host.
func splitHostPort(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("want host:port, got %q", addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", fmt.Errorf("port %q in %q must be a number from 0 to 65535", port, addr)
	}
	return host, nil
}

// IsLoopback reports whether host names the local machine only: "localhost"
// or a loopback IP. An empty host listens on every interface and is not.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
