package policy

import (
	"slices"
	"strings"
	"testing"
)

// wordsTools is a rule of every flag shape a command line can carry: long
// and short switches, long and short valued flags (integer and string,
// typed, unproven and redacted), long and short optional values typed by
// the rule (passed attached), and positional arguments; plus a bare rule.
func wordsTools() ([]Tool, Helps) {
	typed := func(t string) *Constraint { return &Constraint{Type: t} }
	tools := []Tool{{
		Name:   "git",
		Binary: "/usr/bin/git",
		Allow: []*AllowRule{
			{
				Subcommand: []string{"pull"},
				Flags:      own("--force", "-v", "--depth", "-n", "--branch", "-m", "-P", "--format", "--rebase", "-r", "--token", "-p"),
				FlagConstraints: map[string]*Constraint{
					"-v":       typed("boolean"),
					"--depth":  typed("integer"),
					"-n":       typed("integer"),
					"--branch": typed("string"),
					"-m":       typed("string"),
					"--rebase": typed("string"),
					"-r":       typed("string"),
					"--token":  {Type: "string", Redact: true},
					"-p":       {Type: "string", Redact: true},
				},
			},
			{Subcommand: []string{}, Flags: own("--verbose", "-C")},
		},
	}}
	helps := tableHelps{flags: map[string]FlagHelp{
		"git pull --rebase": {Type: TypeString, OptionalValue: true},
		"git pull -r":       {Type: TypeString, OptionalValue: true},
	}}
	return tools, helps
}

// wordsCall builds a call of rule a from fuzz input: each choice byte gives
// the next flag in schema order a value (or leaves it out), then the
// positional arguments; string values and arguments come from pool, split
// on '|'.
func wordsCall(r *Rule, choices []byte, pool string) Call {
	words := strings.Split(pool, "|")
	next := func() byte {
		if len(choices) == 0 {
			return 0
		}
		b := choices[0]
		choices = choices[1:]
		return b
	}
	word := func(b byte) string { return words[int(b)%len(words)] }
	params := map[string]any{}
	for _, f := range r.Flags() {
		b := next()
		if b%4 == 0 {
			continue
		}
		switch f.Type {
		case TypeBoolean:
			params[f.Property] = []any{true, "true", false}[b%3]
		case TypeInteger:
			if b%2 == 0 {
				params[f.Property] = float64(int(b) - 128)
			} else {
				params[f.Property] = int64(b)
			}
		default:
			params[f.Property] = word(next())
		}
	}
	if n := next() % 4; n > 0 {
		args := make([]any, 0, n)
		for range n {
			args = append(args, word(next()))
		}
		params[ArgsProperty] = args
	}
	return Call{Tool: r.Tool(), Subcommand: r.Subcommand(), Params: params}
}

