package config

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/wraptool/wraptool/policy"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// presetConfig is a config holding p's rules as tools.<p.CLI>, binary
// /usr/bin/true, written as a config add would.
func presetConfig(t *testing.T, p Preset) (*Config, *Options) {
	t.Helper()
	_, path, o := addToolFixture(t)
	out, _, err := PlanAddTool(path, []byte(base), NewTool{Name: p.CLI, Binary: "/usr/bin/true", Preset: &p}, o)
	if err != nil {
		t.Fatalf("preset %s %s: %v", p.CLI, p.Name, err)
	}
	c, err := parse(path, out, o, nil)
	if err != nil {
		t.Fatalf("preset %s %s does not load: %v", p.CLI, p.Name, err)
	}
	return c, o
}

// TestPresetsList: the presets the project ships, sorted, each with a
// summary and a tests file.
func TestPresetsList(t *testing.T) {
	t.Parallel()
	var got []string
	for _, p := range Presets() {
		got = append(got, p.CLI+" "+p.Name)
		if p.Summary == "" || len(p.Summary) > MaxCatalogText || CommentText(p.Summary, MaxCatalogText) != p.Summary {
			t.Errorf("preset %s %s: summary %q is not one printable line of at most %d bytes", p.CLI, p.Name, p.Summary, MaxCatalogText)
		}
		if len(p.Tests) == 0 {
			t.Errorf("preset %s %s has no tests file", p.CLI, p.Name)
		}
	}
	want := []string{"aws read", "gcloud read", "gh read", "git push-to-branch", "git read", "kubectl read"}
	if !slices.Equal(got, want) {
		t.Errorf("Presets() = %q, want %q", got, want)
	}
}

// TestPresetsAreReviewed: every preset loads and validates; nothing in it
// draws a danger, positional or value-taking warning; every flag has an
// explicit type and every value a pattern (or, for an integer, bounds), so
// check knows its value-taking without the tool; every rule limits its
// positionals; and the credential-handing subcommands are denied.
func TestPresetsAreReviewed(t *testing.T) {
	t.Parallel()
	mustDeny := map[string][][]string{
		"gh read":            {{"auth"}, {"api"}},
		"gcloud read":        {{"auth"}, {"config", "config-helper"}},
		"aws read":           {{"configure"}, {"sts", "get-session-token"}, {"sts", "assume-role"}, {"ecr", "get-login-password"}},
		"kubectl read":       {{"config"}, {"exec"}, {"create", "token"}, {"port-forward"}, {"proxy"}, {"cp"}},
		"git read":           {{"credential"}, {"config"}},
		"git push-to-branch": {{"push", "origin", "main"}, {"push", "origin", "master"}},
	}
	for _, p := range Presets() {
		t.Run(p.CLI+" "+p.Name, func(t *testing.T) {
			t.Parallel()
			c, o := presetConfig(t, p)
			if err := c.Validate(); err != nil {
				t.Fatalf("does not validate: %v", err)
			}
			for _, w := range slices.Concat(c.DangerWarnings(), c.PositionalWarnings(), c.Warnings(nil, o)) {
				t.Errorf("warning: %s", w)
			}
			tool := c.Tools[p.CLI]
			if len(tool.Allow) == 0 {
				t.Fatal("no allow rules")
			}
			for _, r := range tool.Allow {
				ac := r.ArgConstraints
				if (ac.PositionalMax == nil || *ac.PositionalMax != 0) && ac.Pattern == "" && len(ac.Patterns) == 0 {
					t.Errorf("rule %q: positionals neither none nor held by patterns", r.Subcommand)
				}
				for _, f := range r.Written() {
					k := r.FlagConstraints[f]
					switch {
					case k == nil || k.Type == "":
						t.Errorf("rule %q: flag %s has no explicit type", r.Subcommand, f)
					case k.Type == "string" && k.Pattern == "":
						t.Errorf("rule %q: flag %s takes a value no pattern holds", r.Subcommand, f)
					case k.Type == "integer" && (k.Min == nil || k.Max == nil):
						t.Errorf("rule %q: integer flag %s is not bounded", r.Subcommand, f)
					}
				}
			}
			for _, d := range mustDeny[p.CLI+" "+p.Name] {
				if !deniedRule(tool.Deny, d) {
					t.Errorf("%q is not denied", d)
				}
			}
		})
	}
}

// presetTest is one entry of a preset's tests file.
type presetTest struct {
	Cmd  any    `yaml:"cmd"`
	Want string `yaml:"want"`
}

// TestPresetTestsFiles: each tests file is a check --tests list whose
// command lines start with the preset's CLI, with at least five lines it
// must refuse and one it allows.
func TestPresetTestsFiles(t *testing.T) {
	t.Parallel()
	for _, p := range Presets() {
		var tests []presetTest
		dec := yaml.NewDecoder(bytes.NewReader(p.Tests))
		dec.KnownFields(true)
		if err := dec.Decode(&tests); err != nil {
			t.Errorf("%s %s: tests file: %v", p.CLI, p.Name, err)
			continue
		}
		deny, allow := 0, 0
		for i, tt := range tests {
			var first string
			switch cmd := tt.Cmd.(type) {
			case string:
				first, _, _ = strings.Cut(cmd, " ")
			case []any:
				if len(cmd) > 0 {
					first, _ = cmd[0].(string)
				}
			}
			if first != p.CLI {
				t.Errorf("%s %s: test %d starts with %q, want %q", p.CLI, p.Name, i, first, p.CLI)
			}
			switch tt.Want {
			case "deny":
				deny++
			case "allow":
				allow++
			default:
				t.Errorf("%s %s: test %d wants %q", p.CLI, p.Name, i, tt.Want)
			}
		}
		if deny < 5 || allow < 1 {
			t.Errorf("%s %s: %d lines denied and %d allowed, want at least 5 and 1", p.CLI, p.Name, deny, allow)
		}
	}
}

