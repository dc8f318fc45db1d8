package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/introspect/helptext"
	"github.com/wraptool/wraptool/introspect/introspecttest"
	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/toolset/runner"
)

var update = flag.Bool("update", false, "rewrite testdata/configadd/*.golden from config add's output")

// savedHelp is the savedhelp fixture TestMain builds.
var savedHelp string

// userConfig is a config as an operator writes it: comments everywhere,
// odd spacing, a tool already wrapped, and something after tools.
const userConfig = `# my wraptool config
mcp:
  transport: sse
  listen: 127.0.0.1:0      # any port

tools:
  # the fake tool, for reference
  fake:
    binary: FAKE
    allow:
      - subcommand: [status]   # read-only
    # end of fake
# after tools, at the top level
`

// addEnv is the environment of an in-process config add: a HOME of its own
// (the introspection cache lives there) and PATH.
func addEnv(t *testing.T, dir, path string) map[string]string {
	return map[string]string{"HOME": filepath.Join(dir, "home"), "PATH": path, "WRAPTOOL_CONFIG": filepath.Join(dir, "config.yaml")}
}

// fixtureDir installs the savedhelp fixture as dir/bin/name answering the
// texts in testdata/configadd/<name> (file "pr_list_--help.txt" answers
// "pr list --help"), or those given.
func installTool(t *testing.T, dir, name string, texts map[string]string) string {
	t.Helper()
	if texts == nil {
		texts = map[string]string{}
		files, err := filepath.Glob(filepath.Join("testdata", "configadd", name, "*.txt"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			texts[strings.ReplaceAll(strings.TrimSuffix(filepath.Base(f), ".txt"), "_", " ")] = string(b)
		}
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	path, err := introspecttest.Install(savedHelp, bin, name, texts)
	if err != nil {
		t.Fatal(err)
	}
	// The tool logs its runs beside itself; its help runs are confined,
	// and the folder of a write-protected binary takes no new entries,
	// so the log is there before they start.
	if err := os.WriteFile(path+".log", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeUserConfig writes userConfig into dir with mode 0640 (kept by the
// edit) and returns its bytes.
func writeUserConfig(t *testing.T, dir string) []byte {
	t.Helper()
	data := []byte(strings.Replace(userConfig, "FAKE", fakecli, 1))
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), data, 0o640); err != nil {
		t.Fatal(err)
	}
	return data
}

// inserted returns what after adds to before, checking that before is
// kept byte for byte around it.
func inserted(t *testing.T, before, after []byte) string {
	t.Helper()
	i := 0
	for i < len(before) && i < len(after) && before[i] == after[i] {
		i++
	}
	// The insertion ends at a line start; back up to one.
	for i > 0 && before[i-1] != '\n' {
		i--
	}
	n := len(after) - len(before)
	if n < 0 || !bytes.Equal(after[:i], before[:i]) || !bytes.Equal(after[i+n:], before[i:]) {
		t.Fatalf("the edit changed bytes outside one inserted block:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	return string(after[i : i+n])
}

// gitTexts are real git 2.39.5 help texts (introspect/helptext/testdata),
// as introspection asks for them: `git --help`, `git pull --help` (the man
// page), and `git commit -h` (exit 129; its --help prints nothing here).
// Every other subcommand answers nothing, so it is listed unread.
func gitTexts(t *testing.T) map[string]string {
	t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "introspect", "helptext", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return map[string]string{
		"--help":      read("git_help.txt"),
		"pull --help": read("git_pull_help_man.txt"),
		"commit -h":   read("git_commit_h.txt"),
	}
}

func TestConfigAddWritesTheCatalogAsComments(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, tool string
		texts      func(*testing.T) map[string]string
		wantOut    string
	}{
		{"a Cobra-style tool gets its groups and their commands", "ghlike", nil,
			"added tool ghlike (BIN): 9 subcommands listed as comments\n"},
		{"git's real help gets its commands, read or not", "git", gitTexts,
			"added tool git (BIN): 22 subcommands listed as comments\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			var texts map[string]string
			if tt.texts != nil {
				texts = tt.texts(t)
			}
			bin := installTool(t, dir, tt.tool, texts)
			before := writeUserConfig(t, dir)
			stdout, stderr, code := run(t, addEnv(t, dir, filepath.Dir(bin)), "config", "add", tt.tool)
			if code != 0 {
				t.Fatalf("config add exited %d: %s", code, stderr)
			}
			if want := strings.Replace(tt.wantOut, "BIN", bin, 1); stdout != want {
				t.Errorf("stdout = %q, want %q", stdout, want)
			}
			if !strings.Contains(stderr, bin+" (owner ") {
				t.Errorf("stderr does not list the candidate with its owner: %q", stderr)
			}
			after, err := os.ReadFile(filepath.Join(dir, "config.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			block := strings.ReplaceAll(inserted(t, before, after), bin, "BIN")
			golden := filepath.Join("testdata", "configadd", tt.tool+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(block), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if block != string(want) {
				t.Errorf("inserted block differs from %s (go test -update rewrites it):\ngot:\n%s\nwant:\n%s", golden, block, want)
			}
			if info, err := os.Stat(filepath.Join(dir, "config.yaml")); err != nil || info.Mode().Perm() != 0o640 {
				t.Errorf("mode after the edit = %v (%v), want 0640 kept", info.Mode().Perm(), err)
			}
		})
	}
}

// TestUncommentingARuleAllowsThatSubcommandAlone uncomments each catalog
// rule in turn: the config must validate and expose <tool>_<sub…> with no
// flag but the seeded help flags, and the comment must list exactly the
// flags the subcommand's help lists.
func TestUncommentingARuleAllowsThatSubcommandAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: uncommenting a config add rule, with introspection")
	}
	t.Parallel()
	dir := t.TempDir()
	bin := installTool(t, dir, "ghlike", nil)
	writeUserConfig(t, dir)
	if _, stderr, code := run(t, addEnv(t, dir, filepath.Dir(bin)), "config", "add", "ghlike"); code != 0 {
		t.Fatalf("config add exited %d: %s", code, stderr)
	}
	path := filepath.Join(dir, "config.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	rules := 0
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		if !strings.HasPrefix(trimmed, "# - subcommand: [") {
			continue
		}
		rules++
		edited := slices.Clone(lines)
		uncomment(edited, i)
		c, err := config.Parse(path, []byte(strings.Join(edited, "")), nil)
		if err != nil {
			t.Fatalf("uncommenting %q: %v", strings.TrimSpace(l), err)
		}
		tool := c.Tools["ghlike"]
		if len(tool.Allow) != 1 {
			t.Fatalf("uncommenting %q gives %d rules, want 1", strings.TrimSpace(l), len(tool.Allow))
		}
		sub := tool.Allow[0].Subcommand
		if n := tool.Allow[0].ArgConstraints.PositionalMax; n == nil || *n != 0 {
			t.Errorf("uncommenting %q gives positional_max %v, want 0", strings.TrimSpace(l), n)
		}
		p, err := c.Policy(nil)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := p.Rule(policy.ToolName("ghlike", sub))
		if !ok || !r.Exposed() {
			t.Fatalf("uncommenting %q does not expose %s", strings.TrimSpace(l), policy.ToolName("ghlike", sub))
		}
		for _, f := range r.Flags() {
			if !policy.IsHelpFlag(f.Flag) {
				t.Errorf("%s allows %s; uncommenting must allow the subcommand alone", r.Name(), f.Flag)
			}
		}
		// The comment lists what the subcommand's own help lists.
		text, err := os.ReadFile(filepath.Join("testdata", "configadd", "ghlike", strings.Join(sub, "_")+"_--help.txt"))
		if err != nil {
			continue // a listed command whose help the fixture does not have
		}
		h, _ := helptext.Parse(string(text))
		var want []string
		for _, f := range h.Flags {
			s := f.Long
			if s == "" {
				s = f.Short
			}
			if !policy.IsHelpFlag(s) {
				want = append(want, s)
			}
		}
		if got := catalogFlags(lines, i); !reflect.DeepEqual(got, want) && len(want) > 0 {
			t.Errorf("%s: comment lists %q, want %q", r.Name(), got, want)
		}
	}
	if rules != 9 {
		t.Errorf("found %d catalog rules, want 9", rules)
	}
}

func TestConfigAddRefusesAndLeavesTheFileAlone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := installTool(t, dir, "ghlike", nil)
	before := writeUserConfig(t, dir)

	// Others may write this folder: its tool is refused from PATH.
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := introspecttest.Install(savedHelp, open, "ghlike", nil); err != nil {
		t.Fatal(err)
	}
	noexec := filepath.Join(dir, "bin", "notexec")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name string
		path string
		args []string
		want []string // substrings of stderr
	}{
		{"an existing tool key", filepath.Dir(bin), []string{"fake"}, []string{"tool 'fake' is already in the config", "config.yaml:8"}},
		{"an existing tool key with another binary", filepath.Dir(bin), []string{"fake", "--binary", bin},
			[]string{"tool 'fake' is already in the config", "config.yaml:8"}},
		{"a name outside the token rules", filepath.Dir(bin), []string{"gh.exe"}, []string{`tool name "gh.exe" must match`}},
		{"a name in wraptool's namespace", filepath.Dir(bin), []string{"WrapToolX"}, []string{`starts with "wraptool"`}},
		{"a binary that is not executable", filepath.Dir(bin), []string{"x", "--binary", noexec}, []string{noexec + " is not executable"}},
		{"a binary that does not exist", filepath.Dir(bin), []string{"x", "--binary", "/nonexistent/x"}, []string{"/nonexistent/x does not exist"}},
		{"a tool not on PATH", filepath.Dir(bin), []string{"nothere"}, []string{"nothere was not found", "--binary"}},
		{"a first candidate in a folder others may write", open + ":" + filepath.Dir(bin), []string{"ghlike"},
			[]string{"which group or others may write", open + "/ghlike (owner ", bin + " (owner ", "--binary PATH"}},
		{"wraptool itself", filepath.Dir(bin), []string{"self", "--binary", os.Args[0]}, []string{"wraptool itself"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := run(t, addEnv(t, dir, tt.path), append([]string{"config", "add"}, tt.args...)...)
			if code != 1 {
				t.Errorf("exit %d, want 1 (stderr %q)", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
			}
			if after, _ := os.ReadFile(filepath.Join(dir, "config.yaml")); !bytes.Equal(after, before) {
				t.Errorf("the file changed:\n%s", after)
			}
			if logged, _ := os.ReadFile(bin + ".log"); len(logged) > 0 {
				t.Errorf("a refusal ran the tool: %s", logged)
			}
		})
	}
}

func TestConfigAddScaffoldsAMissingConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: config add scaffolding a missing config with introspection")
	}
	t.Parallel()
	dir := t.TempDir()
	bin := installTool(t, dir, "ghlike", nil)
	env := addEnv(t, dir, filepath.Dir(bin))
	stdout, stderr, code := run(t, env, "config", "add", "ghlike")
	if code != 0 {
		t.Fatalf("config add exited %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "wrote the starter config") || !strings.HasPrefix(stdout, "added tool ghlike") {
		t.Errorf("stdout %q, stderr %q", stdout, stderr)
	}
	data, err := os.ReadFile(env["WRAPTOOL_CONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := config.Parse(env["WRAPTOOL_CONFIG"], data, nil); err != nil {
		t.Fatalf("the scaffolded config with the tool does not load: %v\n%s", err, data)
	}
}

// TestConfigAddStopsAtItsBudget lists a tool of 60 commands none of whose
// helps can be read (each costs --help, -h and help sub): the runs stop at
// 100, and the file is the same however the runs were scheduled.
func TestConfigAddStopsAtItsBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: config add's introspection budget runs for its whole bound")
	}
	t.Parallel()
	var list strings.Builder
	list.WriteString("usage: big <command>\n\nCommands:\n")
	for i := range 60 {
		fmt.Fprintf(&list, "  cmd%02d      Command number %d\n", i, i)
	}
	list.WriteString("  help       Show help\n\nOptions:\n  -v, --verbose   Be verbose\n")
	var outs []string
	for range 2 {
		dir := t.TempDir()
		bin := installTool(t, dir, "big", map[string]string{"--help": list.String()})
		writeUserConfig(t, dir)
		stdout, stderr, code := run(t, addEnv(t, dir, filepath.Dir(bin)), "config", "add", "big")
		if code != 0 {
			t.Fatalf("config add exited %d: %s", code, stderr)
		}
		if !strings.Contains(stdout, ": 60 subcommands listed") || !strings.Contains(stderr, "budget of 100 help runs ran out") {
			t.Errorf("stdout %q, stderr %q", stdout, stderr)
		}
		logged, err := os.ReadFile(bin + ".log")
		if err != nil {
			t.Fatal(err)
		}
		runs := strings.Split(strings.TrimSpace(string(logged)), "\n")
		if len(runs) > 100 {
			t.Errorf("%d help runs, want at most 100", len(runs))
		}
		for _, r := range runs {
			var argv []string
			if err := json.Unmarshal([]byte(r), &argv); err != nil || slices.Contains(argv[:max(len(argv)-1, 0)], "help") && argv[0] != "help" {
				t.Errorf("unexpected run %s", r)
			}
		}
		data, _ := os.ReadFile(filepath.Join(dir, "config.yaml"))
		outs = append(outs, strings.ReplaceAll(string(data), dir, "DIR"))
	}
	if outs[0] != outs[1] {
		t.Errorf("two runs wrote different files:\n%s\n---\n%s", outs[0], outs[1])
	}
}

// TestConfigAddHelpRunsAreConfined runs config add on a tool whose --help
// tries to copy the config and the MCP token into a folder it may write,
// and to overwrite the config: each help run is confined like a call, so
// nothing is copied and the config changes only by config add's own edit.
func TestConfigAddHelpRunsAreConfined(t *testing.T) {
	if !runner.Probe(nil).OK() {
		if os.Getenv("CI") != "" {
			t.Fatal("CI's kernel must offer Landlock")
		}
		t.Skip("no Landlock here")
	}
	t.Parallel()
	dir := t.TempDir()
	writeUserConfig(t, dir)
	token := filepath.Join(dir, "mcp-token") // beside the config, which names it
	cfg := filepath.Join(dir, "config.yaml")
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.Replace(string(data), "  listen: 127.0.0.1:0      # any port\n", "  listen: 127.0.0.1:0\n  auth_token_file: "+token+"\n", 1))
	if err := os.WriteFile(cfg, append(data, []byte("# the config's own marker\n")...), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(token, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	loot := filepath.Join(dir, "loot")
	if err := os.Mkdir(loot, 0o700); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	tool := filepath.Join(bin, "grabby")
	script := "#!/bin/sh\ncat " + cfg + " >> " + loot + "/copied 2>/dev/null\ncat " + token + " >> " + loot + "/copied 2>/dev/null\n" +
		"echo 'tools: {}' > " + cfg + " 2>/dev/null\necho 'usage: grabby [--verbose]'\n"
	if err := os.WriteFile(tool, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := run(t, addEnv(t, dir, bin+":/usr/bin:/bin"), "config", "add", "grabby")
	if code != 0 {
		t.Fatalf("config add exited %d: %s", code, stderr)
	}
	copied, _ := os.ReadFile(filepath.Join(loot, "copied"))
	if strings.Contains(string(copied), "marker") || strings.Contains(string(copied), "s3cret") {
		t.Errorf("a help run copied wraptool's files: %q", copied)
	}
	after, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(after), "# the config's own marker") || !strings.Contains(string(after), "grabby:") {
		t.Errorf("the config was overwritten by a help run:\n%s", after)
	}
}

// uncomment turns the catalog rule whose "# - subcommand:" line is lines[i]
// into a live rule, as an operator would: the "# " before "- subcommand:",
// "flags:" and "arg_constraints:" goes; the wrapped comment lines between
// them stay comments.
func uncomment(lines []string, i int) {
	for j := i; j < len(lines); j++ {
		trimmed := strings.TrimLeft(lines[j], " ")
		ind := len(lines[j]) - len(trimmed)
		if j > i && !strings.HasPrefix(trimmed, "#   ") && !strings.HasPrefix(trimmed, "#  ") {
			return
		}
		for _, live := range []string{"# - subcommand:", "#   flags:", "#   arg_constraints:"} {
			if strings.HasPrefix(trimmed, live) {
				lines[j] = lines[j][:ind] + strings.TrimPrefix(trimmed, "# ")
			}
		}
		if strings.HasPrefix(trimmed, "#   arg_constraints:") {
			return
		}
	}
}

// catalogFlags are the flags the catalog rule at lines[i] lists after
// "# has ", its wrapped lines included.
func catalogFlags(lines []string, i int) []string {
	var out []string
	in := false
	for j := i + 1; j < len(lines); j++ {
		trimmed := strings.TrimSpace(lines[j])
		switch {
		case strings.HasPrefix(trimmed, "#   flags: []"):
			_, comment, ok := strings.Cut(trimmed, "# has ")
			if !ok {
				return nil
			}
			out, in = strings.Fields(comment), true
		case in && strings.HasPrefix(trimmed, "#") && !strings.HasPrefix(trimmed, "#   arg_constraints:"):
			out = append(out, strings.Fields(strings.TrimLeft(trimmed, "# "))...)
		default:
			if in || strings.HasPrefix(trimmed, "#   arg_constraints:") {
				return out
			}
		}
	}
	return out
}
