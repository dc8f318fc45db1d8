package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/peterbourgon/ff/v4"
	"go.yaml.in/yaml/v3"

	"github.com/wraptool/wraptool/policy/config/edit"
)

// The docs are tested so that a doc which drifts from the program fails CI:
// every relative link and #anchor resolves, every ```yaml config block loads
// as `config validate` loads it, every `wraptool …` line of a ```sh runnable
// block parses with the real command tree, and the starter config names
// only files the repository holds.

// docSet is the repository's documents as the checks see them: README.md and
// docs/*.md by their path from the repository root (slash-separated), over
// the repository's other files on disk.
type docSet struct {
	root string            // the repository on disk, for every file not in docs
	docs map[string][]byte // path from root → content
	// oldREADME is true while docs/ holds no pages and README.md is still
	// the long manual being rewritten into them: its citations of
	// documents the repository lacks go with that rewrite, so they are
	// not checked until then.
	oldREADME bool
}

// repoRoot is the repository holding this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root: %v", err)
	}
	return root
}

// docsFixture stands in for docs/ while the repository has no docs/*.md:
// the same checks then run on these files, placed at docs/.
const docsFixture = "testdata/docs"

// repoDocs reads README.md and docs/*.md, or the fixture's *.md as docs/
// while the repository's docs/ holds none.
func repoDocs(t *testing.T) docSet {
	t.Helper()
	root := repoRoot(t)
	s := docSet{root: root, docs: map[string][]byte{}}
	s.docs["README.md"] = readFile(t, filepath.Join(root, "README.md"))
	dir := filepath.Join(root, "docs")
	names, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	if len(names) == 0 {
		dir, s.oldREADME = docsFixture, true
		if names, _ = filepath.Glob(filepath.Join(dir, "*.md")); len(names) == 0 {
			t.Fatalf("no docs/*.md and no fixture in %s", docsFixture)
		}
	}
	for _, name := range names {
		s.docs["docs/"+filepath.Base(name)] = readFile(t, name)
	}
	return s
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// exists reports whether rel (slash-separated, from the root, cleaned) is a
// document of the set or a file or folder of the repository.
func (s docSet) exists(rel string) bool {
	if _, ok := s.docs[rel]; ok {
		return true
	}
	if rel == "docs" {
		return true
	}
	if rel == ".." || strings.HasPrefix(rel, "../") || path.IsAbs(rel) {
		return false
	}
	_, err := os.Stat(filepath.Join(s.root, filepath.FromSlash(rel)))
	return err == nil
}

// A block is a fenced code block: its info string and its lines.
type block struct {
	info string
	line int // of the opening fence, from 1
	text string
}

// A link is a relative link's target as written, and its line.
type link struct {
	target string
	line   int
}

// doc is a markdown document split into what the checks read.
type doc struct {
	blocks   []block
	links    []link
	headings []string // heading texts, in order
	anchors  []string // explicit <a id|name="…"> anchors
}

var (
	fenceRE     = regexp.MustCompile("^ {0,3}(```+|~~~+)\\s*(.*)$")
	headingRE   = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	inlineLink  = regexp.MustCompile(`!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	refLink     = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$`)
	htmlRef     = regexp.MustCompile(`(?i)\s(?:href|src)\s*=\s*"([^"]*)"`)
	orderedItem = regexp.MustCompile(`^[0-9]+[.)]\s`)
	setextRE    = regexp.MustCompile(`^ {0,3}(=+|-+)\s*$`)
	htmlAnchor  = regexp.MustCompile(`(?i)<a\s[^>]*(?:id|name)\s*=\s*"([^"]*)"`)
)

// parseDoc splits markdown into fenced blocks, headings and links; what is
// inside a fence or a code span is neither a heading nor a link.
func parseDoc(src []byte) doc {
	var d doc
	lines := strings.Split(strings.ReplaceAll(string(src), "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			fence, b := m[1], block{info: strings.TrimSpace(m[2]), line: i + 1}
			var body []string
			for i++; i < len(lines); i++ {
				if strings.HasPrefix(strings.TrimLeft(lines[i], " "), fence) &&
					strings.Trim(strings.TrimSpace(lines[i]), fence[:1]) == "" {
					break
				}
				body = append(body, lines[i])
			}
			b.text = strings.Join(body, "\n")
			d.blocks = append(d.blocks, b)
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			d.headings = append(d.headings, m[2])
		} else if setextRE.MatchString(line) && i > 0 && paragraphLine(lines[i-1]) {
			d.headings = append(d.headings, strings.TrimSpace(lines[i-1]))
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			d.anchors = append(d.anchors, m[1])
		}
		plain := stripCodeSpans(line)
		for _, m := range inlineLink.FindAllStringSubmatch(plain, -1) {
			d.links = append(d.links, link{target: m[2], line: i + 1})
		}
		if m := refLink.FindStringSubmatch(plain); m != nil {
			d.links = append(d.links, link{target: m[1], line: i + 1})
		}
		for _, m := range htmlRef.FindAllStringSubmatch(plain, -1) {
			d.links = append(d.links, link{target: m[1], line: i + 1})
		}
	}
	return d
}

// paragraphLine reports whether a line is plain text, which a setext
// underline (=== or ---) below it makes a heading.
func paragraphLine(line string) bool {
	t := strings.TrimSpace(line)
	return t != "" && !strings.HasPrefix(line, "    ") && !strings.ContainsAny(t[:1], "#>|-*+<") &&
		!fenceRE.MatchString(line) && !orderedItem.MatchString(t)
}

// stripCodeSpans drops a line's code spans (a run of backticks up to the
// next run of the same length), whose text is never a link.
func stripCodeSpans(line string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(line, '`')
		if i < 0 {
			return b.String() + line
		}
		b.WriteString(line[:i])
		n := len(line[i:]) - len(strings.TrimLeft(line[i:], "`"))
		fence, rest := line[i:i+n], line[i+n:]
		end := strings.Index(rest, fence)
		if end < 0 {
			return b.String() + line[i:]
		}
		line = rest[end+n:]
	}
}