// FuzzReadWordsInvertsCommand checks that ReadWords is the inverse of
// Command: for any call the policy allows, the words Command writes read
// back as a call that the server would write as those very words (same
// Command, no mismatch), that Evaluate decides alike, and that hides the
// same values ShownCommand hides.
func FuzzReadWordsInvertsCommand(f *testing.F) {
	tools, helps := wordsTools()
	p := newPolicy(f, tools, helps)
	rules := p.ToolRules("git")
	// A choice byte per flag in schema order (--force -v --depth -n
	// --branch -m -P --format --rebase -r --token -p -h --help; the bare
	// rule: --verbose -C -h --help), a word index after each string flag
	// given, then the number of positionals and their word indexes.
	z := func(n int, rest ...byte) []byte { return append(make([]byte, n), rest...) }
	seeds := []struct {
		name    string
		sel     byte
		choices []byte
		pool    string
	}{
		{"switches", 0, []byte{3, 1}, "x"},
		{"integers long and short", 0, z(2, 1, 130), "x"},
		{"strings long and short", 0, z(4, 1, 0, 1, 1), "main|fix the bug"},
		{"an unproven short flag and an untyped long one", 0, z(6, 1, 0, 1, 1), "a=b|x"},
		{"attached optional values", 0, z(8, 1, 0, 1, 0), "merges"},
		{"an empty attached value (the known gap)", 0, z(8, 1, 0, 1, 0), "|x"},
		{"redacted values", 0, z(10, 1, 0, 1, 0), "s3cret"},
		{"empty redacted values", 0, z(10, 1, 0, 1, 0), "|x"},
		{"positionals", 0, z(14, 3, 0, 1, 2), "origin|main|a b"},
		{"every flag", 0, []byte{3, 3, 130, 131, 1, 1, 1, 2, 1, 3, 1, 4, 1, 5, 1, 6, 1, 7, 1, 8, 0, 0, 2, 9, 0}, "a|b|c|d|e|f|g|h|i|j"},
		{"the help flag alone", 0, z(13, 3), "x"},
		{"a negative short value is refused", 0, z(3, 2), "x"},
		{"the bare rule", 1, []byte{3, 1, 0, 0, 0, 2, 1, 2}, "/srv|HEAD|main"},
		{"a positional '--' is refused", 1, z(4, 1, 0), "--"},
	}
	for _, s := range seeds {
		f.Add(s.sel, s.choices, s.pool)
	}
	f.Fuzz(func(t *testing.T, sel byte, choices []byte, pool string) {
		if len(choices) > 64 || len(pool) > 256 {
			return // calls are small; long inputs only slow minimizing
		}
		r := rules[int(sel)%len(rules)]
		c := wordsCall(r, choices, pool)
		d := p.Evaluate(c)
		if !d.Allowed() {
			return
		}
		tokens, ok := p.Command(c)
		if !ok {
			t.Fatalf("Command(%v): not ok for an allowed call", c.Params)
		}
		if attachedEmpty(r, c) {
			// Known gap: an attached optional value given as "" is written
			// as the bare flag, which reads back as the switch (true).
			return
		}
		sub := r.Subcommand()
		var written *AllowRule
		for _, a := range tools[0].Allow {
			if slices.Equal(a.Subcommand, sub) {
				written = a
			}
		}
		w := ReadWords(WordsSource{Tool: "git", Subcommand: sub, Rule: r, Written: written, Helps: helps}, tokens[1+len(sub):])
		if w.Mismatch != "" {
			t.Fatalf("ReadWords(%q): mismatch %q, want none", tokens, w.Mismatch)
		}
		back, ok := p.Command(w.Call)
		if !ok || !slices.Equal(back, tokens) {
			t.Fatalf("Command(ReadWords(%q)) = %q (ok %v), want the same words; params %v read as %v", tokens, back, ok, c.Params, w.Call.Params)
		}
		if d2 := p.Evaluate(w.Call); !d2.Allowed() || !slices.Equal(d2.Argv, d.Argv) {
			t.Fatalf("Evaluate(ReadWords(%q)): got argv %q refusal %v, want argv %q", tokens, d2.Argv, d2.Refusal, d.Argv)
		}
		shown, _, _ := p.ShownCommand(c)
		if got := shown[1+len(sub):]; !slices.Equal(w.Shown, got) {
			t.Fatalf("ReadWords(%q).Shown = %q, want %q as ShownCommand hides", tokens, w.Shown, got)
		}
	})
}

// attachedEmpty reports whether the call gives an attached optional value
// as the empty string.
func attachedEmpty(r *Rule, c Call) bool {
	for _, f := range r.Flags() {
		if f.Attached && IsShortFlag(f.Flag) && c.Params[f.Property] == "" {
			return true
		}
	}
	return false
}

