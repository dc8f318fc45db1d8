package config

import "strconv"

// fieldPath is an immutable field path: its last segment (a mapping key or a
// list index) and its parent, so a check on a field that was never written
// can still be placed at its parent's line. The zero fieldPath is the
// document itself.
//
// It keeps segments and renders the string only in String, for a message: a
// load makes a path for every field it walks or checks, and building each
// one's string (and keying the line index by it) was a fifth of a 500-tool
// config's load and most of its line index's memory (BenchmarkLoad500x10).
type fieldPath struct {
	up   *fieldPath // nil for the document
	name string     // the mapping key, when idx < 0
	idx  int        // the list index, or -1 for a mapping key
}

// isPlainKey reports whether k matches ^[A-Za-z0-9_][A-Za-z0-9_-]*$. It is
// written out rather than a regexp, which was 8% of a large config's load
// when every field's path was rendered.
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
	return fieldPath{up: &parent, name: k, idx: -1}
}

// index appends a list index "[i]"; i is never negative.
func (p fieldPath) index(i int) fieldPath {
	parent := p
	return fieldPath{up: &parent, idx: i}
}

func (p fieldPath) String() string {
	var buf [80]byte // most paths fit: one allocation, the string's
	return string(p.appendTo(buf[:0]))
}

func (p *fieldPath) appendTo(b []byte) []byte {
	if p.up == nil {
		return b
	}
	b = p.up.appendTo(b)
	switch {
	case p.idx >= 0:
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(p.idx), 10)
		return append(b, ']')
	case isPlainKey(p.name):
		if p.up.up != nil {
			b = append(b, '.')
		}
		return append(b, p.name...)
	default:
		b = append(b, '[')
		b = strconv.AppendQuote(b, p.name)
		return append(b, ']')
	}
}

// pos is a place in the source; the column only orders problems that share
// a line (flow-style mappings), the message shows the line.
type pos struct{ line, col int }

// lineIndex records where each field was written, so checks that run on
// decoded values can still point at the source. It is kept with the Config
// for as long as a server runs.
//
// It mirrors the document as a tree stored flat: entries[0] is the document,
// and the keys of each mapping, or the items of each list, that the walker
// recorded are one block of consecutive entries, so a list item is found by
// its index and a key among its few siblings. Keyed by path strings, the
// index was 18 MB of the 39 MB a loaded 500 × 10 config keeps; stored this
// way it is 6 MB, and recording a field builds no string.
type lineIndex struct {
	entries []lineEntry
}

// lineEntry is one recorded key or list item.
type lineEntry struct {
	key       string // the mapping key it was written as; "" for a list item
	line, col int32
	first, n  int32 // its own keys or items: entries[first : first+n]
	items     bool  // the block holds list items, not mapping keys
}

// sortedBlock is the size above which a mapping's block is sorted by key and
// searched by halves (the tools: of a large config); smaller ones, nearly
// every mapping, are scanned in document order.
const sortedBlock = 16

// newLineIndex returns an index holding only the document, with room for
// fields more entries.
func newLineIndex(fields int) lineIndex {
	entries := make([]lineEntry, 1, 1+fields)
	entries[0] = lineEntry{line: 1, col: 1}
	return lineIndex{entries: entries}
}

// at returns where p was written, or where its nearest written ancestor was:
// a missing field is reported where its parent is.
func (ix *lineIndex) at(p fieldPath) pos {
	e, _ := ix.find(&p)
	if e == nil {
		return pos{}
	}
	return pos{int(e.line), int(e.col)}
}

// written reports whether p itself was written.
func (ix *lineIndex) written(p fieldPath) bool {
	_, exact := ix.find(&p)
	return exact
}

// find returns the entry of p, when recorded (exact), or else of its nearest
// recorded ancestor; nil for an empty index (a Config built by hand). The
// walker records a field only under a recorded parent, so the first missing
// segment from the top ends the search.
func (ix *lineIndex) find(p *fieldPath) (e *lineEntry, exact bool) {
	if len(ix.entries) == 0 {
		return nil, false
	}
	if p.up == nil {
		return &ix.entries[0], true
	}
	parent, ok := ix.find(p.up)
	if !ok {
		return parent, false
	}
	block := ix.entries[parent.first : parent.first+parent.n]
	switch {
	case p.idx >= 0:
		if parent.items && p.idx < len(block) {
			return &block[p.idx], true
		}
	case parent.items:
	case len(block) > sortedBlock:
		// Written out: slices.BinarySearchFunc makes p escape, and with
		// it every path a check builds.
		lo, hi := 0, len(block)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if block[m].key < p.name {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if lo < len(block) && block[lo].key == p.name {
			return &block[lo], true
		}
	default:
		for i := range block {
			if block[i].key == p.name {
				return &block[i], true
			}
		}
	}
	return parent, false
}