var (
	mdLinkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag    = regexp.MustCompile(`<[^>]*>`)
)

// slug is GitHub's anchor for a heading: the rendered text lower-cased,
// everything but letters, digits, marks, '_', '-' and ' ' dropped, spaces
// turned into '-'.
func slug(heading string) string {
	s := mdLinkText.ReplaceAllString(heading, "$1")
	s = htmlTag.ReplaceAllString(s, "")
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchorSet is every #anchor a document has: each heading's slug, the n-th
// repeat of one with "-n" appended, and explicit HTML anchors.
func (d doc) anchorSet() map[string]bool {
	set := map[string]bool{}
	seen := map[string]int{}
	for _, h := range d.headings {
		base := slug(h)
		a := base
		if n := seen[base]; n > 0 {
			a = fmt.Sprintf("%s-%d", base, n)
		}
		seen[base]++
		set[a] = true
	}
	for _, a := range d.anchors {
		set[a] = true
	}
	return set
}

// linkProblems returns a line per relative link of the set whose file or
// #anchor does not exist.
func (s docSet) linkProblems() []string {
	parsed := map[string]doc{}
	for name, src := range s.docs {
		parsed[name] = parseDoc(src)
	}
	var problems []string
	for _, name := range slices.Sorted(mapsKeys(s.docs)) {
		for _, l := range parsed[name].links {
			if p := s.checkLink(name, l.target, parsed); p != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s", name, l.line, l.target, p))
			}
		}
	}
	return problems
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// checkLink says what is wrong with a link from the document from, or "".
func (s docSet) checkLink(from, target string, parsed map[string]doc) string {
	if target == "" {
		return "empty target"
	}
	if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
		return "" // not a file of the repository
	}
	file, anchor, hasAnchor := strings.Cut(target, "#")
	file, err := url.PathUnescape(file)
	if err != nil {
		return "bad escape: " + err.Error()
	}
	rel := from
	if file != "" {
		if strings.HasPrefix(file, "/") {
			return "absolute path (links between files are relative)"
		}
		rel = path.Clean(path.Join(path.Dir(from), file))
		if !s.exists(rel) {
			return "no such file " + rel
		}
	}
	if !hasAnchor {
		return ""
	}
	d, ok := parsed[rel]
	if !ok {
		if !strings.HasSuffix(rel, ".md") {
			return "an #anchor into a file that is not markdown"
		}
		src, err := os.ReadFile(filepath.Join(s.root, filepath.FromSlash(rel)))
		if err != nil {
			return err.Error()
		}
		d = parseDoc(src)
	}
	if !d.anchorSet()[anchor] {
		return fmt.Sprintf("no heading in %s has the anchor #%s", rel, anchor)
	}
	return ""
}

