package config

import (
	"fmt"
	"reflect"
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
	lines lineIndex
	errs  []*Error
}

var durationType = reflect.TypeOf(time.Duration(0))

func (w *walker) fail(n *yaml.Node, p fieldPath, format string, args ...any) {
	w.errs = append(w.errs, &Error{File: w.file, Line: n.Line, col: n.Column, Path: p.String(), Msg: fmt.Sprintf(format, args...)})
}

// walk checks n against t. Null is accepted for anything but a mapping that
// stands for a whole tool, rule or constraint, which would decode to nil.
func (w *walker) walk(n *yaml.Node, t reflect.Type, p fieldPath) {
	if n.Kind == yaml.AliasNode {
		w.fail(n, p, "aliases are not supported: write the value out")
		return
	}
	if isNull(n) {
		if t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
			w.fail(n, p, "must not be empty")
		}
		return
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct:
		w.walkStruct(n, t, p)
	case t.Kind() == reflect.Map:
		w.walkMap(n, t, p)
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			w.fail(n, p, "want a list, got %s", describe(n))
			return
		}
		for i, item := range n.Content {
			ip := p.index(i)
			w.lines[ip.String()] = pos{item.Line, item.Column}
			w.walk(item, t.Elem(), ip)
		}
	default:
		w.walkScalar(n, t, p)
	}
}

func (w *walker) walkStruct(n *yaml.Node, t reflect.Type, p fieldPath) {
	if n.Kind != yaml.MappingNode {
		w.fail(n, p, "want a mapping, got %s", describe(n))
		return
	}
	fields := yamlFields(t)
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !w.key(k, p, seen) {
			continue
		}
		kp := p.key(k.Value)
		ft, ok := fields[k.Value]
		if !ok {
			w.fail(k, kp, "unknown field%s", suggest(k.Value, fields))
			continue
		}
		w.lines[kp.String()] = pos{k.Line, k.Column}
		w.walk(v, ft, kp)
	}
}

func (w *walker) walkMap(n *yaml.Node, t reflect.Type, p fieldPath) {
	if n.Kind != yaml.MappingNode {
		w.fail(n, p, "want a mapping, got %s", describe(n))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !w.key(k, p, seen) {
			continue
		}
		kp := p.key(k.Value)
		w.lines[kp.String()] = pos{k.Line, k.Column}
		w.walk(v, t.Elem(), kp)
	}
}

// key checks one mapping key: a plain scalar, not a merge key, not repeated.
func (w *walker) key(k *yaml.Node, p fieldPath, seen map[string]int) bool {
	switch {
	case k.Kind == yaml.AliasNode:
		w.fail(k, p, "aliases are not supported: write the value out")
		return false
	case k.Kind != yaml.ScalarNode:
		w.fail(k, p, "a key must be a plain string, got %s", describe(k))
		return false
	case k.Tag == "!!merge":
		w.fail(k, p, "merge keys (<<) are not supported: write the values out")
		return false
	}
	if first, dup := seen[k.Value]; dup {
		w.fail(k, p.key(k.Value), "duplicate key (first written on line %d)", first)
		return false
	}
	seen[k.Value] = k.Line
	return true
}

func (w *walker) walkScalar(n *yaml.Node, t reflect.Type, p fieldPath) {
	if n.Kind != yaml.ScalarNode {
		w.fail(n, p, "want %s, got %s", want(t), describe(n))
		return
	}
	if t.Kind() == reflect.String && n.ShortTag() == "!!str" {
		// A string always decodes into a string; a trial decode (a
		// decoder per scalar) was a tenth of a large config's load.
		return
	}
	if err := n.Decode(reflect.New(t).Interface()); err != nil {
		w.fail(n, p, "want %s, got %q", want(t), n.Value)
	}
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// fieldsByType caches yamlFields per struct type: the types are fixed, and a
// large config walks the same few structs thousands of times.
var fieldsByType sync.Map // reflect.Type → map[string]reflect.Type

// yamlFields maps each YAML key of a struct to its field type. The map is
// shared: do not modify it.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldsByType.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	defer fieldsByType.Store(t, m)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		m[tag] = f.Type
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
func suggest(got string, fields map[string]reflect.Type) string {
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
