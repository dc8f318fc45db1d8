package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy/danger"
)

// uncommentCatalog turns every commented rule of a catalog into a live
// one, as an operator uncommenting each would: the "# " before
// "- subcommand:", "flags:" and "arg_constraints:" goes.
func uncommentCatalog(text string) string {
	lines := strings.SplitAfter(text, "\n")
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		for _, live := range []string{"# - subcommand:", "#   flags:", "#   arg_constraints:"} {
			if strings.HasPrefix(trimmed, live) {
				lines[i] = l[:len(l)-len(trimmed)] + strings.TrimPrefix(trimmed, "# ")
			}
		}
	}
	return strings.Join(lines, "")
}

func manyFlags(n int) []string {
	var out []string
	for i := range n {
		out = append(out, "--flag-number-"+strings.Repeat("x", i%7)+string(rune('a'+i%26)))
	}
	return out
}

// TestCatalogLinesStayShortAndUncommentToValidRules writes catalogs a
// hostile or merely verbose help could produce, at shallow and deep
// indentation: every comment line is under 100 characters, and uncommenting every
// rule gives a config that loads, each rule allowing no positional.
func TestCatalogLinesStayShortAndUncommentToValidRules(t *testing.T) {
	t.Parallel()
	dir, path, o := addToolFixture(t)
	for _, tt := range []struct {
		name  string
		ind   string // the tools' indentation step
		rules []CatalogRule
		want  int // rules written
	}{
		{"a flag list longer than a line wraps", "  ",
			[]CatalogRule{{Subcommand: []string{"commit"}, Description: "Record changes", Flags: manyFlags(60)}}, 1},
		{"a description of one 120-character word is cut into pieces", "  ",
			[]CatalogRule{{Subcommand: []string{"x"}, Description: strings.Repeat("w", 200)}}, 1},
		{"a flag longer than a line is left out, not cut", "  ",
			[]CatalogRule{{Subcommand: []string{"x"}, Flags: []string{"--" + strings.Repeat("f", 90), "--ok"}}}, 1},
		{"a subcommand too long for its line is left out", "  ",
			[]CatalogRule{{Subcommand: []string{strings.Repeat("s", 90)}}, {Subcommand: []string{"ok"}}}, 1},
		{"a path whose tool name would pass 64 characters is left out", "  ",
			[]CatalogRule{{Subcommand: []string{strings.Repeat("s", 62)}}, {Subcommand: []string{strings.Repeat("s", 61)}}}, 1},
		{"names outside the rules are left out", "  ",
			[]CatalogRule{{Subcommand: []string{"a b"}}, {Subcommand: []string{"-x"}}, {Subcommand: []string{"ok"}, Flags: []string{"--bad flag", "-\n"}}}, 1},
		{"hostile descriptions stay comments", "  ", hostileRules(), len(hostile)},
		{"the bare tool's root flags", "  ", []CatalogRule{{Subcommand: []string{}, Flags: manyFlags(250)}}, 1},
		{"deep indentation", "        ", []CatalogRule{{Subcommand: []string{"pr", "list"}, Description: strings.Repeat("long ", 30), Flags: manyFlags(40)}}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := strings.ReplaceAll("mcp:\n"+tt.ind+"listen: 127.0.0.1:8717\ntools:\n", "$T", dir)
			out, n, err := PlanAddTool(path, []byte(in), NewTool{Name: "gh", Binary: dir + "/bin/tool", Catalog: tt.rules}, o)
			if err != nil {
				t.Fatal(err)
			}
			if n != tt.want {
				t.Errorf("%d rules written, want %d", n, tt.want)
			}
			for _, l := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(strings.TrimSpace(l), "#") && len(l) >= 100 {
					t.Errorf("line of %d characters: %q", len(l), l)
				}
			}
			c, err := parse(path, []byte(uncommentCatalog(string(out))), o, nil)
			if err != nil {
				t.Fatalf("every rule uncommented: %v\n%s", err, uncommentCatalog(string(out)))
			}
			allow := c.Tools["gh"].Allow
			if len(allow) != tt.want {
				t.Errorf("every rule uncommented gives %d rules, want %d", len(allow), tt.want)
			}
			for _, r := range allow {
				if p := r.ArgConstraints.PositionalMax; p == nil || *p != 0 {
					t.Errorf("rule %q: positional_max %v, want 0", r.Subcommand, p)
				}
				if len(r.Flags) != len(r.Seeded) {
					t.Errorf("rule %q allows %q, want the help flags alone", r.Subcommand, r.Flags)
				}
			}
			if w := slices.Concat(c.Warnings(nil, o), c.PositionalWarnings()); len(w) != 0 {
				t.Errorf("warnings: %v", w)
			}
		})
	}
}