// blocksOf returns the set's blocks whose info string is info, with where
// each is.
func (s docSet) blocksOf(info string) (where []string, blocks []block) {
	for _, name := range slices.Sorted(mapsKeys(s.docs)) {
		for _, b := range parseDoc(s.docs[name]).blocks {
			if strings.Join(strings.Fields(b.info), " ") == info {
				where = append(where, fmt.Sprintf("%s:%d", name, b.line))
				blocks = append(blocks, b)
			}
		}
	}
	return where, blocks
}

// fakeBinary writes the executable every `binary:` and $FAKE stands for.
func fakeBinary(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "bin", "fake")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// substituteBinaries replaces $FAKE and the value of every `binary:` key
// with fake, in the node tree, so that quoted and flow-style values are
// replaced alike; the rest stays as written.
func substituteBinaries(src, fake string) (string, error) {
	src = strings.ReplaceAll(src, "$FAKE", fake)
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(src), &n); err != nil {
		return "", err
	}
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k, v := n.Content[i], n.Content[i+1]; k.Value == "binary" && v.Kind == yaml.ScalarNode {
					v.Value, v.Tag, v.Style = fake, "!!str", 0
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&n)
	out, err := yaml.Marshal(&n)
	return string(out), err
}

// validateConfigBlock loads a ```yaml config block as `config validate`
// does, in a folder of its own with HOME there too; nil when it passes.
func validateConfigBlock(t *testing.T, text string) error {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	src, err := substituteBinaries(text, fakeBinary(t, dir))
	if err != nil {
		return fmt.Errorf("not YAML: %w", err)
	}
	p := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home}
	a := newApp(func(k string) string { return env[k] }, io.Discard, io.Discard)
	// What validate loads and refuses; whether this kernel can confine
	// is the machine's, not the doc's, so it is left out.
	_, err = a.loadConfig(t.Context(), p)
	return err
}

// shellOperators end the wraptool command on a runnable line.
var shellOperators = []string{"|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>&1", "&>"}

// commandLines returns each `wraptool …` line of a runnable block (a
// trailing backslash joins the next line), its words after "wraptool" up
// to the first shell operator.
func commandLines(text string) ([][]string, error) {
	var out [][]string
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(lines[i])
		}
		if !strings.HasPrefix(line, "wraptool ") && line != "wraptool" {
			continue
		}
		words, err := shellSplit(line)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", line, err)
		}
		for j, w := range words {
			if slices.Contains(shellOperators, w) || strings.HasPrefix(w, ">") || strings.HasPrefix(w, "2>") {
				words = words[:j]
				break
			}
		}
		out = append(out, words[1:])
	}
	return out, nil
}

