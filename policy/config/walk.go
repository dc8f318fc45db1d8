package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// walker checks a parsed document against the config types before anything
// is decoded, because yaml.v3's strict mode reports an unknown key with a
// line but no field path, and a wrong kind of value with a Go type name an
// operator should not need to read. It records where every field was written.
type walker struct {
	file  string
	lines *lineIndex
	errs  []*Error
	// segs is the path to the node being walked, one segment each (up is
	// nil): a fieldPath is linked up from it only for an error, since one
	// per field was most of the walk's garbage.
	segs []fieldPath
	// pending holds, for each mapping on the way down, the values of the
	// keys just recorded, walked once the mapping's block is complete.
	pending []pendingValue
	// scalars memoizes whether a non-string scalar decodes into its
	// field's type: a large config repeats a few values (true, 1, 100)
	// thousands of times, and a trial decode is a decoder and a
	// reflect.New each.
	scalars map[scalarKey]bool
}

type pendingValue struct {
	n *yaml.Node
	t reflect.Type
}

// scalarKey is everything of a scalar node a decode into t depends on.
type scalarKey struct {
	t          reflect.Type
	tag, value string
	style      yaml.Style
}

var durationType = reflect.TypeOf(time.Duration(0))

// path is the field path of the node being walked.
func (w *walker) path() fieldPath {
	var p fieldPath
	for _, s := range w.segs {
		parent := p
		s.up = &parent
		p = s
	}
	return p
}

func (w *walker) fail(n *yaml.Node, p fieldPath, format string, args ...any) {
	w.errs = append(w.errs, &Error{File: w.file, Line: n.Line, col: n.Column, Path: p.String(), Msg: fmt.Sprintf(format, args...)})
}

// record adds an entry for a key or list item written at n to the block
// being filled.
func (w *walker) record(key string, n *yaml.Node) {
	w.lines.entries = append(w.lines.entries, lineEntry{key: key, line: int32(n.Line), col: int32(n.Column)})
}

// walk checks n, recorded as entry id, against t. Null is accepted for
// anything but a mapping that stands for a whole tool, rule or constraint,
// which would decode to nil.
func (w *walker) walk(n *yaml.Node, t reflect.Type, id int32) {
	if n.Kind == yaml.AliasNode {
		w.fail(n, w.path(), "aliases are not supported: write the value out")
		return
	}
	if isNull(n) {
		if t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
			w.fail(n, w.path(), "must not be empty")
		}
		return
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct, t.Kind() == reflect.Map:
		w.walkMapping(n, t, id)
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			w.fail(n, w.path(), "want a list, got %s", describe(n))
			return
		}
		first := int32(len(w.lines.entries))
		for _, item := range n.Content {
			w.record("", item)
		}
		e := &w.lines.entries[id]
		e.first, e.n, e.items = first, int32(len(n.Content)), true
		for i, item := range n.Content {
			w.segs = append(w.segs, fieldPath{idx: i})
			w.walk(item, t.Elem(), first+int32(i))
			w.segs = w.segs[:len(w.segs)-1]
		}
	default:
		w.walkScalar(n, t)
	}
}

// walkMapping checks a mapping that is a struct (its keys are t's fields)
// or a map. It records the mapping's keys first, as one block, and only
// then walks their values, whose keys go in blocks of their own.
func (w *walker) walkMapping(n *yaml.Node, t reflect.Type, id int32) {
	if n.Kind != yaml.MappingNode {
		w.fail(n, w.path(), "want a mapping, got %s", describe(n))
		return
	}
	var fields map[string]yamlField
	if t.Kind() == reflect.Struct {
		fields = yamlFields(t)
	}
	first := int32(len(w.lines.entries))
	mark := len(w.pending)
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !w.key(k, seen) {
			continue
		}
		if fields == nil {
			w.record(k.Value, k)
			w.pending = append(w.pending, pendingValue{v, t.Elem()})
			continue
		}
		f, ok := fields[k.Value]
		if !ok {
			w.fail(k, w.path().key(k.Value), "unknown field%s", suggest(k.Value, fields))
			continue
		}
		// The field's own name, not the parser's copy of it: the index
		// outlives the node tree.
		w.record(f.name, k)
		w.pending = append(w.pending, pendingValue{v, f.t})
	}
	block := w.lines.entries[first:]
	values := w.pending[mark:]
	if len(block) > sortedBlock {
		sortBlock(block, values)
	}
	e := &w.lines.entries[id]
	e.first, e.n = first, int32(len(block))
	for i, v := range values {
		// values stays valid while the walk below appends to w.pending:
		// appends go past it, and a new backing array leaves it as it is.
		w.segs = append(w.segs, fieldPath{name: w.lines.entries[first+int32(i)].key, idx: -1})
		w.walk(v.n, v.t, first+int32(i))
		w.segs = w.segs[:len(w.segs)-1]
	}
	w.pending = w.pending[:mark]
}

