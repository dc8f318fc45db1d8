package integration

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// validConfig has 2 tools, 3 allow rules (5 flags between them, so a count
// of flags would show) and 1 MCP server. $DIR is the test's folder.
const validConfig = `mcp:
  listen: 127.0.0.1:8717
  auth_token_file: ./mcp-token
tools:
  git:
    binary: $DIR/bin/git
    allow:
      - subcommand: [pull]
        flags: ["--ff-only", "--rebase"]
      - subcommand: [push]
        flags: ["--set-upstream", "--tags"]
  gh:
    binary: $DIR/bin/gh
    allow:
      - subcommand: [pr, list]
        flags: ["--state"]
mcp_servers:
  fs:
    command: npx
    args: ["-y", "some-mcp-server"]
    allow:
      - tool: read_file
`

const validCounts = "(2 tools, 3 allow rules, 1 mcp_servers)\n"

// newFixture makes a folder holding executable stand-ins for git and gh in
// bin/, an empty home/, and files (names relative to the folder, "$DIR" in
// contents replaced by the folder). It returns the folder.
func newFixture(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"bin/git", "bin/gh"} {
		writeFile(t, filepath.Join(dir, name), "#!/bin/sh\nexit 0\n", 0o755)
	}
	if err := os.MkdirAll(filepath.Join(dir, "home"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		writeFile(t, filepath.Join(dir, name), expand(content, dir), 0o600)
	}
	return dir
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func expand(s, dir string) string { return strings.ReplaceAll(s, "$DIR", dir) }

func expandAll(ss []string, dir string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = expand(s, dir)
	}
	return out
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]string
		// args and env may use $DIR; the child runs in $DIR with HOME set
		// to $DIR/home.
		args       []string
		env        []string
		wantCode   int
		wantStdout string // exact
		// wantStderr is a prefix of stderr's first line; "" means stderr
		// must be empty.
		wantStderr string
		// wantAfter is a substring of stderr after its first line.
		wantAfter string
	}{
		{
			name:       "a valid config named relative to the working folder prints ok with the counts",
			files:      map[string]string{"config.yaml": validConfig},
			args:       []string{"config", "validate", "config.yaml"},
			wantStdout: "ok: config.yaml " + validCounts,
		},
		{
			name:       "an absolute PATH is printed as given",
			files:      map[string]string{"config.yaml": validConfig},
			args:       []string{"config", "validate", "$DIR/config.yaml"},
			wantStdout: "ok: $DIR/config.yaml " + validCounts,
		},
		{
			name:       "--config names the config when no PATH is given",
			files:      map[string]string{"flag.yaml": validConfig},
			args:       []string{"--config", "flag.yaml", "config", "validate"},
			wantStdout: "ok: flag.yaml " + validCounts,
		},
		{
			name:       "WRAPTOOL_CONFIG names the config when --config is absent",
			files:      map[string]string{"env.yaml": validConfig},
			args:       []string{"config", "validate"},
			env:        []string{"WRAPTOOL_CONFIG=env.yaml"},
			wantStdout: "ok: env.yaml " + validCounts,
		},
		{
			name:       "--config beats WRAPTOOL_CONFIG",
			files:      map[string]string{"flag.yaml": validConfig},
			args:       []string{"--config", "flag.yaml", "config", "validate"},
			env:        []string{"WRAPTOOL_CONFIG=missing.yaml"},
			wantStdout: "ok: flag.yaml " + validCounts,
		},
		{
			name:       "an explicit PATH beats --config and WRAPTOOL_CONFIG",
			files:      map[string]string{"arg.yaml": validConfig},
			args:       []string{"--config", "missing1.yaml", "config", "validate", "arg.yaml"},
			env:        []string{"WRAPTOOL_CONFIG=missing2.yaml"},
			wantStdout: "ok: arg.yaml " + validCounts,
		},
		{
			name:       "without --config or WRAPTOOL_CONFIG the config is HOME/.config/wraptool/config.yaml",
			files:      map[string]string{"home/.config/wraptool/config.yaml": validConfig},
			args:       []string{"config", "validate"},
			wantStdout: "ok: $DIR/home/.config/wraptool/config.yaml " + validCounts,
		},
		{
			name:       "XDG_CONFIG_HOME moves the default config",
			files:      map[string]string{"xdg/wraptool/config.yaml": validConfig},
			args:       []string{"config", "validate"},
			env:        []string{"XDG_CONFIG_HOME=$DIR/xdg"},
			wantStdout: "ok: $DIR/xdg/wraptool/config.yaml " + validCounts,
		},
		{
			name: "a binary that does not exist exits 1 at the file, line and field path",
			files: map[string]string{"config.yaml": "mcp: {listen: \"127.0.0.1:8717\"}\n" +
				"tools:\n" +
				"  git:\n" +
				"    binary: $DIR/bin/no-such-git\n"},
			args:       []string{"config", "validate", "config.yaml"},
			wantCode:   1,
			wantStderr: "config.yaml:4: tools.git.binary: ",
		},
		{
			name: "a constraint with min above max gives the contract's example message",
			files: map[string]string{"config.yaml": "mcp:\n" +
				"  listen: 127.0.0.1:8717\n" +
				"tools:\n" +
				"  git:\n" +
				"    binary: $DIR/bin/git\n" +
				"    allow:\n" +
				"      - subcommand: [pull]\n" +
				"        flags: [\"--ff-only\"]\n" +
				"      - subcommand: [fetch]\n" +
				"        flags: [\"--depth\", \"--prune\"]\n" +
				"        arg_constraints:\n" +
				"          positional_max: 1\n" +
				"        flag_constraints:\n" +
				"          \"--depth\": {type: integer, min: 5, max: 2}\n"},
			args:       []string{"config", "validate", "config.yaml"},
			wantCode:   1,
			wantStderr: `config.yaml:14: tools.git.allow[1].flag_constraints["--depth"]: min 5 is greater than max 2`,
		},
		{
			name:       "an unknown key exits 1 at its line",
			files:      map[string]string{"config.yaml": "mcp:\n  listen: 127.0.0.1:8717\n  transprot: sse\n"},
			args:       []string{"config", "validate", "config.yaml"},
			wantCode:   1,
			wantStderr: "config.yaml:3: mcp.transprot: unknown field",
		},
		{
			name:       "an invalid config named by WRAPTOOL_CONFIG is reported under that name",
			files:      map[string]string{"env.yaml": "mcp:\n  listen: 0.0.0.0:8717\n"},
			args:       []string{"config", "validate"},
			env:        []string{"WRAPTOOL_CONFIG=env.yaml"},
			wantCode:   1,
			wantStderr: "env.yaml:2: mcp.listen: 0.0.0.0:8717 is not a loopback address",
		},
		{
			name:       "a server section exits 1 with the migration table on the next lines",
			files:      map[string]string{"config.yaml": "server:\n  listen: 127.0.0.1:8717\n"},
			args:       []string{"config", "validate", "config.yaml"},
			wantCode:   1,
			wantStderr: "config.yaml:2: server.listen: ",
			wantAfter:  "server.web.auth_token_file  → admin.auth_token_file",
		},
		{
			name:       "a missing file exits 1 naming the file",
			args:       []string{"config", "validate", "nope.yaml"},
			wantCode:   1,
			wantStderr: "nope.yaml: cannot read config: no such file or directory",
		},
		{
			name:       "a missing file named by WRAPTOOL_CONFIG exits 1 naming the file",
			args:       []string{"config", "validate"},
			env:        []string{"WRAPTOOL_CONFIG=nope.yaml"},
			wantCode:   1,
			wantStderr: "nope.yaml: cannot read config: ",
		},
		{
			name:       "a missing default config exits 1 naming the default path",
			args:       []string{"config", "validate"},
			wantCode:   1,
			wantStderr: "$DIR/home/.config/wraptool/config.yaml: cannot read config: ",
		},
		{
			name:       "an extra argument is a usage error",
			files:      map[string]string{"config.yaml": validConfig},
			args:       []string{"config", "validate", "config.yaml", "other.yaml"},
			wantCode:   2,
			wantStderr: "wraptool: config validate takes at most one PATH, got 2 arguments",
			wantAfter:  "wraptool config validate [PATH]",
		},
		{
			name:       "an unknown flag is a usage error",
			files:      map[string]string{"config.yaml": validConfig},
			args:       []string{"config", "validate", "--quiet", "config.yaml"},
			wantCode:   2,
			wantStderr: `wraptool: validate: parse args: unknown flag "quiet"`,
		},
		{
			name:       "a bad WRAPTOOL_LOG_LEVEL is a usage error naming the variable",
			files:      map[string]string{"config.yaml": validConfig},
			args:       []string{"config", "validate", "config.yaml"},
			env:        []string{"WRAPTOOL_LOG_LEVEL=verbose"},
			wantCode:   2,
			wantStderr: "wraptool: WRAPTOOL_LOG_LEVEL: ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := newFixture(t, tt.files)
			env := append([]string{"HOME=" + filepath.Join(dir, "home")}, expandAll(tt.env, dir)...)

			stdout, stderr, code := runWraptoolIn(t, dir, env, expandAll(tt.args, dir)...)

			if code != tt.wantCode {
				t.Errorf("exit status = %d, want %d (stderr %q)", code, tt.wantCode, stderr)
			}
			if want := expand(tt.wantStdout, dir); stdout != want {
				t.Errorf("stdout = %q, want %q", stdout, want)
			}
			first, rest, _ := strings.Cut(stderr, "\n")
			switch want := expand(tt.wantStderr, dir); {
			case want == "" && stderr != "":
				t.Errorf("stderr = %q, want it empty", stderr)
			case !strings.HasPrefix(first, want):
				t.Errorf("first line of stderr = %q, want it to start with %q", first, want)
			}
			if !strings.Contains(rest, tt.wantAfter) {
				t.Errorf("stderr after the first line = %q, want it to contain %q", rest, tt.wantAfter)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := runWraptool(t, nil, "version")
	if code != 0 {
		t.Errorf("exit status = %d, want 0 (stderr %q)", code, stderr)
	}
	if !strings.HasPrefix(stdout, "wraptool ") {
		t.Errorf("stdout = %q, want it to start with %q", stdout, "wraptool ")
	}
	if stderr != "" {
		t.Errorf("stderr = %q, want it empty", stderr)
	}
}

// touchyConfig names files validate must read or stat but never create: a
// missing MCP and admin token file, the default request log under HOME, an
// env file and a working folder. $DIR is the test's folder.
const touchyConfig = `mcp:
  listen: 127.0.0.1:8717
  auth_token_file: ./mcp-token
admin:
  listen: 127.0.0.1:8718
  auth_token_file: ~/admin-token
tools:
  git:
    binary: $DIR/bin/git
    working_dir: ./work
    env_files: [./git.env]
    allow:
      - subcommand: [pull]
        flags: ["--ff-only"]
`

func TestConfigValidateTouchesNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		config   string
		args     []string
		wantCode int
	}{
		{
			name:   "a valid config with missing token files",
			config: touchyConfig,
			args:   []string{"config", "validate", "config.yaml"},
		},
		{
			name:     "an invalid config",
			config:   strings.Replace(touchyConfig, "$DIR/bin/git", "bin/git", 1),
			args:     []string{"config", "validate", "config.yaml"},
			wantCode: 1,
		},
		{
			name:     "a config with a server section",
			config:   "server:\n  auth_token_file: ./mcp-token\n  request_log: ./requests.jsonl\n",
			args:     []string{"config", "validate", "config.yaml"},
			wantCode: 1,
		},
		{
			name:     "a missing default config",
			args:     []string{"config", "validate"},
			wantCode: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{
				"git.env":    "# for git\nGIT_TERMINAL_PROMPT=0\n",
				"work/.keep": "",
			}
			if tt.config != "" {
				files["config.yaml"] = tt.config
			}
			dir := newFixture(t, files)
			// Move every mtime into the past, so that a rewrite with the
			// same bytes, or a file created and removed again, shows.
			past := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
			backdate(t, dir, past)
			before := snapshot(t, dir)

			_, stderr, code := runWraptoolIn(t, dir, []string{"HOME=" + filepath.Join(dir, "home")}, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit status = %d, want %d (stderr %q)", code, tt.wantCode, stderr)
			}

			after := snapshot(t, dir)
			for _, name := range slices.Sorted(maps.Keys(before)) {
				switch a, ok := after[name]; {
				case !ok:
					t.Errorf("%s was removed", name)
				case a != before[name]:
					t.Errorf("%s changed: got %s, want %s", name, a, before[name])
				}
			}
			for _, name := range slices.Sorted(maps.Keys(after)) {
				if _, ok := before[name]; !ok {
					t.Errorf("%s was created", name)
				}
			}
			for _, name := range []string{"mcp-token", "home/admin-token", "home/.local", "requests.jsonl"} {
				if _, err := os.Lstat(filepath.Join(dir, name)); !os.IsNotExist(err) {
					t.Errorf("Lstat(%s) = %v, want it not to exist", name, err)
				}
			}
		})
	}
}

