package policy

import (
	"strconv"
	"testing"
)

func TestEscape(t *testing.T) {
	t.Parallel()
	noBackslash := func(r rune) bool { return r != '\\' && strconv.IsPrint(r) }
	tests := []struct {
		name, in string
		keep     func(rune) bool
		want     string
	}{
		{"clean text comes back as it is", "git pull origin main – ok", Printable, "git pull origin main – ok"},
		{"escape sequences", "a\x1b[2J\x1b]0;t\a", Printable, `a\x1b[2J\x1b]0;t\a`},
		{"line breaks and separators", "a\r\nb\u2028c\u0085", Printable, `a\r\nb\u2028c\u0085`},
		{"bidi override and zero width", "x\u202ey\u200bz", Printable, `x\u202ey\u200bz`},
		{"invalid bytes", "a\xffb\x9b2J", Printable, `a\xffb\x9b2J`},
		{"a literal U+FFFD is text", "a\uFFFDb", Printable, "a\uFFFDb"},
		{"keep decides: backslashes escaped", `a\u0456`, noBackslash, `a\\u0456`},
		{"keep decides: a newline kept", "a\nb\tc", func(r rune) bool { return r == '\n' || strconv.IsPrint(r) }, `a` + "\n" + `b\tc`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Escape(tt.in, tt.keep); got != tt.want {
				t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
