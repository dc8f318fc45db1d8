package main

import (
	"slices"
	"strings"
	"testing"
)

func TestParseCheckTests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		data    string
		want    [][]string // the words of each entry
		wantErr string
	}{
		{
			name: "a string is split as POSIX words: quotes and backslashes",
			data: `- cmd: git commit -m "it's \"done\"" --author='A B <a@b>' x\ y '' "\q"` + "\n  want: allow\n",
			want: [][]string{{"git", "commit", "-m", `it's "done"`, "--author=A B <a@b>", "x y", "", `\q`}},
		},
		{
			name: "nothing is expanded",
			data: "- cmd: 'git log $HOME ~ * `x` a|b'\n  want: deny\n",
			want: [][]string{{"git", "log", "$HOME", "~", "*", "`x`", "a|b"}},
		},
		{
			name: "a list is taken word for word",
			data: "- cmd: [git, log, -n, 5, 'a b', '']\n  want: allow\n- {cmd: [gcloud], want: deny}\n",
			want: [][]string{{"git", "log", "-n", "5", "a b", ""}, {"gcloud"}},
		},
		{name: "an unbalanced double quote names the line", data: "- cmd: git\n  want: allow\n- cmd: 'git \"x'\n  want: deny\n", wantErr: "t.yaml:3: tests[1].cmd: unbalanced double quote"},
		{name: "a trailing backslash is refused", data: "- cmd: 'git x\\'\n  want: deny\n", wantErr: "t.yaml:1: tests[0].cmd: ends with a backslash"},
		{name: "an unknown key is refused", data: "- cmd: git\n  want: allow\n  why: x\n", wantErr: `t.yaml:3: tests[0]: unknown key "why"`},
		{name: "want must be allow or deny", data: "- cmd: git\n  want: yes\n", wantErr: `t.yaml:2: tests[0].want: want allow or deny, got "yes"`},
		{name: "want is required", data: "- cmd: git\n", wantErr: "t.yaml:1: tests[0]: want is missing"},
		{name: "cmd is required", data: "- want: deny\n", wantErr: "t.yaml:1: tests[0]: cmd is missing"},
		{name: "an empty cmd is refused", data: "- cmd: ''\n  want: deny\n", wantErr: "t.yaml:1: tests[0].cmd: is empty"},
		{name: "a cmd list holds words only", data: "- cmd: [git, [x]]\n  want: deny\n", wantErr: "tests[0].cmd: line 1: want a word"},
		{name: "an empty file tests nothing and is refused", data: "", wantErr: "t.yaml: holds no tests"},
		{name: "an empty list is refused", data: "[]\n", wantErr: "t.yaml:1: holds no tests"},
		{name: "a mapping is not a list", data: "cmd: git\n", wantErr: "t.yaml:1: want a list of {cmd, want}"},
		{name: "a second document is refused", data: "- {cmd: git, want: deny}\n---\n- {cmd: git, want: deny}\n", wantErr: "want one YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseCheckTests("t.yaml", []byte(tt.data))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var words [][]string
			for _, tt := range got {
				words = append(words, tt.words)
			}
			if !slices.EqualFunc(words, tt.want, slices.Equal) {
				t.Errorf("words = %q, want %q", words, tt.want)
			}
		})
	}
}

func TestShellSplit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "  a   b\tc\n", want: []string{"a", "b", "c"}},
		{in: `a\ b`, want: []string{"a b"}},
		{in: "a\\\nb", want: []string{"ab"}},
		{in: `'a\b'`, want: []string{`a\b`}},
		{in: `"a\"b\\c\$d\e"`, want: []string{`a"b\c$d\e`}},
		{in: `x''y "" ''`, want: []string{"xy", "", ""}},
		{in: `a"b c"'d e'f`, want: []string{"ab cd ef"}},
		{in: "", want: nil},
		{in: `'a`, wantErr: "unbalanced single quote"},
		{in: `"a\"`, wantErr: "unbalanced double quote"},
		{in: `a\`, wantErr: "ends with a backslash"},
	}
	for _, tt := range tests {
		got, err := shellSplit(tt.in)
		switch {
		case tt.wantErr != "":
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("shellSplit(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("shellSplit(%q): %v", tt.in, err)
		case !slices.Equal(got, tt.want):
			t.Errorf("shellSplit(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
