package introspect

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/wraptool/wraptool/policy"
)

// Overrides is an operator's correction of what a tool's help says, read from
// the file a tool's introspection.overrides_file names. Help parsing is a
// heuristic; overrides are the operator's word, so they win over it: a
// subcommand's description, a flag's short form, type and description, and a
// flag the help does not list at all.
//
// The file maps subcommands, keyed by their tokens joined with single spaces
// ("commit", "compute instances list"), to a description and flags, keyed by
// their spelling ("--message" or "-m"). The key "" (an empty string) is the
// tool itself, its root help; the tool's name is not special, because a tool
// may well have a subcommand of its own name.
//
//	subcommands:
//	  commit:
//	    description: "Record changes to the repository"
//	    flags:
//	      "--message":
//	        short: "-m"
//	        type: string          # string, integer or boolean
//	        description: "Commit message"
//
// A nil *Overrides overrides nothing. An Overrides is immutable once parsed.
type Overrides struct {
	subs map[string]*subOverride
}

// subOverride is one subcommand's entry.
type subOverride struct {
	description string
	// flags is keyed by the flag's spelling as written in the file.
	flags map[string]flagOverride
}

// flagOverride is one flag's entry; zero fields keep what the help says.
type flagOverride struct {
	short       string
	typ         policy.Type
	description string
}

// ParseError is a problem in an overrides file, placed at its line so the
// operator can find it (File:Line: Msg).
type ParseError struct {
	// File is the name the caller gave, as given.
	File string
	// Line is 1-based; 0 when the problem has no line.
	Line int
	// Msg says what is wrong.
	Msg string
}

// Error returns "file:line: msg".
func (e *ParseError) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.Msg
	}
	return e.File + ":" + strconv.Itoa(e.Line) + ": " + e.Msg
}

// The file's shape, decoded strictly.
type overridesFile struct {
	Subcommands map[string]*subcommandYAML `yaml:"subcommands"`
}

type subcommandYAML struct {
	Description string               `yaml:"description"`
	Flags       map[string]*flagYAML `yaml:"flags"`
}

type flagYAML struct {
	Short       string `yaml:"short"`
	Type        string `yaml:"type"`
	Description string `yaml:"description"`
}

