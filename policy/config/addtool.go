package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/danger"
)

// This file plans `wraptool config add`: a new tool with no
// allow rules, its catalog written under allow: as comments. The catalog
// comes from the tool's help output, which the tool's author (or whoever
// replaced the binary) wrote: every piece of it is reduced to printable
// ASCII on one line before it reaches the file, and the result is parsed
// back and must hold no rule at all before it is written.

// MaxCatalogText is the longest description written beside a catalog rule.
const MaxCatalogText = 120

// commentColumn is where the description starts on a catalog line,
// counted from the "#", so that descriptions line up past
// "# - subcommand: [pr, list]".
const commentColumn = 34

// CatalogRule is one commented-out allow rule of a new tool's catalog.
type CatalogRule struct {
	// Subcommand is the rule's path; a path holding a token outside
	// [A-Za-z0-9][A-Za-z0-9_-]* is left out of the file.
	Subcommand []string
	// Description is the help's line for it; written as one line of
	// printable ASCII of at most MaxCatalogText bytes, "" for none.
	Description string
	// Flags are the flags its own help lists, in the help's order; those
	// outside policy.ValidFlag are left out.
	Flags []string
	// Unread marks a path whose own help is not known, so its flags are
	// not either (the comment says so, rather than "no flags").
	Unread bool
}

// NewTool is what AddTool writes: tools.Name with Binary and, under an empty
// allow:, the catalog as comments; or, with a Preset, the preset's rules.
type NewTool struct {
	// Name is the tool's key; it must pass the same checks as any tool
	// name.
	Name string
	// Binary is the absolute path of the executable.
	Binary string
	// Catalog lists the rules to write as comments, in order; unused with
	// a Preset.
	Catalog []CatalogRule
	// Preset, when set, is written instead of the catalog: its allow and
	// deny lists (and env) as live rules, under a comment naming it. nil
	// writes no rule at all.
	Preset *Preset
}

// CheckToolName refuses a name no tool may have: outside
// [A-Za-z0-9][A-Za-z0-9_-]*, or starting with wraptool (in any case).
func CheckToolName(name string) error {
	if !policy.ValidToken(name) {
		return fmt.Errorf("%w: tool name %s must match [A-Za-z0-9][A-Za-z0-9_-]*", ErrInvalidToolName, quoteToken(name, true))
	}
	if strings.HasPrefix(strings.ToLower(name), policy.ReservedPrefix) {
		return fmt.Errorf("%w: tool name %q starts with %q, which is reserved for wraptool's built-in tools", ErrInvalidToolName, name, policy.ReservedPrefix)
	}
	return nil
}

// CheckBinary refuses what validation refuses as a tool's binary: not an
// absolute path to an executable regular file, wraptool itself, or a file or
// folder that anyone but its owner (the operator or root) may write.
func CheckBinary(path string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%w: %s is not an absolute path", ErrBadBinary, path)
	}
	if msg := binaryProblem(path); msg != "" {
		return fmt.Errorf("%w: %s", ErrBadBinary, msg)
	}
	return nil
}

// PlanAddTool plans `config add` without touching the file: the new text
// for data, the config at path, with nt as the last entry of tools:, and
// how many rules it wrote: the catalog rules written as comments, or with
// nt.Preset the preset's allow rules written live. An existing
// tools.<name> is refused with ErrToolExists; a bad name or binary with
// ErrInvalidToolName or ErrBadBinary (the binary is checked when the result
// is validated).
//
// As a request's merge does, it splices the new lines into the file's own
// text (every other byte stays as written) and parses the result, which
// must load as any config does and differ from the old one by the new tool
// alone: with no rule, or with a preset exactly the preset's allow, deny
// and env. The file editor (package edit) writes it.
func PlanAddTool(path string, data []byte, nt NewTool, o *Options) ([]byte, int, error) {
	before, err := newToolBase(path, data, nt.Name, o)
	if err != nil {
		return nil, 0, err
	}
	out, n, err := spliceTool(data, nt)
	if err != nil {
		return nil, 0, &applyError{ErrUnsupportedLayout, fmt.Sprintf(
			"%s: cannot add the tool to this file's layout in place (%v); add it by hand", path, err)}
	}
	if len(out) > maxConfigBytes {
		return nil, 0, fmt.Errorf("%s: the config would be %d bytes; at most %d are read", path, len(out), maxConfigBytes)
	}
	after, err := parse(path, out, o, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("the config with the new tool would be invalid: %w", err)
	}
	if err := onlyNewTool(before, after, out, nt); err != nil {
		return nil, 0, &applyError{ErrUnsupportedLayout, fmt.Sprintf(
			"%s: cannot add the tool to this file's layout in place (%v); add it by hand", path, err)}
	}
	return out, n, nil
}

