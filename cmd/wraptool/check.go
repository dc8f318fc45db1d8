package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/peterbourgon/ff/v4"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
)

// errDenied is check's verdict that a command line is denied: exit status
// 3. The denial is already printed when it is returned.
var errDenied = errors.New("check: denied")

func (a *app) checkCommand() *ff.Command {
	var (
		asJSON, explain bool
		testsFile       string
	)
	fs := ff.NewFlagSet("check").SetParent(a.flags)
	fs.BoolVar(&asJSON, 0, "json", "print one JSON object: the decision, the MCP tool, the argv and the denial")
	fs.BoolVar(&explain, 0, "explain", "also list what the command line touches that can hand your credentials away")
	stringFlag(fs, &testsFile, "tests", "", "FILE", "run a YAML list of {cmd, want: allow|deny} and list each mismatch")
	return &ff.Command{
		Name:      "check",
		Usage:     "wraptool check [--json] [--explain] -- TOOL [SUBCOMMAND…] [FLAGS…] [ARGS…] | wraptool check --tests FILE",
		ShortHelp: "decide a command line as the server would, without running anything",
		LongHelp: "Decides a command line by the config and the introspection cache, through the\n" +
			"same policy the server calls: allowed (exit 0) when an allow rule could produce it,\n" +
			"else the server's denial text (exit 3). Nothing runs, not even a tool's --help.\n" +
			"Every word after -- belongs to the checked command line: check's own flags come\n" +
			"before it. Grants are not consulted, and the run-time checks on the working\n" +
			"directory and wraptool's own files are not made. --tests FILE checks a list of\n" +
			"command lines with their expected decisions (exit 1 on any mismatch), so a\n" +
			"policy can carry its own tests in CI. --explain also lists the flags and the\n" +
			"subcommand the danger catalog names (sends-credentials, runs-code,\n" +
			"prints-credentials, writes-files, reads-files), allowed or not, and whether a\n" +
			"pattern holds each flag's value.\n\n" +
			"Example:\n  wraptool check -- git push --force origin main",
		Flags: fs,
		Exec: func(ctx context.Context, args []string) error {
			if testsFile != "" {
				switch {
				case len(args) > 0:
					return usageErrorf("check --tests takes no command line, got %q", args[0])
				case asJSON:
					return usageErrorf("check --tests does not combine with --json")
				case explain:
					return usageErrorf("check --tests does not combine with --explain")
				}
				return a.checkTests(ctx, testsFile)
			}
			if len(args) == 0 {
				return usageErrorf("check needs a command line: wraptool check -- TOOL [SUBCOMMAND…] [FLAGS…] [ARGS…]")
			}
			return a.checkLine(ctx, args, asJSON, explain)
		},
	}
}

// newChecker loads the config as `config validate` does (same path
// resolution and file checks; the introspection cache read, never refreshed,
// so flags are typed as the server types them and no tool runs).
func (a *app) newChecker(ctx context.Context) (*checker, error) {
	path, l, err := a.loadResolvedConfig(ctx)
	if err != nil {
		return nil, err
	}
	return &checker{pol: l.Policy, helps: l.Helps, cfg: l.Config, path: path}, nil
}

