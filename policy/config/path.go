package config

import "strconv"

// fieldPath is an immutable field path that remembers its parent, so a check
// on a field that was never written can still be placed at its parent's line.
type fieldPath struct {
	s  string
	up *fieldPath
}

// isPlainKey reports whether k matches ^[A-Za-z0-9_][A-Za-z0-9_-]*$. It is
// written out rather than a regexp because every field of a load passes
// here (a regexp match was 8% of a large config's load).
func isPlainKey(k string) bool {
	if k == "" || k[0] == '-' {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// key appends a mapping key: ".name" when it reads as an identifier,
// otherwise `["--depth"]` so flags and odd keys stay unambiguous.
func (p fieldPath) key(k string) fieldPath {
	parent := p
	if isPlainKey(k) {
		if p.s == "" {
			return fieldPath{k, &parent}
		}
		return fieldPath{p.s + "." + k, &parent}
	}
	return fieldPath{p.s + "[" + strconv.Quote(k) + "]", &parent}
}

// index appends a sequence index "[i]".
func (p fieldPath) index(i int) fieldPath {
	parent := p
	return fieldPath{p.s + "[" + strconv.Itoa(i) + "]", &parent}
}

func (p fieldPath) String() string { return p.s }

// pos is a place in the source; the column only orders problems that share
// a line (flow-style mappings), the message shows the line.
type pos struct{ line, col int }

// lineIndex records where each field path was written, so checks that run on
// decoded values can still point at the source.
type lineIndex map[string]pos

// at returns where p was written, or where its nearest written ancestor was:
// a missing field is reported where its parent is.
func (ix lineIndex) at(p fieldPath) pos {
	for q := &p; q != nil; q = q.up {
		if n, ok := ix[q.s]; ok {
			return n
		}
	}
	return pos{}
}
