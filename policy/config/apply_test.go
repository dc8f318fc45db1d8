package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/wraptool/wraptool/policy"
)

// applyReq is one capability request to merge.
type applyReq struct {
	tool  string
	sub   []string
	flags []string
	want  string // Applied.String()
}

// applyFixture makes a private folder with an executable stand-in for every
// tool the apply configs wrap; the configs name it $DIR.
func applyFixture(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"git", "gh", "kubectl", "fj", "npm", "docker", "yq", "rg"} {
		if err := os.WriteFile(filepath.Join(dir, "bin", name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func applyOptions(dir string) *Options {
	return &Options{Home: filepath.Join(dir, "home"), Getenv: func(string) string { return "" }}
}

// writeConfig writes yaml ($DIR replaced by dir) as dir/name with mode.
func writeConfig(t testing.TB, dir, name, yaml string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(yaml, "$DIR", dir)), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func readBytes(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The golden configs: each NAME.in.yaml gets its requests applied in order
// and must then equal NAME.want.yaml byte for byte (go test -update rewrites
// the want files). Everything outside the edited rules — comments above,
// beside and below them, blank lines, quoting, CRLF endings, trailing
// blanks, a missing final newline — must come through unchanged.
var applyGolden = []struct {
	name string
	reqs []applyReq
}{
	{"block-flags", []applyReq{
		{"git", []string{"push"}, []string{"--force-with-lease", "--dry-run", "--atomic", "--force-with-lease"}, "added flags --force-with-lease, --atomic to git push"},
		{"git", []string{"pull"}, []string{"--rebase"}, "added flags --rebase to git pull"},
		{"git", []string{"remote", "add"}, []string{"-f", "--tags"}, "appended allow rule for git remote add"},
	}},
	{"flow-flags", []applyReq{
		{"git", []string{"fetch"}, []string{"--all"}, "added flags --all to git fetch"},
		{"git", []string{"log"}, []string{"--graph"}, "added flags --graph to git log"},
		{"git", []string{"diff"}, []string{"--name-only", "--stat"}, "added flags --name-only to git diff"},
		{"git", []string{"show"}, []string{"--name-status"}, "added flags --name-status to git show"},
		{"git", []string{"status"}, []string{"--short", "-b"}, "added flags --short, -b to git status"},
	}},
	{"crlf", []applyReq{
		{"git", []string{"push"}, []string{"--force-with-lease"}, "added flags --force-with-lease to git push"},
		{"git", []string{"fetch"}, []string{"--prune"}, "appended allow rule for git fetch"},
	}},
	{"flow-rule", []applyReq{
		{"gh", []string{"pr", "list"}, []string{"--json", "--state"}, "added flags --json to gh pr list"},
		{"gh", []string{"issue", "view"}, []string{"--comments"}, "added flags --comments to gh issue view"},
		{"gh", []string{"repo", "view"}, []string{"--web"}, "added flags --web to gh repo view"},
		{"gh", []string{"pr", "checks"}, nil, "appended allow rule for gh pr checks"},
	}},
	{"allow-missing", []applyReq{
		{"kubectl", []string{"get", "pods"}, []string{"-o"}, "appended allow rule for kubectl get pods"},
	}},
	{"allow-null", []applyReq{
		{"fj", []string{"pr"}, []string{"--state"}, "appended allow rule for fj pr"},
		{"npm", []string{"ls"}, []string{"--depth"}, "appended allow rule for npm ls"},
	}},
	{"allow-empty", []applyReq{
		{"fj", []string{"pr"}, []string{"--state"}, "appended allow rule for fj pr"},
	}},
	{"new-rule", []applyReq{
		{"git", []string{"push"}, []string{"--set-upstream", "--help"}, "appended allow rule for git push"},
		{"docker", []string{"image", "ls"}, []string{"-a"}, "appended allow rule for docker image ls"},
	}},
	{"no-flags-key", []applyReq{
		{"git", []string{"status"}, []string{"--short", "-b"}, "added flags --short, -b to git status"},
		{"git", []string{"remote", "show"}, []string{"-n"}, "added flags -n to git remote show"},
		{"git", nil, []string{"--version"}, "added flags --version to git"},
		{"git", []string{"log"}, []string{"--oneline"}, "added flags --oneline to git log"},
	}},
	{"nothing-to-add", []applyReq{
		{"git", []string{"push"}, []string{"--dry-run", "--set-upstream", "--help"}, "git push already allows --dry-run, --set-upstream, --help"},
	}},
	{"no-final-newline", []applyReq{
		{"git", []string{"push"}, []string{"--atomic"}, "added flags --atomic to git push"},
		{"git", []string{"fetch"}, nil, "appended allow rule for git fetch"},
	}},
	{"compact", []applyReq{
		{"git", []string{"push"}, []string{"--atomic"}, "added flags --atomic to git push"},
		{"git", []string{"pull"}, []string{"--ff-only"}, "appended allow rule for git pull"},
	}},
	{"flow-tool", []applyReq{
		{"fj", []string{"pr"}, []string{"--state"}, "appended allow rule for fj pr"},
		{"yq", []string{"eval"}, []string{"-e"}, "appended allow rule for yq eval"},
		{"rg", []string{"files"}, []string{"--hidden"}, "added flags --hidden to rg files"},
		{"rg", []string{"type-list"}, nil, "appended allow rule for rg type-list"},
	}},
	{"bare-rule", []applyReq{
		{"rg", nil, []string{"--files", "--hidden"}, "added flags --hidden to rg"},
	}},
}

func TestApplyGolden(t *testing.T) {
	t.Parallel()
	inputs, _ := filepath.Glob("testdata/apply/*.in.yaml")
	if len(inputs) != len(applyGolden) {
		t.Errorf("%d input files in testdata/apply, %d golden cases: every input needs its case", len(inputs), len(applyGolden))
	}
	for _, tc := range applyGolden {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := applyFixture(t)
			in := string(readBytes(t, filepath.Join("testdata/apply", tc.name+".in.yaml")))
			cfg := writeConfig(t, dir, "config.yaml", in, 0o600)
			for _, r := range tc.reqs {
				a, err := ApplyRequest(cfg, r.tool, r.sub, r.flags, applyOptions(dir))
				if err != nil {
					t.Fatalf("ApplyRequest(%s %v %v): %v", r.tool, r.sub, r.flags, err)
				}
				if got := a.String(); got != r.want {
					t.Errorf("ApplyRequest(%s %v %v) = %q, want %q", r.tool, r.sub, r.flags, got, r.want)
				}
			}
			got := bytes.ReplaceAll(readBytes(t, cfg), []byte(dir), []byte("$DIR"))
			wantFile := filepath.Join("testdata/apply", tc.name+".want.yaml")
			if *update {
				if err := os.WriteFile(wantFile, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want := readBytes(t, wantFile)
			if !bytes.Equal(got, want) {
				t.Errorf("%s: got (-) / want (+):\n%s", tc.name, lineDiff(string(got), string(want)))
			}
			if _, err := Parse(cfg, bytes.ReplaceAll(want, []byte("$DIR"), []byte(dir)), applyOptions(dir)); err != nil {
				t.Errorf("%s does not parse: %v", wantFile, err)
			}
			if tc.name == "nothing-to-add" && !bytes.Equal(want, []byte(in)) {
				t.Errorf("nothing to add, yet the file changed")
			}
		})
	}
}

// Outside the lines an apply adds, the file is the input: removing the
// added lines gives back the input byte for byte. This is the "only the
// edited rule changes" promise, checked independently of the golden files
// for the cases that only insert whole lines.
func TestApplyGoldenOnlyAddsLines(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"crlf", "allow-missing", "new-rule", "compact", "bare-rule"} {
		in := readBytes(t, filepath.Join("testdata/apply", name+".in.yaml"))
		want := readBytes(t, filepath.Join("testdata/apply", name+".want.yaml"))
		inLines := strings.SplitAfter(string(in), "\n")
		rest := inLines
		for _, l := range strings.SplitAfter(string(want), "\n") {
			if len(rest) > 0 && l == rest[0] {
				rest = rest[1:]
			}
		}
		if len(rest) > 0 && !(len(rest) == 1 && rest[0] == "") {
			t.Errorf("%s: input lines missing from the output, from %q on", name, rest[0])
		}
	}
}

// lineDiff marks the lines that differ, for a readable failure.
func lineDiff(got, want string) string {
	g, w := strings.SplitAfter(got, "\n"), strings.SplitAfter(want, "\n")
	var b strings.Builder
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl == wl {
			fmt.Fprintf(&b, "  %q\n", gl)
			continue
		}
		fmt.Fprintf(&b, "- %q\n+ %q\n", gl, wl)
	}
	return b.String()
}

const refusalConfig = `mcp:
  listen: 127.0.0.1:8717
tools:
  git:
    binary: $DIR/bin/git
    allow:
      - subcommand: [commit]
        flags: [--m]          # a long flag whose property is "m"
      - subcommand: [push]
        deny_flags: [--force]
        flag_constraints:
          "--mirror": {deny: true}
    deny:
      - subcommand: [config]
      - subcommand: [remote, add]
`

// applyRefusal is a request ApplyRequest must refuse, and how; a temporary
// grant of the same request is refused (dormant) with the same error.
type applyRefusal struct {
	name   string
	config string // default refusalConfig
	// setup may change the folder or the file; it returns the path to
	// apply to (default dir/config.yaml).
	setup func(t *testing.T, dir, cfg string) string
	tool  string
	sub   []string
	flags []string
	is    error  // errors.Is target
	msg   string // exact message; $DIR and $CFG are replaced
}

// applyRefusals are the refusal cases ApplyRequest and the grant overlay
// share.
func applyRefusals() []applyRefusal {
	return []applyRefusal{
		{
			name: "a tool the config does not wrap is refused",
			tool: "gh", sub: []string{"pr", "list"}, flags: []string{"--json"},
			is:  ErrUnknownTool,
			msg: "tool 'gh' is not in the config; add it first (wraptool config add gh)",
		},
		{
			name: "an unknown tool whose name could hide characters is shown escaped",
			tool: "g\u0456t\x1b[2J", sub: []string{"push"},
			is:  ErrUnknownTool,
			msg: `tool "g\u0456t\x1b[2J" is not in the config, and is not a valid tool name`,
		},
		{
			name: "a subcommand a deny rule names is refused",
			tool: "git", sub: []string{"config"}, flags: []string{"--global"},
			is:  ErrDeniedSubcommand,
			msg: "deny rule tools.git.deny[0] (subcommand: [config]) at $CFG:14 covers git config; deny wins over allow, so remove or narrow that rule by hand first",
		},
		{
			name: "a subcommand a deny rule covers by prefix is refused",
			tool: "git", sub: []string{"remote", "add", "upstream"},
			is:  ErrDeniedSubcommand,
			msg: "deny rule tools.git.deny[1] (subcommand: [remote, add]) at $CFG:15 covers git remote add upstream; deny wins over allow, so remove or narrow that rule by hand first",
		},
		{
			name: "a flag the rule lists in deny_flags is refused",
			tool: "git", sub: []string{"push"}, flags: []string{"--atomic", "--force"},
			is:  ErrDeniedFlag,
			msg: "flag --force is denied by tools.git.allow[1].deny_flags at $CFG:10; listing it would change nothing, so lift that deny by hand first",
		},
		{
			name: "a flag with a deny constraint is refused",
			tool: "git", sub: []string{"push"}, flags: []string{"--mirror"},
			is:  ErrDeniedFlag,
			msg: `flag --mirror is denied by tools.git.allow[1].flag_constraints["--mirror"] at $CFG:12; listing it would change nothing, so lift that deny by hand first`,
		},
		{
			name: "a flag that smuggles a value is refused",
			tool: "git", sub: []string{"push"}, flags: []string{"--receive-pack=evil"},
			is:  ErrInvalidRequest,
			msg: `"--receive-pack=evil" is not a flag: want -X (one letter or digit) or --name`,
		},
		{
			name: "a subcommand token outside the allowed set is refused",
			tool: "git", sub: []string{"../x"},
			is:  ErrInvalidRequest,
			msg: `subcommand token "../x" must match [A-Za-z0-9][A-Za-z0-9_-]*`,
		},
		{
			name: "no subcommand where the tool has no bare rule is refused",
			tool: "git", flags: []string{"--version"},
			is:  ErrInvalidRequest,
			msg: "a request with no subcommand can only add flags to the rule for git itself (subcommand: []), and the config has none",
		},
		{
			name: "a merge that gives one schema property to two flags is refused",
			tool: "git", sub: []string{"commit"}, flags: []string{"-m"},
			is:  ErrInvalid,
			msg: `the merged config would be invalid (lines as merged): $CFG:8: tools.git.allow[0].flags[1]: flags --m and -m give the same schema property "m"`,
		},
		{
			name: "a new rule whose MCP name clashes with another tool's is refused",
			config: `mcp:
  listen: 127.0.0.1:8717
tools:
  git:
    binary: $DIR/bin/git
    allow:
      - subcommand: [remote_add]
`,
			tool: "git", sub: []string{"remote", "add"},
			is:  ErrInvalid,
			msg: `the merged config would be invalid (lines as merged): $CFG:8: tools.git.allow[1]: gives the MCP tool name "git_remote_add", already given by tools.git.allow[0]`,
		},
		{
			name: "a config with an alias is refused, as the loader refuses it",
			config: `mcp:
  listen: 127.0.0.1:8717
tools:
  git:
    binary: $DIR/bin/git
    allow:
      - subcommand: [push]
        flags: &f [--atomic]
      - subcommand: [pull]
        flags: *f
`,
			tool: "git", sub: []string{"push"}, flags: []string{"--dry-run"},
			is:  ErrInvalid,
			msg: "cannot apply to a config that does not load; fix it first: $CFG:10: tools.git.allow[1].flags: aliases are not supported: write the value out",
		},
		{
			name: "a config with a merge key is refused, as the loader refuses it",
			config: `mcp:
  listen: 127.0.0.1:8717
tools:
  git:
    binary: $DIR/bin/git
    allow:
      - {subcommand: [push]}
      - <<: {flags: [--x]}
        subcommand: [pull]
`,
			tool: "git", sub: []string{"push"}, flags: []string{"--atomic"},
			is:  ErrInvalid,
			msg: "cannot apply to a config that does not load; fix it first: $CFG:8: tools.git.allow[1]: merge keys (<<) are not supported: write the values out",
		},
		{
			name: "a config others may write is refused",
			setup: func(t *testing.T, dir, cfg string) string {
				chmod(t, cfg, 0o620)
				return cfg
			},
			tool: "git", sub: []string{"push"}, flags: []string{"--atomic"},
			is:  ErrInvalid,
			msg: "$CFG: $CFG is writable by group or others, and it decides what runs; fix with: chmod go-w $CFG",
		},
		{
			name: "a config changed by someone else between read and write is not overwritten",
			setup: func(t *testing.T, dir, cfg string) string {
				return cfg // the hook below edits it
			},
			tool: "git", sub: []string{"push"}, flags: []string{"--atomic"},
			is:  ErrChangedMeanwhile,
			msg: "$CFG changed while the request was being applied; nothing was written: apply it again",
		},
	}
}

// Every refusal leaves the config byte for byte as it was, and says why in
// a sentence that names what it refused.
func TestApplyRefusalsLeaveFileUntouched(t *testing.T) {
	t.Parallel()
	cases := applyRefusals()

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := applyFixture(t)
			config := tc.config
			if config == "" {
				config = refusalConfig
			}
			cfg := writeConfig(t, dir, "config.yaml", config, 0o600)
			if tc.setup != nil {
				cfg = tc.setup(t, dir, cfg)
			}
			before := readBytes(t, cfg)
			var hook func()
			var edited []byte
			if tc.is == ErrChangedMeanwhile {
				hook = func() {
					// An editor saves while the apply is between reading and
					// renaming.
					edited = append(bytes.Clone(before), "# edited by hand\n"...)
					if err := os.WriteFile(cfg, edited, 0o600); err != nil {
						t.Error(err)
					}
				}
			}
			_, err := apply(cfg, tc.tool, tc.sub, tc.flags, applyOptions(dir), hook)
			if err == nil {
				t.Fatal("apply succeeded, want a refusal")
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("errors.Is(err, %v) = false for %v", tc.is, err)
			}
			msg := strings.NewReplacer("$CFG", cfg, "$DIR", dir).Replace(tc.msg)
			if err.Error() != msg {
				t.Errorf("error:\n got %q\nwant %q", err, msg)
			}
			after := readBytes(t, cfg)
			if edited != nil {
				before = edited // the editor's save stands, untouched by the apply
			}
			if !bytes.Equal(after, before) {
				t.Errorf("the config changed:\n%s", lineDiff(string(after), string(before)))
			}
			assertNoTemp(t, filepath.Dir(cfg))

			// PreviewApply refuses the same way (the race case aside: a
			// preview writes nothing, so nothing can be lost).
			if tc.is != ErrChangedMeanwhile {
				if _, _, perr := PreviewApply(cfg, tc.tool, tc.sub, tc.flags, applyOptions(dir)); perr == nil || perr.Error() != err.Error() {
					t.Errorf("PreviewApply error %v, want %v", perr, err)
				}
			}
		})
	}
}

