package config

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy"
)

func TestLoadAppliesDefaults(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	c := mustParse(t, dir, base+"tools:\n  git:\n    binary: $T/bin/tool\nmcp_servers:\n  fs:\n    command: srv\n")
	home := filepath.Join(dir, "home")
	checks := []struct {
		name      string
		got, want any
	}{
		{"mcp.transport", c.MCP.Transport, "sse"},
		{"mcp.log_level", c.MCP.LogLevel, "info"},
		{"mcp.confinement", c.MCP.Confinement, "required"},
		{"mcp.request_log", c.MCP.RequestLog, filepath.Join(home, ".local/share/wraptool/requests.jsonl")},
		{"mcp.audit_log beside the request log", c.MCP.AuditLog, filepath.Join(home, ".local/share/wraptool/audit.jsonl")},
		{"tool timeout", c.Tools["git"].Timeout, 30 * time.Second},
		{"tool cache_ttl", c.Tools["git"].Introspection.CacheTTL, 24 * time.Hour},
		{"server timeout", c.MCPServers["fs"].Timeout, 30 * time.Second},
		{"server init_timeout", c.MCPServers["fs"].InitTimeout, 10 * time.Second},
		{"server name_prefix", c.MCPServers["fs"].NamePrefix, "fs"},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s = %v, want %v", ck.name, ck.got, ck.want)
		}
	}
}

func TestLoadResolvesPaths(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	home := filepath.Join(dir, "home")
	c := mustParse(t, dir, `mcp:
  listen: 127.0.0.1:1
  auth_token_file: ~/mcp-token
  request_log: logs/requests.jsonl
  allowed_cwd_roots: [dir, "~"]
admin:
  listen: 127.0.0.1:2
  auth_token_file: tok/b
tools:
  git:
    binary: $T/bin/tool
    working_dir: ./dir
    env_files: [env/good.env]
    introspection: {overrides_file: ~/o.yaml}
mcp_servers:
  fs:
    command: ~/bin/srv
    working_dir: dir
`)
	checks := []struct{ name, got, want string }{
		{"mcp.auth_token_file", c.MCP.AuthTokenFile, filepath.Join(home, "mcp-token")},
		{"mcp.request_log", c.MCP.RequestLog, filepath.Join(dir, "logs/requests.jsonl")},
		{"mcp.audit_log follows the request log's folder", c.MCP.AuditLog, filepath.Join(dir, "logs/audit.jsonl")},
		{"mcp.allowed_cwd_roots[0]", c.MCP.AllowedCwdRoots[0], filepath.Join(dir, "dir")},
		{"mcp.allowed_cwd_roots[1]", c.MCP.AllowedCwdRoots[1], home},
		{"admin.auth_token_file", c.Admin.AuthTokenFile, filepath.Join(dir, "tok/b")},
		{"tools.git.working_dir", c.Tools["git"].WorkingDir, filepath.Join(dir, "dir")},
		{"tools.git.env_files[0]", c.Tools["git"].EnvFiles[0], filepath.Join(dir, "env/good.env")},
		{"tools.git.introspection.overrides_file", c.Tools["git"].Introspection.OverridesFile, filepath.Join(home, "o.yaml")},
		{"mcp_servers.fs.command", c.MCPServers["fs"].Command, filepath.Join(home, "bin/srv")},
		{"mcp_servers.fs.working_dir", c.MCPServers["fs"].WorkingDir, filepath.Join(dir, "dir")},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s = %q, want %q", ck.name, ck.got, ck.want)
		}
	}
}

func TestLoadUnixSocketPathIsResolved(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	c := mustParse(t, dir, "mcp:\n  transport: unix\n  listen: run/wraptool.sock\n")
	if want := filepath.Join(dir, "run/wraptool.sock"); c.MCP.Listen != want {
		t.Errorf("mcp.listen = %q, want %q", c.MCP.Listen, want)
	}
}

