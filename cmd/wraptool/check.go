package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/peterbourgon/ff/v4"
	"go.yaml.in/yaml/v3"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
)

// errDenied is check's verdict that a command line is denied: exit status
// 3. The denial is already printed when it is returned.
var errDenied = errors.New("check: denied")

// errMismatch is check --tests' verdict that an entry did not get its
// wanted decision: exit status 1, the mismatches already listed on
// stdout.
var errMismatch = errors.New("check: the tests do not match")

func (a *app) checkCommand() *ff.Command {
	var (
		asJSON    bool
		testsFile string
	)
	fs := ff.NewFlagSet("check").SetParent(a.flags)
	fs.BoolVar(&asJSON, 0, "json", "print one JSON object: the decision, the MCP tool, the argv and the denial")
	fs.StringVar(&testsFile, 0, "tests", "", "run a YAML list of {cmd, want: allow|deny} and list each mismatch")
	return &ff.Command{
		Name:      "check",
		Usage:     "wraptool check [--json] -- TOOL [SUBCOMMAND…] [FLAGS…] [ARGS…] | wraptool check --tests FILE",
		ShortHelp: "decide a command line as the server would, without running anything",
		LongHelp: "Decides a command line by the config and the introspection cache, through the\n" +
			"same policy the server calls: allowed (exit 0) when an allow rule could produce it,\n" +
			"else the server's denial text (exit 3). Nothing runs, not even a tool's --help.\n" +
			"Every word after -- belongs to the checked command line: check's own flags come\n" +
			"before it. Grants are not consulted, and the run-time checks on the working\n" +
			"directory and wraptool's own files are not made. --tests FILE checks a list of\n" +
			"command lines with their expected decisions (exit 1 on any mismatch), so a\n" +
			"policy can carry its own tests in CI.",
		Flags: fs,
		Exec: func(ctx context.Context, args []string) error {
			if testsFile != "" {
				switch {
				case len(args) > 0:
					return usageErrorf("check --tests takes no command line, got %q", args[0])
				case asJSON:
					return usageErrorf("check --tests does not combine with --json")
				}
				return a.checkTests(ctx, testsFile)
			}
			if len(args) == 0 {
				return usageErrorf("check needs a command line: wraptool check -- TOOL [SUBCOMMAND…] [FLAGS…] [ARGS…]")
			}
			return a.checkLine(ctx, args, asJSON)
		},
	}
}

// newChecker loads the config as `config validate` does (same path
// resolution and file checks; the introspection cache read, never refreshed,
// so flags are typed as the server types them and no tool runs).
func (a *app) newChecker(ctx context.Context) (*checker, error) {
	path, err := a.configPath()
	if err != nil {
		return nil, err
	}
	l, err := a.loadConfig(ctx, path)
	if err != nil {
		return nil, err
	}
	return &checker{pol: l.Policy, helps: l.Helps, cfg: l.Config}, nil
}

// checkLine decides one command line and prints the verdict: the argv that
// would run, or the denial text.
func (a *app) checkLine(ctx context.Context, words []string, asJSON bool) error {
	c, err := a.newChecker(ctx)
	if err != nil {
		return err
	}
	v := c.decide(words)
	for _, n := range v.notes {
		fmt.Fprintf(a.stderr, "note: %s\n", n)
	}
	if asJSON {
		data, err := json.Marshal(v.result())
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(a.stdout, "%s\n", data); err != nil {
			return err
		}
	} else if _, err := io.WriteString(a.stdout, v.String()); err != nil {
		return err
	}
	if !v.d.Allowed() {
		return errDenied
	}
	return nil
}

// checker decides command lines against one loaded config.
type checker struct {
	pol   *policy.Policy
	helps policy.Helps // nil when nothing is known
	cfg   *config.Config
}

// verdict is one decided command line.
type verdict struct {
	// words are the command line as checked, tool key first, with the
	// values of redact: true flags hidden (policy.Redacted): what check
	// shows of it.
	words []string
	// d is policy.Evaluate's decision for the chosen rule (or, for a command
	// line the server cannot write as typed, that decision refused).
	d policy.Decision
	// rule is the allowing rule, or the longest one whose subcommand starts
	// the command line; nil when none does.
	rule *policy.Rule
	// notes say what the decision rests on that the config and the
	// introspection cache do not settle.
	notes []string
}

