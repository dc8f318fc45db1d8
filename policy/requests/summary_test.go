package requests

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestSummary(t *testing.T) {
	t.Parallel()
	manyFlags := make([]string, 60)
	for i := range manyFlags {
		manyFlags[i] = "--flag-number-" + strings.Repeat("x", i%7)
	}
	longFlag := "--" + strings.Repeat("f", 248)
	for _, tc := range []struct {
		name string
		in   Record
		want string
	}{
		{
			name: "a request reads as tool, subcommand, flags and rationale",
			in:   Record{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force"}, Rationale: "the branch was rebased"},
			want: "git push --force: the branch was rebased",
		},
		{
			name: "a request without flags shows none",
			in:   Record{Tool: "git", Subcommand: []string{"remote", "add"}, Flags: []string{}, Rationale: "add a mirror"},
			want: "git remote add: add a mirror",
		},
		{
			name: "a request for no subcommand shows any subcommand",
			in:   Record{Tool: "git", Flags: []string{"--version"}, Rationale: "which git"},
			want: "git <ANY SUBCOMMAND> --version: which git",
		},
		{
			name: "whitespace runs in the rationale collapse",
			in:   Record{Tool: "git", Subcommand: []string{"push"}, Rationale: "two\n\nlines\r\n\tand\u2028more  "},
			want: "git push: two lines and more",
		},
		{
			name: "controls in the rationale are escaped, so it cannot repaint the screen",
			in:   Record{Tool: "git", Subcommand: []string{"push"}, Rationale: "ok\x1b[2J\x1b[Hrequest approved"},
			want: `git push: ok\x1b[2J\x1b[Hrequest approved`,
		},
		{
			name: "a bidirectional override in a flag or the rationale is escaped",
			in:   Record{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--a\u202eb"}, Rationale: "x\u202ey\u200bz"},
			want: `git push --a\u202eb: x\u202ey\u200bz`,
		},
		{
			name: "a homoglyph is escaped in a token and readable in the rationale",
			in:   Record{Tool: "gіt", Subcommand: []string{"pusһ"}, Flags: []string{"--fоrce"}, Rationale: "gіthub"},
			want: `g\u0456t pus\u04bb --f\u043erce: gіthub`,
		},
		{
			name: "a typed escape cannot pass for a real one",
			in:   Record{Tool: "git", Subcommand: []string{"push"}, Flags: []string{`--\u202e`}, Rationale: `a\nb`},
			want: `git push --\\u202e: a\\nb`,
		},
		{
			name: "a long rationale is cut at 200 characters and marked",
			in:   Record{Tool: "git", Subcommand: []string{"push"}, Rationale: strings.Repeat("r", 300)},
			want: "git push: " + strings.Repeat("r", 200) + "…",
		},
		{
			name: "a rationale of exactly 200 characters is whole",
			in:   Record{Tool: "git", Subcommand: []string{"push"}, Rationale: strings.Repeat("r", 200)},
			want: "git push: " + strings.Repeat("r", 200),
		},
		{
			name: "the cut counts the rendering and never splits an escape",
			in:   Record{Tool: "git", Subcommand: []string{"push"}, Rationale: strings.Repeat("r", 197) + "\u202etail"},
			want: "git push: " + strings.Repeat("r", 197) + "…",
		},
		{
			name: "the cut leaves no trailing space before the mark",
			in:   Record{Tool: "git", Subcommand: []string{"push"}, Rationale: strings.Repeat("r", 199) + "   " + strings.Repeat("s", 50)},
			want: "git push: " + strings.Repeat("r", 199) + "…",
		},
		{
			name: "a long flag list is never cut",
			in:   Record{Tool: "git", Subcommand: []string{"push"}, Flags: manyFlags, Rationale: "all of them"},
			want: "git push " + strings.Join(manyFlags, " ") + ": all of them",
		},
		{
			name: "a flag longer than 200 characters is cut as a token is, the others kept",
			in:   Record{Tool: "git", Subcommand: []string{"push"}, Flags: []string{longFlag, "--force"}, Rationale: "r"},
			want: "git push --" + strings.Repeat("f", 198) + "…(250 bytes) --force: r",
		},
		{
			name: "an exact-call request shows its command",
			in: Record{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force"}, Rationale: "just this once",
				Call: &Call{Tool: "git_push", Command: []string{"git", "push", "--force", "origin", "main; rm -rf ~"}}},
			want: `git push --force origin "main; rm -rf ~": just this once`,
		},
		{
			name: "an exact call's hostile token is escaped",
			in:   Record{Tool: "git", Rationale: "r", Call: &Call{Command: []string{"git", "push", "gіthub\x1b[2J"}}},
			want: `git push "g\u0456thub\x1b[2J": r`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Summary(tc.in)
			if got != tc.want {
				t.Errorf("Summary() =\n %q\nwant\n %q", got, tc.want)
			}
			if strings.ContainsAny(got, "\n\r\x1b") || !utf8.ValidString(got) {
				t.Errorf("Summary() = %q holds a line break, an escape or invalid UTF-8", got)
			}
			js := SummaryJSON(tc.in)
			var back string
			if err := json.Unmarshal([]byte(js), &back); err != nil || back != got {
				t.Errorf("SummaryJSON() = %s decodes to %q (err %v), want the summary %q", js, back, err, got)
			}
		})
	}
}

func TestSummaryJSONIsOneJSONString(t *testing.T) {
	t.Parallel()
	r := Record{Tool: "git", Subcommand: nil, Flags: []string{`--x="y"`}, Rationale: `back\slash "quoted" <b>&`}
	want := `"git <ANY SUBCOMMAND> --x=\"y\": back\\\\slash \"quoted\" <b>&"`
	if got := SummaryJSON(r); got != want {
		t.Errorf("SummaryJSON() = %s, want %s", got, want)
	}
}

// FuzzSummary: whatever a record holds, its summary is one line that
// cannot repaint a screen (no control, format or separator character
// survives), it keeps every flag, and SummaryJSON decodes to it.
func FuzzSummary(f *testing.F) {
	f.Add("git", "push", "--force", "the branch was rebased\x1b[2J\u202e")
	f.Add("g\u0456t", "", "-rf", "line\nline\r\u2028\u0085x")
	f.Add("", "a b", "--a\x00b", string([]byte{0xff, 0xfe}))
	f.Fuzz(func(t *testing.T, tool, sub, flag, rationale string) {
		r := Record{Tool: tool, Subcommand: strings.Fields(sub), Flags: []string{flag}, Rationale: rationale}
		s := Summary(r)
		if !utf8.ValidString(s) {
			t.Fatalf("summary %q is not UTF-8", s)
		}
		for _, c := range s {
			if unicode.IsControl(c) || unicode.Is(unicode.Cf, c) || unicode.Is(unicode.Zl, c) || unicode.Is(unicode.Zp, c) {
				t.Fatalf("summary %q holds %U", s, c)
			}
		}
		if !strings.Contains(s, Flags(r.Flags)) {
			t.Errorf("summary %q lost the flag %q", s, Flags(r.Flags))
		}
		var back string
		if err := json.Unmarshal([]byte(SummaryJSON(r)), &back); err != nil || back != s {
			t.Errorf("SummaryJSON %q decodes to %q (%v), want %q", SummaryJSON(r), back, err, s)
		}
	})
}