func TestLoadMergesEnvFilesInOrder(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	c := mustParse(t, dir, base+"tools:\n  git:\n    binary: $T/bin/tool\n    env_files: [$T/env/good.env, $T/env/over.env]\n    env: {A: inline}\n")
	got := c.Tools["git"].FileEnv
	want := map[string]string{"A": "2", "B": " spaced value ", "C": "x=y", "D": "4"}
	if len(got) != len(want) {
		t.Errorf("FileEnv = %q, want %q", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("FileEnv[%s] = %q, want %q", k, got[k], v)
		}
	}
	if c.Tools["git"].Env["A"] != "inline" {
		t.Errorf("inline env lost: %q", c.Tools["git"].Env)
	}
}

func TestParseEnvFile(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		in      string
		want    map[string]string
		wantErr string
	}{
		{"values are literal", "A='q' \"x\" $HOME\n", map[string]string{"A": `'q' "x" $HOME`}, ""},
		{"comments and blank lines are skipped", "# c\n   # indented\n\n \t\nA=1\n", map[string]string{"A": "1"}, ""},
		{"a later line wins", "A=1\nA=2\n", map[string]string{"A": "2"}, ""},
		{"an empty value is kept", "A=\n", map[string]string{"A": ""}, ""},
		{"CRLF endings are stripped", "A=1\r\nB=2\r\n", map[string]string{"A": "1", "B": "2"}, ""},
		{"a line without = is malformed", "A=1\nNOPE\n", nil, "f.env:2: malformed line: want KEY=VALUE"},
		{"export is not shell syntax here", "export A=1\n", nil, "f.env:1: malformed line: the key must match [A-Za-z_][A-Za-z0-9_]*"},
		{"a key with a space is malformed", "A B=1\n", nil, "f.env:1: malformed line: the key must match [A-Za-z_][A-Za-z0-9_]*"},
		{"a NUL in a value is refused", "A=a\x00b\n", nil, "f.env:1: the value contains a NUL byte"},
		{"a malformed line is not echoed", "SECRET-KEY=hunter2\n", nil, "f.env:1: malformed line: the key must match [A-Za-z_][A-Za-z0-9_]*"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseEnvFile("f.env", []byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("[%s] = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestSeedHelpFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		rule policy.AllowRule
		want []string
	}{
		{"both are added", policy.AllowRule{Flags: []string{"--x"}}, []string{"--x", "-h", "--help"}},
		{"an empty rule gets both", policy.AllowRule{}, []string{"-h", "--help"}},
		{"denying --help keeps -h", policy.AllowRule{DenyFlags: []string{"--help"}}, []string{"-h"}},
		{"denying -h keeps --help", policy.AllowRule{DenyFlags: []string{"-h"}}, []string{"--help"}},
		{"a deny constraint counts as deny", policy.AllowRule{FlagConstraints: map[string]*policy.Constraint{"--help": {Deny: true}}}, []string{"-h"}},
		{"an operator's --h keeps the property h", policy.AllowRule{Flags: []string{"--h"}}, []string{"--h", "--help"}},
		{"a denied --h keeps the property h", policy.AllowRule{DenyFlags: []string{"--h"}}, []string{"--help"}},
		{"a listed help flag is not doubled", policy.AllowRule{Flags: []string{"--help"}}, []string{"--help", "-h"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := tc.rule
			c := &Config{Tools: map[string]*Tool{"t": {Allow: []*policy.AllowRule{&r}}}}
			written := slices.Clone(r.Flags)
			SeedHelpFlags(c)
			if !slices.Equal(r.Flags, tc.want) {
				t.Errorf("after seeding: %q, want %q", r.Flags, tc.want)
			}
			if got := r.Written(); !slices.Equal(got, written) {
				t.Errorf("Written() = %q, want the operator's %q", got, written)
			}
			for _, f := range r.Seeded {
				if slices.Contains(written, f) {
					t.Errorf("Seeded holds %s, which the operator listed", f)
				}
			}
			SeedHelpFlags(c)
			if !slices.Equal(r.Flags, tc.want) {
				t.Errorf("seeding twice: %q, want %q", r.Flags, tc.want)
			}
		})
	}
}

func TestLoadCountsAllowRulesBeforeSeeding(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	c := mustParse(t, dir, base+"tools:\n  a:\n    binary: $T/bin/tool\n    allow: [{subcommand: [x]}, {subcommand: [y]}]\n  b:\n    binary: $T/bin/tool\n")
	if c.AllowRulesWritten != 2 {
		t.Errorf("AllowRulesWritten = %d, want 2", c.AllowRulesWritten)
	}
	if got := c.Tools["a"].Allow[0].Flags; !slices.Equal(got, []string{"-h", "--help"}) {
		t.Errorf("seeded flags = %q", got)
	}
}

// One test per key of the migration table: the error points at
// that key's line, names its replacement, and carries the whole table.
func TestServerSectionIsRefusedWithMigration(t *testing.T) {
	t.Parallel()
	cases := []struct{ yaml, path, to string }{
		{"server:\n  transport: sse\n", "server.transport", "mcp.transport"},
		{"server:\n  listen: 127.0.0.1:1\n", "server.listen", "mcp.listen"},
		{"server:\n  auth_token_file: t\n", "server.auth_token_file", "mcp.auth_token_file"},
		{"server:\n  request_log: r\n", "server.request_log", "mcp.request_log"},
		{"server:\n  allowed_cwd_roots: [/]\n", "server.allowed_cwd_roots", "mcp.allowed_cwd_roots"},
		{"server:\n  web:\n    listen: 127.0.0.1:2\n", "server.web.listen", "admin.listen"},
		{"server:\n  web:\n    auth_token_file: a\n", "server.web.auth_token_file", "admin.auth_token_file"},
	}
	for _, tc := range cases {
		t.Run("server key "+tc.path, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("config.yaml", []byte("# old file\n"+tc.yaml), nil)
			if !errors.Is(err, ErrServerSection) {
				t.Fatalf("error = %v, want ErrServerSection", err)
			}
			e := asConfigError(t, err)
			wantLine := strings.Count("# old file\n"+tc.yaml, "\n")
			firstLine, table, _ := strings.Cut(err.Error(), "\n")
			want := fmt.Sprintf("config.yaml:%d: ", wantLine) + tc.path + ": the server section is not supported: move " + tc.path + " to " + tc.to
			if firstLine != want {
				t.Errorf("first line:\n got %q\nwant %q", firstLine, want)
			}
			if e.Line != wantLine {
				t.Errorf("line = %d, want %d", e.Line, wantLine)
			}
			for _, m := range migrations {
				if !strings.Contains(table, m.from) || !strings.Contains(table, m.to) {
					t.Errorf("table lacks %s → %s:\n%s", m.from, m.to, table)
				}
			}
		})
	}
	t.Run("an empty server section still gets the table", func(t *testing.T) {
		t.Parallel()
		_, err := Parse("c.yaml", []byte("mcp:\n  listen: x\nserver: {}\n"), nil)
		first, table, _ := strings.Cut(err.Error(), "\n")
		if first != "c.yaml:3: server: the server section is not supported: move MCP settings to mcp and server.web to admin" {
			t.Errorf("first line = %q", first)
		}
		if !strings.Contains(table, "server.web.auth_token_file") {
			t.Errorf("table missing: %q", table)
		}
	})
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "none.yaml")
	_, err := LoadFile(t.Context(), path, nil)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v does not wrap fs.ErrNotExist", err)
	}
	if errors.Is(err, ErrInvalid) {
		t.Errorf("a missing file is not an invalid config: %v", err)
	}
	if want := path + ": cannot read config: no such file or directory"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestPlatformPaths(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	cases := []struct {
		name string
		o    *Options
		fn   func(*Options) (string, error)
		want string
	}{
		{"linux config", &Options{Home: "/h", GOOS: "linux", Getenv: env()}, DefaultPath, "/h/.config/wraptool/config.yaml"},
		{"linux config honours XDG_CONFIG_HOME", &Options{Home: "/h", GOOS: "linux", Getenv: env("XDG_CONFIG_HOME", "/x")}, DefaultPath, "/x/wraptool/config.yaml"},
		{"a relative XDG value is ignored", &Options{Home: "/h", GOOS: "linux", Getenv: env("XDG_CONFIG_HOME", "rel")}, DefaultPath, "/h/.config/wraptool/config.yaml"},
		{"linux data", &Options{Home: "/h", GOOS: "linux", Getenv: env()}, DataDir, "/h/.local/share/wraptool"},
		{"linux data honours XDG_DATA_HOME", &Options{Home: "/h", GOOS: "linux", Getenv: env("XDG_DATA_HOME", "/d")}, DataDir, "/d/wraptool"},
		{"linux cache", &Options{Home: "/h", GOOS: "linux", Getenv: env("XDG_CACHE_HOME", "/c")}, CacheDir, "/c/wraptool"},
		{"macOS config", &Options{Home: "/h", GOOS: "darwin", Getenv: env("XDG_CONFIG_HOME", "/x")}, DefaultPath, "/h/Library/Application Support/wraptool/config.yaml"},
		{"macOS data", &Options{Home: "/h", GOOS: "darwin", Getenv: env()}, DataDir, "/h/Library/Application Support/wraptool"},
		{"macOS cache", &Options{Home: "/h", GOOS: "darwin", Getenv: env()}, CacheDir, "/h/Library/Caches/wraptool"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.fn(tc.o)
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// mcp.audit_log: "off" stays off (and is no file wraptool protects), a
// path resolves like every path field.
func TestLoadAuditLog(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	cases := []struct {
		name, yaml, want string
		enabled          bool
	}{
		{"off disables it", base + "  audit_log: \"off\"\n", "off", false},
		{"a relative path is taken from the config's folder", base + "  audit_log: logs/a.jsonl\n", filepath.Join(dir, "logs/a.jsonl"), true},
		{"~ expands", base + "  audit_log: ~/a.jsonl\n", filepath.Join(dir, "home/a.jsonl"), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := mustParse(t, dir, tc.yaml)
			if c.MCP.AuditLog != tc.want || c.AuditEnabled() != tc.enabled {
				t.Errorf("audit_log = %q (enabled %v), want %q (%v)", c.MCP.AuditLog, c.AuditEnabled(), tc.want, tc.enabled)
			}
			if got := c.OwnFiles(); slices.Contains(got, tc.want) != tc.enabled {
				t.Errorf("OwnFiles %v: audit log protected = %v, want %v", got, !tc.enabled, tc.enabled)
			}
		})
	}
}

// A YAML syntax error names the line that is wrong (yaml.v3 names the line
// its enclosing block began on: a mis-indented key in a list's third item
// was reported at the list's first line) and the field path before it, in
// the file:line: path: message form of every config error. The texts are
// real broken configs, as an operator's editor leaves them.
func TestYAMLSyntaxErrorsNameTheWrongLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml string
		line       int
		path, msg  string
	}{
		{"a key indented one space short in a list item",
			"mcp:\n  listen: 127.0.0.1:8717\ntools:\n  git:\n    binary: /usr/bin/git\n    allow:\n      - subcommand: [status]\n      - subcommand: [log]\n       flags: [--oneline]\n",
			9, "tools.git.allow[1].subcommand", "did not find expected '-' indicator"},
		{"an unclosed flow list", "tools:\n  git:\n    allow:\n      - subcommand: [status\n      - subcommand: [log]\n",
			4, "tools.git.allow", "did not find expected ',' or ']'"},
		{"an unterminated quoted string", "tools:\n  git:\n    allow:\n      - subcommand: [status]\n    binary: \"/usr/bin/git\n",
			5, "tools.git.allow[0].subcommand", "found unexpected end of stream"},
		{"a key dedented out of its mapping", "tools:\n  git:\n  allow:\n    - subcommand: [x]\n   binary: y\n",
			5, "tools.allow[0].subcommand", "did not find expected key"},
		{"a tab as indentation", "tools:\n\tgit: {}\n", 2, "tools", "found character that cannot start any token"},
		{"an error on the first line has no path before it", "tools: [\n", 1, "", "did not find expected node content"},
		{"a hostile key before the error is a path, not raw bytes", "tools:\n  \"g\\e[2J\":\n    allow:\n      - subcommand: [a]\n     x: [\n",
			5, `tools["g\x1b[2J"].allow[0].subcommand`, "did not find expected key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseDocument("config.yaml", []byte(tc.yaml))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want a *Error", err)
			}
			if e.Line != tc.line || e.Path != tc.path || !strings.HasSuffix(e.Msg, tc.msg) {
				t.Errorf("got line %d, path %q, msg %q; want line %d, path %q, msg ending %q", e.Line, e.Path, e.Msg, tc.line, tc.path, tc.msg)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%v does not unwrap to ErrInvalid", err)
			}
		})
	}
}
