package config

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file edits a config's text in place. yaml.v3 parses the file into a
// node tree, and re-encoding the tree does not reproduce the operator's
// bytes. So the tree is used only to find positions (source.go), and each
// change is a small insertion (or the replacement of an empty value) spliced
// into the original bytes; everything else stays byte for byte as written.

// edit replaces b[at:at+del] with text.
type edit struct {
	at, del int
	text    string
}

// splice applies edits, which must not overlap, to a copy of b.
func splice(b []byte, edits []edit) []byte {
	edits = slices.Clone(edits)
	slices.SortFunc(edits, func(x, y edit) int { return y.at - x.at })
	out := slices.Clone(b)
	for _, e := range edits {
		out = slices.Concat(out[:e.at], []byte(e.text), out[e.at+e.del:])
	}
	return out
}

// insertLines is the edit that puts whole lines (each ending in eol) after
// line l. At the end of a file that has no final newline, the newline goes
// before the lines instead, so the file still ends without one.
func (s *source) insertLines(l int, lines string, eol string) edit {
	at := s.next(l)
	if at == len(s.b) && len(s.b) > 0 && s.b[len(s.b)-1] != '\n' {
		return edit{at: at, text: eol + strings.TrimSuffix(lines, eol)}
	}
	return edit{at: at, text: lines}
}

// quoteStyle is how new items of seq are written: like its items when they
// all agree, else double-quoted.
func quoteStyle(seq *yaml.Node) yaml.Style {
	if seq == nil || len(seq.Content) == 0 {
		return yaml.DoubleQuotedStyle
	}
	st := seq.Content[0].Style
	for _, it := range seq.Content {
		if it.Kind != yaml.ScalarNode || it.Style != st || it.Tag != "!!str" {
			return yaml.DoubleQuotedStyle
		}
	}
	switch st {
	case 0, yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		return st
	}
	return yaml.DoubleQuotedStyle
}

// scalar writes s, which holds only [A-Za-z0-9_.-] (a flag or a subcommand
// token), in style; a plain scalar that YAML would read as anything but a
// string (true, 1, null, 1e3) is double-quoted instead.
func scalar(v string, st yaml.Style) string {
	switch st {
	case yaml.SingleQuotedStyle:
		return "'" + v + "'"
	case 0:
		n := yaml.Node{Kind: yaml.ScalarNode, Value: v}
		if n.ShortTag() == "!!str" && !strings.HasPrefix(v, "- ") {
			return v
		}
	}
	return `"` + v + `"`
}

// flowList writes items as "[a, b]".
func flowList(items []string, st yaml.Style) string {
	q := make([]string, len(items))
	for i, it := range items {
		q[i] = scalar(it, st)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

var oddBreak = regexp.MustCompile("\r[^\n]|\r$|\u0085|\u2028|\u2029")

// spliceRequest writes the change into data: flags added to the allow rule
// at idx, or (idx < 0) a new rule for sub with flags add.
func spliceRequest(data []byte, tool string, idx int, sub, add []string) (out []byte, err error) {
	defer func() {
		// A layout the edit misjudges must refuse the apply, never take
		// the server (whose admin UI applies too) down with it.
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("internal error: %v", r)
		}
	}()
	if oddBreak.Match(data) {
		// YAML also breaks lines at a lone CR, NEL, LS and PS, so the
		// parser's line numbers would not be the file's.
		return nil, errors.New("the file breaks lines with characters other than LF and CRLF")
	}
	root, err := parseDocument("", data)
	if err != nil || root == nil {
		return nil, fmt.Errorf("cannot parse: %v", err)
	}
	s := newSource(data)
	_, tools := lookup(root, "tools")
	toolKey, tn := lookup(tools, tool)
	if tn == nil || tn.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("tools.%s is not a mapping", tool)
	}
	allowKey, allow := lookup(tn, "allow")
	var edits []edit
	if idx >= 0 {
		if allow == nil || allow.Kind != yaml.SequenceNode || idx >= len(allow.Content) {
			return nil, fmt.Errorf("tools.%s.allow[%d] not found", tool, idx)
		}
		edits, err = s.addFlags(allow.Content[idx], add)
	} else {
		edits, err = s.addRule(root, toolKey, tn, allowKey, allow, sub, add)
	}
	if err != nil {
		return nil, err
	}
	return splice(data, edits), nil
}

