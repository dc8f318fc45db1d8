package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy/config"
)

// uncommentAll uncomments every catalog rule in data, as an operator
// would one by one.
func uncommentAll(data []byte) []byte {
	lines := strings.SplitAfter(string(data), "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimLeft(l, " "), "# - subcommand: [") {
			uncomment(lines, i)
		}
	}
	return []byte(strings.Join(lines, ""))
}

// positionalWarnings are config validate's warnings about rules taking
// positionals without a limit or a pattern.
func positionalWarnings(c *config.Config) []string {
	var out []string
	for _, w := range c.PositionalWarnings() {
		out = append(out, w.String())
	}
	return out
}

// TestConfigAddOnAToolInTheConfig runs config add for a tool the config
// already wraps (the starter's git): the catalog goes under its rules as
// comments, every other byte stays, a rerun writes the same catalog anew,
// and every rule uncommented gives a config that validates with no rule
// taking unlimited positionals.
func TestConfigAddOnAToolInTheConfig(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, tools string
		subs        int // the catalog leaves out git pull, which has a rule
	}{
		{"rules and a deny list, as the starter writes them", `  git:
    binary: BIN
    allow:
      - subcommand: [pull]
        flags: ["--ff-only"]
        flag_constraints:
          "--ff-only": { type: boolean }
        # Positional arguments reach git as they are.
        arg_constraints:
          positional_max: 2
          patterns: ["origin", "[A-Za-z0-9][A-Za-z0-9._/-]*"]
    deny:
      - subcommand: [config]
# after tools
`, 21},
		{"an empty allow: with a comment on its line", `  git:
    binary: BIN
    allow:   # nothing yet
    timeout: 10s
`, 22},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			bin := installTool(t, dir, "git", gitTexts(t))
			path := filepath.Join(dir, "config.yaml")
			before := []byte("mcp:\n  listen: 127.0.0.1:0\ntools:\n" + strings.ReplaceAll(tt.tools, "BIN", bin))
			if err := os.WriteFile(path, before, 0o600); err != nil {
				t.Fatal(err)
			}
			env := addEnv(t, dir, filepath.Dir(bin))
			stdout, stderr, code := run(t, env, "config", "add", "git")
			if want := "tool git (" + bin + ") is in the config: its rules are kept as they are, its catalog written under them: " + strconv.Itoa(tt.subs) + " subcommands listed as comments\n"; code != 0 || stdout != want {
				t.Fatalf("config add git: exit %d, stdout %q, want %q; stderr %s", code, stdout, want, stderr)
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			block := inserted(t, before, after)
			for _, l := range strings.SplitAfter(block, "\n") {
				if l == "" {
					continue
				}
				if !strings.HasPrefix(strings.TrimSpace(l), "#") || len(strings.TrimSuffix(l, "\n")) >= 100 {
					t.Errorf("inserted line %q: want a comment under 100 characters", l)
				}
			}
			old, err := config.Parse(path, before, nil)
			if err != nil {
				t.Fatal(err)
			}
			c, err := config.Parse(path, uncommentAll(after), nil)
			if err != nil {
				t.Fatalf("every rule uncommented: %v\n%s", err, uncommentAll(after))
			}
			if got := len(c.Tools["git"].Allow); got != tt.subs+len(old.Tools["git"].Allow) {
				t.Errorf("every rule uncommented gives %d rules", got)
			}
			if w := positionalWarnings(c); len(w) != 0 {
				t.Errorf("uncommented rules take unlimited positionals: %q", w)
			}

			// A rerun finds its catalog and writes it anew, in place.
			stdout, stderr, code = run(t, env, "config", "add", "git")
			if code != 0 || !strings.Contains(stdout, "its catalog written anew: "+strconv.Itoa(tt.subs)+" subcommands") {
				t.Fatalf("rerun: exit %d, stdout %q; stderr %s", code, stdout, stderr)
			}
			if again, _ := os.ReadFile(path); !bytes.Equal(again, after) {
				t.Errorf("a rerun changed the file:\n%s\nwant:\n%s", again, after)
			}
		})
	}
}

// TestConfigAddRefusesToRewriteAnEditedCatalog: a catalog an operator has
// edited into rules, or cut short, is not rewritten (its rules would go);
// the file stays as it is.
func TestConfigAddRefusesToRewriteAnEditedCatalog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := installTool(t, dir, "git", gitTexts(t))
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte("mcp:\n  listen: 127.0.0.1:0\ntools:\n  git:\n    binary: "+bin+"\n    allow:\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := addEnv(t, dir, filepath.Dir(bin))
	if _, stderr, code := run(t, env, "config", "add", "git"); code != 0 {
		t.Fatalf("config add git: exit %d: %s", code, stderr)
	}
	written, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(written), "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "# - subcommand: [commit]") })
	oneLive := slices.Clone(lines)
	uncomment(oneLive, i)
	noEnd := slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return strings.Contains(l, "# End of the catalog") })
	for _, tt := range []struct {
		name, text, want string
	}{
		{"a rule uncommented inside the catalog", strings.Join(oneLive, ""), "is cut by line"},
		{"a catalog whose end line was deleted", strings.Join(noEnd, ""), "has no line"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(tt.text), 0o600); err != nil {
				t.Fatal(err)
			}
			_, stderr, code := run(t, env, "config", "add", "git")
			if code != 1 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d (want 1), stderr %q (want %q)", code, stderr, tt.want)
			}
			if now, _ := os.ReadFile(path); string(now) != tt.text {
				t.Errorf("the file changed:\n%s", now)
			}
		})
	}
}

// TestConfigAddRefusedLeavesNoStarter: a run that scaffolded the starter
// config and was then refused removes it again.
func TestConfigAddRefusedLeavesNoStarter(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"a binary that does not exist", []string{"x", "--binary", "/nonexistent/x"}},
		{"a tool not on PATH", []string{"nothere"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			env := addEnv(t, dir, filepath.Join(dir, "bin"))
			_, stderr, code := run(t, env, append([]string{"config", "add"}, tt.args...)...)
			if code != 1 {
				t.Errorf("exit %d, want 1 (stderr %q)", code, stderr)
			}
			if _, err := os.Lstat(env["WRAPTOOL_CONFIG"]); !os.IsNotExist(err) {
				t.Errorf("the starter config is left behind (%v); stderr %q", err, stderr)
			}
		})
	}
}