func hostileRules() []CatalogRule {
	var out []CatalogRule
	for i, h := range hostile {
		out = append(out, CatalogRule{Subcommand: []string{"c" + string(rune('a'+i))}, Description: h})
	}
	return out
}

// TestPositionalWarnings: a rule that takes positionals with neither a
// limit nor a pattern is warned about, with its line and the fix.
func TestPositionalWarnings(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	for _, tt := range []struct {
		name, args string
		warn       bool
	}{
		{"no arg_constraints", "", true},
		{"an empty arg_constraints", "        arg_constraints: {}\n", true},
		{"positional_max: 0", "        arg_constraints: {positional_max: 0}\n", false},
		{"a positional_max above 0", "        arg_constraints: {positional_max: 2}\n", false},
		{"a pattern", "        arg_constraints: {pattern: \"[a-z]+\"}\n", false},
		{"patterns", "        arg_constraints: {patterns: [origin]}\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := mustParse(t, dir, base+"tools:\n  git:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: [log]\n        flags: [--oneline]\n"+tt.args)
			var got []string
			for _, w := range c.PositionalWarnings() {
				got = append(got, w.String())
			}
			if !tt.warn {
				if len(got) != 0 {
					t.Errorf("warnings %q, want none", got)
				}
				return
			}
			want := dir + "/config.yaml:7: tools.git.allow[0]: rule git_log (subcommand [log]) takes any number of positional arguments"
			if len(got) != 1 || !strings.HasPrefix(got[0], want) || !strings.Contains(got[0], "arg_constraints: { positional_max: 0 }") {
				t.Errorf("warnings %q, want one starting %q that names the fix", got, want)
			}
		})
	}
}