// addFlags adds flags to a rule's flags list, creating it if need be.
func (s *source) addFlags(rule *yaml.Node, add []string) ([]edit, error) {
	if rule.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: the rule is not a mapping", rule.Line)
	}
	fk, fv := lookup(rule, "flags")
	switch {
	case fv == nil:
		return s.addEntry(rule, "flags: "+flowList(add, yaml.DoubleQuotedStyle), "subcommand")
	case isNull(fv):
		return s.replaceNull(fk, fv, flowList(add, yaml.DoubleQuotedStyle))
	case fv.Kind != yaml.SequenceNode:
		return nil, fmt.Errorf("line %d: flags is not a list", fv.Line)
	case fv.Style&yaml.FlowStyle != 0 || len(fv.Content) == 0:
		items := make([]string, len(add))
		for i, f := range add {
			items[i] = scalar(f, quoteStyle(fv))
		}
		return s.appendFlow(fv, items)
	}
	st := quoteStyle(fv)
	return s.appendBlock(fk, fv, func(dash, gap int, eol string) string {
		var b strings.Builder
		for _, f := range add {
			b.WriteString(spaces(dash) + "-" + spaces(gap) + scalar(f, st) + eol)
		}
		return b.String()
	})
}

// addRule appends a new allow rule to the tool mapping tn.
func (s *source) addRule(root, toolKey, tn, allowKey, allow *yaml.Node, sub, add []string) ([]edit, error) {
	flowRule := "{subcommand: " + flowList(sub, 0)
	if len(add) > 0 {
		flowRule += ", flags: " + flowList(add, yaml.DoubleQuotedStyle)
	}
	flowRule += ", arg_constraints: {positional_max: 0}}"
	blockRule := func(dash, gap int, eol string) string {
		key := spaces(dash + 1 + gap)
		out := spaces(dash) + "-" + spaces(gap) + "subcommand: " + flowList(sub, 0) + eol
		if len(add) > 0 {
			out += key + "flags: " + flowList(add, yaml.DoubleQuotedStyle) + eol
		}
		return out + key + "arg_constraints: {positional_max: 0}" + eol
	}
	toolFlow := tn.Style&yaml.FlowStyle != 0

	switch {
	case allow == nil && toolFlow:
		return s.addEntry(tn, "allow: ["+flowRule+"]", "")
	case allow == nil:
		// Before deny: (allow rules are read before deny rules), else
		// at the end of the tool's entries.
		after := len(tn.Content) - 2
		for i := 2; i < len(tn.Content); i += 2 {
			if tn.Content[i].Value == "deny" {
				after = i - 2
				break
			}
		}
		end, err := s.entryEnd(tn.Content[after], tn.Content[after+1])
		if err != nil {
			return nil, err
		}
		ind := tn.Content[0].Column - 1
		dash, gap := s.newSeqStyle(root, toolKey, tn)
		eol := s.eol(end)
		return []edit{s.insertLines(end, spaces(ind)+"allow:"+eol+blockRule(ind+dash, gap, eol), eol)}, nil
	case isNull(allow) && toolFlow:
		return s.replaceNull(allowKey, allow, "["+flowRule+"]")
	case isNull(allow):
		dash, gap := s.newSeqStyle(root, toolKey, tn)
		return s.nullToBlock(allowKey, allow, func(l int, eol string) edit {
			return s.insertLines(l, blockRule(allowKey.Column-1+dash, gap, eol), eol)
		})
	case allow.Kind != yaml.SequenceNode:
		return nil, fmt.Errorf("line %d: allow is not a list", allow.Line)
	case allow.Style&yaml.FlowStyle != 0 || len(allow.Content) == 0:
		if len(allow.Content) == 0 && !toolFlow {
			// "allow: []" in a block mapping becomes a block list, as the
			// rules of other tools are written.
			if e, ok := s.emptyFlowToBlock(allowKey, allow, func(l int, eol string) edit {
				dash, gap := s.newSeqStyle(root, toolKey, tn)
				return s.insertLines(l, blockRule(allowKey.Column-1+dash, gap, eol), eol)
			}); ok {
				return e, nil
			}
		}
		return s.appendFlow(allow, []string{flowRule})
	}
	last := allow.Content[len(allow.Content)-1]
	return s.appendBlock(allowKey, allow, func(dash, gap int, eol string) string {
		if last.Kind == yaml.MappingNode && last.Style&yaml.FlowStyle != 0 {
			return spaces(dash) + "-" + spaces(gap) + flowRule + eol
		}
		return blockRule(dash, gap, eol)
	})
}