// CheckNewTool refuses what PlanAddTool refuses before it looks at the
// binary or the catalog: a bad name, a config at path (data) that does not
// load, or a tool of that name already in it. `config add` asks first, so a
// refusal runs nothing.
func CheckNewTool(path string, data []byte, name string, o *Options) error {
	_, err := newToolBase(path, data, name, o)
	return err
}

// newToolBase is the config a new tool name is added to, parsed.
func newToolBase(path string, data []byte, name string, o *Options) (*Config, error) {
	if err := CheckToolName(name); err != nil {
		return nil, err
	}
	before, err := parse(path, data, o, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot add a tool to a config that does not load; fix it first: %w", err)
	}
	if _, ok := before.Tools[name]; ok {
		p := fieldPath{}.key("tools").key(name)
		return nil, &applyError{ErrToolExists, fmt.Sprintf("tool %s is already in the config (%s:%d); edit it there, or pick another name",
			quoteToken(name, false), path, before.lines.at(p).line)}
	}
	return before, nil
}

// onlyNewTool checks that after differs from before by tools.<name> alone,
// and that the new tool is its binary and an allow that is empty: whatever
// the help text said, no rule went live. With a preset, the tool is its
// binary and the preset's rules, exactly.
func onlyNewTool(before, after *Config, out []byte, nt NewTool) error {
	t := after.Tools[nt.Name]
	switch {
	case t == nil:
		return errors.New("the new tool does not parse back")
	case t.Binary != nt.Binary:
		return fmt.Errorf("the binary parses back as %q", t.Binary)
	case nt.Preset != nil:
		if err := samePreset(t, nt.Preset); err != nil {
			return err
		}
	case len(t.Allow) != 0 || len(t.Deny) != 0:
		return errors.New("the new tool parses back with rules")
	}
	others := unseededTools(after)
	delete(others, nt.Name)
	switch {
	case !reflect.DeepEqual(unseededTools(before), others):
		return errors.New("the edit changed other tools")
	case !reflect.DeepEqual(before.MCP, after.MCP), !reflect.DeepEqual(before.Admin, after.Admin),
		!reflect.DeepEqual(before.MCPServers, after.MCPServers):
		return errors.New("the edit changed settings outside the tools")
	}
	// The node tree, too: the tool holds binary and allow and nothing
	// else, and allow is empty (null, or [] when there is no catalog).
	root, err := parseDocument("", out)
	if err != nil {
		return err
	}
	_, tools := lookup(root, "tools")
	_, tn := lookup(tools, nt.Name)
	if nt.Preset != nil {
		return presetKeys(tn, nt.Preset)
	}
	if tn == nil || tn.Kind != yaml.MappingNode || len(tn.Content) != 4 {
		return errors.New("the new tool is not a mapping of binary and allow")
	}
	k, allow := lookup(tn, "allow")
	if k == nil || !(isNull(allow) || allow.Kind == yaml.SequenceNode && len(allow.Content) == 0) {
		return errors.New("the new tool's allow is not empty")
	}
	return nil
}

