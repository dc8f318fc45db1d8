package requests

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// MaxTokenDisplay is how many characters of one token an operator's screen
// shows; the rest is cut with "…(N bytes)". Flag lists are never cut: each
// flag is a token of its own.
const MaxTokenDisplay = 200

// Token renders a token the assistant chose (a tool, a subcommand token, a
// flag, an exact call's value) for an operator's terminal or page: every
// character strconv.Quote would escape is written as its escape, and so is
// every non-ASCII character ("gіthub" with a Cyrillic і shows as
// g\u0456thub) and the backslash itself (so a typed "\u0456" cannot pass for
// an escaped one). A request can then neither repaint the screen, hide its
// own flags, nor pass for another request.
func Token(s string) string {
	return cutToken(escape(s, true))
}

// Text renders free text the assistant wrote (a rationale, what approval
// enables) for an operator: runs of whitespace, line breaks included,
// collapse to one space, and everything strconv.Quote would escape is written
// as its escape (printable non-ASCII text stays readable).
func Text(s string) string {
	return escape(strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " "), false)
}

// Flags renders a flag list, each flag as a Token, space-separated; "" for
// none.
func Flags(flags []string) string {
	return strings.Join(Tokens(flags), " ")
}

// escape writes s with escapes for what must not reach a screen raw;
// asciiOnly escapes every non-ASCII character too.
func escape(s string, asciiOnly bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r < utf8.RuneSelf && strconv.IsPrint(r), !asciiOnly && strconv.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

// cutToken cuts a rendered token longer than MaxTokenDisplay characters.
func cutToken(s string) string {
	if utf8.RuneCountInString(s) <= MaxTokenDisplay {
		return s
	}
	kept := []rune(s)[:MaxTokenDisplay]
	return string(kept) + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// Subcommand renders a request's subcommand tokens; a request for no
// subcommand shows as "<ANY SUBCOMMAND>".
func Subcommand(sub []string) string {
	if len(sub) == 0 {
		return "<ANY SUBCOMMAND>"
	}
	return strings.Join(Tokens(sub), " ")
}

// NotIn is the mark beside a flag the subcommand's help does not list:
// "(NOT IN 'git push --help')".
func NotIn(tool string, sub []string) string {
	return "(NOT IN '" + Token(tool) + " " + Subcommand(sub) + " --help')"
}

// Age is how long before now t was, in one unit: 45s, 3m, 2h, 5d.
func Age(now, t time.Time) string {
	d := max(now.Sub(t), 0)
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d.Hours())) + "h"
	}
	return strconv.Itoa(int(d.Hours()/24)) + "d"
}

// Tokens renders each of ss as a Token.
func Tokens(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Token(s)
	}
	return out
}
