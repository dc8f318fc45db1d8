package config

import (
	"os"
	"strings"
	"testing"
)

// Every validation rule (README: What validation refuses) and each structural check, with the
// line and field path the error must carry. Lines 1-2 are `base`.
func TestValidateRejects(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	tool := "tools:\n  git:\n    binary: $T/bin/tool\n" // lines 3-5
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		yaml string
		line int
		path string
		msg  string
	}{
		// Structure: strict decoding with paths.
		{"an unknown top-level key is named with a suggestion", base + "mcpp:\n  x: 1\n",
			3, "mcpp", `unknown field (did you mean "mcp"?)`},
		{"an unknown nested key is named with its full path", base + tool + "    allow:\n      - subcommand: [pull]\n        flag_constraint: {}\n",
			8, "tools.git.allow[0].flag_constraint", `unknown field (did you mean "flag_constraints"?)`},
		{"an unknown key in a constraint is named by flag", base + tool + "    allow:\n      - flags: [--depth]\n        flag_constraints:\n          \"--depth\": {mn: 1}\n",
			9, `tools.git.allow[0].flag_constraints["--depth"].mn`, `unknown field (did you mean "min"?)`},
		{"a scalar where a list belongs is refused", base + tool + "    allow:\n      - flags: --force\n",
			7, "tools.git.allow[0].flags", `want a list, got "--force"`},
		{"a list where a mapping belongs is refused", base + "tools: [git]\n",
			3, "tools", "want a mapping, got a list"},
		{"a non-duration timeout is refused", base + tool + "    timeout: soon\n",
			6, "tools.git.timeout", `want a duration such as 30s, got "soon"`},
		{"a bare number is not a duration", base + tool + "    timeout: 30\n",
			6, "tools.git.timeout", `want a duration such as 30s, got "30"`},
		{"a non-integer positional_max is refused", base + tool + "    allow:\n      - arg_constraints: {positional_max: two}\n",
			7, "tools.git.allow[0].arg_constraints.positional_max", `want an integer, got "two"`},
		{"a non-boolean required is refused", base + tool + "    allow:\n      - flags: [--x]\n        flag_constraints:\n          \"--x\": {required: maybe}\n",
			9, `tools.git.allow[0].flag_constraints["--x"].required`, `want true or false, got "maybe"`},
		{"a duplicate key is refused with both lines", base + "mcp:\n  listen: x\n",
			3, "mcp", "duplicate key (first written on line 1)"},
		{"an alias is refused", base + tool + "    allow:\n      - flags: &f [--x]\n      - subcommand: [a]\n        flags: *f\n",
			9, "tools.git.allow[1].flags", "aliases are not supported"},
		{"a merge key is refused", base + "admin:\n  <<: {listen: x}\n",
			4, "admin", "merge keys (<<) are not supported"},
		{"an empty tool is refused", base + "tools:\n  git:\n",
			4, "tools.git", "must not be empty"},
		{"a second YAML document is refused", base + "---\nmcp: {}\n",
			3, "", "only one YAML document is allowed"},
		{"a YAML syntax error keeps its line", base + "tools:\n  git: [\n",
			4, "tools", "did not find expected node content"},
		{"a non-mapping document is refused", "- a\n- b\n",
			1, "", "the config must be a mapping"},

		// mcp
		{"mcp.listen is required", "mcp:\n  transport: sse\n",
			1, "mcp.listen", "is required"},
		{"an empty file has no listen", "",
			1, "mcp.listen", "is required"},
		{"a listen without a port is refused", "mcp:\n  listen: localhost\n",
			2, "mcp.listen", `want host:port, got "localhost"`},
		{"a listen with a bad port is refused", "mcp:\n  listen: localhost:http\n",
			2, "mcp.listen", `port "http" in "localhost:http" must be a number from 0 to 65535`},
		{"a non-loopback sse listener needs a token", "mcp:\n  listen: 0.0.0.0:8717\n",
			2, "mcp.listen", "0.0.0.0:8717 is not a loopback address, so mcp.auth_token_file is required"},
		{"an all-interfaces sse listener needs a token", "mcp:\n  listen: :8717\n",
			2, "mcp.listen", ":8717 is not a loopback address"},
		{"a hostname sse listener needs a token", "mcp:\n  listen: example.com:8717\n",
			2, "mcp.listen", "example.com:8717 is not a loopback address"},
		{"an unknown transport is refused", "mcp:\n  transport: stdio\n  listen: x\n",
			2, "mcp.transport", `unknown transport "stdio" (want sse or unix)`},
		{"an unknown log level is refused", base + "  log_level: loud\n",
			3, "mcp.log_level", `unknown log level "loud"`},
		{"an unknown confinement is refused", base + "  confinement: maybe\n",
			3, "mcp.confinement", `unknown confinement "maybe" (want required or off)`},
		{"confinement is spelt in lower case", base + "  confinement: Off\n",
			3, "mcp.confinement", `unknown confinement "Off" (want required or off)`},
		{"an allowed_cwd_roots entry must be a directory", base + "  allowed_cwd_roots: [$T/dir, $T/bin/tool]\n",
			3, "mcp.allowed_cwd_roots[1]", "is not a directory"},
		{"an empty token file is refused", base + "  auth_token_file: $T/tok/empty\n",
			3, "mcp.auth_token_file", "token file is empty"},
		{"only ~ and ~/ expand", base + "  request_log: ~bob/log\n",
			3, "mcp.request_log", `only ~ and ~/ are expanded, got "~bob/log"`},

		// mcp.audit_log: a file of its own, and only ~ and ~/ expand
		{"the audit log may not be the request log", base + "  request_log: $T/r.jsonl\n  audit_log: $T/r.jsonl\n",
			4, "mcp.audit_log", "is the request log; the audit log needs a file of its own"},
		{"the audit log may not be the request log by another spelling", base + "  request_log: $T/r.jsonl\n  audit_log: $T/dir/../r.jsonl\n",
			4, "mcp.audit_log", "is the request log"},
		{"the audit log may not be a directory", base + "  audit_log: $T/dir\n",
			3, "mcp.audit_log", "dir is a directory"},
		{"only ~ and ~/ expand in audit_log", base + "  audit_log: ~bob/a\n",
			3, "mcp.audit_log", `only ~ and ~/ are expanded, got "~bob/a"`},

		// mcp.on_request: no argument carries the assistant's words. Each
		// of the first three ran a $(…) rationale past the shell deny-list.
		{"rbash -c {summary} is refused", base + "  on_request: [/usr/bin/rbash, -c, \"{summary}\"]\n",
			3, "mcp.on_request[2]", `"{summary}": {summary} is not a placeholder`},
		{"setpriv sh -c {summary} is refused", base + "  on_request: [/usr/bin/setpriv, /bin/sh, -c, \"{summary}\"]\n",
			3, "mcp.on_request[3]", "the summary is in the hook's environment as WRAPTOOL_SUMMARY and the request's JSON line on its stdin"},
		{"make -E {summary} is refused", base + "  on_request: [/usr/bin/make, -f, /dev/null, -E, \"{summary}\"]\n",
			3, "mcp.on_request[4]", "WRAPTOOL_SUMMARY"},
		{"{summary_json} is refused", base + "  on_request: [notify-send, \"{summary_json}\"]\n",
			3, "mcp.on_request[1]", `"{summary_json}": {summary_json} is not a placeholder`},
		{"{summary} inside a longer argument is refused too", base + "  on_request: [sh, -c, \"notify-send {summary}\"]\n",
			3, "mcp.on_request[2]", `"notify-send {summary}": {summary} is not a placeholder`},
		{"{summary_json} inside a longer argument is refused too", base + "  on_request: [curl, \"--data={summary_json}\"]\n",
			3, "mcp.on_request[1]", "{summary_json} is not a placeholder"},
		{"{summary} as the command is refused", base + "  on_request: [\"{summary}\"]\n",
			3, "mcp.on_request[0]", "{summary} is not a placeholder"},
		{"an empty hook command is refused", base + "  on_request: [\"\", x]\n",
			3, "mcp.on_request[0]", "is empty"},

		{"wraptool as the hook is refused", base + "  on_request: [wraptool, requests, approve, \"{id}\"]\n",
			3, "mcp.on_request[0]", "is wraptool itself"},
		{"a hook path that does not exist is refused", base + "  on_request: [$T/bin/nope, \"{id}\"]\n",
			3, "mcp.on_request[0]", "bin/nope does not exist"},
		{"a relative hook path is taken from the config's folder", base + "  on_request: [bin/nope]\n",
			3, "mcp.on_request[0]", "/bin/nope does not exist"},
		{"a hook that is not executable is refused", base + "  on_request: [$T/bin/plain]\n",
			3, "mcp.on_request[0]", "bin/plain is not executable"},

		// mcp.elicit_clients
		{"an elicit client needs a token file", base + "  elicit_clients:\n    - name: claude desktop\n",
			4, "mcp.elicit_clients[0].token_file", "is required"},
		{"an elicit client name with a newline is refused", base + "  elicit_clients:\n    - name: \"a\\nb\"\n      token_file: $T/tok/b\n",
			4, "mcp.elicit_clients[0].name", "must be 1 to 64 characters"},
		{"an elicit client name with an escape sequence is refused", base + "  elicit_clients:\n    - name: \"x\\e[2J\"\n      token_file: $T/tok/b\n",
			4, "mcp.elicit_clients[0].name", "must be 1 to 64 characters"},
		{"an empty elicit client name is refused", base + "  elicit_clients:\n    - token_file: $T/tok/b\n",
			4, "mcp.elicit_clients[0].name", "is required"},
		{"a name listed twice is refused", base + "  elicit_clients:\n    - {name: a, token_file: $T/tok/a}\n    - {name: a, token_file: $T/tok/b}\n",
			5, "mcp.elicit_clients[1].name", `"a" is listed twice`},
		{"an elicit client may not share the MCP token file", base + "  auth_token_file: $T/tok/a\n  elicit_clients:\n    - {name: a, token_file: $T/tok/a}\n",
			5, "mcp.elicit_clients[0].token_file", "must not be the same file as mcp.auth_token_file"},
		{"an elicit client may not hold the MCP token", base + "  auth_token_file: $T/tok/a\n  elicit_clients:\n    - {name: a, token_file: $T/tok/a-copy}\n",
			5, "mcp.elicit_clients[0].token_file", "holds the same token as mcp.auth_token_file"},
		{"two elicit clients may not share a token", base + "  elicit_clients:\n    - {name: a, token_file: $T/tok/a}\n    - {name: b, token_file: $T/tok/a-copy}\n",
			5, "mcp.elicit_clients[1].token_file", "holds the same token as mcp.elicit_clients[0].token_file"},
		{"an elicit client may not hold the admin token", base + "  elicit_clients:\n    - {name: a, token_file: $T/tok/a}\nadmin:\n  listen: 127.0.0.1:8718\n  auth_token_file: $T/tok/a-copy\n",
			7, "admin.auth_token_file", "holds the same token as mcp.elicit_clients[0].token_file"},
		{"an empty elicit token file is refused", base + "  elicit_clients:\n    - {name: a, token_file: $T/tok/empty}\n",
			4, "mcp.elicit_clients[0].token_file", "token file is empty"},

		// admin
		{"admin.listen needs a token file", base + "admin:\n  listen: 127.0.0.1:8718\n",
			3, "admin.auth_token_file", "is required when admin.listen is set"},
		{"admin and mcp may not share a token file", base + "  auth_token_file: $T/tok/a\nadmin:\n  listen: 127.0.0.1:8718\n  auth_token_file: $T/tok/a\n",
			6, "admin.auth_token_file", "must not be the same file as mcp.auth_token_file"},
		{"admin and mcp tokens may not have the same content", base + "  auth_token_file: $T/tok/a\nadmin:\n  listen: 127.0.0.1:8718\n  auth_token_file: $T/tok/a-copy\n",
			6, "admin.auth_token_file", "holds the same token as mcp.auth_token_file"},
		{"a bad admin listen is refused", base + "admin:\n  listen: nope\n  auth_token_file: $T/tok/b\n",
			4, "admin.listen", `want host:port, got "nope"`},

		// tools: names and binaries
		{"a tool name outside the token set is refused", base + "tools:\n  my.tool:\n    binary: $T/bin/tool\n",
			4, `tools["my.tool"]`, `tool name "my.tool" must match [A-Za-z0-9][A-Za-z0-9_-]*`},
		{"a tool name may not start with a dash", base + "tools:\n  -x:\n    binary: $T/bin/tool\n",
			4, `tools["-x"]`, "must match"},
		{"a tool name starting with wraptool is reserved", base + "tools:\n  wraptool_x:\n    binary: $T/bin/tool\n",
			4, "tools.wraptool_x", "reserved for wraptool's built-in tools"},
		{"the reserved prefix ignores case", base + "tools:\n  WrapTool:\n    binary: $T/bin/tool\n",
			4, "tools.WrapTool", "reserved"},
		{"a binary is required", base + "tools:\n  git:\n    timeout: 5s\n",
			4, "tools.git.binary", "is required"},
		{"a relative binary is refused", base + "tools:\n  git:\n    binary: git\n",
			5, "tools.git.binary", `must be an absolute path, got "git"`},
		{"a missing binary is refused", base + "tools:\n  git:\n    binary: $T/bin/nope\n",
			5, "tools.git.binary", "bin/nope does not exist"},
		{"a non-executable binary is refused", base + "tools:\n  git:\n    binary: $T/bin/plain\n",
			5, "tools.git.binary", "bin/plain is not executable"},
		{"a directory is not a binary", base + "tools:\n  git:\n    binary: $T/bin\n",
			5, "tools.git.binary", "is not a regular file"},
		{"a missing working_dir is refused", base + tool + "    working_dir: $T/nope\n",
			6, "tools.git.working_dir", "does not exist"},
		{"an explicit zero timeout is refused", base + tool + "    timeout: 0s\n",
			6, "tools.git.timeout", "must be a positive duration"},
		{"a negative cache_ttl is refused", base + tool + "    introspection: {cache_ttl: -1h}\n",
			6, "tools.git.introspection.cache_ttl", "must be a positive duration"},

		// env and env_files
		{"a missing env file is refused", base + tool + "    env_files: [$T/env/good.env, $T/env/nope.env]\n",
			6, "tools.git.env_files[1]", "nope.env: no such file or directory"},
		{"a malformed env file line is placed by file and line", base + tool + "    env_files:\n      - $T/env/bad.env\n",
			7, "tools.git.env_files[0]", "env/bad.env:3: malformed line"},
		{"an env file key must be a variable name", base + tool + "    env_files: [$T/env/badkey.env]\n",
			6, "tools.git.env_files[0]", "env/badkey.env:1: malformed line: the key must match"},
		{"an inline env name must be a variable name", base + tool + "    env:\n      BAD-NAME: x\n",
			7, "tools.git.env.BAD-NAME", `"BAD-NAME" is not a valid variable name`},

		// allow and deny rules
		{"a subcommand token outside the set is refused", base + tool + "    allow:\n      - subcommand: [remote, --set-url]\n",
			7, "tools.git.allow[0].subcommand[1]", `subcommand token "--set-url" must match`},
		{"a deny token outside the set is refused", base + tool + "    deny:\n      - subcommand: [\"a b\"]\n",
			7, "tools.git.deny[0].subcommand[0]", `subcommand token "a b" must match`},
		{"an exposed name over 64 characters is refused", base + tool + "    allow:\n      - subcommand: [" + strings.Repeat("a", 61) + "]\n",
			7, "tools.git.allow[0]", "is 65 characters; the limit is 64"},
		{"an exposed name of 64 characters is refused at 65 only", base + tool + "    allow:\n      - subcommand: [a]\n      - subcommand: [" + strings.Repeat("b", 61) + "]\n",
			8, "tools.git.allow[1]", "is 65 characters"},
		{"two rules with the same subcommand collide", base + tool + "    allow:\n      - subcommand: [pull]\n      - subcommand: [pull]\n",
			8, "tools.git.allow[1]", `gives the MCP tool name "git_pull", already given by tools.git.allow[0]`},
		{"rules of two tools may collide", base + tool + "    allow:\n      - subcommand: [pull]\n  git_pull:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: []\n",
			11, "tools.git_pull.allow[0]", `gives the MCP tool name "git_pull", already given by tools.git.allow[0]`},
		{"redact on a boolean flag is refused", base + tool + "    allow:\n      - flags: [--x]\n        flag_constraints:\n          \"--x\": {type: boolean, redact: true}\n",
			9, `tools.git.allow[0].flag_constraints["--x"].redact`, "flag --x is a boolean: it has no value to redact"},
		{"redact on a flag listed nowhere is refused", base + tool + "    allow:\n      - flags: [--x]\n        flag_constraints:\n          \"--y\": {redact: true}\n",
			9, `tools.git.allow[0].flag_constraints["--y"].redact`, "flag --y is not in flags or deny_flags"},
		{"redact on a seeded help flag is refused", base + tool + "    allow:\n      - flags: [--x]\n        flag_constraints:\n          \"--help\": {redact: true}\n",
			9, `tools.git.allow[0].flag_constraints["--help"]`, "constrains the help flag --help"},
		{"a non-boolean redact is refused", base + tool + "    allow:\n      - flags: [--x]\n        flag_constraints:\n          \"--x\": {redact: yes please}\n",
			9, `tools.git.allow[0].flag_constraints["--x"].redact`, `want true or false, got "yes please"`},
		{"a flag that is not -X or --name is refused", base + tool + "    allow:\n      - flags: [force]\n",
			7, "tools.git.allow[0].flags[0]", `"force" is not a flag`},
		{"combined short flags are refused", base + tool + "    allow:\n      - flags: [-rf]\n",
			7, "tools.git.allow[0].flags[0]", `"-rf" is not a flag`},
		{"a flag with a value is refused", base + tool + "    allow:\n      - flags: [--depth=1]\n",
			7, "tools.git.allow[0].flags[0]", `"--depth=1" is not a flag`},
		{"a bad deny_flags entry is refused", base + tool + "    allow:\n      - deny_flags: [\"--a b\"]\n",
			7, "tools.git.allow[0].deny_flags[0]", `"--a b" is not a flag`},
		{"a bad constraint key is refused", base + tool + "    allow:\n      - flag_constraints:\n          depth: {min: 1}\n",
			8, "tools.git.allow[0].flag_constraints.depth", `"depth" is not a flag`},
		{"two flags giving one property are refused", base + tool + "    allow:\n      - flags: [-m, --m]\n",
			7, "tools.git.allow[0].flags[1]", `flags -m and --m give the same schema property "m"`},
		{"a flag listed twice is refused", base + tool + "    allow:\n      - flags: [--x, --x]\n",
			7, "tools.git.allow[0].flags[1]", "flag --x is listed twice"},
		{"a flag may not become the args property", base + tool + "    allow:\n      - flags: [--args]\n",
			7, "tools.git.allow[0].flags[0]", `flag --args would become the schema property "args"`},
		{"a flag may not become the cwd property", base + tool + "    allow:\n      - flags: [--cwd]\n",
			7, "tools.git.allow[0].flags[0]", `flag --cwd would become the schema property "cwd"`},
		{"min greater than max is refused (the README's example)", base + tool + "    allow:\n      - subcommand: [log]\n      - subcommand: [clone]\n        flags: [--depth]\n        flag_constraints:\n          \"--depth\": {min: 5, max: 2}\n",
			11, `tools.git.allow[1].flag_constraints["--depth"]`, "min 5 is greater than max 2"},
		{"an invalid regex is refused", base + tool + "    allow:\n      - flags: [--filter]\n        flag_constraints:\n          \"--filter\":\n            pattern: \"[a-z\"\n",
			10, `tools.git.allow[0].flag_constraints["--filter"].pattern`, "invalid regular expression: missing closing ]"},
		{"an unknown constraint type is refused", base + tool + "    allow:\n      - flags: [--x]\n        flag_constraints:\n          \"--x\": {type: float}\n",
			9, `tools.git.allow[0].flag_constraints["--x"].type`, `unknown type "float"`},
		{"min on a string flag is refused", base + tool + "    allow:\n      - flags: [--x]\n        flag_constraints:\n          \"--x\": {type: string, min: 1}\n",
			9, `tools.git.allow[0].flag_constraints["--x"]`, "min and max apply only to integer flags"},
		{"a pattern on a boolean flag is refused", base + tool + "    allow:\n      - flags: [--x]\n        flag_constraints:\n          \"--x\": {type: boolean, pattern: a}\n",
			9, `tools.git.allow[0].flag_constraints["--x"].pattern`, "a pattern does not apply to a boolean flag"},
		{"a required flag must be allowed", base + tool + "    allow:\n      - flag_constraints:\n          \"--x\": {required: true}\n",
			8, `tools.git.allow[0].flag_constraints["--x"].required`, "flag --x is required but not in flags"},
		{"a required flag may not be denied", base + tool + "    allow:\n      - flags: [--x]\n        deny_flags: [--x]\n        flag_constraints:\n          \"--x\": {required: true}\n",
			10, `tools.git.allow[0].flag_constraints["--x"].required`, "flag --x is both required and denied"},
		{"a negative positional_max is refused", base + tool + "    allow:\n      - arg_constraints: {positional_max: -1}\n",
			7, "tools.git.allow[0].arg_constraints.positional_max", "must not be negative, got -1"},
		{"pattern and patterns do not combine", base + tool + "    allow:\n      - arg_constraints:\n          pattern: a\n          patterns: [b]\n",
			8, "tools.git.allow[0].arg_constraints.pattern", "pattern and patterns do not combine"},
		{"an invalid positional pattern is refused", base + tool + "    allow:\n      - arg_constraints: {pattern: \"(x\"}\n",
			7, "tools.git.allow[0].arg_constraints.pattern", "invalid regular expression: missing closing )"},
		{"an invalid entry of patterns is placed by index", base + tool + "    allow:\n      - arg_constraints:\n          patterns: [origin, \"[a-\"]\n",
			8, "tools.git.allow[0].arg_constraints.patterns[1]", "invalid regular expression"},
		{"an empty entry of patterns is refused", base + tool + "    allow:\n      - arg_constraints:\n          patterns: [origin, \"\"]\n",
			8, "tools.git.allow[0].arg_constraints.patterns[1]", "must not be empty"},
		{"a type on a seeded help flag is refused", base + tool + "    allow:\n      - subcommand: []\n        flag_constraints:\n          \"-h\": {type: string}\n",
			9, `tools.git.allow[0].flag_constraints["-h"]`, "constrains the help flag -h, which the rule does not list"},
		{"a required seeded help flag is refused", base + tool + "    allow:\n      - flag_constraints:\n          \"--help\": {required: true}\n",
			8, `tools.git.allow[0].flag_constraints["--help"]`, "constrains the help flag --help"},

		{"max_concurrent_calls must be positive", "mcp:\n  listen: 127.0.0.1:1\n  max_concurrent_calls: 0\n",
			3, "mcp.max_concurrent_calls", "must be at least 1, got 0"},
		{"a binary that is wraptool itself is refused", base + "tools:\n  self:\n    binary: $SELF\n",
			5, "tools.self.binary", "is wraptool itself"},

		// mcp_servers
		{"a server needs a command", base + "mcp_servers:\n  fs:\n    name_prefix: files\n",
			4, "mcp_servers.fs.command", "is required"},
		{"a server name follows the token rules", base + "mcp_servers:\n  my.fs:\n    command: x\n",
			4, `mcp_servers["my.fs"]`, "must match"},
		{"a name_prefix follows the token rules", base + "mcp_servers:\n  fs:\n    command: x\n    name_prefix: \"a b\"\n",
			6, "mcp_servers.fs.name_prefix", `name_prefix "a b" must match`},
		{"a name_prefix may not use the reserved prefix", base + "mcp_servers:\n  fs:\n    command: x\n    name_prefix: wraptool\n",
			6, "mcp_servers.fs.name_prefix", "reserved"},
		{"an upstream allow entry needs a tool", base + "mcp_servers:\n  fs:\n    command: x\n    allow:\n      - tool: \"\"\n",
			7, "mcp_servers.fs.allow[0].tool", "is required"},
		{"an upstream exposed name may collide with a wrapped tool", base + tool + "    allow:\n      - subcommand: [read]\nmcp_servers:\n  git:\n    command: x\n    allow:\n      - tool: read\n",
			12, "mcp_servers.git.allow[0].tool", `gives the MCP tool name "git_read", already given by tools.git.allow[0]`},
		{"a zero init_timeout is refused", base + "mcp_servers:\n  fs:\n    command: x\n    init_timeout: 0s\n",
			6, "mcp_servers.fs.init_timeout", "must be a positive duration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseFixture(t, dir, strings.ReplaceAll(tc.yaml, "$SELF", self))
			if err == nil {
				t.Fatalf("Parse accepted:\n%s", tc.yaml)
			}
			e := asConfigError(t, err)
			if e.Line != tc.line || e.Path != tc.path || !strings.Contains(e.Msg, strings.ReplaceAll(tc.msg, "$T", dir)) {
				t.Errorf("got  line %d, path %q, msg %q\nwant line %d, path %q, msg containing %q", e.Line, e.Path, e.Msg, tc.line, tc.path, tc.msg)
			}
			wantStart := dir + "/config.yaml:"
			if !strings.HasPrefix(err.Error(), wantStart) {
				t.Errorf("message %q does not start with %q", err.Error(), wantStart)
			}
		})
	}
}