// spliceTool writes nt into data as the last entry of tools:, and returns
// the new text and how many catalog rules it wrote.
func spliceTool(data []byte, nt NewTool) (out []byte, n int, err error) {
	defer func() {
		// A layout the edit misjudges must refuse, never crash.
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("internal error: %v", r)
		}
	}()
	if oddBreak.Match(data) {
		return nil, 0, errors.New("the file breaks lines with characters other than LF and CRLF")
	}
	root, err := parseDocument("", data)
	if err != nil {
		return nil, 0, fmt.Errorf("cannot parse: %v", err)
	}
	if root != nil && (root.Kind != yaml.MappingNode || root.Style&yaml.FlowStyle != 0 || len(root.Content) == 0) {
		return nil, 0, errors.New("the document is not a block mapping")
	}
	base := 0 // the indentation of the document's keys
	if root != nil {
		base = root.Content[0].Column - 1
	}
	s := newSource(data)
	toolsKey, tools := lookup(root, "tools")
	step, dash := s.indentSteps(root)
	var edits []edit
	switch {
	case toolsKey == nil:
		// A new tools: at the end of the file.
		l := len(s.lines) - 1
		if l > 0 && s.lines[l] == len(s.b) {
			l-- // the file ends with a newline: after its last line
		}
		eol := s.eol(l)
		block, k, err := toolBlock(nt, base+step, step, dash, eol)
		if err != nil {
			return nil, 0, err
		}
		n = k
		if len(s.b) == 0 {
			return []byte("tools:" + eol + block), n, nil
		}
		edits = []edit{s.insertLines(l, spaces(base)+"tools:"+eol+block, eol)}
	case isNull(tools):
		var berr error
		edits, err = s.nullToBlock(toolsKey, tools, func(l int, eol string) edit {
			var block string
			block, n, berr = toolBlock(nt, toolsKey.Column-1+step, step, dash, eol)
			return s.insertLines(l, block, eol)
		})
		if err == nil {
			err = berr
		}
	case tools.Kind == yaml.MappingNode && tools.Style&yaml.FlowStyle != 0 && len(tools.Content) == 0:
		var ok bool
		var berr error
		edits, ok = s.emptyFlowToBlock(toolsKey, tools, func(l int, eol string) edit {
			var block string
			block, n, berr = toolBlock(nt, toolsKey.Column-1+step, step, dash, eol)
			return s.insertLines(l, block, eol)
		})
		if !ok {
			return nil, 0, errors.New("tools: {} is not written on one line")
		}
		err = berr
	case tools.Kind != yaml.MappingNode || tools.Style&yaml.FlowStyle != 0:
		return nil, 0, errors.New("tools is not a block mapping")
	default:
		lastKey, lastVal := tools.Content[len(tools.Content)-2], tools.Content[len(tools.Content)-1]
		end, err := s.entryEnd(lastKey, lastVal)
		if err != nil {
			return nil, 0, err
		}
		eol := s.eol(end)
		var block string
		block, n, err = toolBlock(nt, tools.Content[0].Column-1, step, dash, eol)
		if err != nil {
			return nil, 0, err
		}
		edits = []edit{s.insertLines(end, block, eol)}
	}
	if err != nil {
		return nil, 0, err
	}
	return splice(data, edits), n, nil
}

// indentSteps is how the file indents: a mapping's entries beyond its key
// (step; from its tools, else from any block mapping, else 2), and an allow
// list's dashes beyond the allow key (dash; as newSeqStyle finds it).
func (s *source) indentSteps(root *yaml.Node) (step, dash int) {
	step = 2
	if root == nil {
		return step, 2
	}
	found := false
	// visit takes the step from n's first entry whose value is a block
	// mapping.
	visit := func(n *yaml.Node) {
		if found || n.Kind != yaml.MappingNode || n.Style&yaml.FlowStyle != 0 {
			return
		}
		for i := 0; i+1 < len(n.Content) && !found; i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 && v.Content[0].Column > k.Column {
				step, found = v.Content[0].Column-k.Column, true
				return
			}
		}
	}
	if _, tools := lookup(root, "tools"); tools != nil {
		visit(tools)
	}
	visit(root)
	fakeKey := &yaml.Node{Column: 1}
	fakeTool := &yaml.Node{Content: []*yaml.Node{{Column: 1 + step}}}
	dash, _ = s.newSeqStyle(root, fakeKey, fakeTool)
	return step, dash
}

