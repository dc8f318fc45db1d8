package config

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config/configtest"
)

// psqlHelps says what psql's help does: -h is the host, -l lists.
type psqlHelps struct{}

func (psqlHelps) Flag(tool string, sub []string, flag string) (policy.FlagHelp, bool) {
	switch flag {
	case "-l":
		return policy.FlagHelp{Type: policy.TypeBoolean, Description: "list available databases, then exit"}, true
	case "-P":
		return policy.FlagHelp{Type: policy.TypeString, Description: "set printing option VAR to ARG"}, true
	}
	return policy.FlagHelp{}, false
}
func (psqlHelps) Description(string, []string) string                    { return "the PostgreSQL interactive terminal" }
func (psqlHelps) ShortHelpTaken(tool string, _ []string) bool            { return tool == "psql" }
func (psqlHelps) Subcommands(string, []string) (map[string]string, bool) { return nil, false }

func TestLoadFileIntrospectStep(t *testing.T) {
	t.Parallel()
	path, dir := loadFixture(t)
	configtest.WriteFile(t, path, strings.ReplaceAll(base+"tools:\n  psql:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: []\n        flags: [-l, -P]\n"+
		"  git:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: [pull]\n", "$T", dir), 0o600)
	var gotForced []bool
	introspect := func(ctx context.Context, c *Config, forced bool) (policy.Helps, error) {
		gotForced = append(gotForced, forced)
		return psqlHelps{}, nil
	}
	l := load(t, path, &LoadOptions{Introspect: introspect, Forced: true})
	if !slices.Equal(gotForced, []bool{true}) {
		t.Errorf("Introspect called with forced %v, want [true]", gotForced)
	}
	psql := l.Config.Tools["psql"].Allow[0]
	if !slices.Equal(psql.Flags, []string{"-l", "-P", "--help"}) || !slices.Equal(psql.Seeded, []string{"--help"}) {
		t.Errorf("psql flags %q, seeded %q: -h must not be seeded where it is the host", psql.Flags, psql.Seeded)
	}
	if git := l.Config.Tools["git"].Allow[0]; !slices.Equal(git.Seeded, []string{"-h", "--help"}) {
		t.Errorf("git seeded %q: both help flags stay", git.Seeded)
	}
	r, _ := l.Policy.Rule("psql")
	if r.Description() != "the PostgreSQL interactive terminal" {
		t.Errorf("rule description %q", r.Description())
	}
	for _, f := range r.Flags() {
		if f.Flag == "-P" && (f.Unproven || f.Type != policy.TypeString) {
			t.Errorf("-P: unproven %v type %v; the help proves it takes a value", f.Unproven, f.Type)
		}
	}
	if len(l.Warnings) != 0 || l.Helps == nil {
		t.Errorf("warnings %v (the help proves -P), helps %v", l.Warnings, l.Helps)
	}

	// Without the step, -l and -P are unproven and warned about.
	if l := load(t, path, nil); len(l.Warnings) != 2 || !strings.Contains(l.Warnings[1].Msg, "-P has no type") {
		t.Errorf("without introspection: warnings %v", l.Warnings)
	}

	// A malformed overrides file (the step's error) rejects the load.
	bad := func(context.Context, *Config, bool) (policy.Helps, error) {
		return nil, errors.New("overrides.yaml:3: unknown field")
	}
	if _, err := LoadFile(t.Context(), path, &LoadOptions{Paths: &Options{Home: dir}, Introspect: bad}); err == nil || !strings.Contains(err.Error(), "overrides.yaml:3") {
		t.Errorf("a failing introspect step: %v", err)
	}
}
