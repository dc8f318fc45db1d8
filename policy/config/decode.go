package config

import (
	"encoding"
	"reflect"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// decoder fills a Config from a document the walker found no fault in, with
// the result yaml.v3's Node.Decode gives. The walker has already checked
// every key and decoded every scalar that is not a plain string, so what is
// left is setting fields: on the 500 × 10 config of BenchmarkLoad500x10 it
// takes 20 ms, 4.6 MB and 85k allocations where yaml.v3 took 58 ms, 10 MB
// and 410k (14% of the load).
//
// It knows only the shapes a config is written in: string keys, mappings,
// lists, strings, nulls and the scalars the walker decoded. Anything else (a
// tag, a key that is not a string, a type with its own unmarshaler) makes
// it give up, and the caller decodes with yaml.v3 instead: the two must
// never differ (FuzzDecode).
type decoder struct {
	// scalars are the walker's decodes of non-string scalars.
	scalars map[scalarKey]scalarValue
	// failed is set when the document has a shape decoder leaves to
	// yaml.v3.
	failed bool
}

// decode fills c's YAML fields from root as root.Decode(c) would, and
// reports whether it could; when it could not, it leaves those fields as
// they were (zero) for yaml.v3 to fill.
func (w *walker) decode(root *yaml.Node, c *Config) bool {
	if !plainTypes() {
		return false
	}
	d := &decoder{scalars: w.scalars}
	out := reflect.ValueOf(c).Elem()
	d.unmarshal(root, out)
	if d.failed {
		for _, f := range yamlFields(out.Type()) {
			out.Field(f.index).SetZero()
		}
		return false
	}
	return true
}

// unmarshal is yaml.v3's decoder.unmarshal for the shapes decoder knows: it
// decodes n into out and reports yaml.v3's "good", which decides whether a
// null list item is kept and a null map value set.
func (d *decoder) unmarshal(n *yaml.Node, out reflect.Value) bool {
	if d.failed {
		return false
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		if !nullValue(n.Value) {
			// "!!null x" fails in yaml.v3, and its message is
			// yaml.v3's to give.
			d.failed = true
			return false
		}
		switch out.Kind() {
		case reflect.Interface, reflect.Pointer, reflect.Map, reflect.Slice:
			out.SetZero()
			return true
		}
		return false
	}
	for out.Kind() == reflect.Pointer {
		if out.IsNil() {
			out.Set(reflect.New(out.Type().Elem()))
		}
		out = out.Elem()
	}
	switch {
	case n.Kind == yaml.ScalarNode:
		return d.scalar(n, out)
	case n.Kind == yaml.MappingNode && n.Tag == "!!map" && out.Kind() == reflect.Struct:
		return d.mappingStruct(n, out)
	case n.Kind == yaml.MappingNode && n.Tag == "!!map" && out.Kind() == reflect.Map:
		return d.mapping(n, out)
	case n.Kind == yaml.SequenceNode && n.Tag == "!!seq" && out.Kind() == reflect.Slice:
		return d.sequence(n, out)
	}
	d.failed = true
	return false
}

func (d *decoder) scalar(n *yaml.Node, out reflect.Value) bool {
	if n.Tag == "!!str" && out.Kind() == reflect.String {
		out.SetString(n.Value)
		return true
	}
	v, ok := d.scalars[scalarKey{out.Type(), n.Tag, n.Value, n.Style}]
	if !ok || !v.ok {
		d.failed = true
		return false
	}
	out.Set(v.v)
	return true
}

// mappingStruct sets the fields the keys name; the walker has checked that
// each key names one, once.
func (d *decoder) mappingStruct(n *yaml.Node, out reflect.Value) bool {
	fields := yamlFields(out.Type())
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		f, ok := fields[k.Value]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" || !ok {
			d.failed = true
			return false
		}
		d.unmarshal(n.Content[i+1], out.Field(f.index))
	}
	return true
}

