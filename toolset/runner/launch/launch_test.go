package launch

import (
	"slices"
	"strings"
	"testing"
)

func TestArgsParseBack(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		spec Spec
		want []string
	}{
		{"a program alone", Spec{Path: "/bin/true", Argv: []string{"true"}},
			[]string{Marker, "v1", "status=3", "--", "/bin/true", "true"}},
		{"a directory takes the descriptor after the status pipe", Spec{Dir: true, Path: "/bin/ls", Argv: []string{"ls", "-l"}},
			[]string{Marker, "v1", "status=3", "dir=4", "--", "/bin/ls", "ls", "-l"}},
		{"a ruleset follows the directory", Spec{Dir: true, Ruleset: true, Path: "./x", Argv: []string{"x", "--", "dir=9"}},
			[]string{Marker, "v1", "status=3", "dir=4", "landlock=5", "--", "./x", "x", "--", "dir=9"}},
		{"a ruleset without a directory takes its place", Spec{Ruleset: true, Path: "/bin/sh", Argv: []string{"sh", "-c", "x"}},
			[]string{Marker, "v1", "status=3", "landlock=4", "--", "/bin/sh", "sh", "-c", "x"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.spec.Args()
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Args() = %q, want %q", got, tc.want)
			}
			back, err := Parse(got)
			if err != nil || back.Dir != tc.spec.Dir || back.Ruleset != tc.spec.Ruleset || back.Path != tc.spec.Path || !slices.Equal(back.Argv, tc.spec.Argv) {
				t.Errorf("Parse(Args()) = %+v, %v; want %+v", back, err, tc.spec)
			}
		})
	}
}

// Whoever runs wraptool under the marker, with whatever argv, gets a
// refusal, never a guess.
func TestParseRefusesAnythingElse(t *testing.T) {
	t.Parallel()
	head := []string{Marker, "v1", "status=3"}
	with := func(rest ...string) []string { return append(slices.Clone(head), rest...) }
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"another argv[0]", []string{"wraptool", "v1", "status=3", "--", "/bin/true", "true"}, "not a launcher"},
		{"nothing after the marker", []string{Marker}, "not a launcher"},
		{"another protocol version", []string{Marker, "v2", "status=3", "--", "/bin/true", "true"}, "protocol"},
		{"no status pipe", []string{Marker, "v1", "--", "/bin/true", "true"}, "status pipe"},
		{"the status pipe on another descriptor", []string{Marker, "v1", "status=4", "--", "/bin/true", "true"}, "status pipe"},
		{"the directory on another descriptor", with("dir=5", "--", "/bin/true", "true"), "want 4"},
		{"a descriptor number written with a leading zero", with("dir=04", "--", "/bin/true", "true"), "want 4"},
		{"a signed descriptor number", with("dir=+4", "--", "/bin/true", "true"), "want 4"},
		{"the ruleset on the directory's descriptor", with("dir=4", "landlock=4", "--", "/bin/true", "true"), "want 5"},
		{"the directory twice", with("dir=4", "dir=4", "--", "/bin/true", "true"), "unexpected option"},
		{"the directory after the ruleset", with("landlock=4", "dir=5", "--", "/bin/true", "true"), "unexpected option"},
		{"an unknown option", with("shell=/bin/sh", "--", "/bin/true", "true"), "unexpected option"},
		{"an option without a value", with("dir", "--", "/bin/true", "true"), "no value"},
		{"too many options", with("dir=4", "landlock=5", "landlock=6", "--", "/bin/true", "true"), "too many"},
		{"no separator", with("/bin/true", "true"), "no value"},
		{"no separator at all", with(), `no "--"`},
		{"no program", with("--"), "no program"},
		{"a program without argv", with("--", "/bin/true"), "no program"},
		{"a bare name to look up in PATH", with("--", "sh", "sh"), "never searches PATH"},
		{"an empty program", with("--", "", "x"), "never searches PATH"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse(tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse(%q) = %+v, %v; want an error containing %q", tc.args, s, err, tc.want)
			}
		})
	}
}