// checkLine decides one command line and prints the verdict: the argv that
// would run, or the denial text.
func (a *app) checkLine(ctx context.Context, words []string, asJSON, explain bool) error {
	c, err := a.newChecker(ctx)
	if err != nil {
		return err
	}
	v := c.decide(words)
	for _, n := range v.notes {
		fmt.Fprintf(a.stderr, "note: %s\n", n)
	}
	var touches []touch
	if explain {
		touches = c.explain(v)
	}
	if asJSON {
		r := v.result()
		if explain {
			if touches == nil {
				touches = []touch{}
			}
			r.Touches = &touches
		}
		data, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(a.stdout, "%s\n", data); err != nil {
			return err
		}
	} else {
		out := v.String()
		if explain {
			out += explainText(touches)
		}
		if _, err := io.WriteString(a.stdout, out); err != nil {
			return err
		}
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
	// path is the config file as given, for the operator's next step.
	path string
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
	// missing is the subcommand no rule has, for a line no rule's
	// subcommand starts.
	missing []string
	// denial is the denial text check prints: the server's, with its last
	// line (addressed to the assistant) replaced by the operator's next
	// step; "" when allowed.
	denial string
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
	// Touches are, with --explain, what the danger catalog names in the
	// command line ([] when nothing); absent without --explain.
	Touches *[]touch `json:"touches,omitempty"`
}

func (v verdict) result() checkResult {
	r := checkResult{Decision: "allow", Argv: v.d.Shown(), Notes: v.notes}
	if v.rule != nil {
		r.Tool = v.rule.Name()
	}
	if !v.d.Allowed() {
		r.Decision, r.Argv = "deny", v.words
		r.Denial, r.Reason, r.Kind = v.denial, v.d.Refusal.Reason, v.d.Refusal.Kind.String()
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
		return v.denial + "\n"
	}
	return "allowed by " + v.rule.Name() + ": " + quoteWords(v.d.Shown()) + "\n"
}

// decide decides words as decideCall does and words the denial for the
// operator: the rule that came closest when no rule's subcommand starts
// the line, and the operator's next step as its last line.
func (c *checker) decide(words []string) verdict {
	v := c.decideCall(words)
	if v.d.Allowed() {
		return v
	}
	reason := v.d.Refusal.Reason
	if v.rule == nil && v.d.Refusal.Kind == policy.KindNoRule {
		if r := closestRule(c.pol.ToolRules(words[0]), words[1:]); r != nil {
			reason = "no rule matches; the closest is " + ruleCommand(r) + ", whose subcommand must come first (no rule allows " +
				policy.Quote(words[1]) + " before it)"
		}
	}
	text := v.d.Refusal.Text
	head, _, ok := strings.Cut(text, "\n\nPolicy: "+v.d.Refusal.Reason+".\n")
	if ok && reason != v.d.Refusal.Reason {
		text = head + "\n\nPolicy: " + reason + "." + text[len(head)+len("\n\nPolicy: "+v.d.Refusal.Reason+"."):]
	}
	if i := strings.LastIndex(text, "\n\n"); i >= 0 {
		text = text[:i]
	}
	v.denial = text + "\n\n" + c.nextStep(v)
	return v
}

// nextStep is the last line of check's denial: what the operator can do,
// where the server's denial tells the assistant to file a request.
func (c *checker) nextStep(v verdict) string {
	tool := v.words[0]
	const review = "Next step: if the assistant asked for this, approve its request (wraptool requests list); else "
	switch v.d.Refusal.Kind {
	case policy.KindUnknownTool:
		return "Next step: add the tool with 'wraptool config add " + shellWord(tool) + "', then an allow rule for it."
	case policy.KindDenyRule, policy.KindFlagDenied:
		return "Next step: a deny rule in tools." + tool + " refuses this on purpose; change it only if this should run."
	case policy.KindNoRule:
		return review + "add an allow rule for " + policy.Quote(strings.Join(append([]string{tool}, v.missing...), " ")) +
			" to tools." + tool + ".allow."
	}
	return review + "change the rule in tools." + tool + ".allow."
}

// ruleCommand names a rule as denials do: 'git log'.
func ruleCommand(r *policy.Rule) string {
	return policy.Quote(strings.Join(append([]string{r.Tool()}, r.Subcommand()...), " "))
}

// closestRule is, for a line no rule's subcommand starts, the rule it came
// closest to: the longest subcommand whose words all appear in rest, in
// order, after something else came first (`git -c core.pager=sh log` is
// closest to 'git log'); nil when there is none. A bare rule is never
// closest: it would have been a candidate.
func closestRule(rules []*policy.Rule, rest []string) *policy.Rule {
	var best *policy.Rule
	for _, r := range rules {
		sub := r.Subcommand()
		if len(sub) == 0 || (best != nil && len(sub) <= len(best.Subcommand())) {
			continue
		}
		i := 0
		for _, w := range rest {
			if i < len(sub) && w == sub[i] {
				i++
			}
		}
		if i == len(sub) {
			best = r
		}
	}
	return best
}

// decideCall decides words (tool key first) as the server would decide the
// matching tool call: every allow rule whose subcommand starts the command
// line is a candidate (a bare or shorter rule takes the rest as flags and
// positional arguments), the words become that rule's call parameters, and
// policy.Evaluate decides. Allowed when any candidate allows (the longest
// such rule is named); else the longest candidate's denial.
func (c *checker) decideCall(words []string) verdict {
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
	return verdict{words: words, d: d, notes: m.Notes, missing: sub}
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
