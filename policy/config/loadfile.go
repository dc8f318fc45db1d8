package config

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/wraptool/wraptool/policy"
)

// TokenMode says what a load does with a token file the config names but
// that does not exist.
type TokenMode int

const (
	// TokensRequired refuses a missing token file: a reload must not
	// serve without the token the config names.
	TokensRequired TokenMode = iota
	// TokensCreate creates a missing token file (32 random bytes, hex,
	// mode 0600, in a 0700 folder) and never overwrites one: what serve
	// and up do at start-up.
	TokensCreate
	// TokensOptional accepts a missing token file without creating it:
	// `config validate` touches nothing, and serve would create it.
	TokensOptional
	// TokensReload is TokensCreate for a reload of a running server: a
	// missing admin or elicitation client token file is created (enabling
	// admin: while running works as at start-up), but a missing MCP token
	// file stays an error, since creating it would change the token every
	// connected client holds without a word.
	TokensReload
)

// Introspect learns the wrapped tools' own help for a load (see package
// introspect): it runs each tool's fixed help forms, or reads them from its
// cache, within its own bounds, and never fails for a tool whose help cannot
// be had (that tool falls back to the rules' types and the heuristic). forced
// is true for a SIGHUP reload, which retries helps that failed before. An
// error rejects the load: a malformed overrides file.
type Introspect func(ctx context.Context, c *Config, forced bool) (policy.Helps, error)

// LoadOptions adjust LoadFile. A nil *LoadOptions means defaults.
type LoadOptions struct {
	// Paths say where "~" and the platform folders are; nil means the
	// process's environment.
	Paths *Options
	// Tokens is what to do with a missing token file; the zero value is
	// TokensRequired.
	Tokens TokenMode
	// Introspect is the introspect step; nil skips it (the policy then
	// knows only the rules' types and the heuristic).
	Introspect Introspect
	// Forced marks a SIGHUP reload (passed to Introspect).
	Forced bool
}

func (o *LoadOptions) paths() *Options {
	if o == nil {
		return nil
	}
	return o.Paths
}

func (o *LoadOptions) tokens() TokenMode {
	if o == nil {
		return TokensRequired
	}
	return o.Tokens
}

// Loaded is one complete build of the server's configuration, ready to swap
// in: nothing in it can fail later. It is immutable once returned.
type Loaded struct {
	// Config is the validated config, defaults applied and paths resolved.
	Config *Config
	// Policy is the compiled policy of Config's tools.
	Policy *policy.Policy
	// MCPToken and AdminToken are the tokens the token files hold; "" when
	// the config names none (or, with TokensOptional, when the file is
	// missing).
	MCPToken, AdminToken string
	// ElicitTokens maps each elicitation client's token to its name
	// (mcp.elicit_clients); a client whose file is missing (TokensOptional)
	// is left out.
	ElicitTokens map[string]string
	// Helps is what the tools' own help says (nil when the load did not
	// introspect): the policy's flag types and descriptions come from it,
	// and wraptool_discover lists what it advertises.
	Helps policy.Helps
	// Hash identifies every byte the load read: the config, its token
	// files, env files and overrides files. A reload whose files hash the
	// same changes nothing.
	Hash string
	// Created lists the token files this load created (TokensCreate,
	// TokensReload).
	Created []string
	// Warnings are what `config validate` and the server report about a
	// valid config (see Config.Warnings).
	Warnings []Warning

	// paths are the load's LoadOptions.Paths, for merging grants (Overlay)
	// as the load would have parsed them.
	paths *Options
	// introspect is the load's introspect step (nil when it had none), so
	// a grant's merged rule is learned as the load's rules were
	// (LearnGrants).
	introspect Introspect
	// policyHash is PolicyHash's, computed once the load has read every
	// file.
	policyHash string
}

