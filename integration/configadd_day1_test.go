package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/introspect/introspecttest"
)

// savedHelpText reads a real tool's help text kept for the help parser's
// tests.
func savedHelpText(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "introspect", "helptext", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// installSaved installs the savedhelp fixture as dir/bin/name answering
// texts, and returns its path.
func installSaved(t *testing.T, dir, name string, texts map[string]string) string {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	p, err := introspecttest.Install(savedhelp, bin, name, texts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// uncommentCatalog turns every commented rule of a catalog into a live
// one, as an operator uncommenting each would.
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

// checkCatalog checks what config add wrote into path (before being the
// file before it): each new comment line is under 100 characters, only
// comment lines were added when onlyComments is set (a tool already in the
// config), and uncommenting every rule gives a config that `config
// validate` accepts with no warning about positionals.
func checkCatalog(t *testing.T, env []string, path string, before []byte, onlyComments bool) []byte {
	t.Helper()
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept []byte
	for _, l := range strings.SplitAfter(string(after), "\n") {
		if tl := strings.TrimSpace(l); strings.HasPrefix(tl, "#") && !bytes.Contains(before, []byte(l)) {
			if len(strings.TrimSuffix(l, "\n")) >= 100 {
				t.Errorf("catalog line of %d characters: %q", len(l)-1, l)
			}
			continue
		}
		kept = append(kept, l...)
	}
	if onlyComments && !bytes.Equal(kept, before) {
		t.Errorf("lines other than the catalog's comments changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	all := filepath.Join(filepath.Dir(path), "uncommented.yaml")
	if err := os.WriteFile(all, []byte(uncommentCatalog(string(after))), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runWraptool(t, env, "config", "validate", all)
	if code != 0 || !strings.HasPrefix(stdout, "ok: ") {
		t.Errorf("every rule uncommented: validate exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	if strings.Contains(stderr, "positional arguments") {
		t.Errorf("every rule uncommented: validate warns about positionals: %s", stderr)
	}
	return after
}

// TestConfigAddRefusedOnAFreshInstallLeavesNoConfig: a refused run on a
// fresh HOME leaves no config behind, also when it wrote the starter
// before the refusal: the starter wraps git, so `config add git` is refused
// (an existing tool key, exit 1) only once the starter is there.
func TestConfigAddRefusedOnAFreshInstallLeavesNoConfig(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"the starter's git", []string{"git"}, "already"},
		{"another binary for the starter's git", []string{"git", "--binary", "OTHER"}, "already"},
		{"a tool not on PATH", []string{"nothere"}, "nothere was not found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			git := installSaved(t, dir, "git", map[string]string{"--help": savedHelpText(t, "git_help.txt")})
			other := installSaved(t, filepath.Join(dir, "other"), "git", nil)
			home := filepath.Join(dir, "home")
			env := []string{"HOME=" + home, "PATH=" + filepath.Dir(git)}
			args := append([]string{"config", "add"}, tt.args...)
			for i, a := range args {
				args[i] = strings.ReplaceAll(a, "OTHER", other)
			}
			_, stderr, code := runWraptool(t, env, args...)
			if code != 1 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d (want 1), stderr %q (want %q)", code, stderr, tt.want)
			}
			if _, err := os.Lstat(filepath.Join(home, ".config", "wraptool", "config.yaml")); !os.IsNotExist(err) {
				t.Errorf("a refused run left the starter config behind (%v); stderr %q", err, stderr)
			}
		})
	}
}

// TestConfigAddToolsWithoutSubcommands adds curl, tar and psql (their real
// help texts): each gets one commented bare rule listing its root flags,
// with positional_max: 0.
func TestConfigAddToolsWithoutSubcommands(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		tool, text string
		flags      []string // some of the root flags listed
	}{
		{"curl", "curl_help_all.txt", []string{"--abstract-unix-socket", "--append"}},
		{"tar", "tar_help.txt", []string{"--create", "--extract"}},
		{"psql", "psql_help.txt", []string{"--host", "--dbname"}},
	} {
		t.Run(tt.tool, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			bin := installSaved(t, dir, tt.tool, map[string]string{"--help": savedHelpText(t, tt.text)})
			path := filepath.Join(dir, "config.yaml")
			before := []byte("mcp:\n  listen: 127.0.0.1:0\ntools: {}\n")
			if err := os.WriteFile(path, before, 0o600); err != nil {
				t.Fatal(err)
			}
			env := []string{"PATH=" + filepath.Dir(bin)}
			stdout, stderr, code := runWraptool(t, env, "--config", path, "config", "add", tt.tool)
			if code != 0 {
				t.Fatalf("config add %s: exit %d: %s", tt.tool, code, stderr)
			}
			if want := "added tool " + tt.tool + " (" + bin + "): no subcommands; the tool itself listed as one commented rule with its "; !strings.HasPrefix(stdout, want) {
				t.Errorf("stdout %q, want it to start %q", stdout, want)
			}
			after := checkCatalog(t, env, path, before, false)
			text := string(after)
			if strings.Count(text, "# - subcommand: [") != 1 || !strings.Contains(text, "      # - subcommand: []\n      #   flags: []   ") ||
				!strings.Contains(text, "      #   arg_constraints: { positional_max: 0 }\n") {
				t.Errorf("want one commented bare rule with positional_max: 0:\n%s", text)
			}
			for _, f := range tt.flags {
				if !strings.Contains(text, " "+f+" ") && !strings.Contains(text, " "+f+"\n") {
					t.Errorf("the bare rule does not list %s:\n%s", f, text)
				}
			}
		})
	}
}

// TestValidateWarnsAboutUnlimitedPositionals: `config validate` names each
// rule that takes positionals with neither a limit nor a pattern, with its
// file and line and the fix, and still says ok.
func TestValidateWarnsAboutUnlimitedPositionals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	cfg := "mcp:\n  listen: 127.0.0.1:0\ntools:\n  fake:\n    binary: " + fakecli + "\n    allow:\n" +
		"      - subcommand: [show]\n" +
		"      - subcommand: [log]\n        arg_constraints: { positional_max: 0 }\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runWraptool(t, nil, "config", "validate", path)
	if code != 0 || !strings.HasPrefix(stdout, "ok: ") {
		t.Fatalf("validate: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	want := "warning: " + path + ":7: tools.fake.allow[0]: rule fake_show (subcommand [show]) takes any number of positional arguments"
	if !strings.Contains(stderr, want) || !strings.Contains(stderr, "arg_constraints: { positional_max: 0 } for none") {
		t.Errorf("stderr %q, want %q and the fix", stderr, want)
	}
	if strings.Count(stderr, "positional arguments") != 1 {
		t.Errorf("want one warning (fake_log has positional_max: 0): %s", stderr)
	}
}
