package policy

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fuzzTarget is one (tool, subcommand) a fuzz input can aim at.
type fuzzTarget struct {
	tool string
	sub  []string
}

// fuzzTargets lists every allow rule of the fixture plus an unknown tool, in
// a fixed order so a selector byte always means the same target.
func fuzzTargets(tools []Tool) []fuzzTarget {
	var out []fuzzTarget
	for _, t := range tools {
		for _, a := range t.Allow {
			out = append(out, fuzzTarget{t.Name, a.Subcommand})
		}
	}
	return append(out, fuzzTarget{"kubectl", []string{"get"}})
}

// fuzzSubcommand varies the target's subcommand: 0 as is, 1 with a token
// added, 2 with the last token dropped, 3 empty.
func fuzzSubcommand(s []string, choice byte) []string {
	switch choice % 4 {
	case 1:
		return append(slices.Clone(s), "x")
	case 2:
		if len(s) > 0 {
			return slices.Clone(s[:len(s)-1])
		}
	case 3:
		return nil
	}
	return slices.Clone(s)
}

// FuzzEvaluate checks, for any parameters, that an allowed decision's argv
// is exactly the rule's binary, its subcommand, allowed flags in allowed
// forms and schema order, then the call's positional arguments within the
// rule's bounds; and that a refusal has the denial text's shape.
func FuzzEvaluate(f *testing.F) {
	tools := append(fixtureTools(), escapeTools()...)
	p := newPolicy(f, tools, nil)
	targets := fuzzTargets(tools)
	index := func(tool string, s ...string) byte {
		for i, t := range targets {
			if t.tool == tool && slices.Equal(t.sub, s) {
				return byte(i)
			}
		}
		f.Fatalf("no fuzz target %s %q", tool, s)
		return 0
	}
	seeds := []struct {
		sel    byte
		params string
		choice byte
	}{
		{index("git", "push"), `{"force":true,"args":["origin","main"]}`, 0},
		{index("git", "push"), `{"set-upstream":true,"h":"true","help":false,"args":["origin"]}`, 0},
		{index("git", "commit"), `{"m":"fix the bug","amend":true,"author":"Ann <a@example.com>"}`, 0},
		{index("git", "commit"), `{"m":"-x"}`, 0},
		{index("git", "commit"), `{"m":1e3,"author":2.5}`, 0},
		{index("git", "log"), `{"max-count":5,"format":"%h %s","oneline":"true","n":"3","args":["main","HEAD"]}`, 0},
		{index("git", "log"), `{"max-count":0}`, 0},
		{index("git", "log"), `{"max-count":"007","n":-1}`, 0},
		{index("git", "log"), `{"args":["a","b","c"]}`, 0},
		{index("git", "log"), `{"args":["-rf"],"cwd":5}`, 0},
		{index("git", "log"), `{"format":"a\u0000b"}`, 0},
		{index("git", "log"), `{"args":["a\u0000"],"cwd":"/srv"}`, 0},
		{index("git", "log"), `{"args":"main"}`, 0},
		{index("git", "status"), `{"args":["x"],"short":true}`, 0},
		{index("git", "show"), `{"args":["HEAD"]}`, 0},
		{index("git", "clone"), `{"depth":1,"branch":"main"}`, 0},
		{index("git", "clone"), `{"depth":51,"branch":"Main"}`, 0},
		{index("git", "fetch"), `{"force":true,"prune":true,"help":true,"h":true,"all":true}`, 0},
		{index("git", "fetch"), `{"h":true,"all":"false"}`, 0},
		{index("git", "tag"), `{"annotate":false}`, 0},
		{index("git", "tag"), `{"annotate":true,"args":["v1"]}`, 0},
		{index("git", "remote"), `{"args":["add","origin"]}`, 0},
		{index("git", "remote"), `{"verbose":true,"args":["show"]}`, 0},
		{index("git", "config", "get"), `{"args":["user.name"]}`, 0},
		{index("gcloud"), `{"args":["auth","login"]}`, 0},
		{index("gcloud"), `{"verbosity":"debug","args":["compute"]}`, 0},
		{index("gcloud", "compute", "instances", "list"), `{"project":"p","filter":"abc","limit":"50","format":"json"}`, 0},
		{index("gcloud", "compute", "instances", "list"), `{"project":"p","filter":"abc--x","quiet":true}`, 0},
		{index("gcloud", "compute", "instances", "list"), `{"limit":1.5,"args":[1]}`, 2},
		{index("gcloud", "auth", "login"), `{}`, 0},
		{index("git", "push"), `{"__proto__":{},"format --force":true,"-rf":null}`, 1},
		{index("git", "push"), `{}`, 3},
		{index("kubectl", "get"), `{"args":["pods"]}`, 0},
		{index("psql"), `{"l":true,"h":true,"args":["evil.example"]}`, 0},
		{index("psql"), `{"help":true,"cwd":"/tmp"}`, 0},
		{index("pgdump"), `{"h":"db1","schema-only":true,"args":["shop"]}`, 0},
		{index("vcs"), `{"P":"config","args":["alias.pwn","!id"]}`, 0},
		{index("vcs"), `{"P":"status","C":"/srv"}`, 0},
		{index("vcs", "log"), `{"n":"main","args":["dev"]}`, 0},
		{index("vcs", "push"), `{"args":["origin","+HEAD:main"]}`, 0},
		{index("vcs", "pull"), `{"args":["origin","main","dev"]}`, 0},
		{index("vcs", "tag"), `{"args":["v1","it's"]}`, 0},
	}
	for _, s := range seeds {
		f.Add(s.sel, s.params, s.choice)
	}

	f.Fuzz(func(t *testing.T, sel byte, params string, choice byte) {
		if len(params) > 512 {
			// Tool calls are small. Minimizing a long input costs time
			// quadratic in its length, during which nothing is fuzzed.
			return
		}
		dec := json.NewDecoder(strings.NewReader(params))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return
		}
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		target := targets[int(sel)%len(targets)]
		c := Call{Tool: target.tool, Subcommand: fuzzSubcommand(target.sub, choice), Params: m}
		d := p.Evaluate(c)

		// Map order must not change the answer, even with two spellings
		// of one flag ("force", "--force").
		if again := p.Evaluate(c); !sameDecision(d, again) {
			t.Fatalf("two evaluations differ:\n%+v\n%+v", d, again)
		}
		if strings.ContainsAny(d.reasonOrEmpty(), "\x00\r\n") {
			t.Fatalf("raw control character in the Policy line: %q", d.Refusal.Reason)
		}
		checkExact(t, p, c, d)
		if d.Refusal != nil {
			checkRefusalShape(t, d)
			return
		}
		checkAllowed(t, p, c, d)
	})
}

