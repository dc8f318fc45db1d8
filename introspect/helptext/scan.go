package helptext

import (
	"strings"

	"github.com/wraptool/wraptool/policy"
)

// Caps on what one text may yield, so that a hostile or broken text costs
// bounded memory. Real texts list a few hundred at most (curl: ~250 flags).
const (
	maxFlags       = 4096
	maxSubcommands = 4096
)

// styleMan is the internal name for a man page; Help.Style reports it as
// StyleGNU.
const styleMan = "man"

// config is one style's reading of the shared line grammar.
type config struct {
	style string // Help.Style
	// man: a man page. Options count only under OPTIONS, FLAGS or
	// DESCRIPTION headings and never right below prose (a wrapped paragraph
	// line may start with a flag), commands only under COMMANDS or GROUPS
	// headings, and the description is NAME's.
	man bool
	// anySection: every heading opens a command list (Git's root help
	// heads its lists "start a working area", "grow, mark and tweak …").
	// Otherwise only a heading ending in ':' that mentions "command" does.
	anySection bool
	// afterUsage: the paragraph after a one-line usage may be the
	// description (docker's "Usage:  docker [OPTIONS] COMMAND", then its
	// summary); GNU's next paragraph is usually about the listing.
	afterUsage bool
	// fallback: any line starting with a flag is an option line; only
	// attached or bracketed values are read, and a bare flag's value-taking
	// stays unknown.
	fallback bool
}

var (
	gitConfig      = config{style: StyleGit, anySection: true, afterUsage: true}
	cobraConfig    = config{style: StyleCobra, afterUsage: true}
	gnuConfig      = config{style: StyleGNU}
	manConfig      = config{style: StyleGNU, man: true}
	fallbackConfig = config{style: StyleFallback, fallback: true}
)

// parseGit, parseCobra, parseGNU, parseMan and parseFallback read a text
// as one style, whatever detect would say; Parse picks one. They exist for
// the per-style fuzz targets and tests.
func parseGit(text string) Help      { return parseAs(text, gitConfig) }
func parseCobra(text string) Help    { return parseAs(text, cobraConfig) }
func parseGNU(text string) Help      { return parseAs(text, gnuConfig) }
func parseMan(text string) Help      { return parseAs(text, manConfig) }
func parseFallback(text string) Help { return parseAs(text, fallbackConfig) }

func parseAs(text string, cfg config) Help {
	lines, ok := prepare(text)
	if !ok {
		return Help{Style: cfg.style}
	}
	return parseLines(lines, cfg)
}

// parseLines reads prepared lines as cfg says.
func parseLines(lines []line, cfg config) Help {
	b := builder{byLong: map[string]int{}, byShort: map[string]int{}, subSeen: map[string]bool{}}
	if cfg.fallback {
		for _, ln := range lines {
			if !strings.HasPrefix(ln.text, "-") {
				continue
			}
			if sp, ok := parseSpec(ln.text, specLoose); ok {
				b.addEntry(sp, []string{sp.desc}, cfg)
			}
		}
	} else {
		s := scanner{cfg: cfg, b: &b, prevIndent: -1, prevDescIndent: -1, proseIndent: -1}
		for _, ln := range lines {
			s.line(ln)
		}
		s.flush()
	}
	h := Help{Style: cfg.style, Flags: b.flags, Subcommands: b.subs}
	if !cfg.fallback {
		h.Description = describe(lines, cfg)
	}
	h.HelpCommand = mentionsHelp(lines)
	return h
}

// entry is an option or command line being read, with its description
// lines.
type entry struct {
	indent     int
	descIndent int  // column of the description (same line or the first line below); -1 until known
	open       bool // still in the description's first paragraph
	desc       []string
	spec       spec   // an option's spec
	command    string // a command's name; "" for an option
}

// scanner walks the lines of one text.
type scanner struct {
	cfg config
	b   *builder
	cur *entry
	// inCommands: the current section lists commands.
	inCommands bool
	// manOptions and manCommands: the current man section may list
	// options or commands.
	manOptions, manCommands bool
	// proseIndent is the indent of the previous line when it was prose, -1
	// otherwise: in a man page, a flag-led line right below prose at its
	// indent or deeper continues the paragraph ("… can be passed by giving\n
	// -X<option> arguments to git merge"). A sub-heading above an option is
	// less indented, so it does not count.
	proseIndent int
	// prevIndent and prevDescIndent are the last option's indent and
	// description column: a flag-led line at or past that column after a
	// blank line is a later paragraph of its description, not an option.
	prevIndent, prevDescIndent int
}