// checkResult is the --json shape.
type checkResult struct {
	Decision string `json:"decision"` // "allow" or "deny"
	// Tool is the MCP tool name of the allowing rule, or of the longest
	// rule whose subcommand starts the command line; absent when none does.
	Tool string `json:"tool,omitempty"`
	// Argv is what would run (the binary first) when allowed; the words as
	// checked (the tool key first) when denied. Values of redact: true
	// flags show as policy.Redacted, as in the audit log.
	Argv []string `json:"argv"`
	// Denial is the whole denial text; Reason its Policy: line without the
	// period; Kind the refusal kind. All three only when denied.
	Denial string `json:"denial,omitempty"`
	Reason string `json:"reason,omitempty"`
	Kind   string `json:"kind,omitempty"`
	// Notes are the stderr notes (flags of unknown value-taking, a
	// different argv order).
	Notes []string `json:"notes,omitempty"`
}

func (v verdict) result() checkResult {
	r := checkResult{Decision: "allow", Argv: v.d.Shown(), Notes: v.notes}
	if v.rule != nil {
		r.Tool = v.rule.Name()
	}
	if !v.d.Allowed() {
		r.Decision, r.Argv = "deny", v.words
		r.Denial, r.Reason, r.Kind = v.d.Refusal.Text, v.d.Refusal.Reason, v.d.Refusal.Kind.String()
	}
	if r.Argv == nil {
		r.Argv = []string{}
	}
	return r
}

// String is the verdict as check prints it: "allowed by git_push: ARGV", or
// the denial text.
func (v verdict) String() string {
	if !v.d.Allowed() {
		return v.d.Refusal.Text + "\n"
	}
	return "allowed by " + v.rule.Name() + ": " + quoteWords(v.d.Shown()) + "\n"
}

// decide decides words (tool key first) as the server would decide the
// matching tool call: every allow rule whose subcommand starts the command
// line is a candidate (a bare or shorter rule takes the rest as flags and
// positional arguments), the words become that rule's call parameters, and
// policy.Evaluate decides. Allowed when any candidate allows (the longest
// such rule is named); else the longest candidate's denial.
func (c *checker) decide(words []string) verdict {
	tool, rest := words[0], words[1:]
	if !slices.Contains(c.pol.Tools(), tool) {
		// Every word as the subcommand: the denial quotes the line as typed.
		d := c.pol.Evaluate(policy.Call{Tool: tool, Subcommand: slices.Clone(rest)})
		return verdict{words: words, d: d}
	}
	var best, bestDenied *verdict
	for _, r := range c.pol.ToolRules(tool) {
		sub := r.Subcommand()
		if len(sub) > len(rest) || !slices.Equal(sub, rest[:len(sub)]) {
			continue
		}
		v := c.decideRule(words, r)
		switch {
		case v.d.Allowed() && (best == nil || len(sub) > len(best.rule.Subcommand())):
			best = &v
		case !v.d.Allowed() && (bestDenied == nil || len(sub) > len(bestDenied.rule.Subcommand())):
			bestDenied = &v
		}
	}
	if best != nil {
		return *best
	}
	if bestDenied != nil {
		return *bestDenied
	}
	// No rule's subcommand starts the line: the server has no MCP tool for
	// it. Evaluate still gives the denial text (a deny rule first, else "not in
	// the allowlist") for a subcommand cut where the rules' paths end.
	sub := noRuleSubcommand(c.pol.ToolRules(tool), rest)
	m := policy.ReadWords(policy.WordsSource{Tool: tool, Subcommand: sub, Helps: c.helps}, rest[len(sub):])
	d := c.pol.Evaluate(m.Call)
	return verdict{words: words, d: d, notes: m.Notes}
}

// noRuleSubcommand picks the subcommand a line no rule matches is refused
// for: the leading words that follow some rule's path, and the first word
// that leaves every path ("git rebase main" is refused as 'git rebase').
func noRuleSubcommand(rules []*policy.Rule, rest []string) []string {
	var sub []string
	for _, w := range rest {
		if !policy.ValidToken(w) {
			break
		}
		sub = append(sub, w)
		onPath := false
		for _, r := range rules {
			if rs := r.Subcommand(); len(rs) > len(sub) && slices.Equal(rs[:len(sub)], sub) {
				onPath = true
				break
			}
		}
		if !onPath {
			break
		}
	}
	return sub
}