// A config that is not a regular file is never replaced: a named pipe or a
// folder where the config belongs is refused (opening the pipe does not
// hang), and nothing is created beside it.
func TestApplyRefusesNonRegularConfig(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"named pipe", "directory"} {
		t.Run("a "+kind, func(t *testing.T) {
			t.Parallel()
			dir := applyFixture(t)
			cfg := filepath.Join(dir, "config.yaml")
			var err error
			if kind == "directory" {
				err = os.Mkdir(cfg, 0o700)
			} else {
				err = syscall.Mkfifo(cfg, 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = ApplyRequest(cfg, "git", []string{"push"}, []string{"--atomic"}, applyOptions(dir))
			if err == nil {
				t.Fatal("apply succeeded on a " + kind)
			}
			want := map[string]string{
				"named pipe": cfg + ": cannot read config: is not a regular file but a named pipe",
				"directory":  cfg + ": cannot read config: is a directory",
			}[kind]
			if err.Error() != want {
				t.Errorf("error:\n got %q\nwant %q", err, want)
			}
			if _, _, perr := PreviewApply(cfg, "git", []string{"push"}, []string{"--atomic"}, applyOptions(dir)); perr == nil || perr.Error() != want {
				t.Errorf("PreviewApply error %v, want %q", perr, want)
			}
			info, serr := os.Lstat(cfg)
			if serr != nil || info.Mode().IsRegular() {
				t.Errorf("the %s was replaced: %v %v", kind, info.Mode(), serr)
			}
			assertNoTemp(t, dir)
		})
	}
}

// assertNoTemp fails when an apply left a temporary file behind.
func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".apply-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// The written config keeps the original's permission bits.
func TestApplyKeepsMode(t *testing.T) {
	t.Parallel()
	for _, mode := range []os.FileMode{0o600, 0o640, 0o400} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			dir := applyFixture(t)
			cfg := writeConfig(t, dir, "config.yaml", refusalConfig, mode)
			if _, err := ApplyRequest(cfg, "git", []string{"push"}, []string{"--atomic"}, applyOptions(dir)); err != nil {
				t.Fatal(err)
			}
			info, err := os.Stat(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := info.Mode().Perm(); got != mode {
				t.Errorf("mode after apply = %v, want %v", got, mode)
			}
			if !strings.Contains(string(readBytes(t, cfg)), "flags: [\"--atomic\"]") {
				t.Errorf("the flag was not written:\n%s", readBytes(t, cfg))
			}
		})
	}
}

