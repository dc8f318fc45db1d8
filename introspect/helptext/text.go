package helptext

import (
	"strings"
	"unicode/utf8"
)

// MaxInput is how much of a help text Parse reads; the rest is ignored.
// wraptool's runner caps help output at 256 KiB, so this only bounds the cost
// of a caller that does not.
const MaxInput = 4 << 20

// tabWidth is the tab stop help texts assume (kubectl indents descriptions
// with a tab).
const tabWidth = 8

// line is one line of a prepared text.
type line struct {
	indent int    // columns of leading blanks, tabs expanded
	text   string // the rest, tabs expanded, trailing blanks removed; "" for a blank line
}

// prepare cleans a help text for parsing and splits it into lines. It returns
// false for binary data: more than one byte in twenty a control character
// (other than whitespace, backspace and escape) or not UTF-8.
//
// Cleaning removes carriage returns, ANSI escape sequences (a tool that colors
// its help even without a terminal) and man's overstrike bold and underline
// ("N\bN", "_\bN"), and replaces invalid UTF-8 with U+FFFD, so descriptions
// are always valid text.
func prepare(text string) ([]line, bool) {
	if len(text) > MaxInput {
		text = text[:MaxInput]
	}
	if isBinary(text) {
		return nil, false
	}
	buf := make([]byte, 0, len(text))
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == 0x1b:
			i = skipEscape(text, i)
			continue
		case c == '\b':
			// Overstrike: drop the character before the backspace; the one
			// after it is what the reader sees.
			if len(buf) > 0 && buf[len(buf)-1] != '\n' {
				_, n := utf8.DecodeLastRune(buf)
				buf = buf[:len(buf)-n]
			}
			i++
			continue
		case c == '\n' || c == '\t':
			buf = append(buf, c)
			i++
			continue
		case c < 0x20 || c == 0x7f:
			i++
			continue
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		if r == utf8.RuneError && n == 1 {
			buf = utf8.AppendRune(buf, utf8.RuneError)
		} else {
			buf = append(buf, text[i:i+n]...)
		}
		i += n
	}
	return splitLines(string(buf)), true
}

// isBinary reports whether text looks like something other than text.
func isBinary(text string) bool {
	bad := 0
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\n' && c != '\t' && c != '\r' && c != '\f' && c != '\v' && c != '\b' && c != 0x1b) || c == 0x7f {
				bad++
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		if r == utf8.RuneError && n == 1 {
			bad++
		}
		i += n
	}
	return bad*20 > len(text)
}

// skipEscape returns the index just past the escape sequence at text[i]
// (text[i] is ESC): CSI "ESC [ … final", OSC "ESC ] … BEL or ESC \", or a
// two-byte escape.
func skipEscape(text string, i int) int {
	i++
	if i >= len(text) {
		return i
	}
	switch text[i] {
	case '[':
		for i++; i < len(text); i++ {
			if c := text[i]; c >= 0x40 && c <= 0x7e {
				return i + 1
			}
			if text[i] == '\n' {
				return i
			}
		}
		return i
	case ']':
		for i++; i < len(text); i++ {
			switch text[i] {
			case 0x07:
				return i + 1
			case 0x1b:
				if i+1 < len(text) && text[i+1] == '\\' {
					return i + 2
				}
			case '\n':
				return i
			}
		}
		return i
	}
	if text[i] == '\n' {
		return i
	}
	return i + 1
}

// splitLines splits cleaned text into lines, expanding tabs so that a
// tab-indented description is seen as indented.
func splitLines(text string) []line {
	lines := make([]line, 0, strings.Count(text, "\n")+1)
	for raw := range strings.SplitSeq(text, "\n") {
		if strings.IndexByte(raw, '\t') >= 0 {
			raw = expandTabs(raw)
		}
		t := strings.TrimLeft(raw, " ")
		lines = append(lines, line{indent: len(raw) - len(t), text: strings.TrimRight(t, " ")})
	}
	// A trailing newline is not a line of its own.
	if n := len(lines); n > 0 && lines[n-1].text == "" {
		lines = lines[:n-1]
	}
	return lines
}

// expandTabs replaces each tab with the spaces up to the next tab stop,
// counting one column per rune.
func expandTabs(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	col := 0
	for _, r := range s {
		if r == '\t' {
			n := tabWidth - col%tabWidth
			b.WriteString("        "[:n])
			col += n
			continue
		}
		b.WriteRune(r)
		col++
	}
	return b.String()
}

// oneLine joins wrapped description lines into one: runs of blanks become one
// space, and the ends are trimmed.
//
// A word a man page hyphenated at the end of a line ("git-" / "clone(1)")
// is joined back without the space.
func oneLine(parts []string) string {
	var b strings.Builder
	for _, p := range parts {
		first := true
		for f := range strings.FieldsSeq(p) {
			if b.Len() > 0 && !(first && hyphenated(b.String(), f)) {
				b.WriteByte(' ')
			}
			b.WriteString(f)
			first = false
		}
	}
	return b.String()
}

// hyphenated reports whether text, ending a line, ends in a word broken
// with a hyphen ("git-") that next, starting the following line, completes.
func hyphenated(text, next string) bool {
	n := len(text)
	return n >= 2 && text[n-1] == '-' && isLetter(text[n-2]) && next != "" && 'a' <= next[0] && next[0] <= 'z'
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// firstSentence cuts s after its first sentence: at ". " followed by a
// capital letter, so "e.g. foo" and "(default 10)." stay whole.
func firstSentence(s string) string {
	for i := 0; i+2 < len(s); i++ {
		if s[i] == '.' && s[i+1] == ' ' && 'A' <= s[i+2] && s[i+2] <= 'Z' {
			return s[:i+1]
		}
	}
	return s
}

// hasPrefixFold reports whether s starts with prefix, ignoring ASCII case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// containsFold reports whether s contains the lower-case ASCII word sub,
// ignoring case.
func containsFold(s, sub string) bool {
	n := len(sub)
	for i := 0; i+n <= len(s); i++ {
		if strings.EqualFold(s[i:i+n], sub) {
			return true
		}
	}
	return false
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
