package config

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/wraptool/wraptool/policy"
)

// presetFiles are the reviewed presets: presets/CLI-NAME.yaml holds a
// tool's allow: and deny: lists (and env: where a rule needs one), its
// first line a comment that is the summary; presets/CLI-NAME.tests.yaml
// holds the command lines it must allow and refuse, in `check --tests`
// form.
//
//go:embed presets/*.yaml
var presetFiles embed.FS

// Preset is a reviewed set of rules for one CLI, which `config add TOOL
// --preset NAME` writes instead of the commented catalog: every rule allows
// only what the preset's review found safe to hand an assistant, every
// positional and value is held by a pattern, and the subcommands that print
// or hand out credentials are denied.
type Preset struct {
	// CLI is the binary's base name the preset is for ("gh").
	CLI string
	// Name is the preset's name ("read", "push-to-branch").
	Name string
	// Summary is one line saying what it allows.
	Summary string
	// Rules is the YAML written under the tool: allow:, deny: and, for a
	// preset that needs it, env:, with the review's comments.
	Rules []byte
	// Tests is the `check --tests` file that shows what the rules allow
	// and refuse; the first word of each command line is the CLI.
	Tests []byte
}

// presetBody is what a preset's Rules hold.
type presetBody struct {
	Env   map[string]string   `yaml:"env"`
	Allow []*policy.AllowRule `yaml:"allow"`
	Deny  []*policy.DenyRule  `yaml:"deny"`
}

// Presets returns every preset, sorted by CLI then name.
func Presets() []Preset {
	names, err := fs.Glob(presetFiles, "presets/*.yaml")
	if err != nil {
		panic(err) // a constant pattern
	}
	var out []Preset
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "presets/"), ".yaml")
		if strings.HasSuffix(base, ".tests") {
			continue
		}
		cli, name, ok := strings.Cut(base, "-")
		if !ok {
			continue
		}
		rules, _ := presetFiles.ReadFile(n)
		tests, _ := presetFiles.ReadFile("presets/" + base + ".tests.yaml")
		first, _, _ := bytes.Cut(rules, []byte("\n"))
		out = append(out, Preset{
			CLI: cli, Name: name, Rules: rules, Tests: tests,
			Summary: strings.TrimSpace(strings.TrimPrefix(string(first), "#")),
		})
	}
	slices.SortFunc(out, func(a, b Preset) int {
		if c := strings.Compare(a.CLI, b.CLI); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// LookupPreset returns cli's preset name. An unknown name is
// ErrUnknownPreset, saying which presets cli has, or that it has none and
// which CLIs do.
func LookupPreset(cli, name string) (Preset, error) {
	var names, clis []string
	for _, p := range Presets() {
		if p.CLI == cli && p.Name == name {
			return p, nil
		}
		if p.CLI == cli {
			names = append(names, p.Name)
		}
		if !slices.Contains(clis, p.CLI) {
			clis = append(clis, p.CLI)
		}
	}
	if len(names) == 0 {
		return Preset{}, fmt.Errorf("%w: %s has no presets (there are presets for %s)",
			ErrUnknownPreset, quoteToken(cli, false), strings.Join(clis, ", "))
	}
	return Preset{}, fmt.Errorf("%w: %s has no preset %s; its presets: %s",
		ErrUnknownPreset, quoteToken(cli, false), quoteToken(name, false), strings.Join(names, ", "))
}

// body decodes the preset's rules strictly: unknown keys are errors, and
// there is one document.
func (p Preset) body() (presetBody, error) {
	var b presetBody
	dec := yaml.NewDecoder(bytes.NewReader(p.Rules))
	dec.KnownFields(true)
	if err := dec.Decode(&b); err != nil {
		return b, fmt.Errorf("preset %s %s: %w", p.CLI, p.Name, err)
	}
	if err := dec.Decode(new(any)); !errors.Is(err, io.EOF) {
		return b, fmt.Errorf("preset %s %s: more than one document", p.CLI, p.Name)
	}
	return b, nil
}

// presetHead is the comment line above a preset's rules.
func presetHead(p *Preset) string {
	return "# Preset " + strconv.Quote(p.Name) + " for " + p.CLI + ", reviewed by wraptool: " + CommentText(p.Summary, MaxCatalogText)
}

// presetLines writes the preset's rules indented by ind, with eol, its
// summary line left out (presetHead says it), and returns how many allow
// rules they hold.
func presetLines(p *Preset, ind, eol string) (string, int, error) {
	b, err := p.body()
	if err != nil {
		return "", 0, err
	}
	var out strings.Builder
	lines := strings.Split(strings.TrimSuffix(string(p.Rules), "\n"), "\n")
	if len(lines) > 0 && strings.HasPrefix(lines[0], "#") {
		lines = lines[1:]
	}
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			out.WriteString(eol)
			continue
		}
		out.WriteString(ind + l + eol)
	}
	return out.String(), len(b.Allow), nil
}

// samePreset checks that the tool as parsed back holds the preset's rules
// and environment exactly, and nothing else.
func samePreset(t *Tool, p *Preset) error {
	b, err := p.body()
	if err != nil {
		return err
	}
	allow := make([]*policy.AllowRule, len(t.Allow))
	for i, r := range t.Allow {
		allow[i] = unseeded(r)
	}
	switch {
	case !equalRules(allow, b.Allow):
		return errors.New("the new tool's allow rules are not the preset's")
	case !equalRules(t.Deny, b.Deny):
		return errors.New("the new tool's deny rules are not the preset's")
	case len(t.Env) != len(b.Env) || len(b.Env) > 0 && !equalRules(t.Env, b.Env):
		return errors.New("the new tool's env is not the preset's")
	}
	return nil
}

// equalRules compares decoded values, an empty list and none alike.
func equalRules[T any](a, b T) bool {
	x, err1 := yaml.Marshal(a)
	y, err2 := yaml.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// presetKeys checks the new tool's node: binary and the preset's own keys,
// nothing else.
func presetKeys(tn *yaml.Node, p *Preset) error {
	if tn == nil || tn.Kind != yaml.MappingNode {
		return errors.New("the new tool is not a mapping")
	}
	root, err := parseDocument("", p.Rules)
	if err != nil || root == nil || root.Kind != yaml.MappingNode {
		return fmt.Errorf("preset %s %s is not a mapping", p.CLI, p.Name)
	}
	want := []string{"binary"}
	for i := 0; i < len(root.Content); i += 2 {
		want = append(want, root.Content[i].Value)
	}
	var got []string
	for i := 0; i < len(tn.Content); i += 2 {
		got = append(got, tn.Content[i].Value)
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("the new tool holds %q, want %q", got, want)
	}
	return nil
}
