// Package configtest holds what the tests of `wraptool config validate`
// share: one table of cases, run both in-process (cmd/wraptool, through the
// command's exec function) and against the built binary (integration), and
// the folder each case runs in. One table means the two runs can never
// drift apart. It also holds the apply fixture that the tests of the
// request merge (policy/config) and of the file editor (policy/config/edit)
// share, so the grant overlay is checked against the very files the editor
// writes.
//
// And it holds the file writes that tests of a running gate share
// (configs, token files, env files written, rewritten and replaced as an
// operator or an editor would), so every package writes them one way.
package configtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ValidConfig has 2 tools, 3 allow rules (with 5 flags between them, so a
// count of flags would show) and 1 MCP server; each rule limits its
// positionals, so validate has nothing to warn about. $DIR is the case's
// folder.
const ValidConfig = `mcp:
  listen: 127.0.0.1:8717
  auth_token_file: ./mcp-token
tools:
  git:
    binary: $DIR/bin/git
    allow:
      - subcommand: [pull]
        flags: ["--ff-only", "--rebase"]
        arg_constraints: {positional_max: 0}
      - subcommand: [push]
        flags: ["--set-upstream", "--tags"]
        arg_constraints: {positional_max: 0}
  gh:
    binary: $DIR/bin/gh
    allow:
      - subcommand: [pr, list]
        flags: ["--state"]
        arg_constraints: {positional_max: 0}
mcp_servers:
  fs:
    command: npx
    args: ["-y", "some-mcp-server"]
    allow:
      - tool: read_file
`

// ValidCounts is what `config validate` reports for ValidConfig.
const ValidCounts = "(2 tools, 3 allow rules, 1 mcp_servers)\n"

// Exit statuses wraptool ends with: 1 for a runtime failure or an invalid
// config, 2 for a usage error.
const (
	ExitFailure = 1
	ExitUsage   = 2
)

// ValidateCase is one run of wraptool. Paths are absolute ($DIR), so a run
// in-process (which cannot change its working folder) and a run of the
// binary see the same thing.
type ValidateCase struct {
	Name string
	// Files are written into the case's folder (names relative to it,
	// "$DIR" in contents replaced), mode 0600 unless Modes says otherwise.
	Files map[string]string
	// Modes sets a file's mode after it is written.
	Modes map[string]os.FileMode
	// Args may use $DIR.
	Args []string
	// Env is the whole environment besides HOME, which is $DIR/home unless
	// Env sets it; values may use $DIR.
	Env map[string]string
	// WantCode is the exit status.
	WantCode int
	// WantStdout is stdout exactly ($DIR expanded).
	WantStdout string
	// WantStderr is a prefix of stderr's first line; "" means stderr must
	// be empty.
	WantStderr string
	// WantAfter is a substring of stderr after its first line.
	WantAfter string
	// WantMigrationTable asks for the server: migration table on the lines
	// after the first.
	WantMigrationTable bool
}

// ValidateCases is the table.
func ValidateCases() []ValidateCase {
	return []ValidateCase{
		{
			Name:       "a valid config given as PATH prints ok with the counts",
			Files:      map[string]string{"config.yaml": ValidConfig},
			Args:       []string{"config", "validate", "$DIR/config.yaml"},
			WantStdout: "ok: $DIR/config.yaml " + ValidCounts,
		},
		{
			Name:       "--config names the config when no PATH is given",
			Files:      map[string]string{"my.yaml": ValidConfig},
			Args:       []string{"--config", "$DIR/my.yaml", "config", "validate"},
			WantStdout: "ok: $DIR/my.yaml " + ValidCounts,
		},
		{
			Name:       "--config may follow the subcommand",
			Files:      map[string]string{"my.yaml": ValidConfig},
			Args:       []string{"config", "validate", "--config=$DIR/my.yaml"},
			WantStdout: "ok: $DIR/my.yaml " + ValidCounts,
		},
		{
			Name:       "WRAPTOOL_CONFIG names the config when --config is absent",
			Files:      map[string]string{"env.yaml": ValidConfig},
			Args:       []string{"config", "validate"},
			Env:        map[string]string{"WRAPTOOL_CONFIG": "$DIR/env.yaml"},
			WantStdout: "ok: $DIR/env.yaml " + ValidCounts,
		},
		{
			Name:       "--config beats WRAPTOOL_CONFIG",
			Files:      map[string]string{"flag.yaml": ValidConfig},
			Args:       []string{"--config", "$DIR/flag.yaml", "config", "validate"},
			Env:        map[string]string{"WRAPTOOL_CONFIG": "$DIR/missing.yaml"},
			WantStdout: "ok: $DIR/flag.yaml " + ValidCounts,
		},
		{
			Name:       "an explicit PATH beats --config and WRAPTOOL_CONFIG",
			Files:      map[string]string{"arg.yaml": ValidConfig},
			Args:       []string{"--config", "$DIR/missing1.yaml", "config", "validate", "$DIR/arg.yaml"},
			Env:        map[string]string{"WRAPTOOL_CONFIG": "$DIR/missing2.yaml"},
			WantStdout: "ok: $DIR/arg.yaml " + ValidCounts,
		},
		{
			Name:       "without --config or WRAPTOOL_CONFIG the config is HOME/.config/wraptool/config.yaml",
			Files:      map[string]string{"home/.config/wraptool/config.yaml": ValidConfig},
			Args:       []string{"config", "validate"},
			WantStdout: "ok: $DIR/home/.config/wraptool/config.yaml " + ValidCounts,
		},
		{
			Name:       "XDG_CONFIG_HOME moves the default config",
			Files:      map[string]string{"xdg/wraptool/config.yaml": ValidConfig},
			Args:       []string{"config", "validate"},
			Env:        map[string]string{"XDG_CONFIG_HOME": "$DIR/xdg"},
			WantStdout: "ok: $DIR/xdg/wraptool/config.yaml " + ValidCounts,
		},
		{
			Name:       "a relative XDG_CONFIG_HOME is ignored",
			Files:      map[string]string{"home/.config/wraptool/config.yaml": ValidConfig},
			Args:       []string{"config", "validate"},
			Env:        map[string]string{"XDG_CONFIG_HOME": "relative/xdg"},
			WantStdout: "ok: $DIR/home/.config/wraptool/config.yaml " + ValidCounts,
		},
		{
			Name:       "a config with nothing but mcp.listen is valid",
			Files:      map[string]string{"config.yaml": "mcp:\n  listen: 127.0.0.1:8717\n"},
			Args:       []string{"config", "validate", "$DIR/config.yaml"},
			WantStdout: "ok: $DIR/config.yaml (0 tools, 0 allow rules, 0 mcp_servers)\n",
		},
		{
			Name: "an untyped short flag is valid, with a warning on stderr",
			Files: map[string]string{"config.yaml": "mcp:\n  listen: 127.0.0.1:8717\ntools:\n  git:\n    binary: $DIR/bin/git\n" +
				"    allow:\n      - subcommand: []\n        flags: [-P]\n        arg_constraints: {positional_max: 0}\n"},
			Args:       []string{"config", "validate", "$DIR/config.yaml"},
			WantStdout: "ok: $DIR/config.yaml (1 tools, 1 allow rules, 0 mcp_servers)\n",
			WantStderr: `warning: $DIR/config.yaml:8: tools.git.allow[0].flags[0]: -P has no type, so wraptool passes it as "-P value"`,
		},
		{
			Name: "a rule taking positionals with no limit or pattern is valid, with a warning naming the fix",
			Files: map[string]string{"config.yaml": "mcp:\n  listen: 127.0.0.1:8717\ntools:\n  git:\n    binary: $DIR/bin/git\n" +
				"    allow:\n      - subcommand: [show]\n        flags: [--stat]\n"},
			Args:       []string{"config", "validate", "$DIR/config.yaml"},
			WantStdout: "ok: $DIR/config.yaml (1 tools, 1 allow rules, 0 mcp_servers)\n",
			WantStderr: "warning: $DIR/config.yaml:7: tools.git.allow[0]: rule git_show (subcommand [show]) takes any number of " +
				"positional arguments, and each reaches git as written (git push origin +HEAD:main force-pushes without --force); " +
				"limit them with arg_constraints: { positional_max: 0 } for none",
		},
		{
			Name: "a relative binary is an invalid config placed at its line and field",
			Files: map[string]string{"config.yaml": "mcp: {listen: \"127.0.0.1:8717\"}\n" +
				"tools:\n" +
				"  git:\n" +
				"    binary: bin/git\n"},
			Args:       []string{"config", "validate", "$DIR/config.yaml"},
			WantCode:   ExitFailure,
			WantStderr: "$DIR/config.yaml:4: tools.git.binary: ",
		},
		{
			Name: "a binary that does not exist exits 1 at the file, line and field path",
			Files: map[string]string{"config.yaml": "mcp: {listen: \"127.0.0.1:8717\"}\n" +
				"tools:\n" +
				"  git:\n" +
				"    binary: $DIR/bin/no-such-git\n"},
			Args:       []string{"config", "validate", "$DIR/config.yaml"},
			WantCode:   ExitFailure,
			WantStderr: "$DIR/config.yaml:4: tools.git.binary: $DIR/bin/no-such-git does not exist",
		},
		{
			Name: "a binary that is not executable is an invalid config",
			Files: map[string]string{
				"config.yaml": "mcp: {listen: \"127.0.0.1:8717\"}\ntools:\n  git:\n    binary: $DIR/plain-file\n",
				"plain-file":  "not a program\n",
			},
			Args:       []string{"config", "validate", "$DIR/config.yaml"},
			WantCode:   ExitFailure,
			WantStderr: "$DIR/config.yaml:4: tools.git.binary: $DIR/plain-file is not executable",
		},
		{
			Name: "a constraint with min above max gives the documented example message",
			Files: map[string]string{"config.yaml": "mcp:\n" +
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
			Args:       []string{"config", "validate", "$DIR/config.yaml"},
			WantCode:   ExitFailure,
			WantStderr: `$DIR/config.yaml:14: tools.git.allow[1].flag_constraints["--depth"]: min 5 is greater than max 2`,
		},
		{
			Name:       "an unknown key is an invalid config",
			Files:      map[string]string{"config.yaml": "mcp:\n  listen: 127.0.0.1:8717\n  listne: 127.0.0.1:1\n"},
			Args:       []string{"config", "validate", "$DIR/config.yaml"},
			WantCode:   ExitFailure,
			WantStderr: "$DIR/config.yaml:3: mcp.listne: unknown field",
		},
		{
			Name:       "an empty config lacks mcp.listen",
			Files:      map[string]string{"config.yaml": ""},
			Args:       []string{"config", "validate", "$DIR/config.yaml"},
			WantCode:   ExitFailure,
			WantStderr: "$DIR/config.yaml:1: mcp.listen: ",
		},
		{
			Name:       "an invalid config named by WRAPTOOL_CONFIG is reported under that name",
			Files:      map[string]string{"env.yaml": "mcp:\n  listen: 0.0.0.0:8717\n"},
			Args:       []string{"config", "validate"},
			Env:        map[string]string{"WRAPTOOL_CONFIG": "$DIR/env.yaml"},
			WantCode:   ExitFailure,
			WantStderr: "$DIR/env.yaml:2: mcp.listen: 0.0.0.0:8717 is not a loopback address",
		},
		{
			Name:       "a config others may write is refused with the chmod that fixes it",
			Files:      map[string]string{"config.yaml": ValidConfig},
			Modes:      map[string]os.FileMode{"config.yaml": 0o666},
			Args:       []string{"config", "validate", "$DIR/config.yaml"},
			WantCode:   ExitFailure,
			WantStderr: "$DIR/config.yaml: $DIR/config.yaml is writable by group or others, and it decides what runs; fix with: chmod go-w $DIR/config.yaml",
		},
		{
			Name: "a server section is refused with the migration table",
			Files: map[string]string{"config.yaml": "server:\n" +
				"  transport: sse\n" +
				"  listen: 127.0.0.1:8717\n"},
			Args:               []string{"config", "validate", "$DIR/config.yaml"},
			WantCode:           ExitFailure,
			WantStderr:         "$DIR/config.yaml:2: server.transport: ",
			WantMigrationTable: true,
		},
		{
			Name: "a server.web section is refused at its first retired key",
			Files: map[string]string{"config.yaml": "mcp:\n" +
				"  listen: 127.0.0.1:8717\n" +
				"server:\n" +
				"  web:\n" +
				"    auth_token_file: ~/admin-token\n"},
			Args:               []string{"config", "validate", "$DIR/config.yaml"},
			WantCode:           ExitFailure,
			WantStderr:         "$DIR/config.yaml:5: server.web.auth_token_file: the server section is not supported: move server.web.auth_token_file to admin.auth_token_file",
			WantMigrationTable: true,
		},
		{
			Name:       "a missing file exits 1 naming the file",
			Args:       []string{"config", "validate", "$DIR/missing.yaml"},
			WantCode:   ExitFailure,
			WantStderr: "$DIR/missing.yaml: cannot read config: no such file or directory",
		},
		{
			Name:       "a missing file named by WRAPTOOL_CONFIG exits 1 naming the file",
			Args:       []string{"config", "validate"},
			Env:        map[string]string{"WRAPTOOL_CONFIG": "$DIR/nope.yaml"},
			WantCode:   ExitFailure,
			WantStderr: "$DIR/nope.yaml: cannot read config: ",
		},
		{
			Name:       "a missing default config exits 1 naming the default path",
			Args:       []string{"config", "validate"},
			WantCode:   ExitFailure,
			WantStderr: "$DIR/home/.config/wraptool/config.yaml: cannot read config: ",
		},
		{
			Name:       "a folder given as PATH exits 1",
			Args:       []string{"config", "validate", "$DIR/home"},
			WantCode:   ExitFailure,
			WantStderr: "$DIR/home: cannot read config: is a directory",
		},
		{
			Name:       "two PATH arguments are a usage error",
			Files:      map[string]string{"config.yaml": ValidConfig},
			Args:       []string{"config", "validate", "$DIR/config.yaml", "$DIR/config.yaml"},
			WantCode:   ExitUsage,
			WantStderr: "wraptool: config validate takes at most one PATH, got 2 arguments",
			WantAfter:  "wraptool config validate [PATH]",
		},
		{
			Name:       "an unknown flag of validate is a usage error",
			Files:      map[string]string{"config.yaml": ValidConfig},
			Args:       []string{"config", "validate", "--strict", "$DIR/config.yaml"},
			WantCode:   ExitUsage,
			WantStderr: `wraptool: validate: parse args: unknown flag "strict"`,
		},
		{
			Name:       "a bad WRAPTOOL_LOG_LEVEL is a usage error naming the variable",
			Files:      map[string]string{"config.yaml": ValidConfig},
			Args:       []string{"config", "validate", "$DIR/config.yaml"},
			Env:        map[string]string{"WRAPTOOL_LOG_LEVEL": "verbose"},
			WantCode:   ExitUsage,
			WantStderr: "wraptool: WRAPTOOL_LOG_LEVEL: ",
		},
	}
}

// NewFixture makes a folder holding executable stand-ins for git and gh in
// bin/, an empty home/, and files (names relative to the folder, "$DIR" in
// contents replaced by the folder). It returns the folder.
func NewFixture(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"bin/git", "bin/gh"} {
		WriteFile(t, filepath.Join(dir, name), "#!/bin/sh\nexit 0\n", 0o755)
	}
	if err := os.MkdirAll(filepath.Join(dir, "home"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		WriteFile(t, filepath.Join(dir, name), Expand(content, dir), 0o600)
	}
	return dir
}

// Setup makes the case's folder and returns it with the case's arguments
// and environment, $DIR expanded (HOME is $DIR/home unless Env sets it).
func (c ValidateCase) Setup(t testing.TB) (dir string, args []string, env map[string]string) {
	t.Helper()
	dir = NewFixture(t, c.Files)
	for name, mode := range c.Modes {
		if err := os.Chmod(filepath.Join(dir, name), mode); err != nil {
			t.Fatal(err)
		}
	}
	env = map[string]string{"HOME": filepath.Join(dir, "home")}
	for k, v := range c.Env {
		env[k] = Expand(v, dir)
	}
	for _, a := range c.Args {
		args = append(args, Expand(a, dir))
	}
	return dir, args, env
}

// Check compares a run's output with the case.
func (c ValidateCase) Check(t testing.TB, dir, stdout, stderr string, code int) {
	t.Helper()
	if code != c.WantCode {
		t.Errorf("exit status = %d, want %d (stderr %q)", code, c.WantCode, stderr)
	}
	if want := Expand(c.WantStdout, dir); stdout != want {
		t.Errorf("stdout = %q, want %q", stdout, want)
	}
	// What confines the started processes is reported on every valid
	// run, first; the cases are about what follows.
	if note, after, ok := strings.Cut(stderr, "\n"); ok && strings.HasPrefix(note, "confinement: ") {
		stderr = after
	}
	first, rest, _ := strings.Cut(stderr, "\n")
	switch want := Expand(c.WantStderr, dir); {
	case want == "" && stderr != "":
		t.Errorf("stderr = %q, want it empty", stderr)
	case !strings.HasPrefix(first, want):
		t.Errorf("first line of stderr = %q, want it to start with %q", first, want)
	}
	if !strings.Contains(rest, c.WantAfter) {
		t.Errorf("stderr after the first line = %q, want it to contain %q", rest, c.WantAfter)
	}
	if c.WantMigrationTable {
		checkMigrationTable(t, stderr)
	}
}

// checkMigrationTable checks that the lines after stderr's first hold the
// migration table, one retired key and its replacement a line, in order.
func checkMigrationTable(t testing.TB, stderr string) {
	t.Helper()
	want := [][2]string{
		{"server.transport", "mcp.transport"},
		{"server.listen", "mcp.listen"},
		{"server.auth_token_file", "mcp.auth_token_file"},
		{"server.request_log", "mcp.request_log"},
		{"server.allowed_cwd_roots", "mcp.allowed_cwd_roots"},
		{"server.web.listen", "admin.listen"},
		{"server.web.auth_token_file", "admin.auth_token_file"},
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	var got [][2]string
	for _, line := range lines[1:] {
		if f := strings.Fields(line); len(f) == 3 && f[1] == "→" {
			got = append(got, [2]string{f[0], f[2]})
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("migration table after the first line = %v, want %v\nstderr:\n%s", got, want, stderr)
	}
	if len(lines) < 2 || lines[1] == "" {
		t.Errorf("stderr = %q, want the table to start on the second line", stderr)
	}
}

// Expand replaces $DIR in s with dir.
func Expand(s, dir string) string { return strings.ReplaceAll(s, "$DIR", dir) }
