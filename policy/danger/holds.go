package danger

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"
)

// PatternHolds reports whether a flag_constraints pattern keeps a flag of
// classes cs to what the operator meant. wraptool applies a pattern as
// ^(?:pattern)$ (RE2); PatternHolds compiles it the same way and tries it
// on values that show each class's escape: hosts and URLs that are not
// yours for sends-credentials, shell syntax and paths to a program for
// runs-code (a shell or interpreter by name among them: a pager of sh
// runs the output), system files, traversal and your key files for writes-files
// and reads-files. It also tries those values around the shortest value
// the pattern takes (a pattern git-receive-pack.* takes
// "git-receive-pack;id"). For every class, and for none, a pattern that
// takes a long random-looking string, alone or before or after its
// shortest value, is too loose: it takes nearly anything.
//
// It is false when the pattern does not compile, when it takes any of
// those values, and always for prints-credentials: no pattern keeps a
// subcommand or flag that prints the credentials from printing them. The
// empty string is no probe: a pattern that allows only "" holds. A true
// answer is no proof: the probes are the usual mistakes, not every one.
func PatternHolds(pattern string, cs Classes) bool {
	if slices.Contains(cs, PrintsCredentials) {
		return false
	}
	full := "^(?:" + pattern + ")$"
	re, err := regexp.Compile(full)
	if err != nil {
		return false
	}
	if re.MatchString(looseProbe) {
		return false
	}
	parsed, err := syntax.Parse(full, syntax.Perl)
	if err != nil {
		return false
	}
	var examples []string
	for _, branch := range branches(parsed.Simplify()) {
		example, ok := shortest(branch, maxExample)
		if !ok || !re.MatchString(example) {
			// A pattern whose shortest value is too long to build, or
			// that the builder reads wrong, cannot be judged: it does not
			// hold.
			return false
		}
		if re.MatchString(example+looseProbe) || re.MatchString(looseProbe+example) {
			return false
		}
		examples = append(examples, example)
	}
	// A repeat can take what no probe spells out: a class it repeats that
	// holds shell syntax, or both / and . (a path out of where it starts:
	// /usr/x;id;/git-upload-pack, out/../../x.patch), lets the escapes in
	// wherever the repeat stands.
	for _, c := range cs {
		if bad, ok := repeatBad[c]; ok && repeatsAny(parsed, bad) {
			return false
		}
	}
	for _, c := range cs {
		p := escapes[c]
		for _, v := range p.values {
			if re.MatchString(v) {
				return false
			}
		}
		for _, example := range examples {
			for _, pre := range p.prefixes {
				if re.MatchString(pre + example) {
					return false
				}
			}
			for _, suf := range p.suffixes {
				if re.MatchString(example + suf) {
					return false
				}
			}
		}
	}
	return true
}

// branches are the top-level alternatives of a parsed ^(?:pattern)$, each
// still anchored as a whole (db1|.*x gives db1 and .*x), so that the
// escapes are tried around a value of each.
func branches(re *syntax.Regexp) []*syntax.Regexp {
	if re.Op != syntax.OpConcat || len(re.Sub) != 3 {
		return []*syntax.Regexp{re}
	}
	body := re.Sub[1]
	for body.Op == syntax.OpCapture {
		body = body.Sub[0]
	}
	if body.Op != syntax.OpAlternate {
		return []*syntax.Regexp{re}
	}
	return body.Sub
}

// looseProbe is a fixed random-looking value of the characters flag values
// are made of: a pattern that takes it takes nearly anything.
const looseProbe = "q7Z.k2:Xw@9_v-Lm4/Rt8bN0.c@Hs3-yE6_uJ1:pD5/fG2aW7.oK9-iV4_xB8:nT"

// maxExample bounds the shortest value PatternHolds builds.
const maxExample = 4096

// probes are the values that show one class's escape: tried as they are,
// after the shortest value the pattern takes, and before it.
type probes struct{ values, prefixes, suffixes []string }

// escapes are each class's probes. They follow the escapes docs/danger.md
// lists: another host, a host hidden in a URL's user, path, query or
// fragment, a host list, a socket folder, a key=value connection string,
// shell syntax, and paths out of the folder meant.
var escapes = map[Class]probes{
	SendsCredentials: {
		values: []string{
			"evil.example.com",
			"https://evil.example.com",
			"https://evil.example.com/x",
			"postgresql://u@evil.example.com/db",
			"host=evil.example.com dbname=x",
			"evil.example.com:443",
		},
		prefixes: []string{"evil.example.com,", "/tmp/", "https://evil.example.com/", "https://evil.example.com?", "https://evil.example.com#", "evil.example.com/"},
		suffixes: []string{"@evil.example.com", ",evil.example.com", "?host=evil.example.com", " host=evil.example.com", "&host=evil.example.com"},
	},
	RunsCode: {
		values: []string{"sh -c id", "x;id", "$(id)", "/tmp/evil", "./evil", "sh", "bash", "python3", "perl", "env",
			"/bin/sh", "/usr/bin/sh", "/usr/bin/env", "/usr/bin/python3", "/tmp/evil/git-upload-pack"},
		prefixes: []string{"id;", "/tmp/evil ", "sh -c id "},
		suffixes: []string{";id", " $(id)", "$(id)", "|id", "`id`", "&&id", "\nid", " -c id"},
	},
	WritesFiles: filesProbes,
	ReadsFiles:  filesProbes,
}

