package policy

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Escape renders s for a terminal or a log: every invalid UTF-8 byte as
// \xNN and every rune keep refuses as its Go escape (\x1b, \u202e, \\), so
// nothing in s can move the cursor, repaint the screen, reorder text or
// pass for a line of its own. keep says what may stay as written:
// Printable for text meant to read naturally; the operator's displays
// narrow it further (ASCII only, backslashes escaped too). s comes back
// as it is when keep takes all of it.
func Escape(s string, keep func(rune) bool) string {
	clean := true
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				clean = false
				break
			}
		}
		if !keep(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keep(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

// Printable is Escape's keep for text meant to read naturally: what
// strconv.IsPrint accepts (letters, marks, numbers, punctuation, symbols
// and the ASCII space, in any script).
func Printable(r rune) bool { return strconv.IsPrint(r) }
