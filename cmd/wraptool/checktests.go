package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// check --tests: a YAML list of command lines with the decisions they
// should get, so a policy can carry its own tests in CI.

// errMismatch is check --tests' verdict that an entry did not get its
// wanted decision: exit status 1, the mismatches already listed on
// stdout.
var errMismatch = errors.New("check: the tests do not match")

// checkTest is one entry of a tests file.
type checkTest struct {
	line  int
	words []string
	allow bool
}

// checkTests runs a tests file: every entry is decided, each mismatch is
// listed with its line and the decision (the denial text, or what would
// run), and any mismatch is errMismatch (exit 1).
func (a *app) checkTests(ctx context.Context, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("check: read tests: %w", err)
	}
	tests, err := parseCheckTests(file, data)
	if err != nil {
		return err
	}
	c, err := a.newChecker(ctx)
	if err != nil {
		return err
	}
	failed := 0
	for _, tt := range tests {
		v := c.decide(tt.words)
		for _, n := range v.notes {
			fmt.Fprintf(a.stderr, "%s:%d: note: %s\n", file, tt.line, n)
		}
		if v.d.Allowed() == tt.allow {
			continue
		}
		failed++
		want, got := "deny", "allow"
		if tt.allow {
			want, got = got, want
		}
		fmt.Fprintf(a.stdout, "%s:%d: %s: want %s, got %s\n%s\n", file, tt.line, quoteWords(v.words), want, got, indent(v.String()))
	}
	if failed > 0 {
		fmt.Fprintf(a.stdout, "FAIL: %d of %d tests in %s do not match\n", failed, len(tests), file)
		return errMismatch
	}
	_, err = fmt.Fprintf(a.stdout, "ok: %s (%d tests)\n", file, len(tests))
	return err
}

// indent prefixes every line of s with two spaces.
func indent(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n")
}

// parseCheckTests reads a tests file: one YAML document holding a non-empty
// list of {cmd, want} mappings. Errors name the file and the line, as config
// errors do: a tests file that tests nothing must not pass CI quietly.
func parseCheckTests(file string, data []byte) ([]checkTest, error) {
	errAt := func(line int, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", file, line, fmt.Sprintf(format, args...))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: holds no tests", file)
		}
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: want one YAML document, a list of {cmd, want}", file)
	}
	list := doc.Content[0]
	if list.Kind != yaml.SequenceNode {
		return nil, errAt(list.Line, "want a list of {cmd, want}")
	}
	if len(list.Content) == 0 {
		return nil, errAt(list.Line, "holds no tests")
	}
	var tests []checkTest
	for i, item := range list.Content {
		if item.Kind != yaml.MappingNode {
			return nil, errAt(item.Line, "tests[%d]: want a mapping with cmd and want", i)
		}
		tt := checkTest{line: item.Line}
		var haveCmd, haveWant bool
		for k := 0; k+1 < len(item.Content); k += 2 {
			key, val := item.Content[k], item.Content[k+1]
			switch key.Value {
			case "cmd":
				if haveCmd {
					return nil, errAt(key.Line, "tests[%d]: cmd is given twice", i)
				}
				haveCmd = true
				words, err := testWords(val)
				if err != nil {
					return nil, errAt(val.Line, "tests[%d].cmd: %v", i, err)
				}
				tt.words = words
			case "want":
				if haveWant {
					return nil, errAt(key.Line, "tests[%d]: want is given twice", i)
				}
				haveWant = true
				switch {
				case val.Kind == yaml.ScalarNode && val.Value == "allow":
					tt.allow = true
				case val.Kind == yaml.ScalarNode && val.Value == "deny":
				default:
					return nil, errAt(val.Line, "tests[%d].want: want allow or deny, got %q", i, val.Value)
				}
			default:
				return nil, errAt(key.Line, "tests[%d]: unknown key %q (want cmd and want)", i, key.Value)
			}
		}
		switch {
		case !haveCmd:
			return nil, errAt(item.Line, "tests[%d]: cmd is missing", i)
		case !haveWant:
			return nil, errAt(item.Line, "tests[%d]: want is missing", i)
		}
		tests = append(tests, tt)
	}
	return tests, nil
}

// testWords reads a test's cmd: a list of words taken as they are, or a
// string split as POSIX shell words.
func testWords(n *yaml.Node) ([]string, error) {
	var words []string
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return nil, errors.New("is empty")
		}
		var err error
		if words, err = shellSplit(n.Value); err != nil {
			return nil, err
		}
	case yaml.SequenceNode:
		for _, w := range n.Content {
			if w.Kind != yaml.ScalarNode || w.Tag == "!!null" {
				return nil, fmt.Errorf("line %d: want a word (a string)", w.Line)
			}
			words = append(words, w.Value)
		}
	default:
		return nil, errors.New("want a string or a list of words")
	}
	if len(words) == 0 {
		return nil, errors.New("is empty")
	}
	return words, nil
}

// shellSplit splits s into words as a POSIX shell does, with quotes and
// backslashes but no expansion of any kind: $, *, ~ and operators such as |
// are ordinary characters. An unbalanced quote or a trailing backslash is an
// error rather than a guess.
func shellSplit(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		inAny bool // cur holds a word, possibly empty ('')
	)
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch ch {
		case ' ', '\t', '\n':
			if inAny {
				words = append(words, cur.String())
				cur.Reset()
				inAny = false
			}
		case '\\':
			if i+1 >= len(s) {
				return nil, errors.New("ends with a backslash")
			}
			i++
			if s[i] != '\n' { // backslash-newline joins lines
				cur.WriteByte(s[i])
				inAny = true
			}
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unbalanced single quote")
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += 1 + end
			inAny = true
		case '"':
			inAny = true
			closed := false
			for i++; i < len(s); i++ {
				switch c := s[i]; {
				case c == '"':
					closed = true
				case c == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0:
					i++
					if s[i] != '\n' {
						cur.WriteByte(s[i])
					}
					continue
				default:
					cur.WriteByte(c)
					continue
				}
				break
			}
			if !closed {
				return nil, errors.New("unbalanced double quote")
			}
		default:
			cur.WriteByte(ch)
			inAny = true
		}
	}
	if inAny {
		words = append(words, cur.String())
	}
	return words, nil
}
