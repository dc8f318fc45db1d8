package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/danger"
)

// dangerConfig allows one catalogued flag per tool, each without a
// pattern: psql -d on the bare tool, aws --endpoint-url, gh --hostname (a
// generic name), git -c at the root, gcloud --flags-file. CONSTRAIN is
// replaced by each rule's flag_constraints (or nothing).
const dangerConfig = base + `tools:
  psql:
    binary: $T/bin/tool
    allow:
      - subcommand: []
        flags: [-d]
        arg_constraints: { positional_max: 0 }
PSQL
  aws:
    binary: $T/bin/tool
    allow:
      - subcommand: [s3, ls]
        flags: [--recursive, --endpoint-url]
        arg_constraints: { positional_max: 0 }
AWS
  gh:
    binary: $T/bin/tool
    allow:
      - subcommand: [pr, list]
        flags: [--state, --hostname]
        arg_constraints: { positional_max: 0 }
GH
  git:
    binary: $T/bin/tool
    allow:
      - subcommand: []
        flags: [-c]
        arg_constraints: { positional_max: 0 }
GIT
  gcloud:
    binary: $T/bin/tool
    allow:
      - subcommand: [compute, instances, list]
        flags: [--flags-file]
        arg_constraints: { positional_max: 0 }
GCLOUD
`

// constrain fills dangerConfig's placeholders: each rule gets the
// flag_constraints line for its tool, or none.
func constrain(lines map[string]string) string {
	out := dangerConfig
	for _, k := range []string{"PSQL", "AWS", "GH", "GIT", "GCLOUD"} {
		l := lines[k]
		if l != "" {
			l = "        flag_constraints: " + l
		}
		out = strings.Replace(out, k+"\n", l+"\n", 1)
	}
	return out
}

func warningStrings(ws []Warning) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.String())
	}
	return out
}

