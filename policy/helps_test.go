package policy

import (
	"slices"
	"strings"
	"testing"
)

// tableHelps is a Helps from a table keyed by "tool sub... flag".
type tableHelps struct {
	flags map[string]FlagHelp
	descs map[string]string
}

func (h tableHelps) Flag(tool string, sub []string, flag string) (FlagHelp, bool) {
	f, ok := h.flags[strings.Join(append(append([]string{tool}, sub...), flag), " ")]
	return f, ok
}
func (h tableHelps) Description(tool string, sub []string) string {
	return h.descs[strings.Join(append([]string{tool}, sub...), " ")]
}
func (tableHelps) ShortHelpTaken(string, []string) bool                   { return false }
func (tableHelps) Subcommands(string, []string) (map[string]string, bool) { return nil, false }

// What the tool's help says types and describes flags: a switch, a value,
// and an optional value, which is a switch unless the rule types it — then
// its value travels attached, never as a separate argument the tool would
// read as a positional.
func TestHelpsTypeAndDescribeFlags(t *testing.T) {
	t.Parallel()
	helps := tableHelps{
		flags: map[string]FlagHelp{
			"git pull --rebase":  {Type: TypeBoolean, OptionalValue: true, Description: "incorporate changes by rebasing rather than merging"},
			"git pull -r":        {Type: TypeBoolean, OptionalValue: true, Description: "incorporate changes by rebasing rather than merging"},
			"git pull --depth":   {Type: TypeString, Description: "deepen history of shallow clone"},
			"git pull -n":        {Type: TypeBoolean, Description: "do not show a diffstat at the end of the merge"},
			"git pull --ff-only": {Type: TypeBoolean},
			"git merge --rebase": {Type: TypeBoolean, OptionalValue: true},
			"git merge -r":       {Type: TypeBoolean, OptionalValue: true},
			"git merge --log":    {Type: TypeInteger, OptionalValue: true},
		},
		descs: map[string]string{"git pull": "Fetch from and integrate with another repository or a local branch"},
	}
	tools := []Tool{{Name: "git", Binary: "/usr/bin/git", Allow: []*AllowRule{
		{Subcommand: []string{"pull"}, Flags: own("--rebase", "-r", "--depth", "-n", "--ff-only")},
		{
			Subcommand: []string{"merge"}, Flags: own("--rebase", "-r", "--log"),
			FlagConstraints: map[string]*Constraint{"--rebase": {Type: "string", Pattern: "merges|true|false"}, "-r": {Type: "string"}},
		},
	}}}
	p := newPolicy(t, tools, helps)
	pull, _ := p.Rule("git_pull")
	if got, want := pull.Description(), "Fetch from and integrate with another repository or a local branch"; got != want {
		t.Errorf("rule description %q, want %q", got, want)
	}
	types := map[string]string{}
	for _, f := range pull.Flags() {
		types[f.Flag] = f.Type.String()
		if f.Flag == "-n" && (f.Unproven || f.Description != "do not show a diffstat at the end of the merge") {
			t.Errorf("-n: Unproven %v, Description %q; want a proven switch with git's words", f.Unproven, f.Description)
		}
	}
	want := map[string]string{"--rebase": "boolean", "-r": "boolean", "--depth": "string", "-n": "boolean", "--ff-only": "boolean", "-h": "boolean", "--help": "boolean"}
	for f, w := range want {
		if types[f] != w {
			t.Errorf("git pull %s: type %s, want %s", f, types[f], w)
		}
	}
	for _, tc := range []struct {
		rule   string
		params map[string]any
		argv   []string
	}{
		{"pull", map[string]any{"rebase": true, "depth": "3"}, []string{"--rebase", "--depth=3"}},
		{"merge", map[string]any{"rebase": "merges", "r": "true"}, []string{"--rebase=merges", "-rtrue"}},
		{"merge", map[string]any{"log": true}, []string{"--log"}},
	} {
		d := p.Evaluate(Call{Tool: "git", Subcommand: []string{tc.rule}, Params: tc.params})
		if !d.Allowed() {
			t.Errorf("%s %v refused:\n%s", tc.rule, tc.params, d.Refusal.Text)
			continue
		}
		if want := append([]string{"/usr/bin/git", tc.rule}, tc.argv...); !slices.Equal(d.Argv, want) {
			t.Errorf("%s %v: argv %q, want %q", tc.rule, tc.params, d.Argv, want)
		}
	}
}