// line reads the next line: a blank, a description line of the entry being
// read, a heading, an option line, a command line, or prose to skip.
func (s *scanner) line(ln line) {
	if ln.text == "" {
		if s.cur != nil && len(s.cur.desc) > 0 {
			s.cur.open = false
		}
		s.proseIndent = -1
		return
	}
	if c := s.cur; c != nil && c.open && ln.indent > c.indent {
		if (c.descIndent >= 0 && ln.indent >= c.descIndent) || !s.startsOption(ln) {
			if c.descIndent < 0 {
				c.descIndent = ln.indent
			}
			c.desc = append(c.desc, ln.text)
			return
		}
	}
	if ln.indent == 0 {
		s.flush()
		s.heading(ln.text)
		return
	}
	if s.optionsAllowed() && !(s.cfg.man && s.proseIndent >= ln.indent) {
		if sp, ok := parseSpec(ln.text, specStrict); ok {
			s.flush()
			if s.prevDescIndent > s.prevIndent && ln.indent >= s.prevDescIndent {
				return // a later paragraph of the last option's description
			}
			e := &entry{indent: ln.indent, descIndent: -1, open: true, spec: sp}
			if sp.descCol >= 0 {
				e.descIndent = ln.indent + sp.descCol
				e.desc = append(e.desc, sp.desc)
			}
			s.cur = e
			return
		}
	}
	if s.commandsAllowed() {
		if name, desc, col, ok := parseCommand(ln.text); ok {
			s.flush()
			e := &entry{indent: ln.indent, descIndent: -1, open: true, command: name}
			if col >= 0 {
				e.descIndent = ln.indent + col
				e.desc = append(e.desc, desc)
			}
			s.cur = e
			return
		}
	}
	// Prose, an example, a sub-heading.
	if s.cur != nil && ln.indent <= s.cur.indent {
		s.flush()
	}
	if ln.indent < s.prevIndent {
		s.prevIndent, s.prevDescIndent = -1, -1
	}
	s.proseIndent = ln.indent
}

// startsOption reports whether ln, indented below an option whose
// description column is not known yet, is an option of its own (GNU's
// "-a, --all" followed by "    --block-size=SIZE …") rather than the first
// line of the description.
func (s *scanner) startsOption(ln line) bool {
	if !s.optionsAllowed() || s.cur.command != "" {
		return false
	}
	_, ok := parseSpec(ln.text, specStrict)
	return ok
}

// heading starts a section at a line at the margin.
func (s *scanner) heading(text string) {
	s.prevIndent, s.prevDescIndent = -1, -1
	s.proseIndent = -1
	if s.cfg.man {
		if isManHeading(text) {
			// git log's and git show's diff options (--stat, -p…) are listed
			// under "DIFF FORMATTING", not "OPTIONS".
			s.manOptions = strings.Contains(text, "OPTION") || strings.Contains(text, "FLAG") || text == "DESCRIPTION" ||
				strings.Contains(text, "FORMATTING")
			s.manCommands = strings.Contains(text, "COMMAND") || strings.Contains(text, "GROUP")
		}
		return
	}
	if s.cfg.anySection {
		s.inCommands = !hasPrefixFold(text, "usage:")
		return
	}
	s.inCommands = isCommandHeading(text)
}

// isCommandHeading reports whether a heading opens a command list:
// "Available Commands:", "Basic Commands (Beginner):", "Main commands:", or,
// without the colon, a title like git help -a's "Main Porcelain Commands" or
// "External commands". Prose that mentions commands ends in a period.
func isCommandHeading(text string) bool {
	if strings.HasSuffix(text, ":") {
		return containsFold(text, "command") && !containsFold(text, "help topic")
	}
	return strings.Contains(text, "Commands") || strings.HasSuffix(text, " commands")
}

func (s *scanner) optionsAllowed() bool { return !s.cfg.man || s.manOptions }

func (s *scanner) commandsAllowed() bool {
	if s.cfg.man {
		return s.manCommands
	}
	return s.inCommands
}

// flush records the entry being read.
func (s *scanner) flush() {
	e := s.cur
	if e == nil {
		return
	}
	s.cur = nil
	if e.command != "" {
		s.b.addSub(e.command, oneLine(e.desc))
		return
	}
	s.prevIndent, s.prevDescIndent = e.indent, e.descIndent
	s.b.addEntry(e.spec, e.desc, s.cfg)
}

