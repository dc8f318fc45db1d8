package policy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// own lists a rule's flags as the operator writes them; newPolicy seeds the
// help flags as config loading does.
func own(flags ...string) []string {
	return append([]string{}, flags...)
}

// seedAll seeds the help flags into every rule, as config loading does.
func seedAll(tools []Tool) []Tool {
	for _, t := range tools {
		for _, a := range t.Allow {
			SeedHelpFlags(a)
		}
	}
	return tools
}

// fixtureTools is the policy most tests run against: a git and a gcloud with
// one rule per feature the policy has.
func fixtureTools() []Tool {
	return []Tool{
		{
			Name:   "git",
			Binary: "/usr/bin/git",
			Allow: []*AllowRule{
				{
					Subcommand:      []string{"push"},
					Flags:           own("--set-upstream"),
					FlagConstraints: map[string]*Constraint{"--set-upstream": {Type: "boolean"}},
				},
				{Subcommand: []string{"pull"}, Flags: own()},
				{
					Subcommand:      []string{"commit"},
					Flags:           own("-m", "--amend", "--author"),
					FlagConstraints: map[string]*Constraint{"--amend": {Type: "boolean"}, "-m": {Type: "string"}},
				},
				{
					Subcommand: []string{"log"},
					Flags:      own("--max-count", "--format", "--oneline", "-n"),
					FlagConstraints: map[string]*Constraint{
						"--max-count": {Min: ptr[int64](1), Max: ptr[int64](50)},
						"--oneline":   {Type: "boolean"},
						"-n":          {Type: "integer"},
					},
					ArgConstraints: ArgConstraints{PositionalMax: ptr(2)},
				},
				{Subcommand: []string{"show"}, Flags: own(), ArgConstraints: ArgConstraints{PositionalMax: ptr(1)}},
				{
					Subcommand:      []string{"status"},
					Flags:           own("--short"),
					FlagConstraints: map[string]*Constraint{"--short": {Type: "boolean"}},
					ArgConstraints:  ArgConstraints{PositionalMax: ptr(0)},
				},
				{
					Subcommand: []string{"clone"},
					Flags:      own("--depth", "--branch"),
					FlagConstraints: map[string]*Constraint{
						"--depth":  {Min: ptr[int64](1), Max: ptr[int64](50)},
						"--branch": {Pattern: "^[a-z]+$"},
					},
				},
				{
					// --help is denied, so seeding added only -h.
					Subcommand: []string{"fetch"},
					Flags:      []string{"--all", "--force"},
					DenyFlags:  []string{"--force", "--help"},
					FlagConstraints: map[string]*Constraint{
						"--all":   {Type: "boolean"},
						"--prune": {Deny: true},
					},
				},
				{
					Subcommand:      []string{"tag"},
					Flags:           own("--annotate"),
					FlagConstraints: map[string]*Constraint{"--annotate": {Type: "boolean", Required: true}},
				},
				{Subcommand: []string{"remote"}, Flags: own("--verbose")},
				{Subcommand: []string{"config", "get"}, Flags: own()},
			},
			Deny: []*DenyRule{
				{Subcommand: []string{"config"}},
				{Subcommand: []string{"remote", "add"}},
			},
		},
		{
			Name:   "gcloud",
			Binary: "/opt/google/bin/gcloud",
			Allow: []*AllowRule{
				{Subcommand: []string{}, Flags: own("--verbosity")},
				{
					Subcommand: []string{"compute", "instances", "list"},
					Flags:      own("--format", "--filter", "--project", "--quiet", "--limit"),
					DenyFlags:  []string{"--quiet"},
					FlagConstraints: map[string]*Constraint{
						"--filter":  {Pattern: "[a-z]+"},
						"--project": {Required: true},
						"--limit":   {Min: ptr[int64](1), Max: ptr[int64](50)},
					},
					ArgConstraints: ArgConstraints{PositionalMax: ptr(2)},
				},
				{Subcommand: []string{"auth", "login"}, Flags: own()},
			},
			Deny: []*DenyRule{{Subcommand: []string{"auth"}}},
		},
	}
}

func newPolicy(tb testing.TB, tools []Tool, types Helps) *Policy {
	tb.Helper()
	p, err := New(seedAll(tools), types)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return p
}

func fixture(tb testing.TB) *Policy {
	tb.Helper()
	return newPolicy(tb, fixtureTools(), nil)
}

func sub(tokens ...string) []string { return tokens }