// sortBlock sorts a mapping's recorded keys, with their values, by key.
func sortBlock(block []lineEntry, values []pendingValue) {
	order := make([]int, len(block))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(block[a].key, block[b].key) })
	b, v := slices.Clone(block), slices.Clone(values)
	for i, j := range order {
		block[i], values[i] = b[j], v[j]
	}
}

// key checks one mapping key: a plain scalar, not a merge key, not repeated.
func (w *walker) key(k *yaml.Node, seen map[string]int) bool {
	switch {
	case k.Kind == yaml.AliasNode:
		w.fail(k, w.path(), "aliases are not supported: write the value out")
		return false
	case k.Kind != yaml.ScalarNode:
		w.fail(k, w.path(), "a key must be a plain string, got %s", describe(k))
		return false
	case k.Tag == "!!merge":
		w.fail(k, w.path(), "merge keys (<<) are not supported: write the values out")
		return false
	}
	if first, dup := seen[k.Value]; dup {
		w.fail(k, w.path().key(k.Value), "duplicate key (first written on line %d)", first)
		return false
	}
	seen[k.Value] = k.Line
	return true
}

func (w *walker) walkScalar(n *yaml.Node, t reflect.Type) {
	if n.Kind != yaml.ScalarNode {
		w.fail(n, w.path(), "want %s, got %s", want(t), describe(n))
		return
	}
	if t.Kind() == reflect.String && n.ShortTag() == "!!str" {
		// A string always decodes into a string; a trial decode (a
		// decoder per scalar) was a tenth of a large config's load.
		return
	}
	sk := scalarKey{t, n.Tag, n.Value, n.Style}
	ok, seen := w.scalars[sk]
	if !seen {
		ok = n.Decode(reflect.New(t).Interface()) == nil
		if w.scalars == nil {
			w.scalars = map[scalarKey]bool{}
		}
		w.scalars[sk] = ok
	}
	if !ok {
		w.fail(n, w.path(), "want %s, got %q", want(t), n.Value)
	}
}

// countFields counts the keys and list items under n: at least as many as
// the walker records.
func countFields(n *yaml.Node) int {
	count := 0
	switch n.Kind {
	case yaml.MappingNode:
		count = len(n.Content) / 2
		for i := 1; i < len(n.Content); i += 2 {
			count += countFields(n.Content[i])
		}
	case yaml.SequenceNode:
		count = len(n.Content)
		for _, item := range n.Content {
			count += countFields(item)
		}
	}
	return count
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// fieldsByType caches yamlFields per struct type: the types are fixed, and a
// large config walks the same few structs thousands of times.
var fieldsByType sync.Map // reflect.Type → map[string]yamlField

// yamlField is one field of a config struct, by its YAML key.
type yamlField struct {
	name  string // the YAML key
	t     reflect.Type
	index int // for reflect.Value.Field
}

// yamlFields maps each YAML key of a struct to its field. The map is shared:
// do not modify it.
func yamlFields(t reflect.Type) map[string]yamlField {
	if m, ok := fieldsByType.Load(t); ok {
		return m.(map[string]yamlField)
	}
	m := map[string]yamlField{}
	defer fieldsByType.Store(t, m)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		m[tag] = yamlField{tag, f.Type, i}
	}
	return m
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	return fmt.Sprintf("%q", n.Value)
}

func want(t reflect.Type) string {
	switch {
	case t == durationType:
		return "a duration such as 30s"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		return "an integer"
	case t.Kind() == reflect.String:
		return "a string"
	}
	return t.String()
}

// suggest names the closest known key, so a typo such as flag_constraint
// points at flag_constraints.
func suggest(got string, fields map[string]yamlField) string {
	best, bestD := "", 4
	for name := range fields {
		if d := distance(got, name); d < bestD || d == bestD && name < best {
			best, bestD = name, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// distance is the Levenshtein edit distance between two short keys.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