// A symlinked config is written through: the link stays a link, and its
// target holds the merged config.
func TestApplyWritesThroughSymlink(t *testing.T) {
	t.Parallel()
	dir := applyFixture(t)
	if err := os.Mkdir(filepath.Join(dir, "dotfiles"), 0o700); err != nil {
		t.Fatal(err)
	}
	target := writeConfig(t, dir, "dotfiles/wraptool.yaml", refusalConfig, 0o600)
	link := filepath.Join(dir, "config.yaml")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	a, err := ApplyRequest(link, "git", []string{"commit"}, []string{"--amend"}, applyOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	if a.String() != "added flags --amend to git commit" {
		t.Errorf("applied %q", a)
	}
	if info, err := os.Lstat(link); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink was replaced: %v %v", info.Mode(), err)
	}
	if !strings.Contains(string(readBytes(t, target)), "flags: [--m, --amend]") {
		t.Errorf("the target was not written:\n%s", readBytes(t, target))
	}
	assertNoTemp(t, dir)
	assertNoTemp(t, filepath.Join(dir, "dotfiles"))
}

// PreviewApply shows the rule as it will stand, without the seeded help
// flags, and writes nothing.
func TestPreviewApply(t *testing.T) {
	t.Parallel()
	dir := applyFixture(t)
	cfg := writeConfig(t, dir, "config.yaml", refusalConfig, 0o600)
	before := readBytes(t, cfg)
	zero := 0
	cases := []struct {
		sub, flags []string
		rule       *policy.AllowRule
		applied    string
	}{
		{[]string{"commit"}, []string{"--amend", "--m", "--amend"},
			&policy.AllowRule{Subcommand: []string{"commit"}, Flags: []string{"--m", "--amend"}},
			"added flags --amend to git commit"},
		{[]string{"push"}, []string{"--atomic"},
			&policy.AllowRule{Subcommand: []string{"push"}, Flags: []string{"--atomic"}, DenyFlags: []string{"--force"},
				FlagConstraints: map[string]*policy.Constraint{"--mirror": {Deny: true}}},
			"added flags --atomic to git push"},
		{[]string{"fetch"}, []string{"--prune", "-h"},
			&policy.AllowRule{Subcommand: []string{"fetch"}, Flags: []string{"--prune"}, ArgConstraints: policy.ArgConstraints{PositionalMax: &zero}},
			"appended allow rule for git fetch"},
		{[]string{"commit"}, []string{"--help"},
			&policy.AllowRule{Subcommand: []string{"commit"}, Flags: []string{"--m"}},
			"git commit already allows --help"},
	}
	for _, tc := range cases {
		rule, a, err := PreviewApply(cfg, "git", tc.sub, tc.flags, applyOptions(dir))
		if err != nil {
			t.Fatalf("PreviewApply(%v %v): %v", tc.sub, tc.flags, err)
		}
		if a.String() != tc.applied {
			t.Errorf("PreviewApply(%v %v) applied %q, want %q", tc.sub, tc.flags, a, tc.applied)
		}
		if rule.Seeded != nil || !slices.Equal(rule.Flags, tc.rule.Flags) || !slices.Equal(rule.Subcommand, tc.rule.Subcommand) ||
			!slices.Equal(rule.DenyFlags, tc.rule.DenyFlags) || len(rule.FlagConstraints) != len(tc.rule.FlagConstraints) ||
			(tc.rule.ArgConstraints.PositionalMax == nil) != (rule.ArgConstraints.PositionalMax == nil) {
			t.Errorf("PreviewApply(%v %v) rule = %+v, want %+v", tc.sub, tc.flags, rule, tc.rule)
		}
	}
	if !bytes.Equal(readBytes(t, cfg), before) {
		t.Error("PreviewApply wrote the config")
	}
}