// toolBlock writes the tool's lines: its key indented by ind, its entries
// step further, the catalog's dashes dash beyond the allow key, or the
// preset's lines as the preset writes them. n is how many rules it wrote
// (catalog rules as comments, or the preset's allow rules).
func toolBlock(nt NewTool, ind, step, dash int, eol string) (block string, n int, err error) {
	var b strings.Builder
	in := spaces(ind + step)
	b.WriteString(spaces(ind) + nt.Name + ":" + eol)
	b.WriteString(in + "binary: " + yamlString(nt.Binary) + eol)
	if nt.Preset != nil {
		lines, n, err := presetLines(nt.Preset, in, eol)
		if err != nil {
			return "", 0, err
		}
		b.WriteString(in + presetHead(nt.Preset) + eol)
		b.WriteString(lines)
		return b.String(), n, nil
	}
	rules, n := catalogLines(nt.Name, danger.CLI(nt.Name, nt.Binary), nt.Catalog, ind+step+dash, eol, dangerCatalog{})
	if n == 0 {
		b.WriteString(in + "# No subcommands found in `" + nt.Name + " --help`; write allow rules by hand." + eol)
		b.WriteString(in + "allow: []" + eol)
		return b.String(), 0, nil
	}
	b.WriteString(in + catalogHead(nt.Name) + eol)
	b.WriteString(in + "allow:" + eol)
	b.WriteString(rules)
	return b.String(), n, nil
}

// MaxCatalogLine is the longest line a catalog comment takes, indentation
// included: flag lists and descriptions wrap to stay within it.
const MaxCatalogLine = 99

// catalogHead is the line above the catalog's allow key.
func catalogHead(name string) string {
	return "# Uncomment what the assistant may run (from `" + name + " --help`)."
}

// catalogLines writes rules as commented-out allow rules whose dashes are
// indented by item, and returns how
// many it wrote (none: ""). Each rule, uncommented, allows its subcommand
// with no flag and no positional argument; a rule with no subcommand is the
// bare tool. A path holding a token outside the name rules, too long for
// its line, or giving an MCP tool name no client takes, is left out.
//
// Where the danger catalog (cat, looked up as cli) classes the subcommand
// or a flag its help lists, a "careful:" comment line below the flags says
// which and how, so an operator uncommenting the rule or adding the flag
// knows what it hands away; it stays a comment when the rule is
// uncommented.
func catalogLines(name, cli string, rules []CatalogRule, item int, eol string, cat catalog) (string, int) {
	var b strings.Builder
	ind := spaces(item)
	width := max(MaxCatalogLine-item, 60)
	n := 0
	for _, r := range rules {
		if slices.ContainsFunc(r.Subcommand, func(t string) bool { return !policy.ValidToken(t) }) {
			continue
		}
		head := "# - subcommand: " + flowList(r.Subcommand, 0)
		if len(head) > width-4 || policy.ExposedNameProblem(policy.ToolName(name, r.Subcommand)) != "" {
			continue // uncommented, it would not fit its line, or give no valid tool name
		}
		n++
		desc := strings.Fields(CommentText(r.Description, MaxCatalogText))
		for _, l := range wrapBeside(head, desc, width, true) {
			b.WriteString(ind + l + eol)
		}
		var has []string
		switch flags := validFlags(r.Flags); {
		case r.Unread:
			has = []string{"help", "not", "read"}
		case len(flags) > 0:
			has = append([]string{"has"}, flags...)
		}
		for _, l := range wrapBeside("#   flags: []", has, width, false) {
			b.WriteString(ind + l + eol)
		}
		for _, l := range carefulLines(cat, cli, r, width) {
			b.WriteString(ind + l + eol)
		}
		b.WriteString(ind + "#   arg_constraints: { positional_max: 0 }" + eol)
	}
	if n == 0 {
		return "", 0
	}
	return b.String(), n
}

// carefulPrefix starts the comment lines that mark a catalog rule's
// dangers; carefulMore continues them, aligned.
const (
	carefulPrefix = "#   careful: "
	carefulMore   = "#            "
)

