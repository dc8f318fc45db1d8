package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy/config/configtest"
)

// Files that decide what runs are refused when anyone but their owner may
// write (or, for tokens, read) them or replace them, or when another user
// owns them. Each case failed before the check existed: the
// config was accepted.
func TestValidateRefusesFilesOthersControl(t *testing.T) {
	t.Parallel()
	const nobody = 65534
	cases := []struct {
		name string
		// setup prepares dir (a private fixture) and returns the config's
		// tools/mcp YAML body ($T is dir).
		setup    func(t *testing.T, dir string) string
		root     bool // needs root (chown)
		path     string
		contains string
	}{
		{
			name: "a world-writable env file",
			setup: func(t *testing.T, dir string) string {
				chmod(t, filepath.Join(dir, "env/good.env"), 0o666)
				return tool("    env_files: [$T/env/good.env]\n")
			},
			path: "tools.git.env_files[0]", contains: "env/good.env is writable by group or others, and it decides what runs; fix with: chmod go-w ",
		},
		{
			name: "an env file in a group-writable folder",
			setup: func(t *testing.T, dir string) string {
				chmod(t, filepath.Join(dir, "env"), 0o770)
				return tool("    env_files: [$T/env/good.env]\n")
			},
			path: "tools.git.env_files[0]", contains: "which group or others may write, so they could replace it; fix with: chmod go-w " + "$T/env",
		},
		{
			name: "a token file others may read",
			setup: func(t *testing.T, dir string) string {
				chmod(t, filepath.Join(dir, "tok/a"), 0o644)
				return "  auth_token_file: $T/tok/a\n"
			},
			path: "mcp.auth_token_file", contains: "tok/a is readable by group or others, and it holds a secret; fix with: chmod 600 ",
		},
		{
			name: "an admin token file others may write",
			setup: func(t *testing.T, dir string) string {
				chmod(t, filepath.Join(dir, "tok/b"), 0o602)
				return "admin:\n  listen: 127.0.0.1:9\n  auth_token_file: $T/tok/b\n"
			},
			path: "admin.auth_token_file", contains: "tok/b is writable by group or others",
		},
		{
			name: "a missing token file in a world-writable folder",
			setup: func(t *testing.T, dir string) string {
				mkdir(t, filepath.Join(dir, "open"), 0o777)
				return "  auth_token_file: $T/open/token\n"
			},
			path: "mcp.auth_token_file", contains: "open/token is in $T/open, which group or others may write",
		},
		{
			name: "a binary others may write",
			setup: func(t *testing.T, dir string) string {
				chmod(t, filepath.Join(dir, "bin/tool"), 0o775)
				return tool("")
			},
			path: "tools.git.binary", contains: "bin/tool is writable by group or others",
		},
		{
			name: "a hook others may write",
			setup: func(t *testing.T, dir string) string {
				chmod(t, filepath.Join(dir, "bin/tool"), 0o777)
				return "  on_request: [$T/bin/tool, \"{id}\"]\n"
			},
			path: "mcp.on_request[0]", contains: "bin/tool is writable by group or others",
		},
		{
			name: "a binary under a folder others may write, two levels up",
			setup: func(t *testing.T, dir string) string {
				mkdir(t, filepath.Join(dir, "open"), 0o777)
				mkdir(t, filepath.Join(dir, "open/sub"), 0o700)
				configtest.WriteFile(t, filepath.Join(dir, "open/sub/tool"), "#!/bin/sh\n", 0o755)
				return "tools:\n  git:\n    binary: $T/open/sub/tool\n"
			},
			path: "tools.git.binary", contains: "open/sub/tool is under $T/open, which group or others may write, so they could put another program in its place; fix with: chmod go-w $T/open",
		},
		{
			name: "a binary in a sticky folder another user owns",
			root: true,
			setup: func(t *testing.T, dir string) string {
				mkdir(t, filepath.Join(dir, "shared"), 0o777|os.ModeSticky)
				chown(t, filepath.Join(dir, "shared"), nobody)
				configtest.WriteFile(t, filepath.Join(dir, "shared/tool"), "#!/bin/sh\n", 0o755)
				return "tools:\n  git:\n    binary: $T/shared/tool\n"
			},
			path: "tools.git.binary", contains: "$T/shared is owned by uid 65534",
		},
		{
			name: "a symlinked binary whose target's folder others may write",
			setup: func(t *testing.T, dir string) string {
				mkdir(t, filepath.Join(dir, "open"), 0o777)
				configtest.WriteFile(t, filepath.Join(dir, "open/real"), "#!/bin/sh\n", 0o755)
				if err := os.Symlink(filepath.Join(dir, "open/real"), filepath.Join(dir, "bin/link")); err != nil {
					t.Fatal(err)
				}
				return "tools:\n  git:\n    binary: $T/bin/link\n"
			},
			path: "tools.git.binary", contains: "bin/link is under $T/open",
		},
		{
			name: "an upstream command by path under a folder others may write",
			setup: func(t *testing.T, dir string) string {
				mkdir(t, filepath.Join(dir, "open"), 0o777)
				configtest.WriteFile(t, filepath.Join(dir, "open/srv"), "#!/bin/sh\n", 0o755)
				return "mcp_servers:\n  fs:\n    command: $T/open/srv\n"
			},
			path: "mcp_servers.fs.command", contains: "open/srv is under $T/open",
		},
		{
			name: "an upstream command found in a PATH folder others may write",
			setup: func(t *testing.T, dir string) string {
				mkdir(t, filepath.Join(dir, "open"), 0o777)
				configtest.WriteFile(t, filepath.Join(dir, "open/srv"), "#!/bin/sh\n", 0o755)
				return "mcp_servers:\n  fs:\n    command: srv\n    env: {PATH: $T/open}\n"
			},
			path: "mcp_servers.fs.command", contains: "open/srv is under $T/open",
		},
		{
			name: "an upstream script others may write",
			setup: func(t *testing.T, dir string) string {
				configtest.WriteFile(t, filepath.Join(dir, "dir/server.py"), "print(1)\n", 0o646)
				return "mcp_servers:\n  fs:\n    command: /bin/sh\n    args: [-u, $T/dir/server.py]\n"
			},
			path: "mcp_servers.fs.args[1]", contains: "dir/server.py is writable by group or others",
		},
		{
			name: "a relative upstream script, taken from its working_dir, under a folder others may write",
			setup: func(t *testing.T, dir string) string {
				mkdir(t, filepath.Join(dir, "open"), 0o777)
				configtest.WriteFile(t, filepath.Join(dir, "open/server.py"), "print(1)\n", 0o600)
				return "mcp_servers:\n  fs:\n    command: /bin/sh\n    args: [server.py]\n    working_dir: $T/open\n"
			},
			path: "mcp_servers.fs.args[0]", contains: "open/server.py is under $T/open",
		},
		{
			name: "a hook under a folder others may write",
			setup: func(t *testing.T, dir string) string {
				mkdir(t, filepath.Join(dir, "open"), 0o777)
				mkdir(t, filepath.Join(dir, "open/hooks"), 0o700)
				configtest.WriteFile(t, filepath.Join(dir, "open/hooks/notify"), "#!/bin/sh\n", 0o755)
				return "  on_request: [$T/open/hooks/notify, \"{id}\"]\n"
			},
			path: "mcp.on_request[0]", contains: "open/hooks/notify is under $T/open",
		},
		{
			name: "a hook's script under a folder others may write",
			setup: func(t *testing.T, dir string) string {
				mkdir(t, filepath.Join(dir, "open"), 0o777)
				configtest.WriteFile(t, filepath.Join(dir, "open/notify.py"), "print(1)\n", 0o600)
				return "  on_request: [/bin/sh, open/notify.py]\n"
			},
			path: "mcp.on_request[1]", contains: "open/notify.py is under $T/open",
		},
		{
			name: "a request log others may write",
			setup: func(t *testing.T, dir string) string {
				configtest.WriteFile(t, filepath.Join(dir, "requests.jsonl"), "", 0o622)
				return "  request_log: $T/requests.jsonl\n"
			},
			path: "mcp.request_log", contains: "requests.jsonl is writable by group or others",
		},
		{
			name: "a grants key others may read",
			setup: func(t *testing.T, dir string) string {
				configtest.WriteFile(t, filepath.Join(dir, "requests.jsonl"), "", 0o600)
				configtest.WriteFile(t, filepath.Join(dir, "grants.key"), strings.Repeat("k", 32), 0o640)
				return "  request_log: $T/requests.jsonl\n"
			},
			path: "mcp.request_log", contains: "grants.key is readable by group or others, and it holds a secret; fix with: chmod 600 ",
		},
		{
			name: "a sessions file others may read",
			setup: func(t *testing.T, dir string) string {
				configtest.WriteFile(t, filepath.Join(dir, "requests.jsonl"), "", 0o600)
				configtest.WriteFile(t, filepath.Join(dir, "sessions.json"), "{}", 0o644)
				return "  request_log: $T/requests.jsonl\n"
			},
			path: "mcp.request_log", contains: "sessions.json is readable by group or others, and it holds a secret; fix with: chmod 600 ",
		},
		{
			name: "a request log in a folder others may write",
			setup: func(t *testing.T, dir string) string {
				mkdir(t, filepath.Join(dir, "logs"), 0o757)
				return "  request_log: $T/logs/requests.jsonl\n"
			},
			path: "mcp.request_log", contains: "which group or others may write",
		},
		{
			name: "an overrides file others may write",
			setup: func(t *testing.T, dir string) string {
				configtest.WriteFile(t, filepath.Join(dir, "git-overrides.yaml"), "subcommands: {}\n", 0o646)
				return tool("    introspection:\n      overrides_file: $T/git-overrides.yaml\n")
			},
			path: "tools.git.introspection.overrides_file", contains: "git-overrides.yaml is writable by group or others",
		},
		{
			name: "an env file another user owns",
			root: true,
			setup: func(t *testing.T, dir string) string {
				chown(t, filepath.Join(dir, "env/good.env"), nobody)
				return tool("    env_files: [$T/env/good.env]\n")
			},
			path: "tools.git.env_files[0]", contains: "env/good.env is owned by uid 65534, not by you (uid 0) or root, so another user controls it",
		},
		{
			name: "a binary another user owns",
			root: true,
			setup: func(t *testing.T, dir string) string {
				chown(t, filepath.Join(dir, "bin/tool"), nobody)
				return tool("")
			},
			path: "tools.git.binary", contains: "bin/tool is owned by uid 65534",
		},
		{
			name: "a token in a folder another user owns",
			root: true,
			setup: func(t *testing.T, dir string) string {
				chown(t, filepath.Join(dir, "tok"), nobody)
				return "  auth_token_file: $T/tok/a\n"
			},
			path: "mcp.auth_token_file", contains: "/tok is owned by uid 65534",
		},
		{
			name: "an env file reached through a symlink into an open folder",
			setup: func(t *testing.T, dir string) string {
				mkdir(t, filepath.Join(dir, "open"), 0o777)
				configtest.WriteFile(t, filepath.Join(dir, "open/real.env"), "A=1\n", 0o600)
				if err := os.Symlink(filepath.Join(dir, "open/real.env"), filepath.Join(dir, "env/link.env")); err != nil {
					t.Fatal(err)
				}
				return tool("    env_files: [$T/env/link.env]\n")
			},
			path: "tools.git.env_files[0]", contains: "env/link.env is in $T/open, which group or others may write",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.root && os.Geteuid() != 0 {
				t.Skip("needs root to give a file to another user")
			}
			dir := fixture(t)
			body := tc.setup(t, dir)
			yaml := base + body // mcp keys continue base's mcp: section
			_, err := parseFixture(t, dir, yaml)
			if err == nil {
				t.Fatalf("Parse accepted:\n%s", yaml)
			}
			e := asConfigError(t, err)
			if want := strings.ReplaceAll(tc.contains, "$T", dir); e.Path != tc.path || !strings.Contains(e.Msg, want) {
				t.Errorf("got  path %q, msg %q\nwant path %q, msg containing %q", e.Path, e.Msg, tc.path, want)
			}
		})
	}

	t.Run("a sticky world-writable folder root owns is fine for a binary", func(t *testing.T) {
		t.Parallel()
		if os.Geteuid() != 0 {
			t.Skip("needs root: the sticky folder must be root's")
		}
		dir := fixture(t)
		mkdir(t, filepath.Join(dir, "shared"), 0o777|os.ModeSticky)
		mkdir(t, filepath.Join(dir, "shared/mine"), 0o700)
		configtest.WriteFile(t, filepath.Join(dir, "shared/mine/tool"), "#!/bin/sh\n", 0o755)
		mustParse(t, dir, base+"tools:\n  git:\n    binary: $T/shared/mine/tool\n")
	})

	t.Run("a sticky world-writable folder is fine for the request log", func(t *testing.T) {
		t.Parallel()
		dir := fixture(t)
		mkdir(t, filepath.Join(dir, "shared"), 0o777|os.ModeSticky)
		mustParse(t, dir, base+"  request_log: $T/shared/requests.jsonl\n")
	})
}

