package runner

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/toolset/runner/seatbelt"
)

// macOS's Probe trusts sandbox-exec only as root alone could have made it.
func TestSeatbeltSupport(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		check  func(string) error
		ok     bool
		String string
	}{
		{"a trusted sandbox-exec", func(string) error { return nil }, true, "seatbelt (sandbox-exec)"},
		{"one another user could replace", func(p string) error {
			return errors.New("folder /usr/bin is writable by group")
		}, false, "unavailable: " + ErrNoConfinement.Error() + ": /usr/bin/sandbox-exec cannot be trusted: folder /usr/bin is writable by group"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var asked string
			sup := seatbeltSupport(func(p string) error { asked = p; return tc.check(p) })
			if asked != "/usr/bin/sandbox-exec" {
				t.Errorf("checked %q, want /usr/bin/sandbox-exec", asked)
			}
			if sup.OK() != tc.ok || sup.Launcher != tc.ok || sup.String() != tc.String {
				t.Errorf("Support %+v (%s); want OK %v, Launcher %v, %q", sup, sup, tc.ok, tc.ok, tc.String)
			}
			if !tc.ok && !errors.Is(sup.Err, ErrNoConfinement) {
				t.Errorf("error %v does not wrap ErrNoConfinement", sup.Err)
			}
		})
	}
}

// The profile gets newPlan's sets, and the prefix is sandbox-exec's
// command line up to the program, which the launcher appends.
func TestSeatbeltRulesAndPrefix(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	cfg := base + "/home/.config/wraptool"
	pl := &plan{
		hidden:    map[string]bool{cfg: true, base + "/home/token": true},
		readOnly:  map[string]bool{base + "/bin/tool": true},
		runInside: []string{cfg + "/hook"},
		above:     map[string]bool{"/": true, base + "/home": true},
	}
	rules := seatbeltRules(pl)
	if want := []string{cfg, base + "/home/token"}; !slices.Equal(rules.Hidden, want) {
		t.Errorf("Hidden %q, want %q", rules.Hidden, want)
	}
	if want := []string{base + "/bin/tool", cfg + "/hook"}; !slices.Equal(rules.ReadOnly, want) {
		t.Errorf("ReadOnly %q, want %q", rules.ReadOnly, want)
	}
	if want := []string{"/", base + "/home"}; !slices.Equal(rules.Above, want) {
		t.Errorf("Above %q, want %q", rules.Above, want)
	}
	argv := []string{"/usr/bin/git", "-c", "x", "status"}
	prefix, err := seatbeltPrefix(rules, argv)
	if err != nil {
		t.Fatal(err)
	}
	if prefix[0] != "/usr/bin/sandbox-exec" || prefix[1] != "-p" || prefix[len(prefix)-1] != "--" {
		t.Errorf("prefix %q; want sandbox-exec -p PROFILE … --", prefix)
	}
	for _, p := range prefix {
		if strings.Contains(p, "/usr/bin/git") {
			t.Errorf("the prefix holds the program: %q", prefix)
		}
	}
	if _, err := seatbeltPrefix(rules, nil); err == nil {
		t.Error("a prefix for nothing to run was made")
	}
}

// TestSeatbeltRulesHoldTheLinkOnTheWay: a config reached through a
// symlink (~/proj/.wraptool -> ~/dotfiles/wraptool) is hidden by the name
// wraptool opens as well as by the real one, and the link itself may be
// neither moved aside nor made anew: Seatbelt matches paths, so a folder of
// the child's making at the link's name would otherwise hold a config.yaml
// no rule names.
func TestSeatbeltRulesHoldTheLinkOnTheWay(t *testing.T) {
	t.Parallel()
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(home, "dotfiles", "wraptool")
	if err := os.MkdirAll(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "config.yaml"), []byte("tools: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, "proj"), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(home, "proj", ".wraptool")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	given := filepath.Join(link, "config.yaml")
	rules := seatbeltRules(newPlan(Protected{Hidden: []string{given}}))
	for _, want := range []string{given, filepath.Join(real, "config.yaml")} {
		if !slices.Contains(rules.Hidden, want) {
			t.Errorf("Hidden %q lacks %s", rules.Hidden, want)
		}
	}
	if !slices.Contains(rules.Above, link) {
		t.Errorf("Above %q lacks the link %s: a child could move it aside and make a folder there", rules.Above, link)
	}
	if _, _, err := seatbelt.Profile(rules); err != nil {
		t.Errorf("the rules make no profile: %v", err)
	}
	// Hidden wins over read-only by the given name too: a file listed as
	// both (a hook kept as a protected file) is never made readable.
	for _, order := range [][2][]string{{{given}, {given}}, {{given}, {given, given}}} {
		both := seatbeltRules(newPlan(Protected{Hidden: order[0], ReadOnly: order[1]}))
		if !slices.Contains(both.Hidden, given) || slices.Contains(both.ReadOnly, given) {
			t.Errorf("hidden and read-only %s: Hidden %q, ReadOnly %q; want it hidden only", given, both.Hidden, both.ReadOnly)
		}
	}
}

// TestSeatbeltRulesHideTheTemporaryFilesBesideAConfig: a config kept in a
// folder of other files (a repository's top) is replaced by an atomic
// write whose temporary file has a random name beside it; Seatbelt matches
// names, so those names are hidden by their start, as Landlock's folder
// rule does for it on Linux. Inside a folder hidden whole nothing is added.
func TestSeatbeltRulesHideTheTemporaryFilesBesideAConfig(t *testing.T) {
	t.Parallel()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo, own := filepath.Join(base, "repo"), filepath.Join(base, "own")
	for _, d := range []string{repo, own} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	rules := seatbeltRules(newPlan(Protected{Hidden: []string{filepath.Join(repo, "wraptool.yaml"), own, filepath.Join(own, "mcp-token")}}))
	for _, want := range []string{
		filepath.Join(repo, ".wraptool.yaml."), // .wraptool.yaml.apply-…, .wraptool.yaml.tmp-…
		filepath.Join(repo, "wraptool.yaml."),  // rotated copies
		filepath.Join(repo, ".wraptool-"),
	} {
		if !slices.Contains(rules.Starts, want) {
			t.Errorf("Starts %q lack %s", rules.Starts, want)
		}
	}
	for _, s := range rules.Starts {
		if strings.HasPrefix(s, own+"/") {
			t.Errorf("Starts %q name %s inside a folder hidden whole", rules.Starts, s)
		}
	}
	if _, _, err := seatbelt.Profile(rules); err != nil {
		t.Errorf("the rules make no profile: %v", err)
	}
}
