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