func TestEvaluateBuildsArgv(t *testing.T) {
	t.Parallel()
	p := fixture(t)
	cases := []struct {
		name     string
		call     Call
		wantArgv []string
		wantCwd  string
	}{
		{
			name:     "the binary comes first, then every subcommand token",
			call:     Call{Tool: "gcloud", Subcommand: sub("compute", "instances", "list"), Params: map[string]any{"project": "p"}},
			wantArgv: []string{"/opt/google/bin/gcloud", "compute", "instances", "list", "--project=p"},
		},
		{
			name:     "a bare-tool rule runs the binary alone",
			call:     Call{Tool: "gcloud"},
			wantArgv: []string{"/opt/google/bin/gcloud"},
		},
		{
			name:     "a nil subcommand matches the bare-tool rule",
			call:     Call{Tool: "gcloud", Subcommand: nil, Params: map[string]any{"verbosity": "debug"}},
			wantArgv: []string{"/opt/google/bin/gcloud", "--verbosity=debug"},
		},
		{
			name:     "a null parameter counts as absent, even one that is no flag",
			call:     Call{Tool: "git", Subcommand: sub("commit"), Params: map[string]any{"m": "fix", "author": nil, "bogus": nil, "args": nil, "cwd": nil}},
			wantArgv: []string{"/usr/bin/git", "commit", "-m", "fix"},
		},
		{
			name:     "flags follow the rule's schema order, not the parameters'",
			call:     Call{Tool: "git", Subcommand: sub("commit"), Params: map[string]any{"author": "Ann", "amend": true, "m": "fix"}},
			wantArgv: []string{"/usr/bin/git", "commit", "-m", "fix", "--amend", "--author=Ann"},
		},
		{
			name: "every kind of flag keeps its schema slot",
			call: Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{
				"n": 3.0, "oneline": true, "format": "%h", "max-count": 2.0,
			}},
			wantArgv: []string{"/usr/bin/git", "log", "--max-count=2", "--format=%h", "--oneline", "-n", "3"},
		},
		{
			name: "positional arguments come after the flags",
			call: Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{
				"args": []any{"main", "HEAD~1"}, "oneline": true,
			}},
			wantArgv: []string{"/usr/bin/git", "log", "--oneline", "main", "HEAD~1"},
		},
		{
			name:     "positional arguments may arrive as a []string",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"args": []string{"main"}}},
			wantArgv: []string{"/usr/bin/git", "log", "main"},
		},
		{
			name:     "null args mean no positional arguments",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"args": nil}},
			wantArgv: []string{"/usr/bin/git", "log"},
		},
		{
			name:     "an empty args list is fine where positional_max is 0",
			call:     Call{Tool: "git", Subcommand: sub("status"), Params: map[string]any{"args": []any{}, "short": true}},
			wantArgv: []string{"/usr/bin/git", "status", "--short"},
		},
		{
			name:     "a boolean true gives the bare flag",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"oneline": true}},
			wantArgv: []string{"/usr/bin/git", "log", "--oneline"},
		},
		{
			name:     "a boolean false gives nothing",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"oneline": false}},
			wantArgv: []string{"/usr/bin/git", "log"},
		},
		{
			name:     "the string true counts as a boolean true",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"oneline": "true"}},
			wantArgv: []string{"/usr/bin/git", "log", "--oneline"},
		},
		{
			name:     "the string false counts as a boolean false",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"oneline": "false"}},
			wantArgv: []string{"/usr/bin/git", "log"},
		},
		{
			name:     "a null flag value is left out",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"format": nil, "oneline": nil, "max-count": nil}},
			wantArgv: []string{"/usr/bin/git", "log"},
		},
		{
			name:     "a valued long flag is one --flag=value argument, spaces and all",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"format": "%h %s"}},
			wantArgv: []string{"/usr/bin/git", "log", "--format=%h %s"},
		},
		{
			name:     "a valued long flag may take a value that starts with a dash",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"format": "-x"}},
			wantArgv: []string{"/usr/bin/git", "log", "--format=-x"},
		},
		{
			name:     "an empty string is still a value",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"format": ""}},
			wantArgv: []string{"/usr/bin/git", "log", "--format="},
		},
		{
			name:     "a valued short flag is two arguments",
			call:     Call{Tool: "git", Subcommand: sub("commit"), Params: map[string]any{"m": "fix the bug"}},
			wantArgv: []string{"/usr/bin/git", "commit", "-m", "fix the bug"},
		},
		{
			name:     "an integer arrives as a float64",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"max-count": 5.0}},
			wantArgv: []string{"/usr/bin/git", "log", "--max-count=5"},
		},
		{
			name:     "an integer arrives as a json.Number",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"max-count": json.Number("5")}},
			wantArgv: []string{"/usr/bin/git", "log", "--max-count=5"},
		},
		{
			name:     "an integer arrives as a string of digits",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"max-count": "5"}},
			wantArgv: []string{"/usr/bin/git", "log", "--max-count=5"},
		},
		{
			name:     "an integer written with leading zeros is written plainly",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"max-count": "007"}},
			wantArgv: []string{"/usr/bin/git", "log", "--max-count=7"},
		},
		{
			name:     "an integer on the lower bound passes",
			call:     Call{Tool: "git", Subcommand: sub("clone"), Params: map[string]any{"depth": 1.0}},
			wantArgv: []string{"/usr/bin/git", "clone", "--depth=1"},
		},
		{
			name:     "an integer on the upper bound passes",
			call:     Call{Tool: "git", Subcommand: sub("clone"), Params: map[string]any{"depth": json.Number("50")}},
			wantArgv: []string{"/usr/bin/git", "clone", "--depth=50"},
		},
		{
			name:     "an integer short flag is two arguments",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"n": json.Number("3")}},
			wantArgv: []string{"/usr/bin/git", "log", "-n", "3"},
		},
		{
			name:     "a string flag takes a number written in decimal, not in exponent form",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"format": 1e3}},
			wantArgv: []string{"/usr/bin/git", "log", "--format=1000"},
		},
		{
			name:     "a string flag takes a fractional number as written",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"format": 2.5}},
			wantArgv: []string{"/usr/bin/git", "log", "--format=2.5"},
		},
		{
			name:     "a string flag takes a json.Number in exponent form in decimal",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"format": json.Number("1e3")}},
			wantArgv: []string{"/usr/bin/git", "log", "--format=1000"},
		},
		{
			name:     "a string flag takes a fractional json.Number",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"format": json.Number("2.5")}},
			wantArgv: []string{"/usr/bin/git", "log", "--format=2.5"},
		},
		{
			name:     "a string short flag takes a number as its separate value",
			call:     Call{Tool: "git", Subcommand: sub("commit"), Params: map[string]any{"m": json.Number("42")}},
			wantArgv: []string{"/usr/bin/git", "commit", "-m", "42"},
		},
		{
			name:     "-h renders as a boolean",
			call:     Call{Tool: "git", Subcommand: sub("push"), Params: map[string]any{"h": true}},
			wantArgv: []string{"/usr/bin/git", "push", "-h"},
		},
		{
			name:     "--help renders as a boolean",
			call:     Call{Tool: "git", Subcommand: sub("push"), Params: map[string]any{"help": "true"}},
			wantArgv: []string{"/usr/bin/git", "push", "--help"},
		},
		{
			name:     "a help flag runs alone, with only cwd beside it",
			call:     Call{Tool: "git", Subcommand: sub("push"), Params: map[string]any{"h": true, "cwd": "/srv"}},
			wantArgv: []string{"/usr/bin/git", "push", "-h"},
			wantCwd:  "/srv",
		},
		{
			name:     "a help call may give other flags as false and an empty args",
			call:     Call{Tool: "git", Subcommand: sub("push"), Params: map[string]any{"help": true, "set-upstream": false, "h": "false", "args": []any{}}},
			wantArgv: []string{"/usr/bin/git", "push", "--help"},
		},
		{
			name:     "a help call skips the required-flag check",
			call:     Call{Tool: "gcloud", Subcommand: sub("compute", "instances", "list"), Params: map[string]any{"help": true}},
			wantArgv: []string{"/opt/google/bin/gcloud", "compute", "instances", "list", "--help"},
		},
		{
			name:     "-h stays allowed on a rule that denies --help",
			call:     Call{Tool: "git", Subcommand: sub("fetch"), Params: map[string]any{"h": true}},
			wantArgv: []string{"/usr/bin/git", "fetch", "-h"},
		},
		{
			name:     "a deny constraint on one flag leaves the others allowed",
			call:     Call{Tool: "git", Subcommand: sub("fetch"), Params: map[string]any{"all": true}},
			wantArgv: []string{"/usr/bin/git", "fetch", "--all"},
		},
		{
			name:     "a pattern accepts a value it matches whole",
			call:     Call{Tool: "git", Subcommand: sub("clone"), Params: map[string]any{"branch": "main", "depth": 1.0}},
			wantArgv: []string{"/usr/bin/git", "clone", "--depth=1", "--branch=main"},
		},
		{
			name:     "an unanchored pattern accepts a whole match",
			call:     Call{Tool: "gcloud", Subcommand: sub("compute", "instances", "list"), Params: map[string]any{"project": "p", "filter": "abc"}},
			wantArgv: []string{"/opt/google/bin/gcloud", "compute", "instances", "list", "--filter=abc", "--project=p"},
		},
		{
			name:     "a required boolean given true passes",
			call:     Call{Tool: "git", Subcommand: sub("tag"), Params: map[string]any{"annotate": true, "args": []any{"v1"}}},
			wantArgv: []string{"/usr/bin/git", "tag", "--annotate", "v1"},
		},
		{
			name:     "a deny rule longer than the subcommand leaves other arguments alone",
			call:     Call{Tool: "git", Subcommand: sub("remote"), Params: map[string]any{"args": []any{"show", "origin"}}},
			wantArgv: []string{"/usr/bin/git", "remote", "show", "origin"},
		},
		{
			name:     "the client's cwd is carried on the decision",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"cwd": "/srv/repo"}},
			wantArgv: []string{"/usr/bin/git", "log"},
			wantCwd:  "/srv/repo",
		},
		{
			name:     "a null cwd means the default",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"cwd": nil}},
			wantArgv: []string{"/usr/bin/git", "log"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := p.Evaluate(tc.call)
			if d.Refusal != nil {
				t.Fatalf("Evaluate refused:\n%s\nwant argv %q", d.Refusal.Text, tc.wantArgv)
			}
			if !d.Allowed() {
				t.Errorf("Allowed() = false with no refusal")
			}
			if !slices.Equal(d.Argv, tc.wantArgv) {
				t.Errorf("argv:\n got %q\nwant %q", d.Argv, tc.wantArgv)
			}
			if d.Cwd != tc.wantCwd {
				t.Errorf("cwd: got %q, want %q", d.Cwd, tc.wantCwd)
			}
			wantRule := ToolName(tc.call.Tool, tc.call.Subcommand)
			if d.Rule == nil || d.Rule.Name() != wantRule {
				t.Errorf("rule: got %v, want %s", d.Rule, wantRule)
			}
		})
	}
}

// fakeTypes answers Helps.Flag from a table of types keyed by "tool sub...
// flag", so a lookup also proves Evaluate asked about the right tool and
// subcommand.
type fakeTypes map[string]Type

func (f fakeTypes) Flag(tool string, subcommand []string, flag string) (FlagHelp, bool) {
	key := append(append([]string{tool}, subcommand...), flag)
	t, ok := f[strings.Join(key, " ")]
	return FlagHelp{Type: t}, ok
}
func (fakeTypes) Description(string, []string) string                    { return "" }
func (fakeTypes) ShortHelpTaken(string, []string) bool                   { return false }
func (fakeTypes) Subcommands(string, []string) (map[string]string, bool) { return nil, false }

