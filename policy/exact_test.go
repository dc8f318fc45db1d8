package policy

import (
	"slices"
	"strings"
	"testing"
)

func TestCommand(t *testing.T) {
	t.Parallel()
	p := fixture(t)
	cases := []struct {
		name   string
		call   Call
		want   []string
		wantOK bool
	}{
		{"allowed flags in schema order, then others sorted, then args",
			Call{"git", sub("push"), map[string]any{"force": true, "set-upstream": true, "args": []any{"origin", "main"}, "cwd": "/x"}},
			[]string{"git", "push", "--set-upstream", "--force", "origin", "main"}, true},
		{"a value of an unknown flag", Call{"git", sub("pull"), map[string]any{"rebase": "merges", "j": 4.0}},
			[]string{"git", "pull", "--rebase=merges", "-j", "4"}, true},
		{"false and null are absent", Call{"git", sub("pull"), map[string]any{"ff": false, "x": nil, "y": "false"}},
			[]string{"git", "pull"}, true},
		{"a typed value out of bounds is kept as written", Call{"git", sub("log"), map[string]any{"max-count": 500.0, "n": "abc"}},
			[]string{"git", "log", "--max-count=500", "-n", "abc"}, true},
		{"an array value cannot reach argv", Call{"git", sub("pull"), map[string]any{"x": []any{"a"}}}, nil, false},
		{"a non-string positional cannot", Call{"git", sub("pull"), map[string]any{"args": []any{1.0}}}, nil, false},
		{"an unknown tool", Call{"nope", nil, nil}, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := p.Command(tc.call)
			if ok != tc.wantOK || !slices.Equal(got, tc.want) {
				t.Errorf("Command = %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// TestEvaluateExact shows what an exact-call grant lifts (the allowlist, a
// value, a required flag, the count and the pattern of positionals) and what
// it never lifts, and that the argv is the binary and Command's tokens.
func TestEvaluateExact(t *testing.T) {
	t.Parallel()
	p := fixture(t)
	cases := []struct {
		name     string
		call     Call
		wantArgv []string // nil: refused with wantKind
		wantKind Kind
	}{
		{"an allowed call is just allowed", Call{"git", sub("push"), map[string]any{"set-upstream": true}},
			[]string{"/usr/bin/git", "push", "--set-upstream"}, 0},
		{"a flag not in the allowlist", Call{"git", sub("push"), map[string]any{"force": true, "args": []any{"origin", "main"}}},
			[]string{"/usr/bin/git", "push", "--force", "origin", "main"}, 0},
		{"a value out of bounds", Call{"git", sub("clone"), map[string]any{"depth": 500.0, "branch": "Main"}},
			[]string{"/usr/bin/git", "clone", "--depth=500", "--branch=Main"}, 0},
		{"a missing required flag", Call{"git", sub("tag"), map[string]any{}}, []string{"/usr/bin/git", "tag"}, 0},
		{"too many positionals", Call{"git", sub("show"), map[string]any{"args": []any{"a", "b"}}},
			[]string{"/usr/bin/git", "show", "a", "b"}, 0},
		{"deny rules hold", Call{"gcloud", nil, map[string]any{"x": true, "args": []any{"auth", "login"}}}, nil, KindDenyRule},
		{"an unknown short flag's value meets deny rules", Call{"gcloud", nil, map[string]any{"x": true, "P": "auth"}}, nil, KindDenyRule},
		{"a denied flag holds", Call{"git", sub("fetch"), map[string]any{"all": true, "zz": true, "prune": true}}, nil, KindFlagDenied},
		{"a help flag runs alone", Call{"git", sub("push"), map[string]any{"help": true, "force": true}}, nil, KindHelpAlone},
		{"a positional that looks like a flag", Call{"git", sub("push"), map[string]any{"force": true, "args": []any{"-rf"}}}, nil, KindArg},
		{"a NUL in a positional", Call{"git", sub("push"), map[string]any{"force": true, "args": []any{"a\x00b"}}}, nil, KindArg},
		{"a NUL in a value", Call{"git", sub("push"), map[string]any{"force": true, "repo": "a\x00b"}}, nil, KindValue},
		{"a short flag's value beginning with '-'", Call{"git", sub("push"), map[string]any{"o": "-x"}}, nil, KindValue},
		{"an array value", Call{"git", sub("push"), map[string]any{"o": []any{"x"}}}, nil, KindValue},
		{"cwd must be a string", Call{"git", sub("push"), map[string]any{"force": true, "cwd": 3.0}}, nil, KindCwd},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := p.EvaluateExact(tc.call)
			if tc.wantArgv == nil {
				if d.Allowed() || d.Refusal.Kind != tc.wantKind {
					t.Fatalf("got %v %+v, want refused as %v", d.Argv, d.Refusal, tc.wantKind)
				}
				if !strings.HasPrefix(d.Refusal.Text, "DENIED: '") {
					t.Errorf("refusal text %q", d.Refusal.Text)
				}
				return
			}
			if !d.Allowed() {
				t.Fatalf("refused: %s", d.Refusal.Text)
			}
			if !slices.Equal(d.Argv, tc.wantArgv) {
				t.Errorf("argv %q, want %q", d.Argv, tc.wantArgv)
			}
			tokens, _ := p.Command(tc.call)
			if !slices.Equal(d.Argv[1:], tokens[1:]) {
				t.Errorf("argv %q is not Command %q", d.Argv, tokens)
			}
		})
	}
}

// TestEvaluateExactPathsCoverEveryValue shows that every client-chosen
// value and positional of a lifted call reaches the runner's protected-path
// check, unknown flags' values included.
func TestEvaluateExactPathsCoverEveryValue(t *testing.T) {
	t.Parallel()
	d := fixture(t).EvaluateExact(Call{"git", sub("push"), map[string]any{"receive-pack": "/tmp/x", "o": "y", "args": []any{"origin"}}})
	if !d.Allowed() {
		t.Fatal(d.Refusal.Text)
	}
	var got []string
	for _, p := range d.Paths {
		got = append(got, p.Flag+"="+p.Value)
	}
	slices.Sort(got)
	if want := []string{"--receive-pack=/tmp/x", "-o=y", "=origin"}; !slices.Equal(got, want) {
		t.Errorf("paths %q, want %q", got, want)
	}
}