// newSeqStyle is how a new block list under a key of tn is indented: as the
// file's other block lists under keys are (the dash's indentation beyond the
// key's, and the blanks after the dash), else one mapping step in.
func (s *source) newSeqStyle(root, toolKey, tn *yaml.Node) (dash, gap int) {
	type style struct{ dash, gap int }
	var seen []style
	var preferred *style
	var visit func(n *yaml.Node)
	visit = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle == 0 {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if v.Kind == yaml.SequenceNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 &&
					v.Line > k.Line && v.Column >= k.Column {
					st := style{v.Column - k.Column, 1}
					if it := v.Content[0]; it.Line == v.Line {
						st.gap = max(1, it.Column-v.Column-1)
					}
					seen = append(seen, st)
					if k.Value == "allow" && preferred == nil {
						preferred = &seen[len(seen)-1]
					}
				}
			}
		}
		for _, c := range n.Content {
			visit(c)
		}
	}
	visit(root)
	switch {
	case preferred != nil:
		return preferred.dash, preferred.gap
	case len(seen) > 0:
		return seen[0].dash, seen[0].gap
	}
	if step := tn.Content[0].Column - toolKey.Column; step > 0 {
		return step, 1
	}
	return 2, 1
}

// entryEnd is the last line of the mapping entry k: v in block style.
func (s *source) entryEnd(k, v *yaml.Node) (int, error) {
	last, err := s.lastLine(v)
	if err != nil {
		return 0, err
	}
	ind := k.Column - 1
	return s.blockEnd(max(last, k.Line-1), ind, ind), nil
}

// addEntry adds "key: value" (entry) to the mapping m: after its entry
// with key after when it has one, else first; at the end when after is "".
func (s *source) addEntry(m *yaml.Node, entry, after string) ([]edit, error) {
	ak, av := lookup(m, after)
	if after == "" {
		ak, av = m.Content[len(m.Content)-2], m.Content[len(m.Content)-1]
	}
	if m.Style&yaml.FlowStyle != 0 {
		open, _, elems, err := s.flow(m)
		if err != nil {
			return nil, err
		}
		if len(elems) != len(m.Content)/2 {
			return nil, fmt.Errorf("line %d: cannot tell the entries of a flow mapping apart", m.Line)
		}
		switch {
		case len(elems) == 0:
			return []edit{{at: open + 1, text: entry}}, nil
		case ak != nil:
			i := slices.Index(m.Content, ak) / 2
			return []edit{{at: elems[i].end, text: ", " + entry}}, nil
		}
		return []edit{{at: elems[0].start, text: entry + ", "}}, nil
	}
	if ak != nil {
		end, err := s.entryEnd(ak, av)
		if err != nil {
			return nil, err
		}
		eol := s.eol(end)
		return []edit{s.insertLines(end, spaces(ak.Column-1)+entry+eol, eol)}, nil
	}
	k0 := m.Content[0]
	return []edit{{at: s.off(k0), text: entry + s.eol(k0.Line-1) + spaces(k0.Column-1)}}, nil
}

// nullValue is where the null value v of key k is written: the "~" or
// "null" when one is, else an empty span just after the colon.
func (s *source) nullValue(k, v *yaml.Node) (colon int, sp span, err error) {
	colon, err = s.keyColonEnd(k)
	if err != nil {
		return 0, span{}, err
	}
	sp, err = s.nullSpan(v)
	if err != nil || sp.start != sp.end {
		return colon, sp, err
	}
	// An empty value: nothing but blanks and a comment (or, in a flow
	// mapping, a separator) may follow the colon.
	i := colon
	for i < len(s.b) && isBlank(s.b[i]) {
		i++
	}
	if i < len(s.b) && !strings.ContainsRune("#\r\n,}]", rune(s.b[i])) {
		return 0, span{}, fmt.Errorf("line %d: unexpected text after the colon of %s", k.Line, k.Value)
	}
	return colon, span{colon, colon}, nil
}

// replaceNull writes text as the value of key k in place of its null value
// v.
func (s *source) replaceNull(k, v *yaml.Node, text string) ([]edit, error) {
	colon, sp, err := s.nullValue(k, v)
	if err != nil {
		return nil, err
	}
	if sp.start == sp.end {
		return []edit{{at: colon, text: " " + text}}, nil
	}
	return []edit{{at: sp.start, del: sp.end - sp.start, text: text}}, nil
}

// nullToBlock drops the null value v of key k (a written "~" with the
// blanks before it; a comment after it stays on the key's line) and puts
// the lines then(l, eol) supplies after line l, where the value ended.
func (s *source) nullToBlock(k, v *yaml.Node, then func(l int, eol string) edit) ([]edit, error) {
	colon, sp, err := s.nullValue(k, v)
	if err != nil {
		return nil, err
	}
	l := s.lineOf(max(sp.end, colon) - 1)
	edits := []edit{then(l, s.eol(l))}
	if sp.start != sp.end {
		edits = append(edits, edit{at: colon, del: sp.end - colon})
	}
	return edits, nil
}

