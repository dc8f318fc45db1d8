package requests

import (
	"slices"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/danger"
)

// listedHelps lists every flag as taking a value (so no mark is shown),
// with aws's help line for --endpoint-url.
type listedHelps struct{}

func (listedHelps) Flag(tool string, sub []string, flag string) (policy.FlagHelp, bool) {
	if tool == "aws" && flag == "--endpoint-url" {
		return policy.FlagHelp{Type: policy.TypeString, Description: "Override command's default URL with the given URL."}, true
	}
	return policy.FlagHelp{Type: policy.TypeString}, true
}
func (listedHelps) Description(string, []string) string  { return "" }
func (listedHelps) ShortHelpTaken(string, []string) bool { return false }
func (listedHelps) Subcommands(string, []string) (map[string]string, bool) {
	return nil, true
}

// longFile is a flag whose name ends in -file beyond what a screen shows.
var longFile = "--" + strings.Repeat("a", 250) + "-file"

// TestRuleEffectDanger shows each flag's catalog classes beside it in
// Lines, effect words with each class, and Unconfirmed listing exactly the
// grave flags the request names whose value no pattern holds. The class
// comes from the catalog by the flag's bytes: a flag spelled with control
// or bidirectional characters gets only what the catalog's names match,
// and words in the flag pass for no class.
func TestRuleEffectDanger(t *testing.T) {
	t.Parallel()
	zero := 0
	cases := []struct {
		name        string
		cli         string // "" uses RuleEffect (the tool key)
		tool        string
		sub         []string
		ruleFlags   []string
		requested   []string
		constraints map[string]*policy.Constraint
		line        string // the flag's line in Lines (the first flag's)
		unconfirmed []string
	}{
		{name: "aws --endpoint-url sends the credentials and asks for a confirmation",
			tool: "aws", sub: []string{"s3", "ls"}, ruleFlags: []string{"--endpoint-url"}, requested: []string{"--endpoint-url"},
			line:        "  --endpoint-url  takes any value  — Override command's default URL with the given URL.  ! sends-credentials: sends your credentials to the host it names",
			unconfirmed: []string{"--endpoint-url (sends-credentials)"}},
		{name: "a pattern that holds the value needs no confirmation, and the line says it holds it",
			tool: "aws", sub: []string{"s3", "ls"}, ruleFlags: []string{"--endpoint-url"}, requested: []string{"--endpoint-url"},
			constraints: map[string]*policy.Constraint{"--endpoint-url": {Pattern: `https://s3\.internal\.example\.com`}},
			line:        "  --endpoint-url  takes a value (constrained)  — Override command's default URL with the given URL.  ! sends-credentials: sends your credentials to the host it names " + HeldNote},
		{name: "a pattern that lets another host through holds nothing: still unconfirmed",
			tool: "aws", sub: []string{"s3", "ls"}, ruleFlags: []string{"--endpoint-url"}, requested: []string{"--endpoint-url"},
			constraints: map[string]*policy.Constraint{"--endpoint-url": {Pattern: `https://.*\.example\.com`}},
			line:        "  --endpoint-url  takes a value (constrained)  — Override command's default URL with the given URL.  ! sends-credentials: sends your credentials to the host it names",
			unconfirmed: []string{"--endpoint-url (sends-credentials)"}},
		{name: "a min and max hold no host: still unconfirmed",
			tool: "psql", ruleFlags: []string{"-h"}, requested: []string{"-h"},
			constraints: map[string]*policy.Constraint{"-h": {Type: "string", Min: new(int64)}},
			line:        "  -h  takes a value (constrained)  ! sends-credentials: sends your credentials to the host it names",
			unconfirmed: []string{"-h (sends-credentials)"}},
		{name: "psql -d by its catalog entry",
			tool: "psql", ruleFlags: []string{"-d"}, requested: []string{"-d"}, constraints: map[string]*policy.Constraint{"-d": {Type: "string"}},
			line:        "  -d  takes any value  ! sends-credentials: sends your credentials to the host it names",
			unconfirmed: []string{"-d (sends-credentials)"}},
		{name: "a flag already in the rule is shown but not asked again",
			tool: "aws", sub: []string{"s3", "ls"}, ruleFlags: []string{"--endpoint-url", "--recursive"}, requested: []string{"--recursive"},
			line: "  --endpoint-url  takes any value  — Override command's default URL with the given URL.  ! sends-credentials: sends your credentials to the host it names"},
		{name: "writes-files is shown and is not grave",
			tool: "mytool", sub: []string{"get"}, ruleFlags: []string{"--output"}, requested: []string{"--output"},
			line: "  --output  takes any value  ! writes-files: writes a file it names"},
		{name: "a generic --exec name runs code",
			tool: "mytool", sub: []string{"run"}, ruleFlags: []string{"--exec-cmd"}, requested: []string{"--exec-cmd"},
			line:        "  --exec-cmd  takes any value  ! runs-code: runs a program it names, with your credentials",
			unconfirmed: []string{"--exec-cmd (runs-code)"}},
		{name: "git -c on the bare tool carries both of its classes, gravest first",
			tool: "git", ruleFlags: []string{"-c"}, requested: []string{"-c"}, constraints: map[string]*policy.Constraint{"-c": {Type: "string"}},
			line:        "  -c  takes any value  ! sends-credentials: sends your credentials to the host it names; runs-code: runs a program it names, with your credentials",
			unconfirmed: []string{"-c (sends-credentials, runs-code)"}},
		{name: "git log -c is another flag: no class",
			tool: "git", sub: []string{"log"}, ruleFlags: []string{"-c"}, requested: []string{"-c"}, constraints: map[string]*policy.Constraint{"-c": {Type: "boolean"}},
			line: "  -c  a switch"},
		{name: "a tool key the catalog does not know is read by its binary",
			cli: danger.CLI("mygit", "/usr/bin/git"), tool: "mygit", ruleFlags: []string{"-c"}, requested: []string{"-c"}, constraints: map[string]*policy.Constraint{"-c": {Type: "string"}},
			line:        "  -c  takes any value  ! sends-credentials: sends your credentials to the host it names; runs-code: runs a program it names, with your credentials",
			unconfirmed: []string{"-c (sends-credentials, runs-code)"}},
		{name: "by its key alone that tool is unknown",
			tool: "mygit", ruleFlags: []string{"-c"}, requested: []string{"-c"}, constraints: map[string]*policy.Constraint{"-c": {Type: "string"}},
			line: "  -c  takes any value"},
		{name: "a bidi override after a generic name is escaped, and makes a name no tool reads as that flag: no class",
			tool: "mytool", sub: []string{"get"}, ruleFlags: []string{"--endpoint\u202eevil"}, requested: []string{"--endpoint\u202eevil"},
			line: `  --endpoint\u202eevil  takes any value`},
		{name: "a control character inside a catalogued name makes another flag, with no class",
			tool: "psql", ruleFlags: []string{"-\x1b[2Jh"}, requested: []string{"-\x1b[2Jh"},
			line: `  -\x1b[2Jh  takes any value`},
		{name: "a flag that writes a class into its own name gets none",
			tool: "mytool", sub: []string{"get"}, ruleFlags: []string{"--safe\u2028! writes-files"}, requested: []string{"--safe\u2028! writes-files"},
			line: `  --safe\u2028! writes-files  takes any value`},
		{name: "a flag too long to show whole is looked up by all of it, not by what is shown",
			tool: "mytool", sub: []string{"get"}, ruleFlags: []string{longFile}, requested: []string{longFile},
			line: "  " + Token(longFile) + "  takes any value  ! reads-files: reads a file it names"},
		{name: "a flag given with its value is looked up by its name",
			tool: "aws", sub: []string{"s3", "ls"}, ruleFlags: []string{"--endpoint-url=https://evil.example"}, requested: []string{"--endpoint-url=https://evil.example"},
			line:        "  --endpoint-url=https://evil.example  takes any value  ! sends-credentials: sends your credentials to the host it names",
			unconfirmed: []string{"--endpoint-url=https://evil.example (sends-credentials)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rule := &policy.AllowRule{Subcommand: tc.sub, Flags: tc.ruleFlags, FlagConstraints: tc.constraints,
				ArgConstraints: policy.ArgConstraints{PositionalMax: &zero}}
			r := &Record{Tool: tc.tool, Subcommand: tc.sub, Flags: tc.requested}
			e := RuleEffect(listedHelps{}, r, rule)
			if tc.cli != "" {
				e = RuleEffectFor(listedHelps{}, tc.cli, r, rule)
			}
			lines := e.Lines()
			if got := lines[1]; got != tc.line {
				t.Errorf("Lines()[1]:\n got  %q\n want %q", got, tc.line)
			}
			if lines[0] != "Approving grants "+e.Command+", as the rule will stand:" {
				t.Errorf("Lines()[0] = %q, want the heading first", lines[0])
			}
			if got := e.Unconfirmed(); !slices.Equal(got, tc.unconfirmed) {
				t.Errorf("Unconfirmed() = %q, want %q", got, tc.unconfirmed)
			}
		})
	}
}

