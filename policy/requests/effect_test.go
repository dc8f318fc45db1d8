package requests

import (
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy"
)

// commitHelps says what git commit's help says of the flags the tests use.
type commitHelps struct{}

func (commitHelps) Flag(tool string, sub []string, flag string) (policy.FlagHelp, bool) {
	if tool != "git" || strings.Join(sub, " ") != "commit" {
		return policy.FlagHelp{}, false
	}
	switch flag {
	case "-m":
		return policy.FlagHelp{Type: policy.TypeString, Description: "Use the given <msg> as the commit message."}, true
	case "--allow-empty":
		return policy.FlagHelp{Type: policy.TypeBoolean, Description: "Allow an empty commit."}, true
	case "--cleanup":
		return policy.FlagHelp{Type: policy.TypeString}, true
	}
	return policy.FlagHelp{}, false
}
func (commitHelps) Description(string, []string) string  { return "" }
func (commitHelps) ShortHelpTaken(string, []string) bool { return false }
func (commitHelps) Subcommands(tool string, sub []string) (map[string]string, bool) {
	return nil, tool == "git" && strings.Join(sub, " ") == "commit"
}

// TestRuleEffectKinds shows each flag's effect coming from the help: a
// switch is "a switch", a flag the help gives a value "takes any value",
// and a short flag nothing proves says its value counts as a positional
// argument (under positional_max 0, that it is a switch only) instead of
// "takes any value". Before, every flag the rule did not type read "takes
// any value", and an unproven -X said so too.
func TestRuleEffectKinds(t *testing.T) {
	t.Parallel()
	zero, two, two64 := 0, 2, int64(2)
	cases := []struct {
		name  string
		helps policy.Helps
		flag  string
		c     *policy.Constraint
		max   *int
		want  string
	}{
		{"a switch the help lists is a switch", commitHelps{}, "--allow-empty", nil, &zero, "a switch"},
		{"a valued short flag the help lists takes a value", commitHelps{}, "-m", nil, &zero, "takes any value"},
		{"a valued long flag the help lists takes a value", commitHelps{}, "--cleanup", nil, nil, "takes any value"},
		{"a constrained flag says so", nil, "--depth", &policy.Constraint{Min: &two64}, nil, "takes a value (constrained)"},
		{"a typed short flag is proven", nil, "-m", &policy.Constraint{Type: "string"}, &zero, "takes any value"},
		{"an unproven short flag under positional_max 0 is a switch only", nil, "-m", nil, &zero, UnprovenKind + UnprovenSwitchOnly},
		{"an unproven short flag with positionals counts as one", nil, "-m", nil, &two, UnprovenKind},
		{"an unproven short flag with unlimited positionals counts as one", nil, "-x", nil, nil, UnprovenKind},
		{"a long flag with no help takes a value, as the schema says", nil, "--cleanup", nil, nil, "takes any value"},
		{"a switch by name stays a switch", nil, "--no-verify", nil, &zero, "a switch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rule := &policy.AllowRule{Subcommand: []string{"commit"}, Flags: []string{tc.flag},
				ArgConstraints: policy.ArgConstraints{PositionalMax: tc.max}}
			if tc.c != nil {
				rule.FlagConstraints = map[string]*policy.Constraint{tc.flag: tc.c}
			}
			r := &Record{Tool: "git", Subcommand: []string{"commit"}, Flags: []string{tc.flag}}
			e := RuleEffect(tc.helps, r, rule)
			if len(e.Flags) != 1 || e.Flags[0].Kind != tc.want {
				t.Fatalf("RuleEffect(%s).Flags = %+v, want one flag of kind %q", tc.flag, e.Flags, tc.want)
			}
		})
	}
}

// TestRuleEffectLinesCommit is the newcomer's grant as approve prints it:
// git's help proves -m takes a value and --allow-empty is a switch.
func TestRuleEffectLinesCommit(t *testing.T) {
	t.Parallel()
	zero := 0
	rule := &policy.AllowRule{Subcommand: []string{"commit"}, Flags: []string{"-m", "--allow-empty"},
		ArgConstraints: policy.ArgConstraints{PositionalMax: &zero}}
	r := &Record{Tool: "git", Subcommand: []string{"commit"}, Flags: []string{"-m", "--allow-empty"}}
	got := strings.Join(RuleEffect(commitHelps{}, r, rule).Lines(), "\n")
	want := strings.Join([]string{
		"Approving grants git commit, as the rule will stand:",
		"  -m  takes any value  — Use the given <msg> as the commit message.",
		"  --allow-empty  a switch  — Allow an empty commit.",
		"  positional arguments: none (positional_max: 0; widen it by hand)",
		"  plus -h and --help, each run alone",
	}, "\n")
	if got != want {
		t.Errorf("Lines:\n got  %s\n want %s", got, want)
	}
}