func (d *decoder) mapping(n *yaml.Node, out reflect.Value) bool {
	t := out.Type()
	if t.Key().Kind() != reflect.String {
		d.failed = true
		return false
	}
	isNew := out.IsNil()
	if isNew {
		out.Set(reflect.MakeMapWithSize(t, len(n.Content)/2))
	}
	if m, ok := out.Addr().Interface().(*map[string]string); ok {
		return d.stringMap(n, *m, isNew)
	}
	// SetMapIndex copies key and value, so one of each serves every
	// entry.
	key, e := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			d.failed = true
			return false
		}
		key.SetString(k.Value)
		e.SetZero()
		if d.unmarshal(v, e) || isNull(v) && (isNew || !out.MapIndex(key).IsValid()) {
			out.SetMapIndex(key, e)
		}
	}
	return true
}

// stringMap is mapping for a map[string]string (env:), without a reflect
// value per key and value.
func (d *decoder) stringMap(n *yaml.Node, m map[string]string, isNew bool) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			d.failed = true
			return false
		}
		if v.Kind == yaml.ScalarNode && v.Tag == "!!str" {
			m[k.Value] = v.Value
			continue
		}
		var e string
		if _, set := m[k.Value]; d.unmarshal(v, reflect.ValueOf(&e).Elem()) || isNull(v) && (isNew || !set) {
			m[k.Value] = e
		}
	}
	return true
}

// sequence makes a slice of the list's length; an item yaml.v3 does not
// keep (a null string) is left out, and the slice keeps the capacity.
func (d *decoder) sequence(n *yaml.Node, out reflect.Value) bool {
	l := len(n.Content)
	if s, ok := out.Addr().Interface().(*[]string); ok && allStrings(n) {
		items := make([]string, l)
		for i, item := range n.Content {
			items[i] = item.Value
		}
		*s = items
		return true
	}
	s := reflect.MakeSlice(out.Type(), l, l)
	j := 0
	for _, item := range n.Content {
		if d.unmarshal(item, s.Index(j)) {
			j++
		}
	}
	out.Set(s.Slice(0, j))
	return true
}

func allStrings(n *yaml.Node) bool {
	for _, item := range n.Content {
		if item.Kind != yaml.ScalarNode || item.Tag != "!!str" {
			return false
		}
	}
	return true
}

// nullValue reports whether a !!null scalar's text is one yaml.v3 resolves
// to null.
func nullValue(s string) bool {
	switch s {
	case "", "~", "null", "Null", "NULL":
		return true
	}
	return false
}

// scalarValue is the walker's trial decode of one scalar: whether it
// decoded, and to what.
type scalarValue struct {
	ok bool
	v  reflect.Value
}

var (
	plainOnce sync.Once
	plain     bool
)

// plainTypes reports whether the config's types are all ones decoder
// handles as yaml.v3 does: no type that unmarshals itself, no embedded or
// inline field.
func plainTypes() bool {
	plainOnce.Do(func() { plain = plainType(reflect.TypeOf(Config{}), map[reflect.Type]bool{}) })
	return plain
}

var (
	yamlUnmarshaler = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
	// obsoleteUnmarshaler is yaml.v3's unexported interface for yaml.v2
	// style unmarshalers, which it still calls.
	obsoleteUnmarshaler = reflect.TypeOf((*interface {
		UnmarshalYAML(unmarshal func(any) error) error
	})(nil)).Elem()
	textUnmarshaler = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
)

func plainType(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return true
	}
	seen[t] = true
	for _, i := range []reflect.Type{yamlUnmarshaler, obsoleteUnmarshaler, textUnmarshaler} {
		if t.Implements(i) || reflect.PointerTo(t).Implements(i) {
			return false
		}
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice:
		return plainType(t.Elem(), seen)
	case reflect.Map:
		return plainType(t.Key(), seen) && plainType(t.Elem(), seen)
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if f.Anonymous || strings.Contains(f.Tag.Get("yaml"), "inline") {
				return false
			}
			if _, ok := f.Tag.Lookup("yaml"); ok && f.IsExported() && !plainType(f.Type, seen) {
				return false
			}
		}
	case reflect.Interface, reflect.Array, reflect.Chan, reflect.Func:
		return false
	}
	return true
}