// decideRule evaluates words as a call of rule r.
func (c *checker) decideRule(words []string, r *policy.Rule) verdict {
	tool, sub := r.Tool(), r.Subcommand()
	m := policy.ReadWords(policy.WordsSource{Tool: tool, Subcommand: sub, Rule: r, Written: c.writtenRule(tool, sub), Helps: c.helps},
		words[1+len(sub):])
	d := c.pol.Evaluate(m.Call)
	shown := append(slices.Clip(words[:1+len(sub)]), m.Shown...)
	v := verdict{words: shown, d: d, rule: r, notes: m.Notes}
	if !d.Allowed() {
		return v
	}
	if m.Mismatch != "" {
		// The policy allows the call these words map to, but the server
		// would not run these words. The denial quotes the call as the
		// server would have run it (Refuse hides redacted values there),
		// the reason names what differs.
		v.d = d.Refuse(policy.KindValue, m.Mismatch)
		return v
	}
	if ran := append([]string{tool}, d.Argv[1:]...); !slices.Equal(ran, words) {
		v.notes = append(v.notes, "the server writes this call as: "+quoteWords(append([]string{tool}, d.Shown()[1:]...))+
			" (flags in schema order, a long flag's value after '=', then the positional arguments)")
	}
	return v
}

// writtenRule is the allow rule as the config writes it, for the flag
// constraints a compiled rule does not expose (whether a type is proven).
func (c *checker) writtenRule(tool string, sub []string) *policy.AllowRule {
	if t := c.cfg.Tools[tool]; t != nil {
		for _, a := range t.Allow {
			if slices.Equal(a.Subcommand, sub) {
				return a
			}
		}
	}
	return nil
}

// quoteWords joins words as a POSIX shell would need them quoted; a word
// holding a character that could fake a line or hide text is Go-quoted, as
// denial texts show it.
func quoteWords(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = shellWord(w)
	}
	return strings.Join(out, " ")
}

func shellWord(s string) string {
	switch {
	case s == "":
		return "''"
	case policy.NeedsEscape(s):
		return strconv.Quote(s)
	}
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("_@%+=:,./-", c)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

// checkTest is one entry of a tests file.
type checkTest struct {
	line  int
	words []string
	allow bool
}

// checkTests runs a tests file: every entry is decided, each mismatch is
// listed with its line and the decision (the denial text, or what would
// run), and any mismatch is errMismatch (exit 1).
func (a *app) checkTests(ctx context.Context, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("check: read tests: %w", err)
	}
	tests, err := parseCheckTests(file, data)
	if err != nil {
		return err
	}
	c, err := a.newChecker(ctx)
	if err != nil {
		return err
	}
	failed := 0
	for _, tt := range tests {
		v := c.decide(tt.words)
		for _, n := range v.notes {
			fmt.Fprintf(a.stderr, "%s:%d: note: %s\n", file, tt.line, n)
		}
		if v.d.Allowed() == tt.allow {
			continue
		}
		failed++
		want, got := "deny", "allow"
		if tt.allow {
			want, got = got, want
		}
		fmt.Fprintf(a.stdout, "%s:%d: %s: want %s, got %s\n%s\n", file, tt.line, quoteWords(v.words), want, got, indent(v.String()))
	}
	if failed > 0 {
		fmt.Fprintf(a.stdout, "FAIL: %d of %d tests in %s do not match\n", failed, len(tests), file)
		return errMismatch
	}
	_, err = fmt.Fprintf(a.stdout, "ok: %s (%d tests)\n", file, len(tests))
	return err
}

// indent prefixes every line of s with two spaces.
func indent(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n")
}