// The README's example, rendered in full.
func TestErrorRendering(t *testing.T) {
	t.Parallel()
	e := &Error{File: "config.yaml", Line: 14, Path: `tools.git.allow[1].flag_constraints["--depth"]`, Msg: "min 5 is greater than max 2"}
	want := `config.yaml:14: tools.git.allow[1].flag_constraints["--depth"]: min 5 is greater than max 2`
	if got := e.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	noPath := &Error{File: "c.yaml", Line: 3, Msg: "only one YAML document is allowed"}
	if got, want := noPath.Error(), "c.yaml:3: only one YAML document is allowed"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// With several problems, the first in document order is reported, whatever
// order the checks ran in.
func TestValidateReportsFirstInDocumentOrder(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	yaml := "mcp:\n  listen: 127.0.0.1:1\ntools:\n  zz:\n    binary: relative\n  aa:\n    binary: $T/bin/tool\n    allow:\n      - flags: [bad]\n"
	for range 20 { // map iteration order varies between runs
		_, err := parseFixture(t, dir, yaml)
		e := asConfigError(t, err)
		if e.Line != 5 || e.Path != "tools.zz.binary" {
			t.Fatalf("got line %d path %q, want line 5 path tools.zz.binary (%v)", e.Line, e.Path, err)
		}
	}
	crossStage := []struct{ name, yaml, path string }{
		{"a semantic problem before a structural one", "mcp:\n  listen: 127.0.0.1:1\ntools:\n  git:\n    binary: rel\n    allow:\n      - flagz: [x]\n", "tools.git.binary"},
		{"a structural problem before a semantic one", "mcp:\n  listen: 127.0.0.1:1\n  bogus: 1\ntools:\n  git:\n    binary: rel\n", "mcp.bogus"},
		{"a field that did not decode is not also missing", "mcp:\n  listen: 127.0.0.1:1\ntools:\n  git:\n    binary: [a]\n", "tools.git.binary"},
		{"an empty tool is not also binary-less", "mcp:\n  listen: 127.0.0.1:1\ntools:\n  git:\n  b:\n    binary: rel\n", "tools.git"},
	}
	for _, tc := range crossStage {
		_, err := parseFixture(t, dir, tc.yaml)
		if e := asConfigError(t, err); e.Path != tc.path {
			t.Errorf("%s: got %v, want the problem at %s", tc.name, err, tc.path)
		}
	}
	_, err := parseFixture(t, dir, "mcp:\n  listen: 127.0.0.1:1\ntools:\n  git:\n    binary: [a]\n")
	if e := asConfigError(t, err); e.Msg != `want a string, got a list` {
		t.Errorf("a list binary: got %q, want only the structural message", e.Msg)
	}

	flow := "mcp: {listen: 127.0.0.1:1, transport: nope, log_level: loud}\n"
	_, err = parseFixture(t, dir, flow)
	if e := asConfigError(t, err); e.Path != "mcp.transport" {
		t.Errorf("on one line the leftmost problem wins: got %q, want mcp.transport", e.Path)
	}
}

func TestValidateAccepts(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	cases := []struct{ name, yaml string }{
		{"loopback IPv4 needs no token", "mcp:\n  listen: 127.0.0.1:8717\n"},
		{"localhost needs no token", "mcp:\n  listen: localhost:8717\n"},
		{"loopback IPv6 needs no token", "mcp:\n  listen: \"[::1]:8717\"\n"},
		{"port 0 picks a free port", "mcp:\n  listen: 127.0.0.1:0\n"},
		{"a public listener with a token", "mcp:\n  listen: 0.0.0.0:8717\n  auth_token_file: $T/tok/a\n"},
		{"a missing token file is created later by serve", "mcp:\n  listen: 127.0.0.1:1\n  auth_token_file: $T/tok/not-yet\nadmin:\n  listen: 127.0.0.1:2\n  auth_token_file: $T/tok/not-yet-either\n"},
		{"different admin and mcp tokens", "mcp:\n  listen: 127.0.0.1:1\n  auth_token_file: $T/tok/a\nadmin:\n  listen: 127.0.0.1:2\n  auth_token_file: $T/tok/b\n"},
		{"a unix socket needs no token", "mcp:\n  transport: unix\n  listen: $T/wraptool.sock\n"},
		{"confinement required", base + "  confinement: required\n"},
		{"confinement off", base + "  confinement: off\n"},
		{"empty sections", "mcp:\n  listen: 127.0.0.1:1\nadmin:\ntools:\nmcp_servers:\n"},
		{"a bare tool rule and a deny rule", base + "tools:\n  git:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: []\n    deny:\n      - subcommand: [auth]\n"},
		{"an exposed name of exactly 64 characters", base + "tools:\n  git:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: [" + strings.Repeat("a", 60) + "]\n"},
		{"an operator's --h is not a clash with a seeded -h", base + "tools:\n  git:\n    binary: $T/bin/tool\n    allow:\n      - flags: [--h]\n"},
		{"a deny constraint on a flag not in flags", base + "tools:\n  git:\n    binary: $T/bin/tool\n    allow:\n      - flags: [--x]\n        flag_constraints:\n          \"--quiet\": {deny: true}\n"},
		{"a full tool", base + "tools:\n  gcloud:\n    binary: $T/bin/tool\n    working_dir: $T/dir\n    timeout: 1m\n    env: {CLOUDSDK_CORE_PROJECT: p}\n    env_files: [$T/env/good.env]\n    introspection: {cache_ttl: 1h, overrides_file: $T/none.yaml}\n    allow:\n      - subcommand: [compute, instances, list]\n        flags: [\"--format\", \"--filter\", \"--limit\", -q]\n        deny_flags: [\"--quiet\"]\n        flag_constraints:\n          \"--filter\": { pattern: \"^[a-zA-Z0-9_ =.\\\"'-]+$\" }\n          \"--limit\": { type: integer, min: 1, max: 50, required: true }\n        arg_constraints:\n          positional_max: 2\n    deny:\n      - subcommand: [auth]\n"},
		{"a hook that is a program, with placeholders", base + "  on_request: [notify-send, wraptool, \"{id}\", \"{tool}\"]\n"},
		{"a shell hook quoting the summary from its environment", base + "  on_request: [/bin/sh, -c, \"notify-send wraptool \\\"$WRAPTOOL_SUMMARY\\\"\"]\n"},
		{"a shell by its name, and placeholders left literal inside longer arguments", base + "  on_request: [bash, -c, \"echo x{id} {SUMMARY}\"]\n"},
		{"a hook that is an interpreter running a script", base + "  on_request: [python3, -u, $T/bin/tool, \"{id}\"]\n"},
		{"a hook by its path", base + "  on_request: [$T/bin/tool, \"{id}\"]\n"},
		{"curl posting stdin to a webhook", base + "  on_request: [curl, -sS, --data-binary, \"@-\", https://chat.example/hook]\n"},
		{"elicit clients with their own tokens", base + "  auth_token_file: $T/tok/a\n  elicit_clients:\n    - {name: Claude Desktop, token_file: $T/tok/b}\n    - {name: vs-code_1.0, token_file: $T/tok/not-yet}\n"},
		{"an mcp server", base + "mcp_servers:\n  fs:\n    command: npx\n    args: [-y, server]\n    working_dir: $T/dir\n    env: {A: b}\n    env_files: [$T/env/good.env]\n    timeout: 5s\n    init_timeout: 2s\n    name_prefix: files\n    allow: [{tool: read_file}]\n    deny: [{tool: write_file}]\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := mustParse(t, dir, tc.yaml)
			if err := c.Validate(); err != nil {
				t.Errorf("second Validate: %v", err)
			}
		})
	}
}
