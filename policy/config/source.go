package config

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// This file finds where a config's nodes lie in its text, for splice.go's
// edits. yaml.v3's node tree says where things start (line and column) but
// not where they end, so ends are found from the text: a flow collection
// ("[a, b]", "{k: v}") by scanning to its closing bracket, a block node by
// indentation (a line indented deeper than an item belongs to it). Every
// edit is parsed again and compared with the intended change by the caller,
// so a layout this file misjudges is refused, never written.

// source is a config's bytes with its line starts.
type source struct {
	b     []byte
	lines []int // byte offset where each line starts; lines[0] skips a BOM
}

func newSource(b []byte) *source {
	s := &source{b: b, lines: []int{0}}
	if bytes.HasPrefix(b, []byte("\ufeff")) {
		s.lines[0] = 3 // yaml.v3 counts columns after the byte order mark
	}
	for i, c := range b {
		if c == '\n' {
			s.lines = append(s.lines, i+1)
		}
	}
	return s
}

// off is the byte offset of n's position (its first property, tag or
// anchor, if it has one). yaml.v3 counts columns in characters.
func (s *source) off(n *yaml.Node) int {
	i := s.lines[n.Line-1]
	for col := 1; col < n.Column && i < len(s.b); col++ {
		_, size := utf8.DecodeRune(s.b[i:])
		i += size
	}
	return i
}

// lineOf is the 0-based line holding offset i.
func (s *source) lineOf(i int) int {
	n, found := slices.BinarySearch(s.lines, i)
	if found {
		return n
	}
	return n - 1
}

// text is line l without its line ending.
func (s *source) text(l int) string {
	end := len(s.b)
	if l+1 < len(s.lines) {
		end = s.lines[l+1] - 1
	}
	return strings.TrimSuffix(string(s.b[s.lines[l]:end]), "\r")
}

// next is the offset just after line l's line ending (the end of the file
// for the last line).
func (s *source) next(l int) int {
	if l+1 < len(s.lines) {
		return s.lines[l+1]
	}
	return len(s.b)
}