// parseCommandLine parses args (after "wraptool") with the real command
// tree, runs nothing, and says what the binary would refuse before doing
// anything: an unknown command or flag, a missing subcommand, too few or
// too many arguments for the command's usage line.
func parseCommandLine(args []string) error {
	a := newApp(func(string) string { return "" }, io.Discard, io.Discard)
	err := a.root.Parse(args)
	if errors.Is(err, ff.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	cmd := a.root.GetSelected()
	rest := cmd.Flags.GetArgs()
	if len(cmd.Subcommands) > 0 {
		switch {
		case cmd == a.root && a.versionArg && len(rest) == 0:
			return nil
		case len(rest) == 0:
			return fmt.Errorf("%s: missing subcommand", cmd.Name)
		default:
			return fmt.Errorf("%s: unknown command %q", cmd.Name, rest[0])
		}
	}
	// Most commands take flags after their arguments too, as their Exec
	// reads them; check's words after "--" are the wrapped tool's own.
	if fs, ok := cmd.Flags.(*ff.FlagSet); ok && !strings.Contains(cmd.Usage, " -- ") {
		if rest, err = interspersed(fs, rest); err != nil {
			return err
		}
	}
	lo, hi := usageArgs(cmd.Usage)
	if len(rest) < lo || (hi >= 0 && len(rest) > hi) {
		return fmt.Errorf("%s: %d arguments %q, usage %q", cmd.Name, len(rest), rest, cmd.Usage)
	}
	return nil
}

// usageArgs reads how many arguments a usage line takes: its upper-case
// words are arguments (required outside brackets), except the value after
// a flag; "…" means any number more (hi -1). With alternatives (" | wraptool
// "), the widest range.
func usageArgs(usage string) (lo, hi int) {
	alts := strings.Split(usage, " | wraptool ")
	lo, hi = -1, 0
	for _, alt := range alts {
		l, h := 0, 0
		depth := 0
		words := strings.Fields(alt)
		for i, w := range words {
			inBrackets := depth > 0 || strings.HasPrefix(w, "[")
			depth += strings.Count(w, "[") - strings.Count(w, "]")
			bare := strings.Trim(w, "[]")
			if bare == "" || bare != strings.ToUpper(bare) || !strings.ContainsAny(bare, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
				continue
			}
			if i > 0 && strings.HasPrefix(strings.Trim(words[i-1], "[]"), "-") && words[i-1] != "--" {
				continue // a flag's value
			}
			if strings.Contains(bare, "…") || strings.Contains(bare, "...") {
				h = -1
			}
			if h >= 0 {
				h++
			}
			if !inBrackets {
				l++
			}
		}
		if lo < 0 || l < lo {
			lo = l
		}
		if hi >= 0 && (h < 0 || h > hi) {
			hi = h
		}
	}
	return lo, hi
}

// mdFile names the repository files a text mentions: paths ending in .md
// and anything under docs/.
var mdFile = regexp.MustCompile(`(?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_.-]+\.md\b|\bdocs/[A-Za-z0-9_./-]*[A-Za-z0-9_-]`)

// missingNamedFiles returns the files the comments of a config name that
// the set does not hold.
func (s docSet) missingNamedFiles(configText string) []string {
	var missing []string
	for _, line := range strings.Split(configText, "\n") {
		_, comment, ok := strings.Cut(line, "#")
		if !ok {
			continue
		}
		for _, name := range mdFile.FindAllString(comment, -1) {
			if !s.exists(path.Clean(name)) {
				missing = append(missing, name)
			}
		}
	}
	return missing
}

// staleReference finds what names a document the repository does not
// contain: the design documents it was built from, their numbered
// sections, the tracker's numbers, and the names those documents went by
// (docs/configuration.md is the field reference now). Case-insensitive,
// like grep -i; the words are split so that this file does not match itself.
var staleReference = regexp.MustCompile(`(?i)contr` + `act|\x{00a7}[0-9]|iss` + `ue [0-9]+|configuration refer` + `ence|the refer` + `ence's|later iss` + `ue`)

// repoDocChecks runs every check on a set and returns its problems.
func (s docSet) problems(t *testing.T) []string {
	t.Helper()
	problems := s.linkProblems()
	where, blocks := s.blocksOf("yaml config")
	for i, b := range blocks {
		if err := validateConfigBlock(t, b.text); err != nil {
			problems = append(problems, fmt.Sprintf("%s: yaml config block: %v", where[i], err))
		}
	}
	where, blocks = s.blocksOf("sh runnable")
	for i, b := range blocks {
		cmds, err := commandLines(b.text)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: sh runnable block: %v", where[i], err))
		}
		for _, args := range cmds {
			if err := parseCommandLine(args); err != nil {
				problems = append(problems, fmt.Sprintf("%s: wraptool %s: %v", where[i], strings.Join(args, " "), err))
			}
		}
	}
	for _, git := range []string{"", "/usr/bin/git"} {
		starter := string(edit.Starter(git))
		for _, name := range s.missingNamedFiles(starter) {
			problems = append(problems, fmt.Sprintf("starter config (git %q): names %s, which the repository does not hold", git, name))
		}
		if m := staleReference.FindString(starter); m != "" {
			problems = append(problems, fmt.Sprintf("starter config (git %q): %q names a document the repository does not contain", git, m))
		}
	}
	for _, name := range slices.Sorted(mapsKeys(s.docs)) {
		if name == "README.md" && s.oldREADME {
			continue
		}
		for i, line := range strings.Split(string(s.docs[name]), "\n") {
			if m := staleReference.FindString(line); m != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: %q names a document the repository does not contain", name, i+1, m))
			}
		}
	}
	return problems
}

func TestDocsAreTrue(t *testing.T) {
	t.Parallel()
	s := repoDocs(t)
	for _, p := range s.problems(t) {
		t.Error(p)
	}
}

