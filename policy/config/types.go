package config

import (
	"time"

	"github.com/wraptool/wraptool/policy"
)

// Config is a loaded wraptool configuration. Its fields mirror the YAML keys
// of docs/configuration.md; Load fills defaults and resolves paths, so
// readers never need to.
type Config struct {
	// MCP is how the MCP transport is exposed.
	MCP MCP `yaml:"mcp"`
	// Admin is the operator-only review UI; an empty Listen disables it.
	Admin Admin `yaml:"admin"`
	// Tools maps the user-visible tool name, which prefixes its MCP tool
	// names, to the wrapped CLI.
	Tools map[string]*Tool `yaml:"tools"`
	// MCPServers maps a name to a local stdio MCP server whose tools are
	// exposed through an allowlist.
	MCPServers map[string]*MCPServer `yaml:"mcp_servers"`

	// File is the path the config was read from, as given.
	File string `yaml:"-"`
	// Dir is the absolute folder relative paths in the config resolve against.
	Dir string `yaml:"-"`
	// AllowRulesWritten counts the allow rules as written, before seeding
	// (it is what `config validate` reports).
	AllowRulesWritten int `yaml:"-"`

	lines lineIndex
	// files are the bytes this load read, each file once (see files).
	files *files
	// opts are the options it was loaded with: validation looks the
	// hook's and the upstreams' commands up in the PATH they read.
	opts *Options
}

// MCP configures the MCP listener.
type MCP struct {
	// Transport is "sse" (HTTP on a TCP listener, serving both /sse and /mcp)
	// or "unix" (the same handlers on a unix socket). Default "sse".
	Transport string `yaml:"transport"`
	// Listen is host:port for sse, or the socket path for unix. Required.
	Listen string `yaml:"listen"`
	// AuthTokenFile holds the bearer token clients must send; empty means no
	// authentication, which is allowed only on loopback or a unix socket.
	AuthTokenFile string `yaml:"auth_token_file"`
	// LogLevel is debug, info, warn or error; used when neither --log-level
	// nor WRAPTOOL_LOG_LEVEL is given. Default "info".
	LogLevel string `yaml:"log_level"`
	// RequestLog is the capability-request JSONL file. Default
	// $XDG_DATA_HOME/wraptool/requests.jsonl (or the platform equivalent).
	RequestLog string `yaml:"request_log"`
	// AuditLog is the audit JSONL file: one line per tool call and per policy
	// change. Default audit.jsonl beside RequestLog; AuditOff ("off")
	// disables it. It must not be the request log.
	AuditLog string `yaml:"audit_log"`
	// AllowedCwdRoots, when non-empty, confine a client-supplied cwd to
	// these directories (symlinks resolved on both sides).
	AllowedCwdRoots []string `yaml:"allowed_cwd_roots"`
	// MaxConcurrentCalls bounds how many wrapped-tool children run at once;
	// a call beyond it waits its turn within its own timeout. Default 16.
	MaxConcurrentCalls int `yaml:"max_concurrent_calls"`
	// OnRequest is the operator's hook: a command and its arguments,
	// started without a shell for every new capability request. An argument
	// that is exactly {id} or {tool} is replaced; the assistant's words
	// reach it only in its environment (WRAPTOOL_SUMMARY) and on its stdin,
	// never as an argument. Empty means none.
	OnRequest []string `yaml:"on_request"`
	// ElicitClients are the clients whose prompts a person answers: a
	// session on one of their tokens is asked to decide its own requests
	// (elicitation).
	ElicitClients []*ElicitClient `yaml:"elicit_clients"`
	// Confinement says whether every process wraptool starts must be
	// kept away from wraptool's own files by the kernel (see Protected):
	// ConfinementRequired, the default, refuses to serve on a kernel that
	// cannot; ConfinementOff serves with the per-call path checks alone.
	Confinement string `yaml:"confinement"`
}

// ElicitClient is one client allowed to be asked for decisions.
type ElicitClient struct {
	// Name is shown in the prompt and recorded as the decision's client.
	Name string `yaml:"name"`
	// TokenFile holds the client's own bearer token (created at start-up
	// when missing, like the MCP token).
	TokenFile string `yaml:"token_file"`
}

// Admin configures the operator review UI.
type Admin struct {
	// Listen is host:port for the UI; empty disables it.
	Listen string `yaml:"listen"`
	// AuthTokenFile holds the admin token; required when Listen is set and
	// must differ from the MCP token.
	AuthTokenFile string `yaml:"auth_token_file"`
}

// Tool is one wrapped CLI.
type Tool struct {
	// Binary is the absolute path of an executable file.
	Binary string `yaml:"binary"`
	// WorkingDir is the child's default working directory; empty means the
	// server's own.
	WorkingDir string `yaml:"working_dir"`
	// Timeout bounds one call. Default 30s.
	Timeout time.Duration `yaml:"timeout"`
	// Env is added to the child's environment, over EnvFiles.
	Env map[string]string `yaml:"env"`
	// EnvFiles are KEY=VALUE files merged left to right.
	EnvFiles []string `yaml:"env_files"`
	// Introspection tunes --help parsing for this tool.
	Introspection Introspection `yaml:"introspection"`
	// Allow rules: each exposes one MCP tool.
	Allow []*policy.AllowRule `yaml:"allow"`
	// Deny rules: token prefixes that are refused before any allow rule.
	Deny []*policy.DenyRule `yaml:"deny"`

	// FileEnv is the merge of EnvFiles, read once at load so a malformed
	// file is a config error rather than a failure at call time.
	FileEnv map[string]string `yaml:"-"`
}

// Introspection tunes how a tool's --help output is used.
type Introspection struct {
	// CacheTTL is how long parsed help stays cached. Default 24h.
	CacheTTL time.Duration `yaml:"cache_ttl"`
	// OverridesFile corrects misparsed help; optional.
	OverridesFile string `yaml:"overrides_file"`
}

// MCPServer is a local stdio MCP server fronted by wraptool.
type MCPServer struct {
	// Command is the child command, resolved by exec (need not be absolute).
	Command string `yaml:"command"`
	// Args are the child's arguments.
	Args []string `yaml:"args"`
	// WorkingDir is the child's working directory; empty means the server's.
	WorkingDir string `yaml:"working_dir"`
	// Env is added to the child's environment, over EnvFiles.
	Env map[string]string `yaml:"env"`
	// EnvFiles are KEY=VALUE files merged left to right.
	EnvFiles []string `yaml:"env_files"`
	// Timeout bounds one tool call. Default 30s.
	Timeout time.Duration `yaml:"timeout"`
	// InitTimeout bounds start-up and initialization. Default 10s.
	InitTimeout time.Duration `yaml:"init_timeout"`
	// NamePrefix prefixes exposed tool names; default the map key.
	NamePrefix string `yaml:"name_prefix"`
	// Allow lists the upstream tools to expose, by exact name.
	Allow []*ToolRef `yaml:"allow"`
	// Deny lists upstream tools never exposed; deny wins over Allow.
	Deny []*ToolRef `yaml:"deny"`

	// FileEnv is the merge of EnvFiles, read at load.
	FileEnv map[string]string `yaml:"-"`
}

// ToolRef names one upstream MCP tool.
type ToolRef struct {
	// Tool is the upstream tool's exact name.
	Tool string `yaml:"tool"`
}
