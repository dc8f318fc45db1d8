package main

import (
	"io"

	"github.com/peterbourgon/ff/v4"
	"strings"
	"testing"
)

// The first commands a newcomer types: --version and version print the
// same line, help prints the help of wraptool or of the command named, and a
// mistyped command gets the one it came closest to (quoted, so the typing
// cannot reach the terminal raw).
func TestFirstCommands(t *testing.T) {
	t.Parallel()
	version, _, _ := run(t, nil, "version")
	for _, tc := range []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string // a substring; "" means empty
		wantErr    string // the first line of stderr
	}{
		{"--version is the version command", []string{"--version"}, exitOK, version, ""},
		{"help prints wraptool's help", []string{"help"}, exitOK, "SUBCOMMANDS\n", ""},
		{"help COMMAND SUBCOMMAND prints that command's help", []string{"help", "requests", "approve"}, exitOK, "USAGE\n  wraptool requests approve", ""},
		{"a flag's placeholder says what it takes", []string{"help", "requests", "approve"}, exitOK, "--for DURATION ", ""},
		{"help of an unknown command is a usage error with a suggestion", []string{"help", "requests", "aprove"}, exitUsage, "",
			`wraptool: help: unknown command "aprove" (did you mean "approve"?)`},
		{"a swapped pair of letters is one edit away", []string{"requets"}, exitUsage, "", `wraptool: unknown command "requets" (did you mean "requests"?)`},
		{"a prefix is suggested", []string{"conf"}, exitUsage, "", `wraptool: unknown command "conf" (did you mean "config"?)`},
		{"nothing close is suggested", []string{"frobnicate"}, exitUsage, "", `wraptool: unknown command "frobnicate"`},
		{"a hostile name is quoted", []string{"chek\x1b[2J"}, exitUsage, "", `wraptool: unknown command "chek\x1b[2J"`},
		{"a huge name is not compared", []string{strings.Repeat("c", 100000)}, exitUsage, "", `wraptool: unknown command "` + strings.Repeat("c", 100000) + `"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := run(t, nil, tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit status = %d, want %d (stderr %q)", code, tc.wantCode, firstLine(stderr))
			}
			if (tc.wantStdout == "") != (stdout == "") || !strings.Contains(stdout, tc.wantStdout) {
				t.Errorf("stdout = %q, want it to hold %q", stdout, tc.wantStdout)
			}
			if tc.wantErr != "" && firstLine(stderr) != tc.wantErr {
				t.Errorf("first line of stderr = %q, want %q", firstLine(stderr), tc.wantErr)
			}
		})
	}
}

// No flag's placeholder is its Go type: every command's help says what its
// flags take (PATH, DURATION, STATUS), never STRING.
func TestNoPlaceholderIsAType(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"help", "check"}, {"help", "connect"}, {"help", "config", "add"},
		{"help", "requests", "list"}, {"help", "requests", "approve"}, {"help", "requests", "deny"}} {
		stdout, _, _ := run(t, nil, args...)
		if strings.Contains(stdout, " STRING") || stdout == "" {
			t.Errorf("%q: %q, want no STRING placeholder", args, stdout)
		}
	}
}

// TestEveryCommandHelpHasAnExample: every command a user runs says what it
// is for (a description) and shows one example of its use.
func TestEveryCommandHelpHasAnExample(t *testing.T) {
	a := newApp(func(string) string { return "" }, io.Discard, io.Discard)
	var walk func(prefix string, cmds []*ff.Command)
	walk = func(prefix string, cmds []*ff.Command) {
		for _, c := range cmds {
			name := strings.TrimSpace(prefix + " " + c.Name)
			if len(c.Subcommands) > 0 {
				walk(name, c.Subcommands)
				continue
			}
			if strings.TrimSpace(c.LongHelp) == "" {
				t.Errorf("%s --help has no description", name)
			}
			if !strings.Contains(c.LongHelp, "Example:\n  wraptool "+name) {
				t.Errorf("%s --help shows no example (an \"Example:\" line, then `  wraptool %s …`):\n%s", name, name, c.LongHelp)
			}
		}
	}
	walk("", a.root.Subcommands)
}