// TestCatalogMarksDangers: a catalog rule whose flags or subcommand the
// danger catalog classes gets a "careful:" comment naming each with its
// classes, within the line width; git's root -c is marked on the bare
// tool and not under log; the lines stay comments when the rules are
// uncommented.
func TestCatalogMarksDangers(t *testing.T) {
	t.Parallel()
	dir, path, o := addToolFixture(t)
	bin := dir + "/bin/tool"
	generic := []string{"--host", "--hostname", "--server", "--url", "--api-url", "--config", "--kubeconfig",
		"--profile", "--context", "--exec-cmd", "--output", "--template", "--key-file", "--plain"}
	for _, tt := range []struct {
		name, tool, ind string
		rules           []CatalogRule
		want            string // the rules' lines, indented as written under allow:
	}{
		{"psql's connection flags on the bare tool", "psql", "  ",
			[]CatalogRule{{Subcommand: []string{}, Flags: []string{"-h", "--port", "-d", "--echo-all"}}},
			"      # - subcommand: []\n" +
				"      #   flags: []                     # has -h --port -d --echo-all\n" +
				"      #   careful: -h sends-credentials; -d sends-credentials\n" +
				"      #   arg_constraints: { positional_max: 0 }\n"},
		{"aws --endpoint-url under a subcommand", "aws", "  ",
			[]CatalogRule{{Subcommand: []string{"s3", "ls"}, Description: "List objects", Flags: []string{"--recursive", "--endpoint-url"}}},
			"      # - subcommand: [s3, ls]          # List objects\n" +
				"      #   flags: []                     # has --recursive --endpoint-url\n" +
				"      #   careful: --endpoint-url sends-credentials\n" +
				"      #   arg_constraints: { positional_max: 0 }\n"},
		{"git -c at the root, not under log", "git", "  ",
			[]CatalogRule{{Subcommand: []string{}, Flags: []string{"-c", "-C"}}, {Subcommand: []string{"log"}, Flags: []string{"-c"}}},
			"      # - subcommand: []\n" +
				"      #   flags: []                     # has -c -C\n" +
				"      #   careful: -c sends-credentials, runs-code; -C runs-code\n" +
				"      #   arg_constraints: { positional_max: 0 }\n" +
				"      # - subcommand: [log]\n" +
				"      #   flags: []                     # has -c\n" +
				"      #   arg_constraints: { positional_max: 0 }\n"},
		{"generic names wrap between entries", "mytool", "  ",
			[]CatalogRule{{Subcommand: []string{"x"}, Flags: generic}},
			"      # - subcommand: [x]\n" +
				"      #   flags: []                     # has --host --hostname --server --url --api-url --config\n" +
				"      #                                 # --kubeconfig --profile --context --exec-cmd --output\n" +
				"      #                                 # --template --key-file --plain\n" +
				"      #   careful: --host sends-credentials; --hostname sends-credentials;\n" +
				"      #            --server sends-credentials; --url sends-credentials;\n" +
				"      #            --api-url sends-credentials; --config sends-credentials, reads-files;\n" +
				"      #            --kubeconfig sends-credentials, reads-files; --profile sends-credentials;\n" +
				"      #            --context sends-credentials; --exec-cmd runs-code; --output writes-files;\n" +
				"      #            --template reads-files; --key-file reads-files\n" +
				"      #   arg_constraints: { positional_max: 0 }\n"},
		{"deep indentation wraps within the width", "mytool", "          ",
			[]CatalogRule{{Subcommand: []string{"x"}, Flags: []string{"--kubeconfig", "--config", "--" + strings.Repeat("k", 50) + "-file"}}},
			"                              # - subcommand: [x]\n" +
				"                              #   flags: []                     # has --kubeconfig --config\n" +
				"                              #   careful: --kubeconfig sends-credentials, reads-files;\n" +
				"                              #            --config sends-credentials, reads-files\n" +
				"                              #   arg_constraints: { positional_max: 0 }\n"},
		{"an unread path marks no flags", "aws", "  ",
			[]CatalogRule{{Subcommand: []string{"s3"}, Flags: []string{"--endpoint-url"}, Unread: true}},
			"      # - subcommand: [s3]\n" +
				"      #   flags: []                     # help not read\n" +
				"      #   arg_constraints: { positional_max: 0 }\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := "mcp:\n" + tt.ind + "listen: 127.0.0.1:8717\ntools:\n"
			out, _, err := PlanAddTool(path, []byte(in), NewTool{Name: tt.tool, Binary: bin, Catalog: tt.rules}, o)
			if err != nil {
				t.Fatal(err)
			}
			_, rules, _ := strings.Cut(string(out), "allow:\n")
			if rules != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", rules, tt.want)
			}
			for _, l := range strings.Split(string(out), "\n") {
				if len(l) > MaxCatalogLine {
					t.Errorf("line of %d characters: %q", len(l), l)
				}
			}
			c, err := parse(path, []byte(uncommentCatalog(string(out))), o, nil)
			if err != nil {
				t.Fatalf("uncommented: %v", err)
			}
			for _, r := range c.Tools[tt.tool].Allow {
				if len(r.Written()) != 0 {
					t.Errorf("rule %q allows %q once uncommented", r.Subcommand, r.Written())
				}
			}
		})
	}
}

// TestCatalogMarksSubcommand: a rule whose subcommand the catalog classes
// (gh auth token) is marked, whatever its flags. The catalog is given, so
// the test holds whichever entries package danger has.
func TestCatalogMarksSubcommand(t *testing.T) {
	t.Parallel()
	cat := fakeSubcommands{subs: map[string]danger.Finding{"gh auth token": {Classes: danger.Of(danger.PrintsCredentials)}}}
	rules := []CatalogRule{
		{Subcommand: []string{"auth", "token"}, Description: "Print the auth token", Flags: []string{"--hostname"}},
		{Subcommand: []string{"auth", "status"}},
	}
	got, n := catalogLines("gh", "gh", rules, 6, "\n", cat)
	want := "      # - subcommand: [auth, token]     # Print the auth token\n" +
		"      #   flags: []                     # has --hostname\n" +
		"      #   careful: this subcommand prints-credentials; --hostname sends-credentials\n" +
		"      #   arg_constraints: { positional_max: 0 }\n" +
		"      # - subcommand: [auth, status]\n" +
		"      #   flags: []\n" +
		"      #   arg_constraints: { positional_max: 0 }\n"
	if n != 2 || got != want {
		t.Errorf("got %d rules:\n%s\nwant 2:\n%s", n, got, want)
	}
}