// backdate sets the access and modification times of dir and everything in
// it to when.
func backdate(t *testing.T, dir string, when time.Time) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(path, when, when)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// snapshot describes every entry under dir, itself included, by its mode,
// size, modification time and, for files, a hash of its contents.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("mode %v size %d mtime %s", info.Mode(), info.Size(), info.ModTime().UTC().Format(time.RFC3339Nano))
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" sha256 %x", sha256.Sum256(data))
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		entries[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// The contract resolves the default config path only when no PATH is given,
// so an explicit PATH should not need a home directory.
func TestConfigValidateWithPathNeedsNoHome(t *testing.T) {
	t.Parallel()
	dir := newFixture(t, map[string]string{
		"config.yaml": "mcp:\n  listen: 127.0.0.1:8717\n  request_log: $DIR/requests.jsonl\n",
	})
	path := filepath.Join(dir, "config.yaml")
	stdout, stderr, code := runWraptool(t, []string{"HOME="}, "config", "validate", path)
	if code != 0 {
		t.Errorf("exit status = %d, want 0 (stderr %q)", code, stderr)
	}
	if want := "ok: " + path + " (0 tools, 0 allow rules, 0 mcp_servers)\n"; stdout != want {
		t.Errorf("stdout = %q, want %q", stdout, want)
	}
}
