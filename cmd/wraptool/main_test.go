package main

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/peterbourgon/ff/v4"

	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
)

// run calls exec in-process with env as the whole environment and returns
// what a user of the binary would see: stdout, stderr and the exit status.
func run(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	getenv := func(k string) string { return env[k] }
	var out, errOut bytes.Buffer
	err := exec(t.Context(), args, getenv, strings.NewReader(""), &out, &errOut)
	code = exitCode(err, &errOut)
	return out.String(), errOut.String(), code
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func TestExecCommandLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		wantCode   int
		wantStdout string // a prefix of stdout; "" means stdout must be empty
		wantStderr string // a substring of stderr; "" means stderr must be empty
	}{
		{
			name:       "version prints the program name and exits 0",
			args:       []string{"version"},
			wantStdout: "wraptool ",
		},
		{
			name:       "global flags after the subcommand are accepted",
			args:       []string{"version", "--log-level", "debug", "--log-format", "json"},
			wantStdout: "wraptool ",
		},
		{
			name:       "the --log-level flag beats a bad WRAPTOOL_LOG_LEVEL",
			args:       []string{"--log-level", "warn", "version"},
			env:        map[string]string{"WRAPTOOL_LOG_LEVEL": "loud"},
			wantStdout: "wraptool ",
		},
		{
			name:       "the --log-format flag beats a bad WRAPTOOL_LOG_FORMAT",
			args:       []string{"--log-format", "text", "version"},
			env:        map[string]string{"WRAPTOOL_LOG_FORMAT": "xml"},
			wantStdout: "wraptool ",
		},
		{
			name:       "good WRAPTOOL_LOG_LEVEL and WRAPTOOL_LOG_FORMAT values are accepted",
			args:       []string{"version"},
			env:        map[string]string{"WRAPTOOL_LOG_LEVEL": "error", "WRAPTOOL_LOG_FORMAT": "json"},
			wantStdout: "wraptool ",
		},
		{
			name:       "version with an argument is a usage error",
			args:       []string{"version", "extra"},
			wantCode:   exitUsage,
			wantStderr: "wraptool: version takes no arguments",
		},
		{
			name:       "no command is a usage error that says the command is missing",
			args:       nil,
			wantCode:   exitUsage,
			wantStderr: "wraptool: missing command",
		},
		{
			name:       "an unknown command is a usage error that names it",
			args:       []string{"frobnicate"},
			wantCode:   exitUsage,
			wantStderr: `wraptool: unknown command "frobnicate"`,
		},
		{
			name:       "config without a subcommand is a usage error",
			args:       []string{"config"},
			wantCode:   exitUsage,
			wantStderr: "wraptool: missing command",
		},
		{
			name:       "config with an unknown subcommand is a usage error that names it",
			args:       []string{"config", "check"},
			wantCode:   exitUsage,
			wantStderr: `wraptool: unknown command "check"`,
		},
		{
			name:       "an unknown global flag is a usage error",
			args:       []string{"--verbose", "version"},
			wantCode:   exitUsage,
			wantStderr: `unknown flag "verbose"`,
		},
		{
			name:       "--help prints the help on stdout and exits 0",
			args:       []string{"--help"},
			wantStdout: "COMMAND\n  wraptool -- ",
		},
		{
			name:       "-h prints the help on stdout and exits 0",
			args:       []string{"-h"},
			wantStdout: "COMMAND\n  wraptool -- ",
		},
		{
			name:       "config validate --help prints the help of validate",
			args:       []string{"config", "validate", "--help"},
			wantStdout: "COMMAND\n  validate -- check a config; touches nothing",
		},
		{
			name:       "a bad --log-level is a usage error naming the flag",
			args:       []string{"--log-level", "loud", "version"},
			wantCode:   exitUsage,
			wantStderr: `wraptool: --log-level: unknown log level "loud"`,
		},
		{
			name:       "a bad WRAPTOOL_LOG_LEVEL is a usage error naming the variable",
			args:       []string{"version"},
			env:        map[string]string{"WRAPTOOL_LOG_LEVEL": "loud"},
			wantCode:   exitUsage,
			wantStderr: `wraptool: WRAPTOOL_LOG_LEVEL: unknown log level "loud"`,
		},
		{
			name:       "a bad --log-format is a usage error naming the flag",
			args:       []string{"--log-format", "xml", "version"},
			wantCode:   exitUsage,
			wantStderr: `wraptool: --log-format: unknown log format "xml"`,
		},
		{
			name:       "a bad WRAPTOOL_LOG_FORMAT is a usage error naming the variable",
			args:       []string{"version"},
			env:        map[string]string{"WRAPTOOL_LOG_FORMAT": "xml"},
			wantCode:   exitUsage,
			wantStderr: `wraptool: WRAPTOOL_LOG_FORMAT: unknown log format "xml"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := run(t, tt.env, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit status = %d, want %d (stderr %q)", code, tt.wantCode, stderr)
			}
			switch {
			case tt.wantStdout == "" && stdout != "":
				t.Errorf("stdout = %q, want it empty", stdout)
			case !strings.HasPrefix(stdout, tt.wantStdout):
				t.Errorf("stdout = %q, want it to start with %q", stdout, tt.wantStdout)
			}
			switch {
			case tt.wantStderr == "" && stderr != "":
				t.Errorf("stderr = %q, want it empty", stderr)
			case !strings.Contains(stderr, tt.wantStderr):
				t.Errorf("stderr = %q, want it to contain %q", stderr, tt.wantStderr)
			}
		})
	}
}

func TestVersionNamesThePlatform(t *testing.T) {
	t.Parallel()
	stdout, _, code := run(t, nil, "version")
	if code != exitOK {
		t.Fatalf("exit status = %d, want %d", code, exitOK)
	}
	want := fmt.Sprintf(" %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if !strings.HasPrefix(stdout, "wraptool ") || !strings.HasSuffix(stdout, want) {
		t.Errorf("stdout = %q, want \"wraptool VERSION%s\"", stdout, want)
	}
}

func TestUsageErrorsEndWithTheHelpOfTheCommand(t *testing.T) {
	t.Parallel()
	_, stderr, code := run(t, nil, "config", "validate", "a.yaml", "b.yaml")
	if code != exitUsage {
		t.Fatalf("exit status = %d, want %d", code, exitUsage)
	}
	wantFirst := "wraptool: config validate takes at most one PATH, got 2 arguments"
	if got := firstLine(stderr); got != wantFirst {
		t.Errorf("first line of stderr = %q, want %q", got, wantFirst)
	}
	if !strings.Contains(stderr, "USAGE\n  wraptool config validate [PATH]") {
		t.Errorf("stderr = %q, want it to hold the usage of config validate", stderr)
	}
}

// The cases are shared with the built binary's test (integration), so the
// two can never drift apart.
func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range configtest.ValidateCases() {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			dir, args, env := tc.Setup(t)
			stdout, stderr, code := run(t, env, args...)
			tc.Check(t, dir, stdout, stderr, code)
		})
	}
}

// The problems below come from different stages of Load (decoding, path
// expansion, semantic checks). validate reports the first problem in
// document order, whichever stage of loading finds it.
func TestConfigValidateReportsTheFirstProblemInDocumentOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		config     string
		wantStderr string
	}{
		{
			name: "two semantic problems: the earlier line wins",
			config: "mcp:\n" +
				"  listen: 127.0.0.1:8717\n" +
				"tools:\n" +
				"  git:\n" +
				"    binary: bin/git\n" +
				"  gh:\n" +
				"    binary: bin/gh\n",
			wantStderr: "$DIR/config.yaml:5: tools.git.binary: ",
		},
		{
			name: "two unknown keys: the earlier line wins",
			config: "mcp:\n" +
				"  listen: 127.0.0.1:8717\n" +
				"  bogus1: x\n" +
				"tools:\n" +
				"  git:\n" +
				"    bogus2: x\n",
			wantStderr: "$DIR/config.yaml:3: mcp.bogus1: unknown field",
		},
		{
			name: "a semantic problem before an unknown key wins",
			config: "mcp:\n" +
				"  listen: 127.0.0.1:8717\n" +
				"tools:\n" +
				"  git:\n" +
				"    binary: bin/git\n" +
				"    allow:\n" +
				"      - subcommand: [pull]\n" +
				"        flagz: [\"--rebase\"]\n",
			wantStderr: "$DIR/config.yaml:5: tools.git.binary: ",
		},
		{
			name: "a semantic problem before a bad ~user path wins",
			config: "mcp:\n" +
				"  listen: 127.0.0.1:8717\n" +
				"tools:\n" +
				"  git:\n" +
				"    binary: bin/git\n" +
				"    working_dir: ~bob/src\n",
			wantStderr: "$DIR/config.yaml:5: tools.git.binary: ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := configtest.NewFixture(t, map[string]string{"config.yaml": tt.config})
			env := map[string]string{"HOME": filepath.Join(dir, "home")}
			stdout, stderr, code := run(t, env, "config", "validate", filepath.Join(dir, "config.yaml"))
			if code != exitFailure {
				t.Errorf("exit status = %d, want %d", code, exitFailure)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want it empty", stdout)
			}
			if want := configtest.Expand(tt.wantStderr, dir); !strings.HasPrefix(firstLine(stderr), want) {
				t.Errorf("first line of stderr = %q, want it to start with %q", firstLine(stderr), want)
			}
		})
	}
}

// The log level is not observable through exec (config validate logs
// nothing), so these tests drive the app's setup and loadConfig directly.
func TestLogLevel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		config string // mcp.log_level, or "" to leave it out
		want   slog.Level
	}{
		{
			name: "with no flag, variable or mcp.log_level the level is info",
			want: slog.LevelInfo,
		},
		{
			name:   "mcp.log_level is honoured when no flag or variable is given",
			config: "debug",
			want:   slog.LevelDebug,
		},
		{
			name:   "--log-level beats mcp.log_level",
			args:   []string{"--log-level", "error"},
			config: "debug",
			want:   slog.LevelError,
		},
		{
			name:   "WRAPTOOL_LOG_LEVEL beats mcp.log_level",
			env:    map[string]string{"WRAPTOOL_LOG_LEVEL": "warn"},
			config: "debug",
			want:   slog.LevelWarn,
		},
		{
			name: "--log-level beats WRAPTOOL_LOG_LEVEL",
			args: []string{"--log-level", "debug"},
			env:  map[string]string{"WRAPTOOL_LOG_LEVEL": "error"},
			want: slog.LevelDebug,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := "mcp:\n  listen: 127.0.0.1:8717\n"
			if tt.config != "" {
				cfg += "  log_level: " + tt.config + "\n"
			}
			dir := configtest.NewFixture(t, map[string]string{"config.yaml": cfg})
			env := map[string]string{"HOME": filepath.Join(dir, "home")}
			for k, v := range tt.env {
				env[k] = v
			}
			a := newTestApp(t, env, tt.args)
			if err := a.setup(); err != nil {
				t.Fatalf("setup: %v", err)
			}
			if _, err := a.loadConfig(t.Context(), filepath.Join(dir, "config.yaml")); err != nil {
				t.Fatalf("loadConfig: %v", err)
			}
			if got := a.level.Level(); got != tt.want {
				t.Errorf("level = %v, want %v", got, tt.want)
			}
		})
	}
}

// newTestApp builds an app with exec's global flags parsed from args, ready
// for setup; exec itself hides its app.
func newTestApp(t *testing.T, env map[string]string, args []string) *app {
	t.Helper()
	a := newApp(func(k string) string { return env[k] }, new(bytes.Buffer), new(bytes.Buffer))
	if err := a.flags.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return a
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	cfgErr := &config.Error{File: "config.yaml", Line: 3, Path: "mcp.listen", Msg: "is required"}
	tests := []struct {
		name       string
		err        error
		want       int
		wantStderr string
	}{
		{name: "no error is success and prints nothing", err: nil, want: exitOK},
		{name: "help asked for is success and prints nothing", err: fmt.Errorf("wraptool: %w", ff.ErrHelp), want: exitOK},
		{
			name:       "a usage error exits 2 with the message and the help",
			err:        &usageError{err: errors.New("missing command"), help: "USAGE\n  wraptool COMMAND"},
			want:       exitUsage,
			wantStderr: "wraptool: missing command\n\nUSAGE\n  wraptool COMMAND\n",
		},
		{
			name:       "a usage error without help exits 2 with the message alone",
			err:        usageErrorf("--log-level: bad"),
			want:       exitUsage,
			wantStderr: "wraptool: --log-level: bad\n",
		},
		{
			name:       "a config error exits 1 and starts with the file and line",
			err:        cfgErr,
			want:       exitFailure,
			wantStderr: "config.yaml:3: mcp.listen: is required\n",
		},
		{
			name:       "any other error exits 1 with its message",
			err:        errors.New("serve: address in use"),
			want:       exitFailure,
			wantStderr: "serve: address in use\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stderr bytes.Buffer
			if got := exitCode(tt.err, &stderr); got != tt.want {
				t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
			}
			if got := stderr.String(); got != tt.wantStderr {
				t.Errorf("stderr = %q, want %q", got, tt.wantStderr)
			}
		})
	}
}