// parseCheckTests reads a tests file: one YAML document holding a non-empty
// list of {cmd, want} mappings. Errors name the file and the line, as config
// errors do: a tests file that tests nothing must not pass CI quietly.
func parseCheckTests(file string, data []byte) ([]checkTest, error) {
	errAt := func(line int, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", file, line, fmt.Sprintf(format, args...))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: holds no tests", file)
		}
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: want one YAML document, a list of {cmd, want}", file)
	}
	list := doc.Content[0]
	if list.Kind != yaml.SequenceNode {
		return nil, errAt(list.Line, "want a list of {cmd, want}")
	}
	if len(list.Content) == 0 {
		return nil, errAt(list.Line, "holds no tests")
	}
	var tests []checkTest
	for i, item := range list.Content {
		if item.Kind != yaml.MappingNode {
			return nil, errAt(item.Line, "tests[%d]: want a mapping with cmd and want", i)
		}
		tt := checkTest{line: item.Line}
		var haveCmd, haveWant bool
		for k := 0; k+1 < len(item.Content); k += 2 {
			key, val := item.Content[k], item.Content[k+1]
			switch key.Value {
			case "cmd":
				if haveCmd {
					return nil, errAt(key.Line, "tests[%d]: cmd is given twice", i)
				}
				haveCmd = true
				words, err := testWords(val)
				if err != nil {
					return nil, errAt(val.Line, "tests[%d].cmd: %v", i, err)
				}
				tt.words = words
			case "want":
				if haveWant {
					return nil, errAt(key.Line, "tests[%d]: want is given twice", i)
				}
				haveWant = true
				switch {
				case val.Kind == yaml.ScalarNode && val.Value == "allow":
					tt.allow = true
				case val.Kind == yaml.ScalarNode && val.Value == "deny":
				default:
					return nil, errAt(val.Line, "tests[%d].want: want allow or deny, got %q", i, val.Value)
				}
			default:
				return nil, errAt(key.Line, "tests[%d]: unknown key %q (want cmd and want)", i, key.Value)
			}
		}
		switch {
		case !haveCmd:
			return nil, errAt(item.Line, "tests[%d]: cmd is missing", i)
		case !haveWant:
			return nil, errAt(item.Line, "tests[%d]: want is missing", i)
		}
		tests = append(tests, tt)
	}
	return tests, nil
}

// testWords reads a test's cmd: a list of words taken as they are, or a
// string split as POSIX shell words.
func testWords(n *yaml.Node) ([]string, error) {
	var words []string
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return nil, errors.New("is empty")
		}
		var err error
		if words, err = shellSplit(n.Value); err != nil {
			return nil, err
		}
	case yaml.SequenceNode:
		for _, w := range n.Content {
			if w.Kind != yaml.ScalarNode || w.Tag == "!!null" {
				return nil, fmt.Errorf("line %d: want a word (a string)", w.Line)
			}
			words = append(words, w.Value)
		}
	default:
		return nil, errors.New("want a string or a list of words")
	}
	if len(words) == 0 {
		return nil, errors.New("is empty")
	}
	return words, nil
}

// shellSplit splits s into words as a POSIX shell does, with quotes and
// backslashes but no expansion of any kind: $, *, ~ and operators such as |
// are ordinary characters. An unbalanced quote or a trailing backslash is an
// error rather than a guess.
func shellSplit(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		inAny bool // cur holds a word, possibly empty ('')
	)
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch ch {
		case ' ', '\t', '\n':
			if inAny {
				words = append(words, cur.String())
				cur.Reset()
				inAny = false
			}
		case '\\':
			if i+1 >= len(s) {
				return nil, errors.New("ends with a backslash")
			}
			i++
			if s[i] != '\n' { // backslash-newline joins lines
				cur.WriteByte(s[i])
				inAny = true
			}
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unbalanced single quote")
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += 1 + end
			inAny = true
		case '"':
			inAny = true
			closed := false
			for i++; i < len(s); i++ {
				switch c := s[i]; {
				case c == '"':
					closed = true
				case c == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0:
					i++
					if s[i] != '\n' {
						cur.WriteByte(s[i])
					}
					continue
				default:
					cur.WriteByte(c)
					continue
				}
				break
			}
			if !closed {
				return nil, errors.New("unbalanced double quote")
			}
		default:
			cur.WriteByte(ch)
			inAny = true
		}
	}
	if inAny {
		words = append(words, cur.String())
	}
	return words, nil
}
