package requests

import (
	"strings"
	"testing"
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