func TestFlagTypeDecisionOrder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		flag       string
		constraint *Constraint
		introspect Type // TypeUnknown: no answer
		nilTypes   bool
		want       Type
		value      any
		wantTail   []string
	}{
		{
			name: "an explicit type beats introspection and the heuristic", flag: "--force",
			constraint: &Constraint{Type: "string"}, introspect: TypeBoolean,
			want: TypeString, value: "x", wantTail: []string{"--force=x"},
		},
		{
			name: "an explicit boolean beats introspection", flag: "--amend",
			constraint: &Constraint{Type: "boolean"}, introspect: TypeString,
			want: TypeBoolean, value: true, wantTail: []string{"--amend"},
		},
		{
			name: "an explicit integer is an integer", flag: "--jobs",
			constraint: &Constraint{Type: "integer"},
			want:       TypeInteger, value: "4", wantTail: []string{"--jobs=4"},
		},
		{
			name: "an explicit type beats min and max", flag: "--level",
			constraint: &Constraint{Type: "string", Min: ptr[int64](1)},
			want:       TypeString, value: "high", wantTail: []string{"--level=high"},
		},
		{
			name: "a min alone makes an integer", flag: "--retries",
			constraint: &Constraint{Min: ptr[int64](0)}, introspect: TypeString,
			want: TypeInteger, value: 3.0, wantTail: []string{"--retries=3"},
		},
		{
			name: "a max alone makes an integer, even on a heuristic boolean name", flag: "--verbose",
			constraint: &Constraint{Max: ptr[int64](3)}, introspect: TypeBoolean,
			want: TypeInteger, value: 2.0, wantTail: []string{"--verbose=2"},
		},
		{
			name: "min and max come before a pattern", flag: "--port",
			constraint: &Constraint{Min: ptr[int64](1), Pattern: "[0-9]+"},
			want:       TypeInteger, value: "80", wantTail: []string{"--port=80"},
		},
		{
			name: "a pattern makes a string, even on a heuristic boolean name", flag: "--yes",
			constraint: &Constraint{Pattern: "y|n"}, introspect: TypeBoolean,
			want: TypeString, value: "y", wantTail: []string{"--yes=y"},
		},
		{
			name: "a constraint with no type, bounds or pattern defers to the heuristic", flag: "--dry-run",
			constraint: &Constraint{Required: true},
			want:       TypeBoolean, value: true, wantTail: []string{"--dry-run"},
		},
		{
			name: "a constraint with no type, bounds or pattern defers to introspection", flag: "--dry-run",
			constraint: &Constraint{Required: true}, introspect: TypeString,
			want: TypeString, value: "server", wantTail: []string{"--dry-run=server"},
		},
		{
			name: "introspection beats the heuristic", flag: "--force",
			introspect: TypeString,
			want:       TypeString, value: "yes", wantTail: []string{"--force=yes"},
		},
		{
			name: "introspection may call a flag an integer", flag: "--verbose",
			introspect: TypeInteger,
			want:       TypeInteger, value: "2", wantTail: []string{"--verbose=2"},
		},
		{
			name: "introspection may call a flag a boolean", flag: "--all",
			introspect: TypeBoolean,
			want:       TypeBoolean, value: true, wantTail: []string{"--all"},
		},
		{
			name: "introspection may call short -f a boolean", flag: "-f",
			introspect: TypeBoolean,
			want:       TypeBoolean, value: true, wantTail: []string{"-f"},
		},
		{
			name: "an unknown introspection answer defers to the heuristic", flag: "--quiet",
			want: TypeBoolean, value: true, wantTail: []string{"--quiet"},
		},
		{name: "the heuristic takes --no-* as a boolean", flag: "--no-verify", nilTypes: true, want: TypeBoolean, value: true, wantTail: []string{"--no-verify"}},
		{name: "the heuristic takes --enable-* as a boolean", flag: "--enable-x", nilTypes: true, want: TypeBoolean, value: true, wantTail: []string{"--enable-x"}},
		{name: "the heuristic takes --disable-* as a boolean", flag: "--disable-y", nilTypes: true, want: TypeBoolean, value: true, wantTail: []string{"--disable-y"}},
		{name: "the heuristic takes --yes as a boolean", flag: "--yes", nilTypes: true, want: TypeBoolean, value: true, wantTail: []string{"--yes"}},
		{name: "the heuristic takes -y as a boolean", flag: "-y", nilTypes: true, want: TypeBoolean, value: true, wantTail: []string{"-y"}},
		{name: "the heuristic takes --force as a boolean", flag: "--force", nilTypes: true, want: TypeBoolean, value: true, wantTail: []string{"--force"}},
		{name: "the heuristic takes --dry-run as a boolean", flag: "--dry-run", nilTypes: true, want: TypeBoolean, value: true, wantTail: []string{"--dry-run"}},
		{name: "the heuristic takes --quiet as a boolean", flag: "--quiet", nilTypes: true, want: TypeBoolean, value: true, wantTail: []string{"--quiet"}},
		{name: "the heuristic takes --verbose as a boolean", flag: "--verbose", nilTypes: true, want: TypeBoolean, value: true, wantTail: []string{"--verbose"}},
		{name: "the heuristic does not take short -f as a boolean", flag: "-f", nilTypes: true, want: TypeString, value: "Makefile", wantTail: []string{"-f", "Makefile"}},
		{name: "the heuristic does not take --nothing as a --no-* flag", flag: "--nothing", nilTypes: true, want: TypeString, value: "x", wantTail: []string{"--nothing=x"}},
		{name: "the heuristic does not take --forced as --force", flag: "--forced", nilTypes: true, want: TypeString, value: "x", wantTail: []string{"--forced=x"}},
		{name: "the heuristic does not take --enable without a dash as a boolean", flag: "--enable", nilTypes: true, want: TypeString, value: "x", wantTail: []string{"--enable=x"}},
		{name: "any other name takes a value", flag: "--file", nilTypes: true, want: TypeString, value: "a.txt", wantTail: []string{"--file=a.txt"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rule := &AllowRule{Subcommand: []string{"run", "it"}, Flags: own(tc.flag)}
			if tc.constraint != nil {
				rule.FlagConstraints = map[string]*Constraint{tc.flag: tc.constraint}
			}
			var types Helps
			if !tc.nilTypes {
				ft := fakeTypes{}
				if tc.introspect != TypeUnknown {
					ft["tool run it "+tc.flag] = tc.introspect
				}
				types = ft
			}
			p := newPolicy(t, []Tool{{Name: "tool", Binary: "/bin/tool", Allow: []*AllowRule{rule}}}, types)
			r, ok := p.Rule("tool_run_it")
			if !ok {
				t.Fatalf("rule tool_run_it not exposed")
			}
			if got := r.Flags()[0]; got.Flag != tc.flag || got.Type != tc.want {
				t.Errorf("flag %s: got type %v, want %v", got.Flag, got.Type, tc.want)
			}
			d := p.Evaluate(Call{Tool: "tool", Subcommand: sub("run", "it"), Params: map[string]any{PropertyName(tc.flag): tc.value}})
			if d.Refusal != nil {
				t.Fatalf("Evaluate refused:\n%s", d.Refusal.Text)
			}
			want := append([]string{"/bin/tool", "run", "it"}, tc.wantTail...)
			if !slices.Equal(d.Argv, want) {
				t.Errorf("argv:\n got %q\nwant %q", d.Argv, want)
			}
		})
	}
}

func TestHelpFlagsStayBooleanWhenIntrospectionDisagrees(t *testing.T) {
	t.Parallel()
	types := fakeTypes{"db -h": TypeString, "db --help": TypeString}
	p := newPolicy(t, []Tool{{Name: "db", Binary: "/usr/bin/db", Allow: []*AllowRule{{Flags: own()}}}}, types)
	r, _ := p.Rule("db")
	for _, f := range r.Flags() {
		if f.Type != TypeBoolean {
			t.Errorf("seeded %s: got type %v, want boolean", f.Flag, f.Type)
		}
	}
	d := p.Evaluate(Call{Tool: "db", Params: map[string]any{"h": "evil.example"}})
	want := "DENIED: 'db -h evil.example' is not permitted.\n\nPolicy: value of '-h' must be true or false.\n\nTo request this capability, call the 'wraptool_request_capability' tool."
	if d.Refusal == nil {
		t.Fatalf("got argv %q, want a refusal", d.Argv)
	}
	if d.Refusal.Text != want {
		t.Errorf("text:\n got %q\nwant %q", d.Refusal.Text, want)
	}
}