// reasonOrEmpty is the refusal's reason, or "" for an allowed decision.
func (d Decision) reasonOrEmpty() string {
	if d.Refusal == nil {
		return ""
	}
	return d.Refusal.Reason
}

func sameDecision(a, b Decision) bool {
	if (a.Refusal == nil) != (b.Refusal == nil) || !slices.Equal(a.Argv, b.Argv) || a.Cwd != b.Cwd {
		return false
	}
	return a.Refusal == nil || *a.Refusal == *b.Refusal
}

func checkRefusalShape(t *testing.T, d Decision) {
	t.Helper()
	text := d.Refusal.Text
	if !strings.HasPrefix(text, "DENIED: '") {
		t.Fatalf("refusal does not start with DENIED: '\n%q", text)
	}
	if !strings.HasSuffix(text, "call the 'wraptool_request_capability' tool.") {
		t.Fatalf("refusal does not end with the request tool\n%q", text)
	}
	if !strings.Contains(text, "' is not permitted.\n\nPolicy: "+d.Refusal.Reason+".\n") {
		t.Fatalf("refusal has no Policy line for reason %q\n%q", d.Refusal.Reason, text)
	}
	wantAllowed := d.Refusal.Kind == KindFlagNotAllowed || d.Refusal.Kind == KindFlagDenied || d.Refusal.Kind == KindRequired
	if got := strings.Contains(text, ".\nAllowed flags for '"); got != wantAllowed {
		t.Fatalf("kind %v: Allowed line present %v, want %v\n%q", d.Refusal.Kind, got, wantAllowed, text)
	}
	if d.Argv != nil {
		t.Fatalf("refused decision carries argv %q", d.Argv)
	}
}