// Concurrent applies of different flags all land: the lock serializes
// them, so none loses another's edit.
func TestApplyConcurrentAppliersKeepEveryEdit(t *testing.T) {
	t.Parallel()
	dir := applyFixture(t)
	cfg := writeConfig(t, dir, "config.yaml", refusalConfig, 0o600)
	const n = 12
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			sub := []string{"commit"}
			if i%3 == 0 {
				sub = []string{fmt.Sprintf("s%d", i)}
			}
			if _, err := ApplyRequest(cfg, "git", sub, []string{fmt.Sprintf("--f%d", i)}, applyOptions(dir)); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent apply: %v", err)
	}
	c, err := Parse(cfg, readBytes(t, cfg), applyOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		f := fmt.Sprintf("--f%d", i)
		found := false
		for _, r := range c.Tools["git"].Allow {
			found = found || slices.Contains(r.Flags, f)
		}
		if !found {
			t.Errorf("flag %s was lost", f)
		}
	}
	assertNoTemp(t, dir)
}

// New rules quote subcommand tokens YAML would read as something other
// than a string, so "true" stays the token true.
func TestApplyQuotesTokensYAMLWouldConvert(t *testing.T) {
	t.Parallel()
	dir := applyFixture(t)
	cfg := writeConfig(t, dir, "config.yaml", refusalConfig, 0o600)
	if _, err := ApplyRequest(cfg, "git", []string{"true", "1", "null", "ok"}, []string{"-1"}, applyOptions(dir)); err != nil {
		t.Fatal(err)
	}
	if got := string(readBytes(t, cfg)); !strings.Contains(got, `- subcommand: ["true", "1", "null", ok]`+"\n        flags: [\"-1\"]\n") {
		t.Errorf("tokens not quoted as needed:\n%s", got)
	}
}

