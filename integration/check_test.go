package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// toolsCheck wraps fakecli (typed by its GNU-style help: -m takes a value,
// --verbose is a switch, --color's value is optional) with one rule per
// kind of refusal, and rec, a script that records any run of it.
const toolsCheck = `  fake:
    binary: $FAKECLI
    allow:
      - subcommand: [commit]
        flags: ["-m", "--verbose", "--depth", "--color"]
        flag_constraints:
          "--depth": {min: 1, max: 10}
          "--color": {type: string, pattern: "always|never"}
        arg_constraints:
          positional_max: 1
    deny:
      - subcommand: [commit, amend]
  rec:
    binary: $REC
    allow:
      - subcommand: [push]
        flags: ["--set-upstream"]
`

// checkSetup writes the config (and rec's script) into dir; the MCP and
// check runs share HOME, hence the introspection cache.
func checkSetup(t *testing.T) (dir string, env []string) {
	t.Helper()
	dir = t.TempDir()
	rec := filepath.Join(dir, "bin", "rec")
	if err := os.MkdirAll(filepath.Dir(rec), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rec, []byte("#!/bin/sh\necho \"$0 $*\" >> "+filepath.Join(dir, "ran")+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := strings.ReplaceAll(serverConfig(t, dir, toolsCheck), "$REC", rec)
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, []string{"HOME=" + filepath.Join(dir, "home")}
}

func TestCheckRunsNothing(t *testing.T) {
	slow(t, "check running nothing it judges")
	t.Parallel()
	dir, env := checkSetup(t)
	cfg := filepath.Join(dir, "config.yaml")
	tests := []struct {
		words    []string
		wantCode int
	}{
		{[]string{"rec", "push", "--set-upstream", "origin"}, 0},
		{[]string{"rec", "push", "--help"}, 0},
		{[]string{"rec", "push", "--force"}, 3},
		{[]string{"rec", "pull"}, 3},
		{[]string{"fake", "commit", "-m", "hi"}, 0},
	}
	for _, tt := range tests {
		stdout, stderr, code := runWraptool(t, env, append([]string{"--config", cfg, "check", "--"}, tt.words...)...)
		if code != tt.wantCode {
			t.Errorf("check %q: exit status %d, want %d (stdout %q, stderr %q)", tt.words, code, tt.wantCode, stdout, stderr)
		}
	}
	tests2 := filepath.Join(dir, "tests.yaml")
	if err := os.WriteFile(tests2, []byte("- {cmd: rec push origin, want: allow}\n- {cmd: rec push -f, want: deny}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if stdout, stderr, code := runWraptool(t, env, "--config", cfg, "check", "--tests", tests2); code != 0 {
		t.Errorf("check --tests: exit status %d, want 0 (stdout %q, stderr %q)", code, stdout, stderr)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "ran")); err == nil {
		t.Errorf("check ran a wrapped binary:\n%s", data)
	}
}

// TestCheckAnswersAsTheServer compares check with a running server on the
// same config and introspection cache: the denial text byte for byte, and
// for an allowed line the argv the server's child was started with.
func TestCheckAnswersAsTheServer(t *testing.T) {
	slow(t, "check agreeing with a running server")
	t.Parallel()
	dir, env := checkSetup(t)
	s := startServerIn(t, dir, "")
	c := s.Connect(t, "/mcp")
	cfg := filepath.Join(dir, "config.yaml")
	check := func(t *testing.T, words ...string) (string, int) {
		t.Helper()
		stdout, stderr, code := runWraptool(t, env, append([]string{"--config", cfg, "check", "--"}, words...)...)
		if strings.Contains(stderr, "takes a value is not known") {
			t.Errorf("stderr = %q: the server's introspection cache types every flag here", stderr)
		}
		return stdout, code
	}

	denied := []struct {
		name  string
		words []string
		call  map[string]any
	}{
		{
			name:  "a flag not in the allowlist",
			words: []string{"fake", "commit", "-m", "hi", "--force", "x"},
			call:  map[string]any{"m": "hi", "force": true, "args": []string{"x"}},
		},
		{
			name:  "an integer above its max, its value as the next word",
			words: []string{"fake", "commit", "--depth", "11"},
			call:  map[string]any{"depth": 11},
		},
		{
			name:  "an optional value outside its pattern",
			words: []string{"fake", "commit", "--color=auto"},
			call:  map[string]any{"color": "auto"},
		},
		{
			name:  "a deny rule covering a positional argument",
			words: []string{"fake", "commit", "amend"},
			call:  map[string]any{"args": []string{"amend"}},
		},
		{
			name:  "too many positional arguments",
			words: []string{"fake", "commit", "a", "b"},
			call:  map[string]any{"args": []string{"a", "b"}},
		},
	}
	for _, tt := range denied {
		t.Run(tt.name, func(t *testing.T) {
			res := c.Call(t, "fake_commit", tt.call)
			want := toolsettest.ResultText(t, res)
			if !res.IsError || !strings.HasPrefix(want, "DENIED: ") {
				t.Fatalf("the server's answer = %q, want a denial", want)
			}
			got, code := check(t, tt.words...)
			if code != 3 {
				t.Errorf("exit status = %d, want 3", code)
			}
			// The same denial, but the last line: the server's tells the
			// assistant to file a request, check's the operator what to do.
			cut := func(text string) (string, string) {
				i := strings.LastIndex(text, "\n\n")
				return text[:max(i, 0)], text[max(i, 0):]
			}
			gotHead, gotStep := cut(strings.TrimSuffix(got, "\n"))
			wantHead, _ := cut(want)
			if gotHead != wantHead || !strings.HasPrefix(gotStep, "\n\nNext step: ") || !strings.HasSuffix(got, "\n") {
				t.Errorf("check's text differs from the server's (but for the next step):\ncheck  %q\nserver %q", got, want)
			}
		})
	}

	t.Run("an allowed line is the argv the server runs", func(t *testing.T) {
		stdout, code := check(t, "fake", "commit", "-m", "hi there", "--verbose", "--depth=3", "--color=never", "x")
		if code != 0 {
			t.Fatalf("exit status = %d, want 0 (stdout %q)", code, stdout)
		}
		jsonOut, _, _ := runWraptool(t, env, "--config", cfg, "check", "--json", "--", "fake", "commit", "-m", "hi there", "--verbose", "--depth=3", "--color=never", "x")
		var got struct {
			Decision string   `json:"decision"`
			Tool     string   `json:"tool"`
			Argv     []string `json:"argv"`
		}
		if err := json.Unmarshal([]byte(jsonOut), &got); err != nil {
			t.Fatalf("check --json = %q: %v", jsonOut, err)
		}
		res := c.Call(t, got.Tool, map[string]any{"m": "hi there", "verbose": true, "depth": 3, "color": "never", "args": []string{"x"}})
		text := toolsettest.ResultText(t, res)
		if res.IsError {
			t.Fatalf("the server refused: %s", text)
		}
		var report fakeReport
		if err := json.Unmarshal([]byte(text), &report); err != nil {
			t.Fatalf("result %q: %v", text, err)
		}
		if got.Decision != "allow" || !slices.Equal(got.Argv, report.Argv) {
			t.Errorf("check --json = %+v, want allow with the argv the server ran, %q", got, report.Argv)
		}
	})
}