// parseCommand reads a command list line: "clone     Clone a repository",
// a name alone with its description on the lines below (gcloud's man page),
// a name with its arguments before the gap (systemctl's "start UNIT...
// Start …"), or apt's "list - list packages". col is the description's
// column, -1 when none is on the line.
func parseCommand(text string) (name, desc string, col int, ok bool) {
	name, rest, _ := strings.Cut(text, " ")
	// Docker marks CLI plugins with a star ("buildx*").
	name = strings.TrimSuffix(name, "*")
	if !policy.ValidToken(name) {
		return "", "", -1, false
	}
	if rest == "" {
		return name, "", -1, true
	}
	switch {
	case strings.HasPrefix(rest, "- "):
		desc = strings.TrimLeft(rest[2:], " ")
	case rest[0] == ' ':
		desc = strings.TrimLeft(rest, " ")
	default:
		// Arguments, then the description: at least one word that looks
		// like an argument ("UNIT...", "[PATTERN...]", "<name>") must come
		// first, or this is prose: "GROUP is one of the following:". The
		// description starts after a gap or at the first other word
		// (systemctl's "set-property UNIT PROPERTY=VALUE... Sets …").
		i, args := 0, 0
		for i < len(rest) && rest[i] != ' ' {
			e := strings.IndexByte(rest[i:], ' ')
			if e < 0 {
				e = len(rest) - i
			}
			if !isArgument(rest[i : i+e]) {
				break
			}
			args++
			i += e
			if strings.HasPrefix(rest[i:], "  ") {
				break
			}
			if i < len(rest) {
				i++ // the single space between words
			}
		}
		if args == 0 {
			return "", "", -1, false
		}
		if !strings.HasPrefix(rest[i:], "  ") && !startsSentence(rest[i:]) {
			return "", "", -1, false // "kpt <group> <command> <positional args> …"
		}
		desc = strings.TrimLeft(rest[i:], " ")
	}
	if desc == "" {
		return name, "", -1, true
	}
	return name, desc, len(text) - len(desc), true
}

// startsSentence reports whether s starts with a capitalized word ("Sets").
func startsSentence(s string) bool {
	return len(s) >= 2 && 'A' <= s[0] && s[0] <= 'Z' && 'a' <= s[1] && s[1] <= 'z'
}

// isArgument reports whether w reads as a command's argument in a usage
// line: bracketed (and closed within the word), or upper case ("UNIT...",
// "PROPERTY=VALUE...").
func isArgument(w string) bool {
	switch w[0] {
	case '[', '<', '{', '(':
		return closing(w, 0) >= 0
	}
	upper := false
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case 'a' <= c && c <= 'z':
			return false
		case 'A' <= c && c <= 'Z':
			upper = true
		}
	}
	return upper
}

// isManHeading reports whether text is a man page's section heading: upper
// case, like "OPTIONS" or "GLOBAL FLAGS".
func isManHeading(text string) bool {
	letters := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case 'A' <= c && c <= 'Z':
			letters++
		case 'a' <= c && c <= 'z', c >= 0x80:
			return false
		}
	}
	return letters >= 2
}

// builder collects flags and subcommands, merging repeats.
type builder struct {
	flags   []Flag
	byLong  map[string]int // Long → index in flags
	byShort map[string]int // Short → index of the first flag with it
	subs    []Subcommand
	subSeen map[string]bool
}

func (b *builder) addSub(name, desc string) {
	if b.subSeen[name] || len(b.subs) >= maxSubcommands {
		return
	}
	b.subSeen[name] = true
	b.subs = append(b.subs, Subcommand{Name: name, Description: desc})
}