// TestEffectSubcommandDanger shows a catalogued subcommand's own line,
// right below the heading, and that a grave one is always unconfirmed
// (nothing can hold what it prints) while a lesser one is not.
func TestEffectSubcommandDanger(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		danger      danger.Classes
		line        string
		unconfirmed []string
	}{
		{"a subcommand that prints the credentials", danger.Of(danger.PrintsCredentials),
			"  ! the subcommand itself: prints-credentials: prints your credentials to the assistant",
			[]string{"the subcommand gh auth token itself (prints-credentials)", "--hostname (sends-credentials)"}},
		{"a subcommand that writes files", danger.Of(danger.WritesFiles),
			"  ! the subcommand itself: writes-files: writes a file it names",
			[]string{"--hostname (sends-credentials)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := Effect{Command: "gh auth token", Danger: tc.danger, Positional: "none",
				Flags: []EffectFlag{{Flag: "--hostname", Kind: "takes any value", Danger: danger.Of(danger.SendsCredentials), Requested: true}}}
			lines := e.Lines()
			if lines[1] != tc.line {
				t.Errorf("Lines()[1]:\n got  %q\n want %q", lines[1], tc.line)
			}
			if got := e.Unconfirmed(); !slices.Equal(got, tc.unconfirmed) {
				t.Errorf("Unconfirmed() = %q, want %q", got, tc.unconfirmed)
			}
		})
	}
}