// TestDangerWarningsNameEachUnheldFlag: a catalogued flag allowed without a
// pattern is warned about on its own line and field, with its classes,
// their effect and the fix; the same flags held by patterns, or denied,
// are not.
func TestDangerWarningsNameEachUnheldFlag(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	file := dir + "/config.yaml"
	for _, tt := range []struct {
		name  string
		lines map[string]string
		want  []string
	}{
		{"no patterns: one warning each", nil, []string{
			file + `:8: tools.psql.allow[0].flags[0]: -d is sends-credentials: it sends your credentials to the host it names, and nothing holds its value; constrain it with flag_constraints["-d"].pattern to the hosts you mean (e.g. pattern: 'db\.internal\.example\.com'), or leave it out`,
			file + `:15: tools.aws.allow[0].flags[1]: --endpoint-url is sends-credentials: it sends your credentials to the host it names, and nothing holds its value; constrain it with flag_constraints["--endpoint-url"].pattern to the hosts you mean (e.g. pattern: 'db\.internal\.example\.com'), or leave it out`,
			file + `:22: tools.gh.allow[0].flags[1]: --hostname is sends-credentials: it sends your credentials to the host it names, and nothing holds its value; constrain it with flag_constraints["--hostname"].pattern to the hosts you mean (e.g. pattern: 'db\.internal\.example\.com'), or leave it out`,
			file + `:29: tools.git.allow[0].flags[0]: -c is sends-credentials, runs-code: it sends your credentials to the host it names and runs a program it names, with your credentials, and nothing holds its value; leave it out, or constrain it with a flag_constraints["-c"].pattern that names only what may run`,
			file + `:36: tools.gcloud.allow[0].flags[0]: --flags-file is sends-credentials, runs-code, reads-files: it sends your credentials to the host it names, runs a program it names, with your credentials and reads a file it names, and nothing holds its value; leave it out, or constrain it with a flag_constraints["--flags-file"].pattern that names only what may run`,
		}},
		{"patterns: none", map[string]string{
			"PSQL":   `{ "-d": { pattern: "app" } }`,
			"AWS":    `{ "--endpoint-url": { pattern: "https://s3\\.example\\.com" } }`,
			"GH":     `{ "--hostname": { pattern: "github\\.com" } }`,
			"GIT":    `{ "-c": { pattern: "color\\.ui=(true|false)" } }`,
			"GCLOUD": `{ "--flags-file": { pattern: "flags\\.yaml" } }`,
		}, nil},
		{"denied flags: none", map[string]string{
			"PSQL":   `{ "-d": { deny: true } }`,
			"AWS":    `{ "--endpoint-url": { deny: true } }`,
			"GH":     `{ "--hostname": { deny: true } }`,
			"GIT":    `{ "-c": { deny: true } }`,
			"GCLOUD": `{ "--flags-file": { deny: true } }`,
		}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := mustParse(t, dir, constrain(tt.lines))
			got := warningStrings(c.DangerWarnings())
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestDangerWarningsCases: what decides whether a flag or a rule is
// warned about.
func TestDangerWarningsCases(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	// A binary named git under another tool key: the catalog is the
	// binary's.
	if err := os.WriteFile(filepath.Join(dir, "bin", "git"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, tools string
		want        []string // each warning's path and a piece of its message
	}{
		{"git -c after a subcommand is another flag (git log -c)",
			"  git:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: [log]\n        flags: [-c]\n        flag_constraints: { -c: { type: boolean } }\n", nil},
		{"the binary names the CLI, whatever the key",
			"  vcs:\n    binary: $T/bin/git\n    allow:\n      - subcommand: []\n        flags: [-c]\n        arg_constraints: { positional_max: 0 }\n",
			[]string{"tools.vcs.allow[0].flags[0]", "-c is sends-credentials, runs-code"}},
		{"deny_flags keeps a flag out",
			"  aws:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: [s3, ls]\n        flags: [--endpoint-url]\n        deny_flags: [--endpoint-url]\n", nil},
		{"a rule a deny rule covers is not exposed",
			"  aws:\n    binary: $T/bin/tool\n    deny:\n      - subcommand: [s3]\n    allow:\n      - subcommand: [s3, ls]\n        flags: [--endpoint-url]\n", nil},
		{"a deny rule for a sibling does not cover the rule",
			"  aws:\n    binary: $T/bin/tool\n    deny:\n      - subcommand: [s3, cp]\n    allow:\n      - subcommand: [s3, ls]\n        flags: [--endpoint-url]\n",
			[]string{"tools.aws.allow[0].flags[0]", "--endpoint-url is sends-credentials"}},
		{"a switch cannot take a pattern: leave it out",
			"  tool:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: [x]\n        flags: [--exec-all]\n        flag_constraints: { --exec-all: { type: boolean } }\n",
			[]string{"tools.tool.allow[0].flags[0]", "--exec-all is runs-code: it runs a program it names, with your credentials, and a switch takes no pattern; leave it out"}},
		{"an abbreviation of a catalogued flag is that flag",
			"  psql:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: []\n        flags: [--dbn]\n",
			[]string{"tools.psql.allow[0].flags[0]", "--dbn abbreviates --dbname, which is sends-credentials: it sends your credentials to the host it names, and nothing holds its value; constrain it with flag_constraints[\"--dbn\"].pattern"}},
		{"an abbreviation of several catalogued flags names one",
			"  git:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: [push]\n        flags: [--re]\n",
			[]string{"tools.git.allow[0].flags[0]", "--re abbreviates --receive-pack, which is runs-code"}},
		{"a CLI that takes no abbreviation gets none (gcloud refuses --flags-f)",
			"  gcloud:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: [compute]\n        flags: [--flags-f]\n        arg_constraints: { positional_max: 0 }\n", nil},
		{"positionals that reach a catalogued subcommand (gh auth + token runs gh auth token)",
			"  gh:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: [auth]\n        flags: []\n",
			[]string{"tools.gh.allow[0].subcommand", "gh auth with positional arguments reaches gh auth token, gh auth git-credential, which is prints-credentials: it prints your credentials to the assistant; hold the positionals"}},
		{"no positionals reach nothing",
			"  gh:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: [auth]\n        flags: []\n        arg_constraints: { positional_max: 0 }\n", nil},
		{"patterns that leave it out reach nothing",
			"  gh:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: [auth]\n        flags: []\n        arg_constraints: { patterns: [status] }\n", nil},
		{"a pattern that lets it in reaches it",
			"  gh:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: [auth]\n        flags: []\n        arg_constraints: { pattern: '[a-z]+' }\n",
			[]string{"tools.gh.allow[0].subcommand", "reaches gh auth token"}},
		{"a flag catalogued under the subcommand the positionals reach (kubectl config --raw view)",
			"  kubectl:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: [config]\n        flags: [--raw]\n        flag_constraints: { --raw: { type: boolean } }\n        arg_constraints: { patterns: ['view|current-context'] }\n",
			[]string{"tools.kubectl.allow[0].flags[0]", "--raw is prints-credentials"}},
		{"a deny rule for it keeps it out",
			"  gh:\n    binary: $T/bin/tool\n    deny:\n      - subcommand: [auth, token]\n      - subcommand: [auth, git-credential]\n    allow:\n      - subcommand: [auth]\n        flags: []\n", nil},
		{"an abbreviation held by a pattern is not warned about",
			"  psql:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: []\n        flags: [--dbn]\n        flag_constraints: { --dbn: { pattern: app } }\n", nil},
		{"a pattern that lets anything through does not hold the value",
			"  git:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: [push]\n        flags: [--receive-pack]\n        flag_constraints: { --receive-pack: { pattern: 'git-receive-pack.*' } }\n        arg_constraints: { positional_max: 0 }\n",
			[]string{`tools.git.allow[0].flag_constraints["--receive-pack"].pattern`, "--receive-pack is runs-code: it runs a program it names, with your credentials, and its pattern 'git-receive-pack.*' lets through more than you mean"}},
		{"a flag the catalog says nothing about",
			"  aws:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: [s3, ls]\n        flags: [--recursive, --human-readable]\n", nil},
		{"a flag a pattern holds, beside one none holds",
			"  psql:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: []\n        flags: [-h, -d]\n        flag_constraints: { -h: { pattern: db }, -d: { type: string } }\n",
			[]string{"tools.psql.allow[0].flags[1]", "-d is sends-credentials"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := mustParse(t, dir, base+"tools:\n"+tt.tools)
			ws := c.DangerWarnings()
			if len(tt.want) == 0 {
				if len(ws) != 0 {
					t.Errorf("warnings %q, want none", warningStrings(ws))
				}
				return
			}
			if len(ws) != 1 || ws[0].Path != tt.want[0] || !strings.Contains(ws[0].Msg, tt.want[1]) || ws[0].Line == 0 {
				t.Errorf("warnings %q, want one at %s holding %q", warningStrings(ws), tt.want[0], tt.want[1])
			}
		})
	}
}

// TestDangerWarningsHostileFlags: flags no config can hold (validation
// refuses them) still cannot hide or crash the warnings when a Config is
// built by hand: an "=value" form is its flag, look-alikes are escaped and
// are not the flag they mimic, very long names are cut.
func TestDangerWarningsHostileFlags(t *testing.T) {
	t.Parallel()
	long := "--" + strings.Repeat("endpoint-", 2000) + "url"
	for _, tt := range []struct {
		name, flag string
		want       string // a piece of the message; "" for no warning
	}{
		{"an =value form is its flag", "--endpoint-url=https://evil.example", `--endpoint-url=https://evil.example" is sends-credentials`},
		{"an =value form names the constraint of its flag", "--endpoint-url=x", `flag_constraints["--endpoint-url"].pattern`},
		{"a Cyrillic look-alike is another flag, shown escaped", "--\u0435ndpoint-url", ""},
		{"a generic name behind a look-alike dash", "\u2010-hostname", ""},
		{"a bidi override makes a name no tool reads as the flag", "--endpoint\u202e-url", ""},
		{"a very long generic name is cut", long, "bytes)"},
		{"a control character makes a name no tool reads as the flag", "--endpoint-url\x1b[2J", ""},
		{"an empty flag", "", ""},
		{"a lone =", "=", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &Config{File: "config.yaml", lines: newLineIndex(0), Tools: map[string]*Tool{"aws": {
				Binary: "/usr/bin/true",
				Allow:  []*policy.AllowRule{{Subcommand: []string{"s3", "ls"}, Flags: []string{tt.flag}}},
			}}}
			ws := c.DangerWarnings()
			if tt.want == "" {
				if len(ws) != 0 {
					t.Errorf("warnings %q, want none", warningStrings(ws))
				}
				return
			}
			if len(ws) != 1 || !strings.Contains(ws[0].Msg, tt.want) {
				t.Fatalf("warnings %q, want one holding %q", warningStrings(ws), tt.want)
			}
			if len(ws[0].Msg) > 1200 {
				t.Errorf("the message is %d bytes", len(ws[0].Msg))
			}
			for _, r := range ws[0].Msg {
				if (r < 0x20 || r > 0x7e) && r != '…' {
					t.Errorf("the message holds %U: %q", r, ws[0].Msg)
				}
			}
		})
	}
}

// fakeSubcommands is the real catalog with subcommand entries added, so
// the test holds whatever entries the catalog has.
type fakeSubcommands struct {
	dangerCatalog
	subs map[string]danger.Finding // "cli sub…" → finding
}

func (f fakeSubcommands) LookupSubcommand(cli string, sub []string) danger.Finding {
	for k, v := range f.subs {
		w := strings.Fields(k)
		if w[0] == cli && len(sub) >= len(w)-1 && slices.Equal(sub[:len(w)-1], w[1:]) {
			return v
		}
	}
	return f.dangerCatalog.LookupSubcommand(cli, sub)
}

// TestDangerWarningsSubcommand: a rule whose subcommand the catalog
// classes by itself is warned about on its subcommand field, suggesting a
// deny rule; covered by one, it is not.
func TestDangerWarningsSubcommand(t *testing.T) {
	t.Parallel()
	cat := fakeSubcommands{subs: map[string]danger.Finding{
		"gh auth token": {Classes: danger.Of(danger.PrintsCredentials), Why: "prints the token gh uses"},
	}}
	dir := fixture(t)
	if err := os.WriteFile(filepath.Join(dir, "bin", "gh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := dir + "/config.yaml"
	rule := "    allow:\n      - subcommand: [auth, token]\n        arg_constraints: { positional_max: 0 }\n      - subcommand: [pr, list]\n        arg_constraints: { positional_max: 0 }\n"
	for _, tt := range []struct {
		name, deny string
		want       []string
	}{
		{"no deny rule", "", []string{file + ":7: tools.gh.allow[0].subcommand: gh auth token is prints-credentials: " +
			"it prints your credentials to the assistant, whatever flags the rule allows (prints the token gh uses); " +
			"remove the rule, and add a deny rule (deny: [{subcommand: [auth, token]}]) so that no rule allows it"}},
		{"deny: [auth] covers it", "    deny:\n      - subcommand: [auth]\n", nil},
		{"deny: [auth, token] covers it", "    deny:\n      - subcommand: [auth, token]\n", nil},
		{"deny: [auth, login] does not", "    deny:\n      - subcommand: [auth, login]\n", []string{"tools.gh.allow[0].subcommand: gh auth token is prints-credentials"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := mustParse(t, dir, base+"tools:\n  gh:\n    binary: $T/bin/gh\n"+tt.deny+rule)
			got := warningStrings(c.dangerWarnings(cat))
			if len(got) != len(tt.want) {
				t.Fatalf("warnings %q, want %q", got, tt.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tt.want[i]) {
					t.Errorf("warning %q, want it to hold %q", got[i], tt.want[i])
				}
			}
		})
	}
}
