package helptext

import (
	"strings"

	"github.com/wraptool/wraptool/policy"
)

// spelling is one way an option line writes a flag: "-m", "--message <msg>",
// "--[no-]verify", "--color[=WHEN]", kubectl's "--chunk-size=500:".
type spelling struct {
	name        string    // "-m" or "--message"; "" for a skipped spelling ("-name", "-?")
	negatable   bool      // written "--[no-]name"
	value       ValueKind // what this spelling's own syntax shows; ValueUnknown when it shows nothing
	placeholder string
	def         string // kubectl's default ("false", "500", "''")
	kubectl     bool   // kubectl's "--name=default:" or kpt's "--name:"
	endsLine    bool   // nothing after this spelling is the description
	attached    bool   // the value is written "--name=VALUE"
}

// spec is what the start of an option line says.
type spec struct {
	spellings []spelling
	desc      string // the description on the same line; "" when none
	descCol   int    // column of desc within the line's text; -1 when none
}

// specMode says how freely parseSpec reads a separate placeholder.
type specMode int

const (
	// specStrict reads a bare placeholder word ("--output string",
	// "-o FILE") when a gap or the end of the line follows it.
	specStrict specMode = iota
	// specLoose (the fallback) reads only bracketed placeholders
	// ("--long <v>") and attached values ("--long=V").
	specLoose
)

// maxSpellings bounds the spellings one option line may list; real ones list
// at most four (tar's "-z, --gzip, --gunzip, --ungzip").
const maxSpellings = 16

// parseSpec reads the option spec at the start of s (an option line with its
// indentation removed). ok is false when s does not start with a flag; a line
// listing only skipped spellings ("-chdir=DIR") is still a spec, so the
// caller can tell it from prose.
func parseSpec(s string, mode specMode) (sp spec, ok bool) {
	sp.descCol = -1
	i := 0
	for {
		sg, n, good := readSpelling(s[i:])
		if !good {
			if len(sp.spellings) == 0 {
				return spec{}, false
			}
			// A later spelling that is not one ("-a, --foo)") ends the spec
			// before its comma; what follows is prose.
			sp.desc, sp.descCol = s[i:], i
			return sp, true
		}
		i += n
		if sg.name != "" && sg.value == ValueUnknown && !sg.kubectl {
			i = readPlaceholder(s, i, &sg, mode)
		}
		sp.spellings = append(sp.spellings, sg)
		if sg.endsLine {
			return sp, true
		}
		// A parenthesized aside between spellings: psql's `-1 ("one"), --single-transaction`.
		if j := skipAside(s, i); j > i {
			i = j
		}
		if i >= len(s) {
			return sp, true
		}
		if s[i] == ',' {
			j := i + 1
			for j < len(s) && s[j] == ' ' {
				j++
			}
			// Past maxSpellings the rest is read as prose, which also keeps
			// a hostile line of "-a <, -b <, …" linear.
			if j < len(s) && s[j] == '-' && len(sp.spellings) < maxSpellings {
				i = j
				continue
			}
			i = j
		}
		j := i
		for j < len(s) && s[j] == ' ' {
			j++
		}
		if j < len(s) {
			sp.desc = s[j:]
			sp.descCol = j
		}
		return sp, true
	}
}

// readSpelling reads one flag spelling at the start of s and returns it and
// the bytes it used.
func readSpelling(s string) (sg spelling, n int, ok bool) {
	if len(s) < 2 || s[0] != '-' {
		return sg, 0, false
	}
	if s[1] == '-' {
		return readLong(s)
	}
	c := s[1]
	if c == ' ' || c == ',' {
		return sg, 0, false
	}
	if !isAlnum(c) {
		// "-?", "-@", "-<n>": flag-shaped, but not a spelling wraptool can use.
		if c >= 0x80 {
			return sg, 0, false
		}
		return spelling{}, tokenEnd(s, 1), true
	}
	sg.name = s[:2]
	if len(s) == 2 {
		return sg, 2, true
	}
	switch s[2] {
	case ' ', ',':
		return sg, 2, true
	case '[':
		// "-S[<keyid>]": an optional value stuck to the flag.
		e := closing(s, 2)
		if e < 0 || !endsSpelling(s, e+1) {
			return sg, 0, false
		}
		sg.value, sg.placeholder = ValueOptional, s[3:e]
		return sg, e + 1, true
	case '<':
		// "-X<option>": a value stuck to the flag. git log's
		// "-L<start>,<end>:<file>" sticks more to it: the value runs to the
		// end of the token.
		e := closing(s, 2)
		if e < 0 {
			return sg, 0, false
		}
		if !endsSpelling(s, e+1) {
			e = tokenEnd(s, e+1) - 1
		}
		sg.value, sg.placeholder = ValueRequired, s[2:e+1]
		return sg, e + 1, true
	}
	if s[2] == ':' && s[3:] != "" && s[3] == '<' {
		// git log's "-L:<funcname>:<file>": the value starts with a colon.
		e := tokenEnd(s, 2)
		sg.value, sg.placeholder = ValueRequired, s[2:e]
		return sg, e, true
	}
	if isAlnum(s[2]) || s[2] == '=' || s[2] == '-' || s[2] == '_' {
		// A single-dash long option ("-name", "-nv", "-chdir=DIR"): skipped.
		return spelling{}, tokenEnd(s, 1), true
	}
	return sg, 0, false
}

