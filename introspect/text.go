package introspect

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Lengths of the one-line texts the Catalog hands out. A subcommand listing
// is shown to the assistant and written into the config as comments (by
// config add), so it is short and plain; a description goes into a schema,
// where a little more is useful.
const (
	maxListingLen     = 120
	maxDescriptionLen = 300
)

// asciiLine makes s one line of printable ASCII of at most limit bytes: a
// help text is the tool's output, and a listing of it ends up in a terminal
// and in the config file, where a control character, a line break or a
// bidirectional override must not be able to hide or fake anything. Common
// typographic characters become their ASCII look-alikes; other non-ASCII
// characters are dropped.
func asciiLine(s string, limit int) string {
	return oneLine(s, limit, func(r rune) string {
		if r < 0x80 {
			return string(r)
		}
		return lookalike[r] // "" drops it
	})
}

// textLine makes s one line of printable text of at most limit bytes, keeping
// printable non-ASCII characters (a description may be localized) but no
// control, format (bidirectional, zero-width) or line-separator character.
func textLine(s string, limit int) string {
	return oneLine(s, limit, func(r rune) string {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return ""
		}
		return string(r)
	})
}

// oneLine joins s into one line: runs of blanks and control characters
// become one space, each other character is what keep makes of it ("" drops
// it), and the result is cut at limit bytes.
func oneLine(s string, limit int, keep func(rune) string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || r < ' ' || r == 0x7f || r >= 0x80 && unicode.IsControl(r) {
			space = b.Len() > 0
			continue
		}
		k := keep(r)
		if k == "" {
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteString(k)
	}
	return cut(b.String(), limit)
}

// cut shortens s to at most limit bytes, at a word boundary when one lies in
// the second half of what is kept, else at a character boundary, marking the
// cut with "...".
func cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	end := limit - len("...")
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	if i := strings.LastIndexByte(s[:end+1], ' '); i > end/2 {
		end = i
	}
	return strings.TrimRight(s[:end], " ") + "..."
}

// firstParagraph is the text up to its first blank line: a help's
// description may run on for paragraphs, and a tool description is one line.
func firstParagraph(s string) string {
	s = strings.TrimLeft(s, " \t\r\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			return strings.Join(lines[:i], "\n")
		}
	}
	return s
}

// lookalike maps typographic characters common in help texts to ASCII.
var lookalike = map[rune]string{
	'\u2018': "'", '\u2019': "'", '\u201c': `"`, '\u201d': `"`,
	'\u2010': "-", '\u2011': "-", '\u2012': "-", '\u2013': "-", '\u2014': "-",
	'\u2026': "...",
	'\u00ab': `"`, '\u00bb': `"`,
}