// carefulLines mark what the danger catalog says of r's subcommand and of
// each flag it lists: "#   careful: this subcommand prints-credentials;
// --repo sends-credentials", wrapped at width between entries (within
// one only when it is longer than a line; a name is never cut, and a flag
// too long for a line is left out, as the has list leaves it out), none
// when the catalog says nothing.
func carefulLines(cat catalog, cli string, r CatalogRule, width int) []string {
	room := width - len(carefulPrefix)
	var entries []string
	if f := cat.LookupSubcommand(cli, r.Subcommand); len(f.Classes) > 0 {
		entries = append(entries, "this subcommand "+f.Classes.String())
	}
	if !r.Unread {
		for _, fl := range validFlags(r.Flags) {
			if len(fl) >= room {
				continue // left out of the has list too
			}
			if f := cat.LookupFlag(cli, r.Subcommand, fl); len(f.Classes) > 0 {
				entries = append(entries, fl+" "+f.Classes.String())
			}
		}
	}
	if len(entries) == 0 {
		return nil
	}
	var out []string
	line := ""
	put := func(w string) {
		if line != "" && len(line)+1+len(w) > room {
			out = append(out, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	for i, e := range entries {
		if i < len(entries)-1 {
			e += ";"
		}
		if len(e) <= room {
			put(e) // an entry stays on one line where it fits
			continue
		}
		for _, w := range strings.Fields(e) {
			put(w)
		}
	}
	out = append(out, line)
	for i := range out {
		if i == 0 {
			out[i] = carefulPrefix + out[i]
		} else {
			out[i] = carefulMore + out[i]
		}
	}
	return out
}

// wrapBeside puts words after text as a comment starting at commentColumn
// (at least two blanks after text), wrapping onto comment lines that start
// at the same column so that no line is longer than width. A word longer
// than a line holds is cut into pieces when split is set (a description),
// else left out (a flag, which a cut would misname).
func wrapBeside(text string, words []string, width int, split bool) []string {
	if len(words) == 0 {
		return []string{text}
	}
	col := max(commentColumn, len(text)+2)
	room := max(width-col-2, 8) // what a line holds after "# "
	var out []string
	line := ""
	flush := func() {
		if len(out) == 0 {
			out = append(out, text+spaces(col-len(text))+"# "+line)
		} else {
			out = append(out, "#"+spaces(col-1)+"# "+line)
		}
		line = ""
	}
	add := func(w string) {
		if line != "" && len(line)+1+len(w) > room {
			flush()
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	for _, w := range words {
		for split && len(w) > room {
			add(w[:room])
			w = w[room:]
		}
		if len(w) <= room {
			add(w)
		}
	}
	if line != "" || len(out) == 0 {
		flush()
	}
	return out
}

// validFlags keeps the spellings a rule could list, each once.
func validFlags(flags []string) []string {
	var out []string
	for _, f := range flags {
		if policy.ValidFlag(f) && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// CommentText makes s safe to write in a YAML comment: one line of
// printable ASCII (0x20 to 0x7e), runs of anything else between words
// becoming one blank, cut to at most limit bytes with "..." at a word
// boundary when one is near. A comment ends at a line break, and YAML also
// breaks lines at a CR, NEL, LS and PS: none of them, nor any other control
// or non-ASCII character, survives, so nothing the help text says can
// become a live key, item or document marker.
func CommentText(s string, limit int) string {
	var b strings.Builder
	gap := false
	for _, r := range s {
		switch {
		case r <= ' ' || r == 0x7f || unicode.IsSpace(r) || unicode.IsControl(r):
			gap = b.Len() > 0
			continue
		case r > 0x7f:
			continue // dropped: "naïve" reads better as "nave" than "na ve"
		}
		if gap {
			b.WriteByte(' ')
			gap = false
		}
		b.WriteRune(r)
	}
	out := b.String()
	if len(out) <= limit {
		return out
	}
	end := max(limit-len("..."), 0)
	if i := strings.LastIndexByte(out[:end+1], ' '); i > end/2 {
		end = i
	}
	return strings.TrimRight(out[:end], " ") + "..."
}

var plainPath = regexp.MustCompile(`^/[A-Za-z0-9_./+@-]*$`)

// yamlString writes s as a plain scalar when it is a plain path, else
// double-quoted with Go's escapes (a subset of YAML's); the caller parses
// the result back and compares.
func yamlString(s string) string {
	if plainPath.MatchString(s) {
		return s
	}
	return strconv.Quote(s)
}
