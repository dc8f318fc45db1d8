package introspect

import (
	"errors"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy"
)

func TestParseOverrides(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		// want is "file:line: …" prefix of the error; "" for success.
		want string
	}{
		{"the documented example parses", `
subcommands:
  commit:
    description: "Record changes to the repository"
    flags:
      "--message":
        short: "-m"
        type: string
        description: "Commit message"
`, ""},
		{"the root is the empty key and multi-token subcommands join with spaces", `
subcommands:
  "": {description: root}
  "compute instances list":
    flags: {"--limit": {type: integer}, "-q": {type: boolean}}
`, ""},
		{"an empty file overrides nothing", "", ""},
		{"comments only override nothing", "# nothing yet\n", ""},
		{"null entries are allowed", "subcommands:\n  commit:\n  pull:\n    flags:\n      \"--rebase\":\n", ""},
		{"an unknown top-level key", "subcommand:\n  commit: {}\n", "o.yaml:1: unknown key subcommand"},
		{"an unknown flag key", "subcommands:\n  commit:\n    flags:\n      \"--message\":\n        typ: string\n", "o.yaml:5: unknown key typ"},
		{"an unknown subcommand key", "subcommands:\n  commit:\n    descripton: x\n", "o.yaml:3: unknown key descripton"},
		{"a bad type", "subcommands:\n  commit:\n    flags:\n      \"--depth\":\n        type: int\n", `o.yaml:5: type of "--depth" must be string, integer or boolean`},
		{"a short that is not -X", "subcommands:\n  commit:\n    flags:\n      \"--message\": {short: \"--m\"}\n", `o.yaml:4: short of "--message" must be -X`},
		{"a short under a short flag", "subcommands:\n  commit:\n    flags:\n      \"-m\": {short: \"-m\"}\n", `o.yaml:4: short belongs under a long flag`},
		{"one short for two flags", "subcommands:\n  commit:\n    flags:\n      \"--message\": {short: \"-m\"}\n      \"--merge\": {short: \"-m\"}\n", "o.yaml:5: -m is given to both --message and --merge"},
		{"a short that is also a key", "subcommands:\n  commit:\n    flags:\n      \"-m\": {}\n      \"--message\": {short: \"-m\"}\n", "o.yaml:5: -m is given to both -m and --message"},
		{"a flag that is not a flag", "subcommands:\n  commit:\n    flags:\n      message: {}\n", `o.yaml:4: flag "message" must be -X or --name`},
		{"a flag with a value", "subcommands:\n  commit:\n    flags:\n      \"--message=x\": {}\n", `o.yaml:4: flag "--message=x" must be -X or --name`},
		{"a subcommand token with a dash first", "subcommands:\n  \"-x\": {}\n", `o.yaml:2: subcommand "-x"`},
		{"two spaces between tokens", "subcommands:\n  \"remote  add\": {}\n", `o.yaml:2: subcommand "remote  add"`},
		{"the first problem in the file is reported", "subcommands:\n  b:\n    flags: {x: {}}\n  a:\n    flags: {y: {}}\n", `o.yaml:3: flag "x"`},
		{"two documents", "subcommands: {}\n---\nsubcommands: {}\n", "o.yaml:2: only one YAML document"},
		{"not a mapping", "- commit\n", "o.yaml:1: an overrides file must be a mapping"},
		{"a duplicate key", "subcommands:\n  commit: {}\n  commit: {}\n", "o.yaml:3: "},
		{"a wrong shape", "subcommands:\n  commit:\n    flags: [--message]\n", "o.yaml:3: "},
		{"bad YAML", "subcommands: [\n", "o.yaml:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o, err := ParseOverrides("o.yaml", []byte(tt.yaml))
			if tt.want == "" {
				if err != nil || o == nil {
					t.Fatalf("ParseOverrides: %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error %v, want one starting %q", err, tt.want)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != "o.yaml" {
				t.Errorf("error %#v is not a *ParseError naming the file", err)
			}
		})
	}
}

func TestOverridesKeys(t *testing.T) {
	t.Parallel()
	o, err := ParseOverrides("o.yaml", []byte(`
subcommands:
  "":
    flags: {"--host": {short: "-h", type: string}}
  "compute instances list":
    description: List instances
    flags: {"--limit": {type: integer, description: how many}}
`))
	if err != nil {
		t.Fatal(err)
	}
	// With no help learned at all, the overrides alone answer.
	c := &Catalog{tools: map[string]*toolHelps{"gcloud": {helps: nil, overrides: o}}}
	list := []string{"compute", "instances", "list"}
	if got, ok := c.Flag("gcloud", list, "--limit"); !ok || got != (policy.FlagHelp{Type: policy.TypeInteger, Description: "how many"}) {
		t.Errorf("--limit of a multi-token subcommand: %+v, %v", got, ok)
	}
	if got := c.Description("gcloud", list); got != "List instances" {
		t.Errorf("Description = %q", got)
	}
	if _, ok := c.Flag("gcloud", list[:2], "--limit"); ok {
		t.Errorf("an override reached the parent subcommand")
	}
	if got, ok := c.Flag("gcloud", nil, "-h"); !ok || got.Type != policy.TypeString {
		t.Errorf("the root override (key \"\") of -h: %+v, %v", got, ok)
	}
	if !c.ShortHelpTaken("gcloud", list) {
		t.Errorf("a root override giving -h to --host must take -h for every subcommand without its own")
	}
	if _, ok := c.Subcommands("gcloud", list); ok {
		t.Errorf("overrides alone do not make a help known")
	}
}