// learnedHelps knows the helps of the subcommands it holds ("" is the
// tool's own), each listing its flags; flags in named are answered by
// Flag whatever is learned, as the operator's overrides are.
type learnedHelps struct {
	learned map[string][]string // "tool sub…" → flags
	named   map[string]bool     // "tool sub… flag"
}

func (h learnedHelps) Flag(tool string, sub []string, flag string) (FlagHelp, bool) {
	key := strings.Join(append([]string{tool}, sub...), " ")
	return FlagHelp{}, slices.Contains(h.learned[key], flag) || h.named[key+" "+flag]
}
func (learnedHelps) Description(string, []string) string  { return "" }
func (learnedHelps) ShortHelpTaken(string, []string) bool { return false }
func (h learnedHelps) Subcommands(tool string, sub []string) (map[string]string, bool) {
	_, ok := h.learned[strings.Join(append([]string{tool}, sub...), " ")]
	return map[string]string{}, ok
}

// A flag counts as listed only where the help is known and lists it,
// spelled exactly; where nothing is known of the subcommand's help, every
// flag is HelpUnknown, never listed.
func TestListingOf(t *testing.T) {
	t.Parallel()
	helps := learnedHelps{
		learned: map[string][]string{"git": {"-C", "--version"}, "git push": {"--tags", "--receive-pack"}},
		named:   map[string]bool{"git fetch --prune": true},
	}
	push := []string{"push"}
	for _, tc := range []struct {
		name  string
		helps Helps
		sub   []string
		flag  string
		want  Listing
	}{
		{"with no helps at all every flag is help unknown", nil, push, "--tags", HelpUnknown},
		{"with no helps at all a flag of the tool itself is help unknown", nil, nil, "-C", HelpUnknown},
		{"a subcommand whose help was never learned gives help unknown", helps, []string{"log"}, "--oneline", HelpUnknown},
		{"a subcommand of a tool nothing is known of gives help unknown", helps, []string{"pr", "list"}, "--state", HelpUnknown},
		{"a flag the help lists is listed", helps, push, "--tags", Listed},
		{"a flag the help does not list is not listed", helps, push, "--force", NotListed},
		{"a prefix of a listed flag is not listed", helps, push, "--rece", NotListed},
		{"a flag listed in another subcommand's help is not listed", helps, push, "-C", NotListed},
		{"an empty subcommand asks the tool's own help: listed", helps, nil, "--version", Listed},
		{"an empty subcommand asks the tool's own help: not listed", helps, []string{}, "--vers", NotListed},
		{"an empty subcommand of a tool whose own help is unknown gives help unknown", learnedHelps{learned: map[string][]string{"git push": {"--tags"}}}, nil, "-C", HelpUnknown},
		{"a flag the operator's overrides name is listed where the help is unknown", helps, []string{"fetch"}, "--prune", Listed},
		{"another flag of that subcommand is still help unknown", helps, []string{"fetch"}, "--all", HelpUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := ListingOf(tc.helps, "git", tc.sub, tc.flag); got != tc.want {
				t.Errorf("ListingOf(git %q %s) = %v, want %v", tc.sub, tc.flag, got, tc.want)
			}
		})
	}
	var zero Listing
	if zero != HelpUnknown {
		t.Errorf("the zero Listing is %v, want help unknown: a Listing nobody set must fail closed", zero)
	}
}
