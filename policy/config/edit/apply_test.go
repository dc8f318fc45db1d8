package edit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
)

// applyReq is one capability request to merge.
type applyReq struct {
	tool  string
	sub   []string
	flags []string
	want  string // config.Applied.String()
}

func applyOptions(dir string) *config.Options {
	return &config.Options{Home: filepath.Join(dir, "home"), Getenv: func(string) string { return "" }}
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
			dir := configtest.ApplyFixture(t)
			in := string(configtest.ReadFile(t, filepath.Join("testdata/apply", tc.name+".in.yaml")))
			cfg := configtest.WriteConfig(t, dir, "config.yaml", in, 0o600)
			for _, r := range tc.reqs {
				a, err := ApplyRequest(cfg, r.tool, r.sub, r.flags, applyOptions(dir))
				if err != nil {
					t.Fatalf("ApplyRequest(%s %v %v): %v", r.tool, r.sub, r.flags, err)
				}
				if got := a.String(); got != r.want {
					t.Errorf("ApplyRequest(%s %v %v) = %q, want %q", r.tool, r.sub, r.flags, got, r.want)
				}
			}
			got := bytes.ReplaceAll(configtest.ReadFile(t, cfg), []byte(dir), []byte("$DIR"))
			wantFile := filepath.Join("testdata/apply", tc.name+".want.yaml")
			if *update {
				if err := os.WriteFile(wantFile, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want := configtest.ReadFile(t, wantFile)
			if !bytes.Equal(got, want) {
				t.Errorf("%s: got (-) / want (+):\n%s", tc.name, lineDiff(string(got), string(want)))
			}
			if _, err := config.Parse(cfg, bytes.ReplaceAll(want, []byte("$DIR"), []byte(dir)), applyOptions(dir)); err != nil {
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
		in := configtest.ReadFile(t, filepath.Join("testdata/apply", name+".in.yaml"))
		want := configtest.ReadFile(t, filepath.Join("testdata/apply", name+".want.yaml"))
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
			dir := configtest.ApplyFixture(t)
			cfg := configtest.WriteConfig(t, dir, "config.yaml", configtest.RefusalConfig, mode)
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
			if !strings.Contains(string(configtest.ReadFile(t, cfg)), "flags: [\"--atomic\"]") {
				t.Errorf("the flag was not written:\n%s", configtest.ReadFile(t, cfg))
			}
		})
	}
}

// A symlinked config is written through: the link stays a link, and its
// target holds the merged config.
func TestApplyWritesThroughSymlink(t *testing.T) {
	t.Parallel()
	dir := configtest.ApplyFixture(t)
	if err := os.Mkdir(filepath.Join(dir, "dotfiles"), 0o700); err != nil {
		t.Fatal(err)
	}
	target := configtest.WriteConfig(t, dir, "dotfiles/wraptool.yaml", configtest.RefusalConfig, 0o600)
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
	if !strings.Contains(string(configtest.ReadFile(t, target)), "flags: [--m, --amend]") {
		t.Errorf("the target was not written:\n%s", configtest.ReadFile(t, target))
	}
	assertNoTemp(t, dir)
	assertNoTemp(t, filepath.Join(dir, "dotfiles"))
}

// PreviewApply shows the rule as it will stand, without the seeded help
// flags, and writes nothing.
func TestPreviewApply(t *testing.T) {
	t.Parallel()
	dir := configtest.ApplyFixture(t)
	cfg := configtest.WriteConfig(t, dir, "config.yaml", configtest.RefusalConfig, 0o600)
	before := configtest.ReadFile(t, cfg)
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
	if !bytes.Equal(configtest.ReadFile(t, cfg), before) {
		t.Error("PreviewApply wrote the config")
	}
}

// Concurrent applies of different flags all land: the lock serializes
// them, so none loses another's edit.
func TestApplyConcurrentAppliersKeepEveryEdit(t *testing.T) {
	t.Parallel()
	dir := configtest.ApplyFixture(t)
	cfg := configtest.WriteConfig(t, dir, "config.yaml", configtest.RefusalConfig, 0o600)
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
	c, err := config.Parse(cfg, configtest.ReadFile(t, cfg), applyOptions(dir))
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
	dir := configtest.ApplyFixture(t)
	cfg := configtest.WriteConfig(t, dir, "config.yaml", configtest.RefusalConfig, 0o600)
	if _, err := ApplyRequest(cfg, "git", []string{"true", "1", "null", "ok"}, []string{"-1"}, applyOptions(dir)); err != nil {
		t.Fatal(err)
	}
	if got := string(configtest.ReadFile(t, cfg)); !strings.Contains(got, `- subcommand: ["true", "1", "null", ok]`+"\n        flags: [\"-1\"]\n") {
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
			dir := configtest.ApplyFixture(t)
			cfg := configtest.WriteConfig(t, dir, "config.yaml", tc.in, 0o600)
			if _, err := ApplyRequest(cfg, "git", tc.sub, tc.flags, applyOptions(dir)); err != nil {
				t.Fatal(err)
			}
			got := strings.ReplaceAll(string(configtest.ReadFile(t, cfg)), dir, "$DIR")
			if got != tc.want {
				t.Errorf("got (-) / want (+):\n%s", lineDiff(got, tc.want))
			}
		})
	}
}