// However a redacted flag's value is spelled on a command line, it is read
// as that flag's value and never shown; only a word the reading makes a
// positional argument (after "--") is shown, as the server would show it.
func TestReadWordsHidesRedactedValuesHoweverSpelled(t *testing.T) {
	t.Parallel()
	tools, helps := wordsTools()
	p := newPolicy(t, tools, helps)
	r := p.ToolRules("git")[0]
	const secret = "s3cret\x1b[2J"
	cases := []struct {
		name      string
		words     []string
		wantShown []string
	}{
		{"a long flag and its value as the next word", []string{"--token", secret}, []string{"--token", Redacted}},
		{"a long flag with its value after '='", []string{"--token=" + secret}, []string{"--token=" + Redacted}},
		{"a short flag and its value as the next word", []string{"-p", secret}, []string{"-p", Redacted}},
		{"a short flag with its value attached", []string{"-p" + secret}, []string{"-p" + Redacted}},
		{"the flag given twice", []string{"-p", secret, "-p", secret}, []string{"-p", Redacted, "-p", Redacted}},
		{"a value that looks like a flag", []string{"--token", "--force"}, []string{"--token", Redacted}},
		{"a value that is '--'", []string{"-p", "--", secret}, []string{"-p", Redacted, secret}},
		{"the flag last, with no value", []string{"--force", "--token"}, []string{"--force", "--token"}},
		{"after '--' the words are positionals", []string{"--", "--token", secret}, []string{"--", "--token", secret}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := ReadWords(WordsSource{Tool: "git", Subcommand: r.Subcommand(), Rule: r, Helps: helps}, tt.words)
			if !slices.Equal(w.Shown, tt.wantShown) {
				t.Errorf("Shown = %q, want %q", w.Shown, tt.wantShown)
			}
			d := p.Evaluate(w.Call)
			var text string
			if d.Refusal != nil {
				text = d.Refusal.Text
			}
			after := slices.Index(tt.words, "--")
			if after < 0 && (strings.Contains(text, secret) || slices.ContainsFunc(d.Shown(), func(s string) bool { return strings.Contains(s, secret) })) {
				t.Errorf("Evaluate shows the secret: argv %q, denial %q", d.Shown(), text)
			}
		})
	}
}

// FuzzReadWordsHostile reads any words against a rule and against no rule:
// it never panics, shows one word per word, and a shown word differs from
// the word only by hiding what follows its flag behind Redacted.
func FuzzReadWordsHostile(f *testing.F) {
	tools, helps := wordsTools()
	p := newPolicy(f, tools, helps)
	rules := p.ToolRules("git")
	for _, s := range []string{
		"--token|x|-p|y|-pz|--token=|-p",
		"--|-p|x|--token=y",
		"-rf|-r|-rmerges|--rebase|--rebase=x|-m|-n|05|--depth=-0",
		"--force=true|-v=|--x=1|-\x1b[2J|\u202e-p|-p\u202e",
		"-|--|---|-p=x|--=|=",
	} {
		f.Add(byte(0), s)
		f.Add(byte(2), s)
	}
	f.Fuzz(func(t *testing.T, sel byte, line string) {
		if len(line) > 512 {
			return
		}
		words := strings.Split(line, "|")
		src := WordsSource{Tool: "git", Helps: helps}
		if i := int(sel) % (len(rules) + 1); i < len(rules) {
			src.Rule, src.Subcommand = rules[i], rules[i].Subcommand()
		}
		w := ReadWords(src, words)
		if len(w.Shown) != len(words) {
			t.Fatalf("ReadWords(%q).Shown = %q: want one word per word", words, w.Shown)
		}
		for i, s := range w.Shown {
			if s == words[i] {
				continue
			}
			prefix, hidden := strings.CutSuffix(s, Redacted)
			if !hidden || !strings.HasPrefix(words[i], prefix) {
				t.Fatalf("ReadWords(%q).Shown[%d] = %q: want the word, or its flag then %q", words, i, s, Redacted)
			}
		}
		p.Evaluate(w.Call) // whatever was read is a call Evaluate can decide
	})
}