// ParseOverrides reads an overrides file's bytes; name is the file as the
// operator knows it, used in errors. Decoding is strict: an unknown key, a
// second document, a bad subcommand or flag name, a short form that is not
// "-X" or a type other than string, integer or boolean is an error naming
// name:line. An empty file overrides nothing.
func ParseOverrides(name string, data []byte) (*Overrides, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return &Overrides{}, nil
		}
		return nil, yamlError(name, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, &ParseError{File: name, Line: extra.Line, Msg: "only one YAML document is allowed"}
	case !errors.Is(err, io.EOF):
		return nil, yamlError(name, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
		return &Overrides{}, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, &ParseError{File: name, Line: root.Line, Msg: "an overrides file must be a mapping with a subcommands: key"}
	}
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	var f overridesFile
	if err := strict.Decode(&f); err != nil {
		return nil, yamlError(name, err)
	}

	o := &Overrides{subs: map[string]*subOverride{}}
	subsNode := valueOf(root, "subcommands")
	// Walk the nodes, not the maps, so the problem reported is the first
	// in the file.
	for _, key := range keys(subsNode) {
		s := f.Subcommands[key]
		keyNode := keyOf(subsNode, key)
		at := func(n *yaml.Node, format string, args ...any) error {
			line := root.Line
			if n != nil {
				line = n.Line
			} else if keyNode != nil {
				line = keyNode.Line
			}
			return &ParseError{File: name, Line: line, Msg: fmt.Sprintf(format, args...)}
		}
		if !validSubKey(key) {
			return nil, at(keyNode, "subcommand %q must be \"\" (the tool itself) or tokens of [A-Za-z0-9][A-Za-z0-9_-]* joined by single spaces", key)
		}
		so := &subOverride{flags: map[string]flagOverride{}}
		o.subs[key] = so
		if s == nil {
			continue
		}
		so.description = s.Description
		flagsNode := valueOf(valueOf(subsNode, key), "flags")
		shorts := map[string]string{}
		for _, spelling := range keys(flagsNode) {
			fy := s.Flags[spelling]
			flagKey := keyOf(flagsNode, spelling)
			flagNode := valueOf(flagsNode, spelling)
			if !policy.ValidFlag(spelling) {
				return nil, at(flagKey, "flag %q must be -X or --name", spelling)
			}
			var fo flagOverride
			if fy != nil {
				fo = flagOverride{short: fy.Short, typ: policy.ParseType(fy.Type), description: fy.Description}
				if fy.Type != "" && fo.typ == policy.TypeUnknown {
					return nil, at(keyOf(flagNode, "type"), "type of %q must be string, integer or boolean, not %q", spelling, fy.Type)
				}
				if fy.Short != "" {
					if policy.IsShortFlag(spelling) {
						return nil, at(keyOf(flagNode, "short"), "short belongs under a long flag, not under %q", spelling)
					}
					if !policy.IsShortFlag(fy.Short) || !policy.ValidFlag(fy.Short) {
						return nil, at(keyOf(flagNode, "short"), "short of %q must be -X (one letter or digit), not %q", spelling, fy.Short)
					}
				}
			}
			for _, s := range []string{spelling, fo.short} {
				if s == "" {
					continue
				}
				if prev, ok := shorts[s]; ok && prev != spelling {
					return nil, at(flagKey, "%s is given to both %s and %s", s, prev, spelling)
				}
				shorts[s] = spelling
			}
			so.flags[spelling] = fo
		}
	}
	return o, nil
}

// validSubKey accepts "" or valid tokens joined by single spaces.
func validSubKey(key string) bool {
	if key == "" {
		return true
	}
	for tok := range strings.SplitSeq(key, " ") {
		if !policy.ValidToken(tok) {
			return false
		}
	}
	return true
}

// sub returns the override for the subcommand key, or nil.
func (o *Overrides) sub(key string) *subOverride {
	if o == nil {
		return nil
	}
	return o.subs[key]
}

// flag finds the override of the subcommand key that spelling names, by its
// key or its short form; long is the key it is written under.
func (o *Overrides) flag(key, spelling string) (fo flagOverride, long string, ok bool) {
	s := o.sub(key)
	if s == nil {
		return flagOverride{}, "", false
	}
	if fo, ok := s.flags[spelling]; ok {
		return fo, spelling, true
	}
	for k, fo := range s.flags {
		if fo.short == spelling {
			return fo, k, true
		}
	}
	return flagOverride{}, "", false
}

// keys lists mapping n's keys in document order.
func keys(n *yaml.Node) []string {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var out []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, n.Content[i].Value)
	}
	return out
}

// keyOf returns the key node of key in mapping n, or nil.
func keyOf(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i]
		}
	}
	return nil
}

// valueOf returns the value node of key in mapping n, or nil.
func valueOf(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

var (
	yamlLine     = regexp.MustCompile(`(?s)^(?:yaml: )?(?:unmarshal errors:\s*)?line (\d+): (.*)$`)
	unknownField = regexp.MustCompile(`field (\S+) not found in type \S+`)
)

// yamlError places a yaml.v3 error at its line, naming an unknown key plainly
// rather than by the Go type it missed.
func yamlError(file string, err error) *ParseError {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = unknownField.ReplaceAllString(msg, "unknown key $1")
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		// A type error lists every problem on its own line; the first is
		// the one to fix first.
		first, _, _ := strings.Cut(m[2], "\n")
		return &ParseError{File: file, Line: line, Msg: first}
	}
	return &ParseError{File: file, Msg: msg}
}