type refusalCase struct {
	name     string
	call     Call
	wantKind Kind
	wantText string
}

func checkRefusals(t *testing.T, p *Policy, cases []refusalCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := p.Evaluate(tc.call)
			if d.Refusal == nil {
				t.Fatalf("Evaluate allowed argv %q; want the refusal\n%s", d.Argv, tc.wantText)
			}
			if d.Allowed() {
				t.Errorf("Allowed() = true with a refusal")
			}
			if d.Argv != nil {
				t.Errorf("argv: got %q, want nil", d.Argv)
			}
			if d.Refusal.Kind != tc.wantKind {
				t.Errorf("kind: got %v, want %v", d.Refusal.Kind, tc.wantKind)
			}
			if d.Refusal.Text != tc.wantText {
				t.Errorf("text:\n got %q\nwant %q", d.Refusal.Text, tc.wantText)
			}
			wantPolicy := "\n\nPolicy: " + d.Refusal.Reason + ".\n"
			if !strings.Contains(d.Refusal.Text, wantPolicy) {
				t.Errorf("reason %q is not the text's Policy line", d.Refusal.Reason)
			}
		})
	}
}

func TestEvaluateRefuses(t *testing.T) {
	t.Parallel()
	checkRefusals(t, fixture(t), []refusalCase{
		// Not in the allowlist.
		{
			name:     "a flag missing from the allowlist is refused with the allowed flags listed",
			call:     Call{Tool: "git", Subcommand: sub("push"), Params: map[string]any{"force": true, "args": []any{"origin", "main"}}},
			wantKind: KindFlagNotAllowed,
			wantText: "DENIED: 'git push --force origin main' is not permitted.\n\nPolicy: flag '--force' is not in the allowlist for 'git push'.\nAllowed flags for 'git push': --set-upstream\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a one-letter parameter stands for a short flag",
			call:     Call{Tool: "git", Subcommand: sub("push"), Params: map[string]any{"m": "x"}},
			wantKind: KindFlagNotAllowed,
			wantText: "DENIED: 'git push -m x' is not permitted.\n\nPolicy: flag '-m' is not in the allowlist for 'git push'.\nAllowed flags for 'git push': --set-upstream\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a parameter name holding two flags is one unknown flag",
			call:     Call{Tool: "git", Subcommand: sub("push"), Params: map[string]any{"format --force": true}},
			wantKind: KindFlagNotAllowed,
			wantText: "DENIED: 'git push '--format --force'' is not permitted.\n\nPolicy: flag '--format --force' is not in the allowlist for 'git push'.\nAllowed flags for 'git push': --set-upstream\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a parameter named like bundled short flags is refused as written",
			call:     Call{Tool: "git", Subcommand: sub("push"), Params: map[string]any{"-rf": true}},
			wantKind: KindFlagNotAllowed,
			wantText: "DENIED: 'git push -rf' is not permitted.\n\nPolicy: flag '-rf' is not in the allowlist for 'git push'.\nAllowed flags for 'git push': --set-upstream\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a parameter named __proto__ is just an unknown flag",
			call:     Call{Tool: "git", Subcommand: sub("push"), Params: map[string]any{"__proto__": "x"}},
			wantKind: KindFlagNotAllowed,
			wantText: "DENIED: 'git push --__proto__=x' is not permitted.\n\nPolicy: flag '--__proto__' is not in the allowlist for 'git push'.\nAllowed flags for 'git push': --set-upstream\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a rule with no flags of its own lists (none)",
			call:     Call{Tool: "git", Subcommand: sub("pull"), Params: map[string]any{"rebase": true}},
			wantKind: KindFlagNotAllowed,
			wantText: "DENIED: 'git pull --rebase' is not permitted.\n\nPolicy: flag '--rebase' is not in the allowlist for 'git pull'.\nAllowed flags for 'git pull': (none)\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},

		// Denied.
		{
			name:     "a flag in deny_flags is denied although it is also in flags",
			call:     Call{Tool: "gcloud", Subcommand: sub("compute", "instances", "list"), Params: map[string]any{"project": "p", "quiet": true}},
			wantKind: KindFlagDenied,
			wantText: "DENIED: 'gcloud compute instances list --project=p --quiet' is not permitted.\n\nPolicy: flag '--quiet' is denied for 'gcloud compute instances list'.\nAllowed flags for 'gcloud compute instances list': --format, --filter, --project, --limit\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a flag in both flags and deny_flags is denied on another rule too",
			call:     Call{Tool: "git", Subcommand: sub("fetch"), Params: map[string]any{"force": true}},
			wantKind: KindFlagDenied,
			wantText: "DENIED: 'git fetch --force' is not permitted.\n\nPolicy: flag '--force' is denied for 'git fetch'.\nAllowed flags for 'git fetch': --all\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a deny: true constraint denies a flag",
			call:     Call{Tool: "git", Subcommand: sub("fetch"), Params: map[string]any{"prune": true}},
			wantKind: KindFlagDenied,
			wantText: "DENIED: 'git fetch --prune' is not permitted.\n\nPolicy: flag '--prune' is denied for 'git fetch'.\nAllowed flags for 'git fetch': --all\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a denied --help is refused while -h stays allowed",
			call:     Call{Tool: "git", Subcommand: sub("fetch"), Params: map[string]any{"help": true}},
			wantKind: KindFlagDenied,
			wantText: "DENIED: 'git fetch --help' is not permitted.\n\nPolicy: flag '--help' is denied for 'git fetch'.\nAllowed flags for 'git fetch': --all\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},

		// Required.
		{
			name:     "a missing required flag is refused with the allowed flags listed",
			call:     Call{Tool: "gcloud", Subcommand: sub("compute", "instances", "list"), Params: map[string]any{"format": "json"}},
			wantKind: KindRequired,
			wantText: "DENIED: 'gcloud compute instances list --format=json' is not permitted.\n\nPolicy: flag '--project' is required for 'gcloud compute instances list'.\nAllowed flags for 'gcloud compute instances list': --format, --filter, --project, --limit\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a required boolean given false is missing",
			call:     Call{Tool: "git", Subcommand: sub("tag"), Params: map[string]any{"annotate": false}},
			wantKind: KindRequired,
			wantText: "DENIED: 'git tag' is not permitted.\n\nPolicy: flag '--annotate' is required for 'git tag'.\nAllowed flags for 'git tag': --annotate\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a required boolean given the string false is missing",
			call:     Call{Tool: "git", Subcommand: sub("tag"), Params: map[string]any{"annotate": "false"}},
			wantKind: KindRequired,
			wantText: "DENIED: 'git tag' is not permitted.\n\nPolicy: flag '--annotate' is required for 'git tag'.\nAllowed flags for 'git tag': --annotate\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},

		// Values.
		{
			name:     "a pattern must match the whole value",
			call:     Call{Tool: "gcloud", Subcommand: sub("compute", "instances", "list"), Params: map[string]any{"project": "p", "filter": "abc--x"}},
			wantKind: KindValue,
			wantText: "DENIED: 'gcloud compute instances list --filter=abc--x --project=p' is not permitted.\n\nPolicy: value of '--filter' does not match pattern '[a-z]+'.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a pattern is shown as written",
			call:     Call{Tool: "git", Subcommand: sub("clone"), Params: map[string]any{"branch": "Main"}},
			wantKind: KindValue,
			wantText: "DENIED: 'git clone --branch=Main' is not permitted.\n\nPolicy: value of '--branch' does not match pattern '^[a-z]+$'.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a pattern applies to a value given as a number",
			call:     Call{Tool: "git", Subcommand: sub("clone"), Params: map[string]any{"branch": 12.0}},
			wantKind: KindValue,
			wantText: "DENIED: 'git clone --branch=12' is not permitted.\n\nPolicy: value of '--branch' does not match pattern '^[a-z]+$'.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "an integer flag refuses words",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"max-count": "five"}},
			wantKind: KindValue,
			wantText: "DENIED: 'git log --max-count=five' is not permitted.\n\nPolicy: value of '--max-count' must be an integer.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "an integer flag refuses a fraction",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"max-count": 2.5}},
			wantKind: KindValue,
			wantText: "DENIED: 'git log --max-count=2.5' is not permitted.\n\nPolicy: value of '--max-count' must be an integer.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "an integer flag refuses a fractional json.Number",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"max-count": json.Number("2.5")}},
			wantKind: KindValue,
			wantText: "DENIED: 'git log --max-count=2.5' is not permitted.\n\nPolicy: value of '--max-count' must be an integer.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "an integer flag refuses a string that is not all digits",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"max-count": "5.0"}},
			wantKind: KindValue,
			wantText: "DENIED: 'git log --max-count=5.0' is not permitted.\n\nPolicy: value of '--max-count' must be an integer.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "an integer flag refuses a string with a sign (only digits are a string integer)",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"max-count": "-5"}},
			wantKind: KindValue,
			wantText: "DENIED: 'git log --max-count=-5' is not permitted.\n\nPolicy: value of '--max-count' must be an integer.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "an integer flag refuses a boolean",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"max-count": true}},
			wantKind: KindValue,
			wantText: "DENIED: 'git log --max-count=true' is not permitted.\n\nPolicy: value of '--max-count' must be an integer.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "an integer below min is refused",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"max-count": 0.0}},
			wantKind: KindValue,
			wantText: "DENIED: 'git log --max-count=0' is not permitted.\n\nPolicy: value of '--max-count' must be >= 1.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "an integer above max is refused",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"max-count": json.Number("51")}},
			wantKind: KindValue,
			wantText: "DENIED: 'git log --max-count=51' is not permitted.\n\nPolicy: value of '--max-count' must be <= 50.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "an integer string above max is refused",
			call:     Call{Tool: "git", Subcommand: sub("clone"), Params: map[string]any{"depth": "500"}},
			wantKind: KindValue,
			wantText: "DENIED: 'git clone --depth=500' is not permitted.\n\nPolicy: value of '--depth' must be <= 50.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a boolean flag refuses other strings",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"oneline": "yes"}},
			wantKind: KindValue,
			wantText: "DENIED: 'git log --oneline=yes' is not permitted.\n\nPolicy: value of '--oneline' must be true or false.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a boolean flag refuses a number",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"oneline": 1.0}},
			wantKind: KindValue,
			wantText: "DENIED: 'git log --oneline=1' is not permitted.\n\nPolicy: value of '--oneline' must be true or false.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a string flag refuses a boolean",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"format": true}},
			wantKind: KindValue,
			wantText: "DENIED: 'git log --format=true' is not permitted.\n\nPolicy: value of '--format' must be a string.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a string flag refuses an array",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"format": []any{"a"}}},
			wantKind: KindValue,
			wantText: "DENIED: 'git log '--format=<array>'' is not permitted.\n\nPolicy: value of '--format' must be a string.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a string flag refuses an object",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"format": map[string]any{"a": 1.0}}},
			wantKind: KindValue,
			wantText: "DENIED: 'git log '--format=<object>'' is not permitted.\n\nPolicy: value of '--format' must be a string.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a short flag's value must not begin with a dash",
			call:     Call{Tool: "git", Subcommand: sub("commit"), Params: map[string]any{"m": "--amend"}},
			wantKind: KindValue,
			wantText: "DENIED: 'git commit -m --amend' is not permitted.\n\nPolicy: value of '-m' must not begin with '-'.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a short integer flag refuses a negative number",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"n": -5.0}},
			wantKind: KindValue,
			wantText: "DENIED: 'git log -n -5' is not permitted.\n\nPolicy: value of '-n' must not begin with '-'.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a long flag's value must not hold a NUL byte",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"format": "a\x00b"}},
			wantKind: KindValue,
			wantText: "DENIED: 'git log \"--format=a\\x00b\"' is not permitted.\n\nPolicy: value of '--format' contains a NUL byte.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a short flag's value must not hold a NUL byte",
			call:     Call{Tool: "git", Subcommand: sub("commit"), Params: map[string]any{"m": "a\x00"}},
			wantKind: KindValue,
			wantText: "DENIED: 'git commit -m \"a\\x00\"' is not permitted.\n\nPolicy: value of '-m' contains a NUL byte.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},

		// Positional arguments.
		{
			name:     "too many positional arguments are refused in the plural",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"args": []any{"a", "b", "c"}}},
			wantKind: KindArgCount,
			wantText: "DENIED: 'git log a b c' is not permitted.\n\nPolicy: at most 2 positional arguments are allowed for 'git log' (got 3).\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "too many positional arguments are refused in the singular",
			call:     Call{Tool: "git", Subcommand: sub("show"), Params: map[string]any{"args": []any{"a", "b"}}},
			wantKind: KindArgCount,
			wantText: "DENIED: 'git show a b' is not permitted.\n\nPolicy: at most 1 positional argument is allowed for 'git show' (got 2).\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "positional_max 0 refuses any positional argument",
			call:     Call{Tool: "git", Subcommand: sub("status"), Params: map[string]any{"args": []any{"x"}}},
			wantKind: KindArgCount,
			wantText: "DENIED: 'git status x' is not permitted.\n\nPolicy: at most 0 positional arguments are allowed for 'git status' (got 1).\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "args that are not an array are refused",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"args": "main"}},
			wantKind: KindArgCount,
			wantText: "DENIED: 'git log main' is not permitted.\n\nPolicy: value of 'args' must be an array of strings.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "args holding a number are refused",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"args": []any{1.0}}},
			wantKind: KindArgCount,
			wantText: "DENIED: 'git log 1' is not permitted.\n\nPolicy: value of 'args' must be an array of strings.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a positional argument that begins with a dash is refused",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"args": []any{"-rf"}}},
			wantKind: KindArg,
			wantText: "DENIED: 'git log -rf' is not permitted.\n\nPolicy: positional argument '-rf' looks like a flag; pass flags as named parameters.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a later positional argument that begins with a dash is refused",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"args": []any{"main", "--"}}},
			wantKind: KindArg,
			wantText: "DENIED: 'git log main --' is not permitted.\n\nPolicy: positional argument '--' looks like a flag; pass flags as named parameters.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a positional argument with a NUL byte is refused",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"args": []any{"main", "a\x00"}}},
			wantKind: KindArg,
			wantText: "DENIED: 'git log main \"a\\x00\"' is not permitted.\n\nPolicy: positional argument \"a\\x00\" contains a NUL byte.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},

		// Deny rules, allow rules, tools.
		{
			name:     "a deny rule covers a longer subcommand by prefix",
			call:     Call{Tool: "gcloud", Subcommand: sub("auth", "login")},
			wantKind: KindDenyRule,
			wantText: "DENIED: 'gcloud auth login' is not permitted.\n\nPolicy: subcommand 'auth' is denied for 'gcloud'.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a deny rule covers the bare-tool rule's positional arguments",
			call:     Call{Tool: "gcloud", Subcommand: sub(), Params: map[string]any{"args": []any{"auth", "login"}}},
			wantKind: KindDenyRule,
			wantText: "DENIED: 'gcloud auth login' is not permitted.\n\nPolicy: subcommand 'auth' is denied for 'gcloud'.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a two-token deny rule covers a subcommand followed by an argument",
			call:     Call{Tool: "git", Subcommand: sub("remote"), Params: map[string]any{"args": []any{"add", "origin", "https://example.com/r.git"}}},
			wantKind: KindDenyRule,
			wantText: "DENIED: 'git remote add origin https://example.com/r.git' is not permitted.\n\nPolicy: subcommand 'remote add' is denied for 'git'.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a deny rule refuses a subcommand that has an allow rule",
			call:     Call{Tool: "git", Subcommand: sub("config", "get"), Params: map[string]any{"args": []any{"user.name"}}},
			wantKind: KindDenyRule,
			wantText: "DENIED: 'git config get user.name' is not permitted.\n\nPolicy: subcommand 'config' is denied for 'git'.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a subcommand with no allow rule is refused",
			call:     Call{Tool: "git", Subcommand: sub("rebase"), Params: map[string]any{"args": []any{"main"}}},
			wantKind: KindNoRule,
			wantText: "DENIED: 'git rebase main' is not permitted.\n\nPolicy: 'git rebase' is not in the allowlist.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "allow rules match exactly, not by prefix",
			call:     Call{Tool: "gcloud", Subcommand: sub("compute", "instances")},
			wantKind: KindNoRule,
			wantText: "DENIED: 'gcloud compute instances' is not permitted.\n\nPolicy: 'gcloud compute instances' is not in the allowlist.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "an unknown tool is refused",
			call:     Call{Tool: "kubectl", Subcommand: sub("get", "pods")},
			wantKind: KindUnknownTool,
			wantText: "DENIED: 'kubectl get pods' is not permitted.\n\nPolicy: tool 'kubectl' is not configured.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},

		// Cwd.
		{
			name:     "a cwd that is not a string is refused",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"cwd": 5.0}},
			wantKind: KindCwd,
			wantText: "DENIED: 'git log' is not permitted.\n\nPolicy: value of 'cwd' must be a string.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a cwd with a NUL byte is refused",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"cwd": "/tmp\x00"}},
			wantKind: KindCwd,
			wantText: "DENIED: 'git log' is not permitted.\n\nPolicy: cwd contains a NUL byte.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
	})
}