// checkAllowed parses an allowed argv back against its rule: it holds no
// token outside the rule's subcommand, its allowed flags, their checked values
// and the checked positionals, with the values of unproven short flags counted
// as positionals (leading '-', NUL, count, patterns, deny rules); a seeded
// help flag runs alone.
func checkAllowed(t *testing.T, p *Policy, c Call, d Decision) {
	t.Helper()
	r := d.Rule
	if r == nil {
		t.Fatalf("allowed decision has no rule: %q", d.Argv)
	}
	tl := p.tools[c.Tool]
	if tl == nil || r.tool != tl || !slices.Equal(r.sub, c.Subcommand) {
		t.Fatalf("rule %s does not match the call %s %q", r.Name(), c.Tool, c.Subcommand)
	}
	argv := d.Argv
	if len(argv) < 1+len(r.sub) || argv[0] != tl.binary || !slices.Equal(argv[1:1+len(r.sub)], r.sub) {
		t.Fatalf("argv %q does not start with %s %q", argv, tl.binary, r.sub)
	}
	denied := map[string]bool{}
	for _, df := range r.denied {
		denied[df] = true
	}

	i, last := 1+len(r.sub), -1
	seen := map[int]bool{}
	var positionals []string // unproven short values, then args
	for i < len(argv) && strings.HasPrefix(argv[i], "-") {
		tok := argv[i]
		j, val, n := matchFlag(r, argv, i)
		if j < 0 {
			t.Fatalf("argv %q: %q at %d is not an allowed flag of %s in an allowed form", argv, tok, i, r.Name())
		}
		fl := &r.flags[j]
		if denied[fl.Flag] {
			t.Fatalf("argv %q carries denied flag %s", argv, fl.Flag)
		}
		if j <= last {
			t.Fatalf("argv %q: %s is out of schema order or repeated", argv, fl.Flag)
		}
		if fl.Help && len(argv) != 2+len(r.sub) {
			t.Fatalf("argv %q: help flag %s does not run alone", argv, fl.Flag)
		}
		last = j
		seen[j] = true
		switch {
		case fl.Unproven:
			positionals = append(positionals, val)
		case fl.Type != TypeBoolean:
			checkValue(t, argv, fl, val)
		}
		i += n
	}

	args := argv[i:]
	positionals = append(positionals, args...)
	for k, a := range positionals {
		if strings.HasPrefix(a, "-") || strings.IndexByte(a, 0) >= 0 {
			t.Fatalf("argv %q: positional %q begins with '-' or holds a NUL", argv, a)
		}
		if pat := r.argPattern(k); pat != nil && !pat.re.MatchString(a) {
			t.Fatalf("argv %q: positional %d %q does not match %q", argv, k, a, pat.src)
		}
	}
	if n, ok := r.PositionalMax(); ok && len(positionals) > n {
		t.Fatalf("argv %q: %d positionals, positional_max %d", argv, len(positionals), n)
	}
	if deny, ok := tl.denyRule(r.sub, positionals); ok {
		t.Fatalf("argv %q: deny rule %q covers %q", argv, deny, positionals)
	}
	if want, _ := positional(c.Params[ArgsProperty]); !slices.Equal(args, want) {
		t.Fatalf("argv %q: positional arguments %q, call gave %q", argv, args, want)
	}

	for j, fl := range r.flags {
		v := c.Params[fl.Property]
		want := v != nil
		if fl.Type == TypeBoolean {
			want = v == true || v == "true"
		}
		if seen[j] != want {
			t.Fatalf("argv %q: flag %s present %v, but parameter is %#v", argv, fl.Flag, seen[j], v)
		}
		if fl.Required && !seen[j] && !helpCall(r, seen) {
			t.Fatalf("argv %q lacks required %s", argv, fl.Flag)
		}
	}
	for name, v := range c.Params {
		if _, ok := r.byProp[name]; !ok && name != ArgsProperty && name != CwdProperty && v != nil {
			t.Fatalf("allowed a call with parameter %q that is no flag of %s", name, r.Name())
		}
	}
	if cwd, _ := c.Params[CwdProperty].(string); d.Cwd != cwd {
		t.Fatalf("cwd %q, call gave %q", d.Cwd, cwd)
	}
}