// eol is the line ending to write after line l: its own, else the file's
// first, else "\n".
func (s *source) eol(l int) string {
	if l+1 < len(s.lines) {
		if strings.HasSuffix(string(s.b[s.lines[l]:s.lines[l+1]]), "\r\n") {
			return "\r\n"
		}
		return "\n"
	}
	if i := bytes.IndexByte(s.b, '\n'); i > 0 && s.b[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

func (s *source) blank(l int) bool { return strings.TrimSpace(s.text(l)) == "" }

func (s *source) comment(l int) bool {
	return strings.HasPrefix(strings.TrimLeft(s.text(l), " \t"), "#")
}

func (s *source) indent(l int) int {
	t := s.text(l)
	return len(t) - len(strings.TrimLeft(t, " "))
}

// blockEnd is the last line of a block item or mapping entry that starts
// at line start (or whose value ends there) and is indented by ind: the
// lines indented deeper that follow belong to it, and so do comment lines
// right after its last line (no blank line between) that are indented
// deeper, or as deep when the item's sequence is indented under its key
// (outer is the key's indentation): they are written about it. A comment
// after a blank line, or at the outer level, is left where it is, so an
// insertion after the item goes before it.
func (s *source) blockEnd(start, ind, outer int) int {
	end, broken := start, false
	for l := start + 1; l < len(s.lines); l++ {
		switch {
		case s.blank(l):
			broken = true
		case s.comment(l):
			i := s.indent(l)
			if !broken && (i > ind || i == ind && ind > outer) {
				end = l
			} else {
				broken = true
			}
		case s.indent(l) > ind:
			end, broken = l, false
		default:
			return end
		}
	}
	return end
}

// lastLine is the line where n's own text ends: a flow collection at its
// closing bracket, a quoted scalar at its closing quote, a block collection
// where its last child ends. Plain and block scalars end on their first line
// here; blockEnd takes their deeper-indented continuation lines.
func (s *source) lastLine(n *yaml.Node) (int, error) {
	switch {
	case (n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode) && n.Style&yaml.FlowStyle != 0:
		_, end, _, err := s.flow(n)
		if err != nil {
			return 0, err
		}
		return s.lineOf(end - 1), nil
	case (n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode) && len(n.Content) > 0:
		return s.lastLine(n.Content[len(n.Content)-1])
	case n.Kind == yaml.ScalarNode && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
		start := s.skipProps(s.off(n))
		end, ok := quotedEnd(s.b, start)
		if !ok {
			return 0, fmt.Errorf("line %d: unterminated quoted scalar", n.Line)
		}
		return s.lineOf(end - 1), nil
	}
	return n.Line - 1, nil
}

// skipProps skips a node's tag and anchor ("!!seq &a [x]" → "[x]").
func (s *source) skipProps(i int) int {
	for i < len(s.b) && (s.b[i] == '!' || s.b[i] == '&') {
		for i < len(s.b) && !isBlank(s.b[i]) && !strings.ContainsRune(",[]{}", rune(s.b[i])) {
			i++
		}
		for i < len(s.b) && isBlank(s.b[i]) {
			i++
		}
	}
	return i
}

// span is a byte range [start, end).
type span struct{ start, end int }

// flow scans the flow collection n: the offset of its opening bracket, the
// offset just after its closing one, and each top-level element's text (a
// mapping's element is "key: value"), without surrounding blanks, commas or
// comments.
func (s *source) flow(n *yaml.Node) (open, end int, elems []span, err error) {
	open = s.skipProps(s.off(n))
	if open >= len(s.b) || (s.b[open] != '[' && s.b[open] != '{') {
		return 0, 0, nil, fmt.Errorf("line %d: no flow collection where the parser placed one", n.Line)
	}
	b := s.b
	depth := 0
	cur := span{-1, -1}
	mark := func(from, to int) {
		if depth != 1 {
			return
		}
		if cur.start < 0 {
			cur.start = from
		}
		cur.end = to
	}
	finish := func() {
		if cur.start >= 0 {
			elems = append(elems, cur)
		}
		cur = span{-1, -1}
	}
	for i := open; i < len(b); {
		c := b[i]
		switch {
		case isBlank(c) || c == '\r' || c == '\n':
			i++
		case c == '#' && i > 0 && (isBlank(b[i-1]) || b[i-1] == '\n'):
			for i < len(b) && b[i] != '\n' {
				i++
			}
		case c == '[' || c == '{':
			mark(i, i+1)
			depth++
			i++
		case c == ']' || c == '}':
			depth--
			i++
			if depth == 0 {
				finish()
				return open, i, elems, nil
			}
			mark(i-1, i)
		case c == ',':
			if depth == 1 {
				finish()
			}
			i++
		case c == '"' || c == '\'':
			j, ok := quotedEnd(b, i)
			if !ok {
				return 0, 0, nil, fmt.Errorf("line %d: unterminated quoted scalar", n.Line)
			}
			mark(i, j)
			i = j
		default:
			j := plainEnd(b, i)
			mark(i, j)
			i = j
		}
	}
	return 0, 0, nil, fmt.Errorf("line %d: unterminated flow collection", n.Line)
}

// quotedEnd is the offset just after the quoted scalar starting at i.
func quotedEnd(b []byte, i int) (int, bool) {
	q := b[i]
	for j := i + 1; j < len(b); j++ {
		switch {
		case q == '"' && b[j] == '\\':
			j++
		case b[j] == q && q == '\'' && j+1 < len(b) && b[j+1] == '\'':
			j++
		case b[j] == q:
			return j + 1, true
		}
	}
	return 0, false
}

// plainEnd is the offset just after the plain scalar (or indicator, tag,
// anchor) starting at i in flow context, on its line: it ends before a flow
// indicator, a ": ", a " #" or the line's end, trailing blanks excluded.
// Its continuation lines, if any, are scanned as further pieces of the same
// element.
func plainEnd(b []byte, i int) int {
	if b[i] == ':' || b[i] == '?' {
		return i + 1
	}
	end := i
	for j := i; j < len(b); j++ {
		c := b[j]
		switch {
		case c == '\n' || c == '\r' || strings.IndexByte(",[]{}", c) >= 0:
			return end
		case c == ':' && (j+1 == len(b) || isBlank(b[j+1]) || b[j+1] == '\r' || b[j+1] == '\n' || strings.IndexByte(",[]{}", b[j+1]) >= 0):
			return end
		case c == '#' && j > i && isBlank(b[j-1]):
			return end
		case !isBlank(c):
			end = j + 1
		}
	}
	return end
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// keyColonEnd is the offset just after the ':' that follows mapping key k.
func (s *source) keyColonEnd(k *yaml.Node) (int, error) {
	i := s.skipProps(s.off(k))
	switch {
	case i < len(s.b) && (s.b[i] == '"' || s.b[i] == '\''):
		j, ok := quotedEnd(s.b, i)
		if !ok {
			return 0, fmt.Errorf("line %d: unterminated key", k.Line)
		}
		i = j
	default:
		i += len(k.Value)
	}
	for i < len(s.b) && isBlank(s.b[i]) {
		i++
	}
	if i >= len(s.b) || s.b[i] != ':' {
		return 0, fmt.Errorf("line %d: no ':' after key %q", k.Line, k.Value)
	}
	return i + 1, nil
}

// nullSpan is the text of a null value: the token ("~", "null") when one is
// written, else an empty span where the parser placed the value.
func (s *source) nullSpan(v *yaml.Node) (span, error) {
	i := s.off(v)
	if v.Value == "" {
		return span{i, i}, nil
	}
	if !bytes.HasPrefix(s.b[i:], []byte(v.Value)) {
		return span{}, fmt.Errorf("line %d: null written in a form this edit does not handle", v.Line)
	}
	return span{i, i + len(v.Value)}, nil
}

// lookup returns the value of key k in mapping m (and the key node), or nil.
func lookup(m *yaml.Node, k string) (key, value *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == k {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}