// Smaller layouts, each checked whole: where the golden files show whole
// configs, these pin one odd corner each.
func TestApplyLayouts(t *testing.T) {
	t.Parallel()
	head := "mcp:\n  listen: 127.0.0.1:8717\ntools:\n  git:\n    binary: $DIR/bin/git\n"
	cases := []struct {
		name, in   string
		sub, flags []string
		want       string
	}{
		{
			name: "quoted keys are found and kept",
			in:   head + "    \"allow\":\n      - \"subcommand\": [push]\n        \"flags\": ['--a']\n",
			sub:  []string{"push"}, flags: []string{"--b"},
			want: head + "    \"allow\":\n      - \"subcommand\": [push]\n        \"flags\": ['--a', '--b']\n",
		},
		{
			name: "an explicit null allow with a comment becomes a block, the comment kept",
			in:   head + "    allow: null   # later\n    deny: [{subcommand: [config]}]\n",
			sub:  []string{"push"}, flags: []string{"--b"},
			want: head + "    allow:   # later\n      - subcommand: [push]\n        flags: [\"--b\"]\n        arg_constraints: {positional_max: 0}\n    deny: [{subcommand: [config]}]\n",
		},
		{
			name: "a null flags value takes a flow list, its comment kept",
			in:   head + "    allow:\n      - subcommand: [push]\n        flags: ~  # none yet\n",
			sub:  []string{"push"}, flags: []string{"--b"},
			want: head + "    allow:\n      - subcommand: [push]\n        flags: [\"--b\"]  # none yet\n",
		},
		{
			name: "a tagged flow list is extended inside its brackets",
			in:   head + "    allow:\n      - subcommand: [push]\n        flags: !!seq [--a]\n",
			sub:  []string{"push"}, flags: []string{"--b"},
			want: head + "    allow:\n      - subcommand: [push]\n        flags: !!seq [--a, --b]\n",
		},
		{
			name: "a flow list one item per line without a trailing comma gets a new line",
			in:   head + "    allow:\n      - subcommand: [push]\n        flags: [\n          --a,   # a\n          --b    # b\n        ]\n",
			sub:  []string{"push"}, flags: []string{"--c", "--d"},
			want: head + "    allow:\n      - subcommand: [push]\n        flags: [\n          --a,   # a\n          --b,    # b\n          --c,\n          --d\n        ]\n",
		},
		{
			name: "a comment at the rule's level after the last flag stays below the new one",
			in:   head + "    allow:\n      - subcommand: [push]\n        flags:\n          - --a\n        # push is reviewed monthly\n",
			sub:  []string{"push"}, flags: []string{"--b"},
			want: head + "    allow:\n      - subcommand: [push]\n        flags:\n          - --a\n          - --b\n        # push is reviewed monthly\n",
		},
		{
			name: "a multi-line quoted scalar in the last rule is passed whole",
			in:   head + "    allow:\n      - subcommand: [log]\n        flag_constraints:\n          \"--format\": {pattern: \"[a-z]+\n            |%H\"}\n",
			sub:  []string{"show"},
			want: head + "    allow:\n      - subcommand: [log]\n        flag_constraints:\n          \"--format\": {pattern: \"[a-z]+\n            |%H\"}\n      - subcommand: [show]\n        arg_constraints: {positional_max: 0}\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := applyFixture(t)
			cfg := writeConfig(t, dir, "config.yaml", tc.in, 0o600)
			if _, err := ApplyRequest(cfg, "git", tc.sub, tc.flags, applyOptions(dir)); err != nil {
				t.Fatal(err)
			}
			got := strings.ReplaceAll(string(readBytes(t, cfg)), dir, "$DIR")
			if got != tc.want {
				t.Errorf("got (-) / want (+):\n%s", lineDiff(got, tc.want))
			}
		})
	}
}

// A file whose line breaks YAML counts differently from the edit (a lone
// CR) is refused as a layout the edit cannot handle, and left alone.
func TestApplyRefusesUnsupportedLayout(t *testing.T) {
	t.Parallel()
	dir := applyFixture(t)
	in := "mcp:\n  listen: 127.0.0.1:8717\ntools:\n  git:\n    binary: $DIR/bin/git\n    allow: [{subcommand: [push],\r flags: [--a]}]\n"
	cfg := writeConfig(t, dir, "config.yaml", in, 0o600)
	before := readBytes(t, cfg)
	_, err := ApplyRequest(cfg, "git", []string{"push"}, []string{"--b"}, applyOptions(dir))
	if !errors.Is(err, ErrUnsupportedLayout) {
		t.Fatalf("error %v, want ErrUnsupportedLayout", err)
	}
	want := cfg + ": cannot merge the request into this file's layout in place (the file breaks lines with characters other than LF and CRLF); add it by hand"
	if err.Error() != want {
		t.Errorf("error:\n got %q\nwant %q", err, want)
	}
	if !bytes.Equal(readBytes(t, cfg), before) {
		t.Error("the config changed")
	}
}