// Each check fails on a broken copy of a document that passes.
func TestDocsChecksCatchBreakage(t *testing.T) {
	t.Parallel()
	good := docSet{root: repoRoot(t), docs: map[string][]byte{}}
	for name, b := range repoDocs(t).docs {
		if strings.HasPrefix(name, "docs/") {
			good.docs[name] = b
		}
	}
	const page = "docs/broken.md"
	const config = "mcp:\n  listen: 127.0.0.1:8717\ntools:\n  git:\n    binary: /usr/bin/git\n    allow:\n      - subcommand: [pull]\n"
	tests := []struct {
		name, text string
		want       string // a substring of one problem
		starter    string // replaces the starter's comments when set
	}{
		{name: "a link to a file that does not exist", text: "See [the policy](polcy.md).\n", want: `link "polcy.md": no such file docs/polcy.md`},
		{name: "a link above the repository", text: "See [x](../../etc/passwd).\n", want: "no such file ../etc/passwd"},
		{name: "an escaped link above the repository", text: "See [x](%2e%2e/%2e%2e/etc/passwd).\n", want: "no such file ../etc/passwd"},
		{name: "an anchor no heading has", text: "# One\nSee [one](#two).\n", want: "no heading in docs/broken.md has the anchor #two"},
		{name: "an anchor into another doc that lacks it", text: "See [x](broken.md#nowhere).\n", want: "anchor #nowhere"},
		{name: "a repeated heading's anchor beyond its repeats", text: "# A b\n# A b\nSee [x](#a-b-2).\n", want: "anchor #a-b-2"},
		{name: "an anchor of a list item above a rule", text: "- item\n---\nSee [x](#item).\n", want: "anchor #item"},
		{name: "an absolute link", text: "See [x](/README.md).\n", want: "absolute path"},
		{name: "a config block with an unknown field", text: "```yaml config\n" + config + "    colour: red\n```\n", want: "yaml config block"},
		{name: "a config block that is not YAML", text: "```yaml config\nmcp: [\n```\n", want: "yaml config block: not YAML"},
		{name: "a config block with a bad constraint", text: "```yaml config\n" + config + "        flags: [--depth]\n        flag_constraints:\n          \"--depth\": {min: 5, max: 2}\n```\n", want: "yaml config block"},
		{name: "a runnable line with an unknown flag", text: "```sh runnable\nwraptool requests approve req_1 --onse\n```\n", want: "wraptool requests approve req_1 --onse"},
		{name: "a runnable line with an unknown command", text: "```sh runnable\nwraptool requets list\n```\n", want: `unknown command "requets"`},
		{name: "a runnable line missing a subcommand", text: "```sh runnable\nwraptool config\n```\n", want: "missing subcommand"},
		{name: "a runnable line missing its ID", text: "```sh runnable\nwraptool requests approve --once\n```\n", want: "0 arguments"},
		{name: "a runnable line with too many arguments", text: "```sh runnable\nwraptool config validate a.yaml b.yaml\n```\n", want: "2 arguments"},
		{name: "a runnable line with an unbalanced quote", text: "```sh runnable\nwraptool check -- git 'log\n```\n", want: "unbalanced single quote"},
		{name: "a doc citing a document the repository lacks", text: "As the Contr" + "act says.\n", want: `"Contr` + `act" names a document`},
		{name: "a doc citing a section number", text: "See \u00a79.\n", want: "\"\u00a79\" names a document"},
		{name: "a doc citing an issue number", text: "Fixed in Iss" + "ue 28.\n", want: `"Iss` + `ue 28" names a document`},
		{name: "a doc naming the old field reference", text: "Every field is in the configuration refer" + "ence.\n", want: `"configuration refer` + `ence" names a document`},
		{name: "a starter comment naming a missing file", starter: "# Every field is described in docs/configurashun.md.\nmcp: {}\n", want: "names docs/configurashun.md"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" fails the docs test", func(t *testing.T) {
			t.Parallel()
			var got []string
			if tt.starter != "" {
				got = good.missingNamedFiles(tt.starter)
				for i, n := range got {
					got[i] = "names " + n
				}
			} else {
				broken := docSet{root: good.root, docs: map[string][]byte{page: []byte(tt.text)}}
				for name, b := range good.docs {
					broken.docs[name] = b
				}
				got = broken.problems(t)
			}
			if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, tt.want) }) {
				t.Errorf("problems = %q, want one containing %q", got, tt.want)
			}
		})
	}
}