// emptyFlowToBlock turns "key: []" or "key: {}" (on one line) into "key:" followed by the
// lines then supplies; ok is false for any other layout.
func (s *source) emptyFlowToBlock(k, v *yaml.Node, then func(l int, eol string) edit) ([]edit, bool) {
	colon, err := s.keyColonEnd(k)
	if err != nil {
		return nil, false
	}
	_, end, _, err := s.flow(v)
	if err != nil || s.lineOf(end-1) != k.Line-1 || v.Tag != "!!seq" && v.Tag != "!!map" || v.Anchor != "" || s.skipProps(s.off(v)) != s.off(v) {
		return nil, false
	}
	l := k.Line - 1
	return []edit{{at: colon, del: end - colon}, then(l, s.eol(l))}, true
}

// appendFlow adds items (written out) at the end of the flow list seq,
// after its last item, so a trailing comma or the layout of a list spread
// over lines is kept.
func (s *source) appendFlow(seq *yaml.Node, items []string) ([]edit, error) {
	open, end, elems, err := s.flow(seq)
	if err != nil {
		return nil, err
	}
	if len(elems) != len(seq.Content) {
		return nil, fmt.Errorf("line %d: cannot tell the items of a flow list apart", seq.Line)
	}
	if len(elems) == 0 {
		return []edit{{at: open + 1, text: strings.Join(items, ", ")}}, nil
	}
	last := elems[len(elems)-1]
	if e, ok := s.appendFlowLine(last, end, items); ok {
		return e, nil
	}
	return []edit{{at: last.end, text: ", " + strings.Join(items, ", ")}}, nil
}

// appendFlowLine handles a flow list written one item per line, its closing
// bracket on a line of its own: the new items go on new lines indented as
// the last, with a comma after each but the last unless the list uses a
// trailing comma. ok is false for any other layout.
func (s *source) appendFlowLine(last span, end int, items []string) ([]edit, bool) {
	l := s.lineOf(last.start)
	if s.lineOf(end-1) == l || s.lineOf(last.end) != l || strings.TrimSpace(string(s.b[s.lines[l]:last.start])) != "" {
		return nil, false
	}
	rest := strings.TrimLeft(string(s.b[last.end:s.lines[l]+len(s.text(l))]), " \t")
	comma := strings.HasPrefix(rest, ",")
	if rest = strings.TrimLeft(strings.TrimPrefix(rest, ","), " \t"); rest != "" && !strings.HasPrefix(rest, "#") {
		return nil, false
	}
	ind := spaces(s.indent(l))
	eol := s.eol(l)
	var text strings.Builder
	for i, it := range items {
		text.WriteString(eol + ind + it)
		if i < len(items)-1 || comma {
			text.WriteString(",")
		}
	}
	edits := []edit{{at: s.lines[l] + len(s.text(l)), text: text.String()}}
	if !comma {
		edits = append(edits, edit{at: last.end, text: ","})
	}
	return edits, true
}

// appendBlock adds the lines lines(dash, gap, eol) writes after the last
// item of the block list seq, the value of key k: indented as its items
// (dash is the dash's indentation, gap the blanks after it), after the
// comments written about the last item.
func (s *source) appendBlock(k, seq *yaml.Node, lines func(dash, gap int, eol string) string) ([]edit, error) {
	dash := seq.Column - 1
	first := seq.Line - 1
	if s.indent(first) != dash || !strings.HasPrefix(s.text(first)[dash:], "-") {
		return nil, fmt.Errorf("line %d: a list whose first dash is not the first thing on its line", seq.Line)
	}
	last := seq.Content[len(seq.Content)-1]
	gap := 1
	if t := s.text(last.Line - 1); s.indent(last.Line-1) == dash && strings.HasPrefix(t[dash:], "-") {
		if g := s.off(last) - s.lines[last.Line-1] - dash - 1; g >= 1 {
			gap = g
		}
	}
	ll, err := s.lastLine(last)
	if err != nil {
		return nil, err
	}
	end := s.blockEnd(max(ll, last.Line-1), dash, k.Column-1)
	eol := s.eol(end)
	return []edit{s.insertLines(end, lines(dash, gap, eol), eol)}, nil
}

func spaces(n int) string { return strings.Repeat(" ", n) }