// helpCall reports whether the flags seen include a seeded help flag.
func helpCall(r *Rule, seen map[int]bool) bool {
	for j := range seen {
		if r.flags[j].Help {
			return true
		}
	}
	return false
}

// matchFlag finds the allowed flag at argv[i]: a boolean flag bare, a valued
// long flag as --flag=value, or a valued short flag followed by its value. It
// returns the flag's index (or -1), its value and the tokens it takes.
func matchFlag(r *Rule, argv []string, i int) (int, string, int) {
	tok := argv[i]
	for j, fl := range r.flags {
		switch {
		case fl.Type == TypeBoolean:
			if tok == fl.Flag {
				return j, "", 1
			}
		case IsShortFlag(fl.Flag):
			if tok == fl.Flag && i+1 < len(argv) {
				return j, argv[i+1], 2
			}
		default:
			if v, ok := strings.CutPrefix(tok, fl.Flag+"="); ok {
				return j, v, 1
			}
		}
	}
	return -1, "", 0
}

func checkValue(t *testing.T, argv []string, fl *Flag, val string) {
	t.Helper()
	if IsShortFlag(fl.Flag) && strings.HasPrefix(val, "-") {
		t.Fatalf("argv %q: short flag %s takes value %q that begins with '-'", argv, fl.Flag, val)
	}
	if strings.IndexByte(val, 0) >= 0 {
		t.Fatalf("argv %q: %s value holds a NUL", argv, fl.Flag)
	}
	if fl.re != nil && !fl.re.MatchString(val) {
		t.Fatalf("argv %q: %s value %q does not match %q", argv, fl.Flag, val, fl.Pattern)
	}
	if fl.Type == TypeInteger {
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil || strconv.FormatInt(n, 10) != val {
			t.Fatalf("argv %q: %s value %q is not a plain integer", argv, fl.Flag, val)
		}
		if fl.Min != nil && n < *fl.Min || fl.Max != nil && n > *fl.Max {
			t.Fatalf("argv %q: %s value %d is out of bounds", argv, fl.Flag, n)
		}
	}
}

// checkExact holds EvaluateExact to what an exact-call grant may lift: an
// allowed call is decided as Evaluate decides it; a refusal that is never
// lifted stays a refusal; and a lifted call runs exactly Command's tokens,
// with no NUL, no positional that looks like a flag, and nothing a deny rule
// covers.
func checkExact(t *testing.T, p *Policy, c Call, d Decision) {
	t.Helper()
	e := p.EvaluateExact(c)
	switch {
	case d.Allowed():
		if !sameDecision(d, e) {
			t.Fatalf("an allowed call decided differently when exact:\n%+v\n%+v", d, e)
		}
		return
	case !liftable(d.Refusal.Kind):
		if e.Allowed() {
			t.Fatalf("exact lifted a %v refusal: %q", d.Refusal.Kind, e.Argv)
		}
		return
	case !e.Allowed():
		checkRefusalShape(t, e)
		return
	}
	tl := p.tools[c.Tool]
	tokens, ok := p.Command(c)
	if !ok || e.Argv[0] != tl.binary || !slices.Equal(e.Argv[1:], tokens[1:]) {
		t.Fatalf("exact argv %q is not the binary and Command %q (%v)", e.Argv, tokens, ok)
	}
	for _, tok := range e.Argv[1+len(c.Subcommand):] {
		if strings.IndexByte(tok, 0) >= 0 {
			t.Fatalf("exact argv holds a NUL: %q", e.Argv)
		}
	}
	args, _ := positional(c.Params[ArgsProperty])
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			t.Fatalf("exact argv holds a positional that looks like a flag: %q", e.Argv)
		}
	}
	if tl.denies(c.Subcommand, args) {
		t.Fatalf("exact allowed what a deny rule covers: %q", e.Argv)
	}
}