var filesProbes = probes{
	values:   []string{"/etc/passwd", "/tmp/x", "../../../etc/passwd", "~/.ssh/id_ed25519", "/home/u/.aws/credentials"},
	prefixes: []string{"/", "../../../", "~/", "/tmp/"},
	suffixes: []string{"/../../../etc/passwd", "/../x"},
}

// shortest builds a shortest string re matches, or false when it would be
// longer than limit runes. It reads the simplified syntax tree: the first
// branch of an alternation, the minimum of a repeat, the first character
// of a class (a printable one when the class has any).
func shortest(re *syntax.Regexp, limit int) (string, bool) {
	var b strings.Builder
	n := 0
	var walk func(*syntax.Regexp) bool
	emit := func(r rune) bool {
		n++
		if n > limit {
			return false
		}
		b.WriteRune(r)
		return true
	}
	walk = func(re *syntax.Regexp) bool {
		switch re.Op {
		case syntax.OpNoMatch:
			return false
		case syntax.OpLiteral:
			for _, r := range re.Rune {
				if !emit(r) {
					return false
				}
			}
		case syntax.OpCharClass:
			return len(re.Rune) >= 2 && emit(classRune(re.Rune))
		case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
			return emit('a')
		case syntax.OpCapture:
			return walk(re.Sub[0])
		case syntax.OpPlus:
			return walk(re.Sub[0])
		case syntax.OpRepeat:
			for i := 0; i < re.Min; i++ {
				if !walk(re.Sub[0]) {
					return false
				}
			}
		case syntax.OpConcat:
			for _, s := range re.Sub {
				if !walk(s) {
					return false
				}
			}
		case syntax.OpAlternate:
			return walk(re.Sub[0])
		}
		// Empty matches, anchors, word boundaries, stars and quests add
		// nothing.
		return true
	}
	if !walk(re) {
		return "", false
	}
	return b.String(), true
}

// classRune picks a rune of a character class's ranges: a printable ASCII
// letter or digit when there is one, else the first rune.
func classRune(ranges []rune) rune {
	for i := 0; i+1 < len(ranges); i += 2 {
		for _, r := range "a0A_-./" {
			if ranges[i] <= r && r <= ranges[i+1] {
				return r
			}
		}
	}
	if r := ranges[0]; utf8.ValidRune(r) {
		return r
	}
	return 'a'
}

// repeatBad says, per class, what a repeated character set must not hold:
// any one rune of the first string, or every rune of the second (together
// they make a traversal).
var repeatBad = map[Class][2]string{
	RunsCode:         {";&|$`<>() \t\n\\", "/."},
	SendsCredentials: {"?#@,\\ \t\n", ""},
	WritesFiles:      {"", "/."},
	ReadsFiles:       {"", "/."},
}

// repeatsAny reports whether re repeats (more than once, or without
// bound) a character set that bad forbids, anywhere in it.
func repeatsAny(re *syntax.Regexp, bad [2]string) bool {
	inRepeat := false
	var walk func(*syntax.Regexp) bool
	walk = func(n *syntax.Regexp) bool {
		repeats := n.Op == syntax.OpStar || n.Op == syntax.OpPlus || (n.Op == syntax.OpRepeat && (n.Max == -1 || n.Max > 1))
		was := inRepeat
		if repeats {
			inRepeat = true
		}
		defer func() { inRepeat = was }()
		if inRepeat {
			switch n.Op {
			case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
				return true
			case syntax.OpCharClass:
				if classHolds(n.Rune, bad) {
					return true
				}
			}
		}
		for _, sub := range n.Sub {
			if walk(sub) {
				return true
			}
		}
		return false
	}
	return walk(re)
}

// classHolds reports whether the ranges of a class hold a rune of bad[0],
// or every rune of bad[1].
func classHolds(ranges []rune, bad [2]string) bool {
	in := func(r rune) bool {
		for i := 0; i+1 < len(ranges); i += 2 {
			if ranges[i] <= r && r <= ranges[i+1] {
				return true
			}
		}
		return false
	}
	for _, r := range bad[0] {
		if in(r) {
			return true
		}
	}
	if bad[1] == "" {
		return false
	}
	for _, r := range bad[1] {
		if !in(r) {
			return false
		}
	}
	return true
}