// The config file itself is checked where it is read, by start-up, every
// reload and `config validate` alike.
func TestLoadRefusesAConfigOthersControl(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		setup    func(t *testing.T, dir, cfg string) string // returns the path to load
		contains string
	}{
		{"a world-writable config", func(t *testing.T, dir, cfg string) string {
			chmod(t, cfg, 0o666)
			return cfg
		}, "config.yaml is writable by group or others, and it decides what runs; fix with: chmod go-w $T/config.yaml"},
		{"a config in a folder others may write", func(t *testing.T, dir, cfg string) string {
			chmod(t, dir, 0o777)
			return cfg
		}, "config.yaml is in $T, which group or others may write"},
		{"a symlinked config whose target others may write", func(t *testing.T, dir, cfg string) string {
			chmod(t, cfg, 0o662)
			link := filepath.Join(dir, "link.yaml")
			if err := os.Symlink(cfg, link); err != nil {
				t.Fatal(err)
			}
			return link
		}, "link.yaml is writable by group or others"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cfg := filepath.Join(dir, "config.yaml")
			configtest.WriteFile(t, cfg, base, 0o600)
			path := tc.setup(t, dir, cfg)
			_, err := LoadFile(t.Context(), path, &LoadOptions{Paths: &Options{Home: dir}})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Load: got %v, want a *config.Error", err)
			}
			if want := strings.ReplaceAll(tc.contains, "$T", dir); !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), path+": ") {
				t.Errorf("Load: got %q, want it to start with %q and contain %q", err.Error(), path+": ", want)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	chmod(t, filepath.Join(dir, "env/over.env"), 0o644)
	c := mustParse(t, dir, base+`tools:
  git:
    binary: $T/bin/tool
    env_files: [$T/env/good.env, $T/env/over.env]
    allow:
      - subcommand: []
        flags: [-P, -C, -y, -q, --work-tree]
        deny_flags: [-q]
        flag_constraints:
          "-C": {type: string}
      - subcommand: [log]
        flags: [-n]
        flag_constraints:
          "-n": {min: 1}
mcp_servers:
  fs:
    command: srv
    allow:
      - tool: read
      - tool: read.file
      - tool: `+strings.Repeat("t", 62)+`
`)
	var got []string
	for _, w := range c.Warnings(nil, nil) {
		got = append(got, w.String())
	}
	want := []string{
		dir + "/config.yaml:6: tools.git.env_files[1]: " + dir + "/env/over.env is readable by group or others",
		dir + `/config.yaml:9: tools.git.allow[0].flags[0]: -P has no type, so wraptool passes it as "-P value" and checks that value like a positional argument`,
		dir + `/config.yaml:22: mcp_servers.fs.allow[1].tool: is not exposed: the exposed name "fs_read.file" does not match [A-Za-z0-9][A-Za-z0-9_-]*`,
		dir + `/config.yaml:23: mcp_servers.fs.allow[2].tool: is not exposed: the exposed name "fs_` + strings.Repeat("t", 62) + `" is 65 characters; the limit is 64`,
	}
	if len(got) != len(want) {
		t.Fatalf("warnings:\n got %q\nwant %d starting %q", got, len(want), want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %d:\n got %q\nwant prefix %q", i, got[i], want[i])
		}
	}
	if !strings.HasSuffix(got[1], `flag_constraints["-P"].type: boolean for a switch, string or integer for a value`) {
		t.Errorf("warning does not say how to fix it: %q", got[1])
	}
}

func tool(extra string) string {
	return "tools:\n  git:\n    binary: $T/bin/tool\n" + extra
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func chown(t *testing.T, path string, uid int) {
	t.Helper()
	if err := os.Chown(path, uid, -1); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	chmod(t, path, mode)
}