// readLong reads a "--name" spelling and its attached value, if any.
func readLong(s string) (sg spelling, n int, ok bool) {
	j := 2
	if strings.HasPrefix(s[j:], "[no-]") {
		sg.negatable = true
		j += len("[no-]")
	}
	start := j
	if j >= len(s) || !isAlnum(s[j]) {
		return sg, 0, false
	}
	for j < len(s) && (isAlnum(s[j]) || s[j] == '_' || s[j] == '.' || s[j] == '-') {
		j++
	}
	// A name does not end in punctuation: "--foo." is prose.
	if c := s[j-1]; c == '.' || c == '-' {
		return sg, 0, false
	}
	sg.name = "--" + s[start:j]
	rest := s[j:]
	switch {
	case rest == "" || rest[0] == ' ' || rest[0] == ',':
		return sg, j, true
	case strings.HasPrefix(rest, "[="):
		e := closing(s, j)
		if e < 0 || !endsSpelling(s, e+1) {
			return sg, 0, false
		}
		sg.value, sg.placeholder = ValueOptional, s[j+2:e]
		return sg, e + 1, true
	case rest[0] == '=':
		e := valueEnd(s, j+1)
		v := s[j+1 : e]
		if strings.HasSuffix(v, ":") && strings.TrimSpace(s[e:]) == "" {
			// kubectl: "--all-namespaces=false:", the description below.
			sg.kubectl, sg.endsLine, sg.def = true, true, v[:len(v)-1]
			sg.value = kubectlValue(sg.def)
			return sg, len(s), true
		}
		sg.value, sg.placeholder, sg.attached = ValueRequired, v, true
		if p, ok := strings.CutSuffix(v, ";"); ok {
			// gcloud's `--verbosity=VERBOSITY; default="warning"`: the rest
			// of the line is a note, not the description.
			sg.placeholder, sg.endsLine = p, true
		}
		return sg, e, true
	case rest[0] == ':' && strings.TrimSpace(rest[1:]) == "":
		// kpt's "--dry-run:" with no default: the value-taking is unknown.
		sg.kubectl, sg.endsLine = true, true
		return sg, len(s), true
	}
	return sg, 0, false
}

// kubectlValue reads value-taking from a kubectl default: a boolean default
// means a switch, anything else a value.
func kubectlValue(def string) ValueKind {
	if def == "true" || def == "false" {
		return ValueNone
	}
	return ValueRequired
}

// readPlaceholder reads a separate value placeholder after a spelling at
// s[i:] ("--depth <depth>", "--output string", "-o FILE") into sg, and
// returns where the spec continues.
func readPlaceholder(s string, i int, sg *spelling, mode specMode) int {
	if i+1 >= len(s) || s[i] != ' ' || s[i+1] == ' ' {
		return i
	}
	k := i + 1
	switch c := s[k]; {
	case c == '<' || c == '[' || c == '{':
		e := closing(s, k)
		if e < 0 {
			return i
		}
		e = tokenEnd(s, e+1)
		sg.value, sg.placeholder = ValueRequired, s[k:e]
		return e
	case mode == specLoose:
		return i
	case isAlnum(c) || c == '_':
		e := tokenEnd(s, k)
		if !gapOrEnd(s, e) || e-k > 64 {
			return i
		}
		word := s[k:e]
		if strings.HasSuffix(word, ":") || strings.HasSuffix(word, ".") {
			return i
		}
		if b := strings.Index(word, "[="); b > 0 && strings.HasSuffix(word, "]") {
			// pflag's `--color string[="always"]`: the value may be left out.
			sg.value, sg.placeholder = ValueOptional, word[:b]
			return e
		}
		sg.value, sg.placeholder = ValueRequired, word
		return e
	}
	return i
}