// TestDangerRefusal names the request, each flag with its classes, and
// the option that confirms, with the request's id escaped.
func TestDangerRefusal(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, id   string
		unconf     []string
		option     string
		want       string
		notContain string
	}{
		{"the CLI's option", "req_1a2b3c4d", []string{"--endpoint-url (sends-credentials)"}, "--i-know",
			"not approved, req_1a2b3c4d stays pending: it allows what can hand your credentials away, and no pattern holds it: --endpoint-url (sends-credentials); approve with --i-know if you mean it", ""},
		{"the API's option, two findings", "req_1a2b3c4d", []string{"the subcommand gh auth token itself (prints-credentials)", "-c (sends-credentials, runs-code)"}, "i_know",
			"not approved, req_1a2b3c4d stays pending: it allows what can hand your credentials away, and no pattern holds it: the subcommand gh auth token itself (prints-credentials), -c (sends-credentials, runs-code); approve with i_know if you mean it", ""},
		{"a hostile id is escaped", "req_\x1b[2J\u202e", []string{"-h (sends-credentials)"}, "i_know",
			`not approved, req_\x1b[2J\u202e stays pending: it allows what can hand your credentials away, and no pattern holds it: -h (sends-credentials); approve with i_know if you mean it`, "\x1b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := DangerRefusal(tc.id, tc.unconf, tc.option)
			if got != tc.want {
				t.Errorf("DangerRefusal:\n got  %q\n want %q", got, tc.want)
			}
			if tc.notContain != "" && strings.Contains(got, tc.notContain) {
				t.Errorf("DangerRefusal = %q, carries %q raw", got, tc.notContain)
			}
		})
	}
}