func TestDenialQuotesTheCommand(t *testing.T) {
	t.Parallel()
	checkRefusals(t, fixture(t), []refusalCase{
		{
			name:     "a value with a space is single-quoted",
			call:     Call{Tool: "git", Subcommand: sub("commit"), Params: map[string]any{"m": "hello world", "S": true}},
			wantKind: KindFlagNotAllowed,
			wantText: "DENIED: 'git commit -m 'hello world' -S' is not permitted.\n\nPolicy: flag '-S' is not in the allowlist for 'git commit'.\nAllowed flags for 'git commit': -m, --amend, --author\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a single quote in a value is escaped the POSIX way",
			call:     Call{Tool: "git", Subcommand: sub("commit"), Params: map[string]any{"m": "it's", "S": true}},
			wantKind: KindFlagNotAllowed,
			wantText: "DENIED: 'git commit -m 'it'\\''s' -S' is not permitted.\n\nPolicy: flag '-S' is not in the allowlist for 'git commit'.\nAllowed flags for 'git commit': -m, --amend, --author\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "an empty value shows as ''",
			call:     Call{Tool: "git", Subcommand: sub("commit"), Params: map[string]any{"m": "", "S": true}},
			wantKind: KindFlagNotAllowed,
			wantText: "DENIED: 'git commit -m '' -S' is not permitted.\n\nPolicy: flag '-S' is not in the allowlist for 'git commit'.\nAllowed flags for 'git commit': -m, --amend, --author\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a long flag whose value has double quotes is quoted as one word",
			call:     Call{Tool: "git", Subcommand: sub("commit"), Params: map[string]any{"author": `A "B"`, "S": true}},
			wantKind: KindFlagNotAllowed,
			wantText: "DENIED: 'git commit '--author=A \"B\"' -S' is not permitted.\n\nPolicy: flag '-S' is not in the allowlist for 'git commit'.\nAllowed flags for 'git commit': -m, --amend, --author\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "shell syntax in an argument is quoted",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"args": []any{"$(reboot)", "a", "b"}}},
			wantKind: KindArgCount,
			wantText: "DENIED: 'git log '$(reboot)' a b' is not permitted.\n\nPolicy: at most 2 positional arguments are allowed for 'git log' (got 3).\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "an empty positional argument shows as ''",
			call:     Call{Tool: "git", Subcommand: sub("show"), Params: map[string]any{"args": []any{"", "x"}}},
			wantKind: KindArgCount,
			wantText: "DENIED: 'git show '' x' is not permitted.\n\nPolicy: at most 1 positional argument is allowed for 'git show' (got 2).\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
	})
}

func TestEvaluateReportsTheFirstFailure(t *testing.T) {
	t.Parallel()
	checkRefusals(t, fixture(t), []refusalCase{
		{
			name:     "a deny rule comes before a flag that is not allowed",
			call:     Call{Tool: "gcloud", Subcommand: sub("auth", "login"), Params: map[string]any{"force": true}},
			wantKind: KindDenyRule,
			wantText: "DENIED: 'gcloud auth login --force' is not permitted.\n\nPolicy: subcommand 'auth' is denied for 'gcloud'.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a deny rule on the arguments comes before a flag that is not allowed",
			call:     Call{Tool: "gcloud", Subcommand: sub(), Params: map[string]any{"bogus": true, "args": []any{"auth"}}},
			wantKind: KindDenyRule,
			wantText: "DENIED: 'gcloud --bogus auth' is not permitted.\n\nPolicy: subcommand 'auth' is denied for 'gcloud'.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a flag that is not allowed comes before a bad value",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"bogus": true, "max-count": "x"}},
			wantKind: KindFlagNotAllowed,
			wantText: "DENIED: 'git log --max-count=x --bogus' is not permitted.\n\nPolicy: flag '--bogus' is not in the allowlist for 'git log'.\nAllowed flags for 'git log': --max-count, --format, --oneline, -n\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a denied flag comes before a bad value",
			call:     Call{Tool: "git", Subcommand: sub("fetch"), Params: map[string]any{"all": "maybe", "force": true}},
			wantKind: KindFlagDenied,
			wantText: "DENIED: 'git fetch --all=maybe --force' is not permitted.\n\nPolicy: flag '--force' is denied for 'git fetch'.\nAllowed flags for 'git fetch': --all\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a bad value comes before a missing required flag",
			call:     Call{Tool: "gcloud", Subcommand: sub("compute", "instances", "list"), Params: map[string]any{"limit": 0.0}},
			wantKind: KindValue,
			wantText: "DENIED: 'gcloud compute instances list --limit=0' is not permitted.\n\nPolicy: value of '--limit' must be >= 1.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "bad values are reported in schema order",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"oneline": "yes", "n": "x", "max-count": 0.0}},
			wantKind: KindValue,
			wantText: "DENIED: 'git log --max-count=0 --oneline=yes -n x' is not permitted.\n\nPolicy: value of '--max-count' must be >= 1.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a missing required flag comes before too many positional arguments",
			call:     Call{Tool: "gcloud", Subcommand: sub("compute", "instances", "list"), Params: map[string]any{"args": []any{"a", "b", "c"}}},
			wantKind: KindRequired,
			wantText: "DENIED: 'gcloud compute instances list a b c' is not permitted.\n\nPolicy: flag '--project' is required for 'gcloud compute instances list'.\nAllowed flags for 'gcloud compute instances list': --format, --filter, --project, --limit\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "too many positional arguments come before one that begins with a dash",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"args": []any{"-a", "b", "c"}}},
			wantKind: KindArgCount,
			wantText: "DENIED: 'git log -a b c' is not permitted.\n\nPolicy: at most 2 positional arguments are allowed for 'git log' (got 3).\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a positional argument that begins with a dash comes before a bad cwd",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"args": []any{"-x"}, "cwd": 5.0}},
			wantKind: KindArg,
			wantText: "DENIED: 'git log -x' is not permitted.\n\nPolicy: positional argument '-x' looks like a flag; pass flags as named parameters.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
	})
}