// skipAside skips a parenthesized aside followed by a comma at s[i:]
// (` ("one"),`), returning i when there is none.
func skipAside(s string, i int) int {
	if i+1 >= len(s) || s[i] != ' ' || s[i+1] != '(' {
		return i
	}
	e := closing(s, i+1)
	if e < 0 || e+1 >= len(s) || s[e+1] != ',' {
		return i
	}
	return e + 1
}

// gapOrEnd reports whether s[e:] is empty, starts with a gap of two or more
// blanks, or continues the spec with another spelling (", -x").
func gapOrEnd(s string, e int) bool {
	if e >= len(s) || strings.HasPrefix(s[e:], "  ") {
		return true
	}
	if s[e] == ',' {
		r := strings.TrimLeft(s[e+1:], " ")
		return strings.HasPrefix(r, "-")
	}
	return false
}

// endsSpelling reports whether a spelling may end just before s[e]: a
// blank, the end, or a comma that separates spellings (in git log's
// "-L<start>,<end>:<file>" the comma is part of the value).
func endsSpelling(s string, e int) bool {
	return e >= len(s) || s[e] == ' ' || (s[e] == ',' && separates(s, e))
}

// tokenEnd returns the end of the token starting at s[i]: the next blank,
// or comma that separates spellings, outside brackets.
func tokenEnd(s string, i int) int { return scanEnd(s, i, false) }

// valueEnd returns the end of an attached value starting at s[i]: the next
// blank, or comma that separates spellings, outside brackets and quotes.
func valueEnd(s string, i int) int { return scanEnd(s, i, true) }

// scanEnd returns where the word starting at s[i] ends: at a blank, or a
// comma that separates spellings, outside brackets (and quotes, when quotes
// is set).
func scanEnd(s string, i int, quotes bool) int {
	depth := 0
	for ; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '"':
			if !quotes {
				continue
			}
			if j := strings.IndexByte(s[i+1:], c); j >= 0 {
				i += j + 1
			}
		case '(', '[', '{', '<':
			depth++
		case ')', ']', '}', '>':
			if depth > 0 {
				depth--
			}
		case ' ':
			if depth == 0 {
				return i
			}
		case ',':
			if depth == 0 && separates(s, i) {
				return i
			}
		}
	}
	return i
}

// separates reports whether the comma at s[i] separates spellings ("-a,
// --all") rather than belonging to a value (gcloud's
// "--zones=ZONE,[ZONE,...]"): a blank or the end follows it.
func separates(s string, i int) bool {
	return i+1 >= len(s) || s[i+1] == ' '
}

// closing returns the index of the bracket that closes the one at s[i], any
// bracket kind counting, or -1.
func closing(s string, i int) int {
	depth := 0
	for ; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{', '<':
			depth++
		case ')', ']', '}', '>':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// intPlaceholders are the placeholders and pflag type names that promise an
// integer. The list is short on purpose: a wrong integer guess refuses values
// the tool accepts (wget's --level=NUMBER also takes "inf"), a wrong string
// guess refuses nothing.
var intPlaceholders = map[string]bool{
	"n": true, "num": true, "number": true, "count": true, "int": true, "integer": true,
	"int8": true, "int16": true, "int32": true, "int64": true,
	"uint": true, "uint8": true, "uint16": true, "uint32": true, "uint64": true,
}

// guessType guesses a flag's policy type from its value-taking and
// placeholder (or kubectl default).
func guessType(v ValueKind, placeholder, def string, kubectl bool) policy.Type {
	switch v {
	case ValueNone, ValueOptional:
		return policy.TypeBoolean
	case ValueRequired:
		if kubectl {
			if isInteger(def) {
				return policy.TypeInteger
			}
			return policy.TypeString
		}
		p := strings.Trim(placeholder, "<>[]{}()=")
		if intPlaceholders[strings.ToLower(p)] {
			return policy.TypeInteger
		}
		return policy.TypeString
	}
	return policy.TypeUnknown
}

// isInteger reports whether s is a decimal integer, optionally negative.
func isInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
