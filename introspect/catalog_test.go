package introspect

import (
	"strings"
	"testing"

	"github.com/wraptool/wraptool/introspect/helptext"
	"github.com/wraptool/wraptool/policy"
)

// testCatalog is built by hand, so the Catalog's answers are tested apart
// from what any parser makes of a text.
func testCatalog(t *testing.T) *Catalog {
	t.Helper()
	ov, err := ParseOverrides("git.yaml", []byte(`
subcommands:
  commit:
    flags:
      "--message": {short: "-M"}
      "--author": {type: string, description: "who"}
  tag:
    flags:
      "-h": {}
`))
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("word ", 40)
	return &Catalog{tools: map[string]*toolHelps{
		"git": {overrides: ov, helps: map[string]helptext.Help{
			"": {
				Description: "The stupid content tracker.\n\nMore text.",
				Subcommands: []helptext.Subcommand{
					{Name: "commit", Description: "Record changes\n  to the repository"},
					{Name: "help", Description: "Show help"},
					{Name: "-x", Description: "not a token"},
					{Name: "a b", Description: "not a token"},
					{Name: "evil", Description: "red\x1b[31m text\u202e reversed\u2028line"},
					{Name: "quote", Description: "the tree\u2019s \u201cstatus\u201d \u2014 now\u2026"},
					{Name: "long", Description: long},
					{Name: "commit", Description: "listed twice"},
				},
				Flags: []helptext.Flag{{Short: "-h", Long: "--help", Value: helptext.ValueNone}},
			},
			"commit": {
				Description: "",
				Flags: []helptext.Flag{
					{Short: "-m", Long: "--message", Value: helptext.ValueRequired, Type: policy.TypeString, Description: "commit message"},
					{Long: "--depth", Value: helptext.ValueRequired, Type: policy.TypeInteger, Description: "deepen\thistory"},
					{Long: "--cleanup", Value: helptext.ValueOptional, Type: policy.TypeBoolean, Description: "how to strip"},
					{Long: "--verify", Value: helptext.ValueNone, Type: policy.TypeBoolean, Negatable: true, Description: "run hooks"},
					{Long: "--odd", Value: helptext.ValueUnknown, Description: "no idea"},
					{Long: "--untyped", Value: helptext.ValueRequired, Description: "a value of no known kind"},
					{Long: "--no-edit", Value: helptext.ValueNone, Type: policy.TypeBoolean, Description: "listed itself"},
					{Long: "--edit", Value: helptext.ValueRequired, Type: policy.TypeString, Negatable: true, Description: "edit"},
					{Short: "-a", Long: "--author-date", Value: helptext.ValueNone, Description: "not --author"},
				},
			},
			"remote": {Description: "Manage remotes\nover several lines.\n\nSecond paragraph."},
			"pull":   {Flags: []helptext.Flag{{Short: "-h", Long: "--help", Value: helptext.ValueNone}}},
			"ls":     {Flags: []helptext.Flag{{Short: "-h", Long: "--human-readable", Value: helptext.ValueNone}}},
			"tag":    {},
		}},
		"psql": {helps: map[string]helptext.Help{
			"": {Flags: []helptext.Flag{{Short: "-h", Long: "--host", Value: helptext.ValueRequired, Type: policy.TypeString}}},
			"sub": {Flags: []helptext.Flag{
				{Short: "-x", Long: "--expanded", Value: helptext.ValueNone},
			}},
			"own": {Flags: []helptext.Flag{{Short: "-h", Long: "--help", Value: helptext.ValueNone}}},
		}},
	}}
}