func TestEvaluateIsDeterministicAcrossMapOrders(t *testing.T) {
	t.Parallel()
	p := fixture(t)
	cases := []struct {
		name     string
		call     Call
		wantText string
	}{
		{
			name: "the first bad flag by name is reported and the rest render in order",
			call: Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{
				"zeta": true, "alpha": 1.0, "max-count": "x", "format": true, "beta": "b",
			}},
			wantText: "DENIED: 'git log --max-count=x --format=true --alpha=1 --beta=b --zeta' is not permitted.\n\nPolicy: flag '--alpha' is not in the allowlist for 'git log'.\nAllowed flags for 'git log': --max-count, --format, --oneline, -n\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name: "a denied flag and unknown flags compete by name alone",
			call: Call{Tool: "git", Subcommand: sub("fetch"), Params: map[string]any{
				"zap": true, "prune": true, "force": true, "all": "x",
			}},
			wantText: "DENIED: 'git fetch --all=x --force --prune --zap' is not permitted.\n\nPolicy: flag '--force' is denied for 'git fetch'.\nAllowed flags for 'git fetch': --all\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name: "long and short unknown flags compare as flags",
			call: Call{Tool: "git", Subcommand: sub("push"), Params: map[string]any{
				"m": true, "a": true, "zz": 1.0,
			}},
			wantText: "DENIED: 'git push --zz=1 -a -m' is not permitted.\n\nPolicy: flag '--zz' is not in the allowlist for 'git push'.\nAllowed flags for 'git push': --set-upstream\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name: "the first bad value in schema order is reported",
			call: Call{Tool: "gcloud", Subcommand: sub("compute", "instances", "list"), Params: map[string]any{
				"limit": "x", "filter": "A", "format": 1.0, "project": true,
			}},
			wantText: "DENIED: 'gcloud compute instances list --format=1 --filter=A --project=true --limit=x' is not permitted.\n\nPolicy: value of '--filter' does not match pattern '[a-z]+'.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for i := range 50 {
				d := p.Evaluate(tc.call)
				if d.Refusal == nil {
					t.Fatalf("run %d: allowed argv %q", i, d.Argv)
				}
				if d.Refusal.Text != tc.wantText {
					t.Fatalf("run %d:\n got %q\nwant %q", i, d.Refusal.Text, tc.wantText)
				}
			}
		})
	}
}

