package runner

import (
	"errors"
	"slices"
	"strings"
	"testing"
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