// TestPresetFilesArePlain: the preset text is written into the operator's
// config as it stands, so it is printable ASCII with LF line ends, no
// tabs, and one document whose keys are env, allow and deny.
func TestPresetFilesArePlain(t *testing.T) {
	t.Parallel()
	for _, p := range Presets() {
		for i, c := range p.Rules {
			if (c < 0x20 || c > 0x7e) && c != '\n' {
				t.Errorf("%s %s: byte %d is %#x", p.CLI, p.Name, i, c)
			}
		}
		if !bytes.HasPrefix(p.Rules, []byte("# ")) {
			t.Errorf("%s %s: the first line is not the summary comment", p.CLI, p.Name)
		}
		if _, err := p.body(); err != nil {
			t.Errorf("%v", err)
		}
	}
}

func TestLookupPreset(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		cli, name, want string
	}{
		{"gh", "read", ""},
		{"git", "push-to-branch", ""},
		{"gh", "write", `unknown preset: 'gh' has no preset 'write'; its presets: read`},
		{"git", "", `unknown preset: 'git' has no preset ''; its presets: push-to-branch, read`},
		{"curl", "read", `unknown preset: 'curl' has no presets (there are presets for aws, gcloud, gh, git, kubectl)`},
		{"g\u0456t", "read\x1b[2J", `unknown preset: "g\u0456t" has no presets`},
		{"gh", strings.Repeat("r", 300), `…(300 bytes); its presets: read`},
	} {
		p, err := LookupPreset(tt.cli, tt.name)
		switch {
		case tt.want == "" && (err != nil || p.CLI != tt.cli || p.Name != tt.name):
			t.Errorf("LookupPreset(%q, %q) = %v, %v", tt.cli, tt.name, p.Name, err)
		case tt.want != "" && (!errors.Is(err, ErrUnknownPreset) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("LookupPreset(%q, %q) error = %v, want ErrUnknownPreset holding %q", tt.cli, tt.name, err, tt.want)
		}
	}
}

// TestAddToolPresetGolden: config add with a preset writes the preset's
// rules under a comment naming it, in the file's own indentation and line
// ends, keeping every other byte; the result is compared with
// testdata/preset-*.golden (go test -update rewrites them).
func TestAddToolPresetGolden(t *testing.T) {
	t.Parallel()
	dir, path, o := addToolFixture(t)
	bin := filepath.Join(dir, "bin/tool")
	for _, tt := range []struct {
		name, cli, preset, in string
	}{
		{"gh-read", "gh", "read", "# top comment\nmcp:\n  listen: 127.0.0.1:8717  # port\ntools:\n  first:\n    binary: BIN\n    allow:\n      - subcommand: [a]\n# trailer\n"},
		{"git-push-to-branch-crlf-deep", "git", "push-to-branch", "mcp:\r\n    listen: 127.0.0.1:8717\r\ntools: {}\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := LookupPreset(tt.cli, tt.preset)
			if err != nil {
				t.Fatal(err)
			}
			in := strings.ReplaceAll(tt.in, "BIN", bin)
			out, n, err := PlanAddTool(path, []byte(in), NewTool{Name: tt.cli, Binary: bin, Preset: &p}, o)
			if err != nil {
				t.Fatal(err)
			}
			c, err := parse(path, out, o, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := len(c.Tools[tt.cli].Allow); n != want {
				t.Errorf("%d rules written, want %d", n, want)
			}
			got := strings.ReplaceAll(string(out), bin, "BIN")
			golden := filepath.Join("testdata", "preset-"+tt.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
			if !strings.Contains(got, `# Preset "`+tt.preset+`" for `+tt.cli+", reviewed by wraptool: "+p.Summary) {
				t.Errorf("no comment naming the preset")
			}
		})
	}
}

// TestAddToolPresetRefusesWhatIsNotThePreset: the after-write check holds
// the written tool to the preset's rules exactly.
func TestAddToolPresetRefusesWhatIsNotThePreset(t *testing.T) {
	t.Parallel()
	p, err := LookupPreset("gh", "read")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := presetConfig(t, p)
	tool := *c.Tools["gh"]
	if err := samePreset(&tool, &p); err != nil {
		t.Fatalf("the preset as written: %v", err)
	}
	for _, tt := range []struct {
		name   string
		change func(*Tool)
	}{
		{"a flag more", func(t *Tool) {
			r := *t.Allow[0]
			r.Flags = append(slices.Clone(r.Flags), "--web")
			t.Allow = append([]*policy.AllowRule{&r}, t.Allow[1:]...)
		}},
		{"a rule fewer", func(t *Tool) { t.Allow = t.Allow[1:] }},
		{"a deny rule fewer", func(t *Tool) { t.Deny = t.Deny[1:] }},
		{"an env", func(t *Tool) { t.Env = map[string]string{"GH_HOST": "evil.example.com"} }},
		{"a pattern loosened", func(t *Tool) {
			r := *t.Allow[0]
			r.FlagConstraints = map[string]*policy.Constraint{}
			t.Allow = append([]*policy.AllowRule{&r}, t.Allow[1:]...)
		}},
	} {
		changed := tool
		tt.change(&changed)
		if err := samePreset(&changed, &p); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
}