func TestDashedParameterNamesMeanTheSameFlag(t *testing.T) {
	t.Parallel()
	p := fixture(t)
	cases := []struct {
		name     string
		params   map[string]any
		wantKind Kind
		wantText string
	}{
		{
			name:     "a parameter spelled --force names the denied flag --force",
			params:   map[string]any{"--force": true},
			wantKind: KindFlagDenied,
			wantText: "DENIED: 'git fetch --force' is not permitted.\n\nPolicy: flag '--force' is denied for 'git fetch'.\nAllowed flags for 'git fetch': --all\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "an allowed flag spelled with its dashes is told its parameter name",
			params:   map[string]any{"--all": true},
			wantKind: KindFlagNotAllowed,
			wantText: "DENIED: 'git fetch --all' is not permitted.\n\nPolicy: flag '--all' must be passed as the parameter 'all'.\nAllowed flags for 'git fetch': --all\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "force and --force together give one answer every time",
			params:   map[string]any{"force": true, "--force": "x"},
			wantKind: KindFlagDenied,
			wantText: "DENIED: 'git fetch --force --force=x' is not permitted.\n\nPolicy: flag '--force' is denied for 'git fetch'.\nAllowed flags for 'git fetch': --all\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for i := range 50 {
				d := p.Evaluate(Call{Tool: "git", Subcommand: sub("fetch"), Params: tc.params})
				if d.Refusal == nil {
					t.Fatalf("run %d: allowed argv %q", i, d.Argv)
				}
				if d.Refusal.Kind != tc.wantKind || d.Refusal.Text != tc.wantText {
					t.Fatalf("run %d:\n got %v %q\nwant %v %q", i, d.Refusal.Kind, d.Refusal.Text, tc.wantKind, tc.wantText)
				}
			}
		})
	}
}

func TestDenialLeavesOutNullValues(t *testing.T) {
	t.Parallel()
	checkRefusals(t, fixture(t), []refusalCase{
		{
			name:     "a null boolean is left out of the command",
			call:     Call{Tool: "git", Subcommand: sub("push"), Params: map[string]any{"set-upstream": nil, "tags": true}},
			wantKind: KindFlagNotAllowed,
			wantText: "DENIED: 'git push --tags' is not permitted.\n\nPolicy: flag '--tags' is not in the allowlist for 'git push'.\nAllowed flags for 'git push': --set-upstream\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a required flag given null is missing and left out of the command",
			call:     Call{Tool: "git", Subcommand: sub("tag"), Params: map[string]any{"annotate": nil}},
			wantKind: KindRequired,
			wantText: "DENIED: 'git tag' is not permitted.\n\nPolicy: flag '--annotate' is required for 'git tag'.\nAllowed flags for 'git tag': --annotate\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a null string value is left out of the command",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"format": nil, "args": []any{"a", "b", "c"}}},
			wantKind: KindArgCount,
			wantText: "DENIED: 'git log a b c' is not permitted.\n\nPolicy: at most 2 positional arguments are allowed for 'git log' (got 3).\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
	})
}

func TestStringFlagKeepsEveryDigitOfAJSONNumber(t *testing.T) {
	t.Parallel()
	d := fixture(t).Evaluate(Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"format": json.Number("12345678901234567890")}})
	want := []string{"/usr/bin/git", "log", "--format=12345678901234567890"}
	if !slices.Equal(d.Argv, want) {
		t.Errorf("argv:\n got %q\nwant %q", d.Argv, want)
	}
}

func TestDenialTextHasNoRawControlCharacters(t *testing.T) {
	t.Parallel()
	p := fixture(t)
	for _, name := range []string{"x\n\nPolicy: ok", "\r", "a\x00b"} {
		d := p.Evaluate(Call{Tool: "git", Subcommand: sub("push"), Params: map[string]any{name: true}})
		if d.Refusal == nil {
			t.Fatalf("parameter %q: allowed argv %q", name, d.Argv)
		}
		if strings.ContainsAny(d.Refusal.Reason, "\x00\r\n") {
			t.Errorf("parameter %q: raw control character in the Policy line %q", name, d.Refusal.Reason)
		}
	}
}

func TestDecisionRefuse(t *testing.T) {
	t.Parallel()
	p := fixture(t)
	cases := []struct {
		name     string
		call     Call
		reason   string
		wantText string
	}{
		{
			name:     "a cwd outside the roots is refused without an Allowed line",
			call:     Call{Tool: "git", Subcommand: sub("pull"), Params: map[string]any{"args": []any{"origin"}, "cwd": "/etc"}},
			reason:   "cwd '/etc' is outside the allowed roots",
			wantText: "DENIED: 'git pull origin' is not permitted.\n\nPolicy: cwd '/etc' is outside the allowed roots.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "the command shows the tool key and the flags as they would have run",
			call:     Call{Tool: "git", Subcommand: sub("log"), Params: map[string]any{"max-count": 5.0, "format": "%h %s", "args": []any{"main"}, "cwd": "/nope"}},
			reason:   "cwd '/nope' is not a directory",
			wantText: "DENIED: 'git log --max-count=5 '--format=%h %s' main' is not permitted.\n\nPolicy: cwd '/nope' is not a directory.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
		{
			name:     "a multi-token subcommand is shown with the tool key, not the binary",
			call:     Call{Tool: "gcloud", Subcommand: sub("compute", "instances", "list"), Params: map[string]any{"project": "p", "cwd": "/etc"}},
			reason:   "cwd '/etc' is outside the allowed roots",
			wantText: "DENIED: 'gcloud compute instances list --project=p' is not permitted.\n\nPolicy: cwd '/etc' is outside the allowed roots.\n\nTo request this capability, call the 'wraptool_request_capability' tool.",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := p.Evaluate(tc.call)
			if !d.Allowed() {
				t.Fatalf("Evaluate refused:\n%s", d.Refusal.Text)
			}
			got := d.Refuse(KindCwd, tc.reason)
			if got.Allowed() || got.Refusal == nil {
				t.Fatalf("Refuse left the decision allowed")
			}
			if got.Argv != nil {
				t.Errorf("argv: got %q, want nil", got.Argv)
			}
			if got.Refusal.Kind != KindCwd || got.Refusal.Reason != tc.reason {
				t.Errorf("refusal: got %v %q, want %v %q", got.Refusal.Kind, got.Refusal.Reason, KindCwd, tc.reason)
			}
			if got.Refusal.Text != tc.wantText {
				t.Errorf("text:\n got %q\nwant %q", got.Refusal.Text, tc.wantText)
			}
			if got.Rule != d.Rule || got.Cwd != d.Cwd {
				t.Errorf("rule and cwd: got %v %q, want %v %q", got.Rule, got.Cwd, d.Rule, d.Cwd)
			}
			if !d.Allowed() || d.Argv == nil {
				t.Errorf("Refuse changed the decision it was called on")
			}
		})
	}
}