// LoadFile is the one way wraptool loads its configuration: start-up, every
// reload and `config validate` call it, so what is checked is what runs. Its
// steps, in order, each named in its errors:
//
//   - read: the config file, refused when others could change it, read
//     once (a regular file of bounded size);
//   - parse: strict decoding, defaults, paths, env files, help-flag seeding
//     and every validation rule (an *Error placed at file:line and field);
//   - tokens: the token files, created or required as o says;
//   - introspect: each tool's own help (o.Introspect), which may unseed -h
//     where it means something else (psql's host);
//   - compile: the policy, typed and described by the help;
//   - hash and warnings.
//
// Later kinds of reload work (introspection, upstream servers, grants) are
// further steps of this function. ctx ends the load between steps.
func LoadFile(ctx context.Context, path string, o *LoadOptions) (*Loaded, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	c, err := Parse(path, data, o.paths())
	if err != nil {
		return nil, err
	}
	l := &Loaded{Config: c, paths: o.paths()}
	if err := l.tokens(ctx, o.tokens()); err != nil {
		return nil, err
	}
	if o != nil && o.Introspect != nil {
		l.introspect = o.Introspect
		if l.Helps, err = o.Introspect(ctx, c, o.Forced); err != nil {
			return nil, err
		}
		unseedShortHelp(c, l.Helps)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	if l.Policy, err = c.Policy(l.Helps); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// The policy hash covers every overrides file whether or not this load
	// introspected (which reads them): the CLI and the server must agree
	// on it for an exact-call grant.
	for _, name := range sortedKeys(c.Tools) {
		c.ReadOverrides(name) // a failure is part of what the hash covers
	}
	l.Hash = c.fileSet().hash()
	l.policyHash = c.fileSet().hash(absolute(c.TokenFiles())...)
	l.Warnings = c.Warnings(l.Helps, o.paths())
	if dw := c.DangerWarnings(); len(dw) > 0 {
		l.Warnings = append(l.Warnings, dw...)
		slices.SortStableFunc(l.Warnings, func(a, b Warning) int { return a.Line - b.Line })
	}
	return l, nil
}

// tokens reads the token files the config names, creating missing ones
// when mode says so. Parse has already refused unreadable or empty ones.
func (l *Loaded) tokens(ctx context.Context, mode TokenMode) error {
	c := l.Config
	type tokenFile struct {
		file string
		into *string
		path fieldPath
	}
	files := []tokenFile{
		{c.MCP.AuthTokenFile, &l.MCPToken, fieldPath{}.key("mcp").key("auth_token_file")},
		{c.Admin.AuthTokenFile, &l.AdminToken, fieldPath{}.key("admin").key("auth_token_file")},
	}
	elicit := make([]string, len(c.MCP.ElicitClients))
	for i, ec := range c.MCP.ElicitClients {
		files = append(files, tokenFile{ec.TokenFile, &elicit[i], fieldPath{}.key("mcp").key("elicit_clients").index(i).key("token_file")})
	}
	defer func() {
		for i, ec := range c.MCP.ElicitClients {
			if elicit[i] != "" {
				if l.ElicitTokens == nil {
					l.ElicitTokens = map[string]string{}
				}
				l.ElicitTokens[elicit[i]] = ec.Name
			}
		}
	}()
	for _, t := range files {
		if t.file == "" {
			continue
		}
		tok, err := c.readToken(t.file)
		if errors.Is(err, fs.ErrNotExist) {
			create := mode == TokensCreate || (mode == TokensReload && t.into != &l.MCPToken)
			switch {
			case mode == TokensOptional:
				continue
			case create:
				if err := ctx.Err(); err != nil {
					return err
				}
				made, cerr := ensureToken(t.file)
				if cerr != nil {
					return c.errorAt(t.path, "%v", cerr)
				}
				if made {
					l.Created = append(l.Created, t.file)
				}
				// Read what is there now: ours, or a file that
				// appeared meanwhile (never overwritten).
				delete(c.fileSet().read, t.file)
				tok, err = c.readToken(t.file)
			}
		}
		if err != nil {
			return c.errorAt(t.path, "token file: %v", err)
		}
		*t.into = tok
	}
	return nil
}

// ReadOverrides returns the bytes of tool's introspection overrides file,
// read once per load (and so part of the load's hash); nil when the tool
// names none. The introspect step parses them.
func (c *Config) ReadOverrides(tool string) ([]byte, error) {
	t := c.Tools[tool]
	if t == nil || t.Introspection.OverridesFile == "" {
		return nil, nil
	}
	data, err := c.fileSet().get(t.Introspection.OverridesFile, maxEnvBytes)
	if err != nil {
		return nil, c.errorAt(fieldPath{}.key("tools").key(tool).key("introspection").key("overrides_file"), "cannot read overrides file %v", err)
	}
	return data, nil
}

// OwnFiles lists, as absolute paths, wraptool's own files besides the config
// that the config names: token files, env files, overrides files, the
// request log and the grants key beside it, the audit log. A wrapped tool must never be pointed at one of them or the
// folders holding them: a tool told where to write could otherwise rewrite
// the gate.
func (c *Config) OwnFiles() []string {
	files := c.namedFiles()
	if c.MCP.RequestLog != "" {
		// An empty one would become the working directory.
		files = append(files, c.MCP.RequestLog, GrantsKeyPath(c.MCP.RequestLog), SessionsPath(c.MCP.RequestLog))
	}
	if c.AuditEnabled() {
		files = append(files, c.MCP.AuditLog)
	}
	return absolute(files)
}

// AuditEnabled reports whether the config keeps an audit log (mcp.audit_log
// is not "off").
func (c *Config) AuditEnabled() bool { return c.MCP.AuditLog != "" && c.MCP.AuditLog != AuditOff }

// GrantsKeyPath is where the key that signs temporary grants lives: beside
// the request log. It is the path requests.KeyPath gives; the config names
// it to check its mode and to protect it from wrapped tools.
func GrantsKeyPath(requestLog string) string {
	return filepath.Join(filepath.Dir(requestLog), "grants.key")
}

// SessionsPath is where the MCP sessions kept across a restart live:
// beside the request log, in the data folder. It holds no token, only
// digests, but it lets a token's holder resume a session, so it is one of
// wraptool's own files: owner-only and out of every started process's reach.
// An empty request log (none configured) keeps no sessions file.
func SessionsPath(requestLog string) string {
	if requestLog == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(requestLog), "sessions.json")
}

// WatchFiles are the files whose changes reload the config, as absolute
// paths: the config itself, its token files, env files and overrides files.
func (c *Config) WatchFiles() []string {
	files := absolute(append([]string{c.File}, c.namedFiles()...))
	// A symlinked config is edited where it points (an apply writes
	// through the link): watch that folder too.
	if real, err := filepath.EvalSymlinks(files[0]); err == nil && real != files[0] {
		files = append(files, real)
	}
	return files
}

// namedFiles are the files a load reads besides the config: token files,
// the env files of tools and mcp_servers, and overrides files.
func (c *Config) namedFiles() []string {
	files := append([]string{}, c.TokenFiles()...)
	for _, name := range sortedKeys(c.Tools) {
		t := c.Tools[name]
		files = append(files, t.EnvFiles...)
		if t.Introspection.OverridesFile != "" {
			files = append(files, t.Introspection.OverridesFile)
		}
	}
	for _, name := range sortedKeys(c.MCPServers) {
		files = append(files, c.MCPServers[name].EnvFiles...)
	}
	return files
}

func absolute(files []string) []string {
	for i, f := range files {
		if abs, err := filepath.Abs(f); err == nil {
			files[i] = abs
		}
	}
	return files
}