// TestExactLinesForDanger shows the classes of an exact call's flags and
// subcommand, escaped, one line each after the command.
func TestExactLinesForDanger(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		cli   string
		sub   []string
		flags []string
		want  []string // the lines after the command and its directory
	}{
		{"aws --endpoint-url", "aws", []string{"s3", "ls"}, []string{"--endpoint-url"},
			[]string{"  ! --endpoint-url: sends-credentials: sends your credentials to the host it names"}},
		{"a flag repeated is shown once, its value ignored", "aws", []string{"s3", "ls"}, []string{"--endpoint-url=x", "--endpoint-url"},
			[]string{"  ! --endpoint-url: sends-credentials: sends your credentials to the host it names"}},
		{"harmless flags add nothing", "git", []string{"status"}, []string{"--short"}, nil},
		{"a hostile flag name is no flag the catalog knows", "mytool", []string{"get"}, []string{"--endpoint\u202e"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &Record{Tool: "t", Subcommand: tc.sub, Flags: tc.flags,
				Call: &Call{Tool: "t_x", Command: append([]string{"t"}, tc.flags...), Cwd: "/w"}}
			got := ExactLinesFor(tc.cli, r, "")[3:]
			if !slices.Equal(got, tc.want) {
				t.Errorf("ExactLinesFor(...)[3:] = %q, want %q", got, tc.want)
			}
			if plain := ExactLines(r.Call, ""); len(plain) != 3 {
				t.Errorf("ExactLines = %q, want the three lines without classes", plain)
			}
		})
	}
}

// TestFlagsUnderTheSubcommandThePositionalsReach: wraptool writes flags
// before positionals, and kubectl applies them to the subcommand the
// positionals name, so a rule for kubectl config given view runs
// kubectl config --raw=1 view, which prints the cluster's token. The flag
// is classed under the path the positionals reach, in a rule's effect and
// in an exact call.
func TestFlagsUnderTheSubcommandThePositionalsReach(t *testing.T) {
	t.Parallel()
	rule := &policy.AllowRule{Subcommand: []string{"config"}, Flags: []string{"--raw"},
		ArgConstraints: policy.ArgConstraints{Patterns: []string{"view|current-context"}}}
	r := &Record{ID: "req_1a2b3c4d", Tool: "kubectl", Subcommand: []string{"config"}, Flags: []string{"--raw"}}
	if got := RuleEffectFor(nil, "kubectl", r, rule).Unconfirmed(); !slices.Equal(got, []string{"--raw (prints-credentials)"}) {
		t.Errorf("rule effect: Unconfirmed() = %q, want --raw (prints-credentials)", got)
	}
	held := *rule
	held.ArgConstraints = policy.ArgConstraints{Patterns: []string{"current-context"}}
	if got := RuleEffectFor(nil, "kubectl", r, &held).Unconfirmed(); len(got) != 0 {
		t.Errorf("positionals that cannot be view: Unconfirmed() = %q, want none", got)
	}
	exact := *r
	exact.Call = &Call{Tool: "kubectl_config", Arguments: []byte(`{"args":["view"],"raw":"1"}`),
		Command: []string{"/usr/bin/kubectl", "config", "--raw=1", "view"}, Cwd: "/w"}
	if got, hidden := ExactUnconfirmed("kubectl", &exact); hidden || !slices.Equal(got, []string{"--raw (prints-credentials)"}) {
		t.Errorf("exact call: ExactUnconfirmed = %q (hidden %v), want --raw (prints-credentials)", got, hidden)
	}
}