// The checks pass what they should: a heading's anchor with punctuation and
// repeats, a whole config with absolute binaries, runnable lines in the
// forms the docs use.
func TestDocsChecksPassWhatIsRight(t *testing.T) {
	t.Parallel()
	text := "Set-up, measured\n===\n\nA list\n\n- item\n---\n\n" +
		"[s](#set-up-measured)\n" +
		"# Adding a tool: `config add`\n# Adding a tool: `config add`\n## Évaluation order\n<a id=\"custom\"></a>\n" +
		"[a](#adding-a-tool-config-add) [b](#adding-a-tool-config-add-1) [c](#évaluation-order) [d](#custom)\n" +
		"[e](../README.md) [f](review.png) [g](https://example.com/x#y) `[h](nowhere.md)`\n" +
		"```yaml config\nmcp:\n  listen: 127.0.0.1:8717\ntools:\n  git:\n    binary: /usr/bin/git\n    allow:\n      - subcommand: [pull]\n  gh:\n    binary: $FAKE\n  jq: {binary: \"/opt/jq\", allow: [{subcommand: [pr, list]}]}\n```\n" +
		"```yaml\n  not: [a whole config\n```\n" +
		"```sh runnable\n# a comment\nwraptool config validate ~/.config/wraptool/config.yaml\nwraptool requests approve req_1 --once\n" +
		"wraptool --config ./c.yaml requests list --status all | head\nwraptool check -- git push origin main\nwraptool check --tests tests.yaml\n" +
		"wraptool help requests approve\nwraptool --version\nwraptool serve\nwraptool up\nwraptool setup claude-code\nwraptool requests deny req_1 \\\n  --reason 'not now'\ngit status\n```\n" +
		"```sh\nwraptool no-such-thing\n```\n"
	s := repoDocs(t)
	s.docs["docs/ok.md"] = []byte(text)
	if got := s.problems(t); len(got) > 0 {
		t.Errorf("problems = %q, want none", got)
	}
}

// The anchors GitHub gives headings.
func TestSlug(t *testing.T) {
	t.Parallel()
	tests := []struct{ heading, want string }{
		{"Evaluation order", "evaluation-order"},
		{"Adding a tool: `config add`", "adding-a-tool-config-add"},
		{"What wraptool keeps from the processes it starts", "what-wraptool-keeps-from-the-processes-it-starts"},
		{"`mcp.auth_token_file` (string)", "mcpauth_token_file-string"},
		{"See [the runner](#the-runner)", "see-the-runner"},
		{"Files others can change — refused", "files-others-can-change--refused"},
		{"Ünïcode Ω", "ünïcode-ω"},
	}
	for _, tt := range tests {
		if got := slug(tt.heading); got != tt.want {
			t.Errorf("slug(%q) = %q, want %q", tt.heading, got, tt.want)
		}
	}
}

// mayCite is a cheap test that b might match staleReference: every
// alternative holds one of these words (the regexp alone takes seconds
// over the tree under the race detector).
func mayCite(b []byte) bool {
	lower := bytes.ToLower(b)
	for _, w := range []string{"contr" + "act", "\u00a7", "iss" + "ue", "refer" + "ence"} {
		if bytes.Contains(lower, []byte(w)) {
			return true
		}
	}
	return false
}

// codeFolders are where nothing may cite a document the repository lacks.
var codeFolders = []string{"cmd", "actors", "policy", "toolset", "introspect", "webui", "messages"}

// Nothing in the code, its comments, help texts, log messages or testdata
// cites a document the repository does not contain (the docs are checked by
// TestDocsAreTrue).
func TestNothingCitesAMissingDocument(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	for _, dir := range codeFolders {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "node_modules" {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if bytes.IndexByte(b, 0) >= 0 || !mayCite(b) {
				return nil // binary, or nothing to report
			}
			for i, line := range strings.Split(string(b), "\n") {
				if m := staleReference.FindString(line); m != "" {
					rel, _ := filepath.Rel(root, p)
					t.Errorf("%s:%d: %q names a document the repository does not contain: %s", rel, i+1, m, strings.TrimSpace(line))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