// addEntry turns one option line into flags: the first short spelling pairs
// with the first long one, every further spelling is a flag of its own with
// the same description, and "--no-X" beside "--X" makes "--X" Negatable.
func (b *builder) addEntry(sp spec, desc []string, cfg config) {
	var shorts, longs []spelling
	for _, sg := range sp.spellings {
		switch {
		case sg.name == "":
		case strings.HasPrefix(sg.name, "--"):
			longs = append(longs, sg)
		default:
			shorts = append(shorts, sg)
		}
	}
	if len(shorts) == 0 && len(longs) == 0 {
		return
	}
	// Fold "--no-X" into "--X" when both are listed.
	kept := longs[:0]
	for _, sg := range longs {
		if pos, ok := strings.CutPrefix(sg.name, "--no-"); ok {
			if i := indexSpelling(longs, "--"+pos); i >= 0 {
				longs[i].negatable = true
				continue
			}
		}
		kept = append(kept, sg)
	}
	longs = kept

	// What the line as a whole says of the value: GNU writes it once, on
	// the long spelling, for both.
	var shared spelling
	for _, sg := range sp.spellings {
		if sg.value != ValueUnknown {
			shared = sg
			break
		}
	}
	if shared.value == ValueUnknown && !cfg.fallback {
		shared.value = ValueNone
		for _, sg := range sp.spellings {
			if sg.kubectl {
				shared.value = ValueUnknown // kpt's "--dry-run:"
			}
		}
	}
	if shared.placeholder == "" {
		for _, sg := range sp.spellings {
			if sg.placeholder != "" {
				shared.placeholder = sg.placeholder
				break
			}
		}
	}
	d := oneLine(desc)
	add := func(short, long *spelling) {
		own := shared
		switch {
		case long != nil && long.value != ValueUnknown:
			own = *long
		case short != nil && short.value != ValueUnknown:
			own = *short
		}
		if own.placeholder == "" && own.value != ValueNone {
			own.placeholder = shared.placeholder
		}
		f := Flag{Value: own.value, Description: d}
		if own.value == ValueRequired || own.value == ValueOptional {
			f.Placeholder = own.placeholder
		}
		if own.kubectl {
			f.Default = own.def
		}
		f.Type = guessType(f.Value, f.Placeholder, own.def, own.kubectl)
		if short != nil {
			f.Short = short.name
		}
		if long != nil {
			f.Long, f.Negatable = long.name, long.negatable
		}
		b.addFlag(f)
	}
	if len(shorts) > 0 && len(longs) > 0 {
		if !cfg.fallback && longs[0].attached && isLiteral(longs[0].placeholder) && shorts[0].value == ValueUnknown {
			// ls's "-p, --indicator-style=slash": the lower-case word is a
			// value, not a placeholder, so -p is that whole option, a
			// switch. Reading -p as taking a value would let its "value"
			// through as an unchecked argument. (sed's "-e script,
			// --expression=script" names its placeholder on the short
			// spelling too, so it is not a literal.)
			for i := range shorts {
				shorts[i].value = ValueNone
			}
		} else {
			add(&shorts[0], &longs[0])
			shorts, longs = shorts[1:], longs[1:]
		}
	}
	for i := range longs {
		add(nil, &longs[i])
	}
	for i := range shorts {
		add(&shorts[i], nil)
	}
}

// isLiteral reports whether an attached value is a literal word rather
// than a placeholder: lower-case letters only, where placeholders are
// upper case (FILE), bracketed (<file>) or typed (string).
func isLiteral(p string) bool {
	if len(p) < 2 {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 'a' || p[i] > 'z' {
			return false
		}
	}
	return true
}

func indexSpelling(list []spelling, name string) int {
	for i, sg := range list {
		if sg.name == name {
			return i
		}
	}
	return -1
}

// addFlag records f, or merges it into the flag already listed under its
// long spelling (or, for a short-only flag, its short one).
func (b *builder) addFlag(f Flag) {
	if (f.Short != "" && !policy.ValidFlag(f.Short)) || (f.Long != "" && !policy.ValidFlag(f.Long)) {
		return
	}
	i, seen := -1, false
	if f.Long != "" {
		i, seen = b.byLong[f.Long]
	} else {
		i, seen = b.byShort[f.Short]
	}
	if seen {
		b.merge(i, f)
		return
	}
	if len(b.flags) >= maxFlags {
		return
	}
	b.flags = append(b.flags, f)
	i = len(b.flags) - 1
	if f.Long != "" {
		b.byLong[f.Long] = i
	}
	if _, taken := b.byShort[f.Short]; f.Short != "" && !taken {
		b.byShort[f.Short] = i
	}
}

// merge fills what the flag at i left unknown from a later listing.
func (b *builder) merge(i int, f Flag) {
	dst := &b.flags[i]
	if dst.Short == "" && f.Short != "" {
		dst.Short = f.Short
		if _, taken := b.byShort[f.Short]; !taken {
			b.byShort[f.Short] = i
		}
	}
	if dst.Value == ValueUnknown && f.Value != ValueUnknown {
		dst.Value, dst.Placeholder, dst.Type, dst.Default = f.Value, f.Placeholder, f.Type, f.Default
	}
	if dst.Description == "" {
		dst.Description = f.Description
	}
	dst.Negatable = dst.Negatable || f.Negatable
}