func TestPolicyRules(t *testing.T) {
	t.Parallel()
	p := fixture(t)

	t.Run("exposed rules are sorted by name and a rule under a deny rule is left out", func(t *testing.T) {
		t.Parallel()
		var got []string
		for _, r := range p.Rules() {
			got = append(got, r.Name())
		}
		want := []string{
			"gcloud", "gcloud_compute_instances_list",
			"git_clone", "git_commit", "git_fetch", "git_log", "git_pull", "git_push",
			"git_remote", "git_show", "git_status", "git_tag",
		}
		if !slices.Equal(got, want) {
			t.Errorf("Rules():\n got %q\nwant %q", got, want)
		}
	})

	t.Run("Rule finds exposed rules only", func(t *testing.T) {
		t.Parallel()
		for name, want := range map[string]bool{
			"git_push": true, "gcloud": true, "gcloud_compute_instances_list": true,
			"gcloud_auth_login": false, "git_config_get": false, "git_rebase": false, "": false,
		} {
			r, ok := p.Rule(name)
			if ok != want {
				t.Errorf("Rule(%q): got ok %v, want %v", name, ok, want)
			}
			if ok && r.Name() != name {
				t.Errorf("Rule(%q).Name() = %q", name, r.Name())
			}
		}
	})

	t.Run("a rule's accessors describe it", func(t *testing.T) {
		t.Parallel()
		r, ok := p.Rule("gcloud_compute_instances_list")
		if !ok {
			t.Fatal("gcloud_compute_instances_list not exposed")
		}
		if got, want := r.Name(), "gcloud_compute_instances_list"; got != want {
			t.Errorf("Name() = %q, want %q", got, want)
		}
		if got, want := r.Tool(), "gcloud"; got != want {
			t.Errorf("Tool() = %q, want %q", got, want)
		}
		if got, want := r.Binary(), "/opt/google/bin/gcloud"; got != want {
			t.Errorf("Binary() = %q, want %q", got, want)
		}
		if got, want := r.Command(), "gcloud compute instances list"; got != want {
			t.Errorf("Command() = %q, want %q", got, want)
		}
		s := r.Subcommand()
		if want := []string{"compute", "instances", "list"}; !slices.Equal(s, want) {
			t.Errorf("Subcommand() = %q, want %q", s, want)
		}
		s[0] = "changed"
		if r.Subcommand()[0] != "compute" {
			t.Errorf("Subcommand() shares its slice with the rule")
		}
		if n, ok := r.PositionalMax(); n != 2 || !ok {
			t.Errorf("PositionalMax() = %d, %v; want 2, true", n, ok)
		}
		want := []string{
			"--format string prop=format required=false min=<nil> max=<nil> pattern=",
			"--filter string prop=filter required=false min=<nil> max=<nil> pattern=[a-z]+",
			"--project string prop=project required=true min=<nil> max=<nil> pattern=",
			"--limit integer prop=limit required=false min=1 max=50 pattern=",
			"-h boolean prop=h required=false min=<nil> max=<nil> pattern=",
			"--help boolean prop=help required=false min=<nil> max=<nil> pattern=",
		}
		var got []string
		for _, f := range r.Flags() {
			got = append(got, describeFlag(f))
		}
		if !slices.Equal(got, want) {
			t.Errorf("Flags():\n got %q\nwant %q", got, want)
		}
	})

	t.Run("PositionalMax reports no limit and a limit of zero apart", func(t *testing.T) {
		t.Parallel()
		for name, want := range map[string]struct {
			n  int
			ok bool
		}{"git_push": {-1, false}, "git_status": {0, true}, "git_show": {1, true}} {
			r, _ := p.Rule(name)
			if n, ok := r.PositionalMax(); ok != want.ok || (ok && n != want.n) {
				t.Errorf("%s: PositionalMax() = %d, %v; want %d, %v", name, n, ok, want.n, want.ok)
			}
		}
	})

	t.Run("a bare-tool rule has an empty subcommand and the tool as its command", func(t *testing.T) {
		t.Parallel()
		r, _ := p.Rule("gcloud")
		if len(r.Subcommand()) != 0 || r.Command() != "gcloud" {
			t.Errorf("got %q %q, want [] %q", r.Subcommand(), r.Command(), "gcloud")
		}
	})
}

func describeFlag(f Flag) string {
	bound := func(p *int64) string {
		if p == nil {
			return "<nil>"
		}
		return strconv.FormatInt(*p, 10)
	}
	return fmt.Sprintf("%s %v prop=%s required=%t min=%s max=%s pattern=%s",
		f.Flag, f.Type, f.Property, f.Required, bound(f.Min), bound(f.Max), f.Pattern)
}

func TestNewRefusesWhatItCannotCompile(t *testing.T) {
	t.Parallel()
	rule := func(r AllowRule) []*AllowRule { return []*AllowRule{&r} }
	cases := []struct {
		name  string
		tools []Tool
	}{
		{"a tool name that is not a token", []Tool{{Name: "-git", Binary: "/bin/git"}}},
		{"a tool listed twice", []Tool{{Name: "git", Binary: "/bin/git"}, {Name: "git", Binary: "/bin/git"}}},
		{"a subcommand token with a space", []Tool{{Name: "git", Binary: "/bin/git", Allow: rule(AllowRule{Subcommand: []string{"a b"}})}}},
		{"a flag that bundles short flags", []Tool{{Name: "git", Binary: "/bin/git", Allow: rule(AllowRule{Flags: []string{"-rf"}})}}},
		{"a flag without dashes", []Tool{{Name: "git", Binary: "/bin/git", Allow: rule(AllowRule{Flags: []string{"force"}})}}},
		{"a pattern that does not compile", []Tool{{Name: "git", Binary: "/bin/git", Allow: rule(AllowRule{
			Flags: []string{"--x"}, FlagConstraints: map[string]*Constraint{"--x": {Pattern: "("}},
		})}}},
		{"a flag whose property is args", []Tool{{Name: "git", Binary: "/bin/git", Allow: rule(AllowRule{Flags: []string{"--args"}})}}},
		{"a flag whose property is cwd", []Tool{{Name: "git", Binary: "/bin/git", Allow: rule(AllowRule{Flags: []string{"--cwd"}})}}},
		{"two flags with one property", []Tool{{Name: "git", Binary: "/bin/git", Allow: rule(AllowRule{Flags: []string{"-m", "--m"}})}}},
		{"two rules with one MCP name", []Tool{{Name: "git", Binary: "/bin/git", Allow: []*AllowRule{
			{Subcommand: []string{"pull"}}, {Subcommand: []string{"pull"}},
		}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := New(tc.tools, nil)
			if err == nil {
				t.Fatalf("New = %v, nil; want an error", p)
			}
			if !strings.HasPrefix(err.Error(), "compile policy: ") {
				t.Errorf("error %q does not start with %q", err, "compile policy: ")
			}
		})
	}
}

func TestKindString(t *testing.T) {
	t.Parallel()
	want := map[Kind]string{
		KindUnknownTool: "unknown_tool", KindDenyRule: "deny_rule", KindNoRule: "no_rule",
		KindFlagNotAllowed: "flag_not_allowed", KindFlagDenied: "flag_denied", KindValue: "value",
		KindRequired: "required", KindArgCount: "arg_count", KindArg: "arg", KindCwd: "cwd",
		Kind(0): "kind(0)", Kind(99): "kind(99)",
	}
	for k, w := range want {
		if got := k.String(); got != w {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, w)
		}
	}
}