func TestCatalogFlag(t *testing.T) {
	t.Parallel()
	c := testCatalog(t)
	commit := []string{"commit"}
	tests := []struct {
		name string
		sub  []string
		flag string
		want policy.FlagHelp
		ok   bool
	}{
		{"a required value of a string kind", commit, "--message", policy.FlagHelp{Type: policy.TypeString, Description: "commit message"}, true},
		{"a short form answers for its flag", commit, "-m", policy.FlagHelp{Type: policy.TypeString, Description: "commit message"}, true},
		{"an integer guess", commit, "--depth", policy.FlagHelp{Type: policy.TypeInteger, Description: "deepen history"}, true},
		{"an optional value is a switch with OptionalValue", commit, "--cleanup", policy.FlagHelp{Type: policy.TypeBoolean, OptionalValue: true, Description: "how to strip"}, true},
		{"a switch", commit, "--verify", policy.FlagHelp{Type: policy.TypeBoolean, Description: "run hooks"}, true},
		{"a negated negatable switch", commit, "--no-verify", policy.FlagHelp{Type: policy.TypeBoolean, Description: "run hooks"}, true},
		{"a flag listed itself wins over a negation", commit, "--no-edit", policy.FlagHelp{Type: policy.TypeBoolean, Description: "listed itself"}, true},
		{"unknown value-taking stays unknown", commit, "--odd", policy.FlagHelp{Type: policy.TypeUnknown, Description: "no idea"}, true},
		{"a required value of no known kind is a string", commit, "--untyped", policy.FlagHelp{Type: policy.TypeString, Description: "a value of no known kind"}, true},
		{"an override's short names the flag", commit, "-M", policy.FlagHelp{Type: policy.TypeString, Description: "commit message"}, true},
		{"an override adds a flag the help does not list", commit, "--author", policy.FlagHelp{Type: policy.TypeString, Description: "who"}, true},
		{"no prefix matching", commit, "--mess", policy.FlagHelp{}, false},
		{"a flag not listed", commit, "--force", policy.FlagHelp{}, false},
		{"another subcommand's flag", []string{"pull"}, "--depth", policy.FlagHelp{}, false},
		{"an unknown subcommand", []string{"push"}, "--force", policy.FlagHelp{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := c.Flag("git", tt.sub, tt.flag)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Flag(git %q, %s) = %+v, %v; want %+v, %v", tt.sub, tt.flag, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestCatalogShortHelpTaken(t *testing.T) {
	t.Parallel()
	c := testCatalog(t)
	tests := []struct {
		name, tool string
		sub        []string
		want       bool
	}{
		{"the root lists -h as help", "git", nil, false},
		{"a subcommand whose help does not list -h follows the root", "git", []string{"commit"}, false},
		{"a subcommand listing -h as another switch (ls's --human-readable)", "git", []string{"ls"}, true},
		{"an override naming -h takes it", "git", []string{"tag"}, true},
		{"a root that takes -h for a host", "psql", nil, true},
		{"a subcommand without -h follows the root's host", "psql", []string{"sub"}, true},
		{"a subcommand of unknown help follows the root's host", "psql", []string{"unknown"}, true},
		{"a subcommand's own -h for help wins over the root", "psql", []string{"own"}, false},
		{"an unknown tool takes nothing", "nope", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := c.ShortHelpTaken(tt.tool, tt.sub); got != tt.want {
				t.Errorf("ShortHelpTaken(%s %q) = %v, want %v", tt.tool, tt.sub, got, tt.want)
			}
		})
	}
}

func TestCatalogSubcommands(t *testing.T) {
	t.Parallel()
	c := testCatalog(t)
	got, ok := c.Subcommands("git", nil)
	if !ok {
		t.Fatal("the root help is not known")
	}
	want := map[string]string{
		"commit": "Record changes to the repository",
		"evil":   "red [31m text reversed line",
		"quote":  `the tree's "status" - now...`,
		"long":   strings.Repeat("word ", 22) + "word...",
	}
	for name, d := range want {
		if got[name] != d {
			t.Errorf("%s: %q, want %q", name, got[name], d)
		}
	}
	for name, d := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("listed %q (%q): help and names that are not tokens are left out", name, d)
		}
		if len(d) > 120 {
			t.Errorf("%s: %d bytes, want at most 120", name, len(d))
		}
		for _, r := range d {
			if r < ' ' || r > '~' {
				t.Errorf("%s: %q holds %U, not printable ASCII", name, d, r)
			}
		}
	}
	got["commit"] = "changed"
	if again, _ := c.Subcommands("git", nil); again["commit"] == "changed" {
		t.Errorf("the map is shared between callers")
	}
	if subs, ok := c.Subcommands("git", []string{"commit"}); !ok || len(subs) != 0 {
		t.Errorf("a known help listing nothing: %v, %v; want empty, true", subs, ok)
	}
	if _, ok := c.Subcommands("git", []string{"push"}); ok {
		t.Errorf("an unknown help is known")
	}
}

func TestCatalogDescription(t *testing.T) {
	t.Parallel()
	c := testCatalog(t)
	tests := []struct {
		sub  []string
		want string
	}{
		{nil, "The stupid content tracker."},
		{[]string{"commit"}, "Record changes to the repository"},
		{[]string{"remote"}, "Manage remotes over several lines."},
		{[]string{"push"}, ""},
		{[]string{"remote", "add"}, ""},
	}
	for _, tt := range tests {
		if got := c.Description("git", tt.sub); got != tt.want {
			t.Errorf("Description(git %q) = %q, want %q", tt.sub, got, tt.want)
		}
	}
}

func TestNilCatalogKnowsNothing(t *testing.T) {
	t.Parallel()
	var c *Catalog
	var helps policy.Helps = c
	if _, ok := helps.Flag("git", nil, "-m"); ok {
		t.Error("Flag answered")
	}
	if d := helps.Description("git", nil); d != "" {
		t.Errorf("Description %q", d)
	}
	if helps.ShortHelpTaken("git", nil) {
		t.Error("ShortHelpTaken answered")
	}
	if _, ok := helps.Subcommands("git", nil); ok {
		t.Error("Subcommands answered")
	}
	if _, ok := c.Help("git", nil); ok {
		t.Error("Help answered")
	}
}
