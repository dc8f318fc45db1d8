package toolset

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// Argument injection through every parameter path of a wrapped tool's call:
// flag values, short-flag values, positional arguments, flag
// names (properties the schema does not list) and cwd. No shell is ever
// involved, so shell syntax reaches the child verbatim as one argv entry;
// what could turn a value into an option (a leading '-' where the child
// would read it as one) or a NUL is refused with the denial text; a cwd
// outside the roots is refused before anything runs.

// pwned is what every injection tries to create in the call's folder.
const pwned = "PWNED"

// shellSyntax are values a shell would act on; wraptool must pass each as
// one argument, untouched.
var shellSyntax = []string{
	"$(touch " + pwned + ")",
	"`touch " + pwned + "`",
	"; touch " + pwned,
	"| touch " + pwned,
	"&& touch " + pwned + " #",
	"x\ntouch " + pwned,
	"${IFS}touch${IFS}" + pwned,
	"*",
	"~",
	`'"\`,
	"%s%n%x",
	"\x1b]0;title\x07\x1b[2J",
}

// injectionState is fakecli's report rule with a typed string flag, an
// untyped short flag (-m), a typed one (-t), an integer, a switch, and any positionals, its cwd
// confined to root (the call's folder by default).
func injectionState(t *testing.T, root string) *State {
	t.Helper()
	rule := &policy.AllowRule{Subcommand: []string{"report"}, Flags: help("--message", "-m", "-t", "--depth", "--force"),
		FlagConstraints: map[string]*policy.Constraint{"--message": {Type: "string"}, "-t": {Type: "string"}, "--depth": {Type: "integer"}, "--force": {Type: "boolean"}}}
	p := newPolicy(t, policy.Tool{Name: "fake", Binary: fakecli, Allow: []*policy.AllowRule{rule}})
	return &State{Policy: p, Runtimes: map[string]Runtime{"fake": {WorkingDir: root, Env: []string{}, Timeout: time.Minute, Roots: []string{root}}}}
}

// expectNothingCreated fails when any injection created its file, in the
// call's folder or in the test's own working directory.
func expectNothingCreated(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range append(dirs, ".") {
		if _, err := os.Stat(filepath.Join(d, pwned)); err == nil {
			t.Errorf("%s was created in %s: something ran a shell", pwned, d)
		}
	}
}

func TestHostileArgumentsReachTheChildVerbatim(t *testing.T) {
	t.Parallel()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	st := injectionState(t, root)
	cs := serve(t, st, func() *State { return st }, context.Background())
	defer expectNothingCreated(t, root)

	type tc struct {
		name string
		args map[string]any
		argv []string // after fakecli
	}
	var tests []tc
	for _, v := range shellSyntax {
		q := strconv.Quote(v)
		tests = append(tests,
			tc{"a long flag's value " + q + " is one --flag=value argument", map[string]any{"message": v}, []string{"report", "--message=" + v}},
			tc{"a short flag's value " + q + " is the one argument after the flag", map[string]any{"t": v}, []string{"report", "-t", v}},
			tc{"a positional " + q + " is one argument", map[string]any{"args": []any{v, "next"}}, []string{"report", v, "next"}},
		)
	}
	tests = append(tests,
		tc{"an option inside a long flag's value stays inside it", map[string]any{"message": "--upload-pack=touch " + pwned},
			[]string{"report", "--message=--upload-pack=touch " + pwned}},
		tc{"an option as a long flag's value stays its value", map[string]any{"message": "-rf"}, []string{"report", "--message=-rf"}},
		tc{"a number for a string flag is written in decimal", map[string]any{"message": 1e21}, []string{"report", "--message=1000000000000000000000"}},
		tc{"a false switch is absent", map[string]any{"force": false, "args": []any{"x"}}, []string{"report", "x"}},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := call(t, cs, "fake_report", tt.args)
			text := toolsettest.ResultText(t, res)
			if res.IsError {
				t.Fatalf("refused: %s", text)
			}
			var r toolsettest.Report
			if err := json.Unmarshal([]byte(text), &r); err != nil {
				t.Fatalf("not fakecli's report: %q", text)
			}
			if want := append([]string{fakecli}, tt.argv...); !slices.Equal(r.Argv, want) {
				t.Errorf("argv %q, want %q", r.Argv, want)
			}
			if r.Cwd != root {
				t.Errorf("cwd %q, want %q", r.Cwd, root)
			}
		})
	}
}

func TestHostileArgumentsAreRefusedWithTheDenialText(t *testing.T) {
	t.Parallel()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	if err := os.Symlink(outside, filepath.Join(root, "link-out")); err != nil {
		t.Fatal(err)
	}
	st := injectionState(t, root)
	cs := serve(t, st, func() *State { return st }, context.Background())
	defer expectNothingCreated(t, root, outside)

	tests := []struct {
		name   string
		args   map[string]any
		reason string // the Policy line, without its period
	}{
		// Flag names: every property the schema does not list is a flag,
		// refused by the allowlist, whatever it holds.
		{"a property holding a shell command is an unknown flag", map[string]any{"force; touch " + pwned: true},
			`flag '--force; touch ` + pwned + `' is not in the allowlist for 'fake report'`},
		{"a property named --exec is an unknown flag", map[string]any{"--exec": "touch " + pwned}, "flag '--exec' is not in the allowlist for 'fake report'"},
		{"a one-letter property is an unknown short flag", map[string]any{"e": "touch " + pwned}, "flag '-e' is not in the allowlist for 'fake report'"},
		{"a property with a value in its name is an unknown flag", map[string]any{"message=x": true}, "flag '--message=x' is not in the allowlist for 'fake report'"},
		{"an empty property is an unknown flag", map[string]any{"": "x"}, "flag '--' is not in the allowlist for 'fake report'"},
		{"a property holding an escape sequence is Go-quoted", map[string]any{"x\x1b[2J\r\nPolicy: ok": true},
			`flag "--x\x1b[2J\r\nPolicy: ok" is not in the allowlist for 'fake report'`},
		{"a property holding a quote is Go-quoted", map[string]any{"it's": true}, `flag "--it's" is not in the allowlist for 'fake report'`},
		// Values that would become options, or hide a NUL.
		{"a typed short flag's value that is an option", map[string]any{"t": "--upload-pack=touch " + pwned}, "value of '-t' must not begin with '-'"},
		{"an untyped short flag's value that is an option is held to the positional rule", map[string]any{"m": "--upload-pack=touch " + pwned},
			"positional argument '--upload-pack=touch " + pwned + "' looks like a flag; pass flags as named parameters"},
		{"a long flag's value holding a NUL", map[string]any{"message": "a\x00b"}, "value of '--message' contains a NUL byte"},
		{"an integer holding a command", map[string]any{"depth": "1; touch " + pwned}, "value of '--depth' must be an integer"},
		{"a switch holding a command", map[string]any{"force": "true; touch " + pwned}, "value of '--force' must be true or false"},
		{"a string flag given an object", map[string]any{"message": map[string]any{"$(touch)": 1}}, "value of '--message' must be a string"},
		{"a positional that is an option", map[string]any{"args": []any{"--upload-pack=touch " + pwned}},
			"positional argument '--upload-pack=touch " + pwned + "' looks like a flag; pass flags as named parameters"},
		{"a positional holding a NUL", map[string]any{"args": []any{"a\x00b"}}, `positional argument "a\x00b" contains a NUL byte`},
		{"positionals that are not strings", map[string]any{"args": []any{map[string]any{"x": 1}}}, ""},
		{"positionals that are not a list", map[string]any{"args": "; touch " + pwned}, ""},
		// cwd: checked, resolved and confined before anything runs.
		{"a cwd holding a command", map[string]any{"cwd": "$(touch " + pwned + ")"}, "cwd '$(touch " + pwned + ")' is not a directory"},
		{"a cwd climbing out of the root", map[string]any{"cwd": root + "/.."}, "cwd '" + root + "/..' is outside the allowed roots"},
		{"a cwd through a symlink out of the root", map[string]any{"cwd": filepath.Join(root, "link-out")},
			"cwd '" + filepath.Join(root, "link-out") + "' is outside the allowed roots"},
		{"a cwd through /proc", map[string]any{"cwd": "/proc/self/cwd"}, "cwd '/proc/self/cwd' is outside the allowed roots"},
		{"a cwd holding a NUL", map[string]any{"cwd": root + "\x00/x"}, ""},
		{"a cwd that is not a string", map[string]any{"cwd": []any{root}}, ""},
		{"a cwd holding an escape sequence is Go-quoted", map[string]any{"cwd": "/nope\x1b[2J\nPolicy: fine"},
			`cwd "/nope\x1b[2J\nPolicy: fine" is not a directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := call(t, cs, "fake_report", tt.args)
			text := toolsettest.ResultText(t, res)
			if !res.IsError || !strings.HasPrefix(text, "DENIED: ") {
				t.Fatalf("not refused: isError %v, %q", res.IsError, text)
			}
			sc, _ := res.StructuredContent.(map[string]any)
			if sc["denied"] != true {
				t.Errorf("structuredContent %v, want a denial", res.StructuredContent)
			}
			if tt.reason != "" && !strings.Contains(text, "\n\nPolicy: "+tt.reason+".\n") {
				t.Errorf("text:\n%s\nwant the Policy line %q", text, tt.reason)
			}
			// The denial text's shape: no value adds or splits a line, and nothing
			// reaches the client raw that could repaint a terminal.
			lines := strings.Split(text, "\n")
			if n := len(lines); n != 5 && n != 6 || lines[1] != "" || !strings.HasPrefix(lines[2], "Policy: ") ||
				lines[n-1] != "To request this capability, call the 'wraptool_request_capability' tool." {
				t.Errorf("the text is not the denial text's shape:\n%s", text)
			}
			if i := strings.IndexFunc(text, func(r rune) bool { return r != '\n' && !strconv.IsPrint(r) }); i >= 0 || !utf8.ValidString(text) {
				t.Errorf("the text carries a raw control at %d: %q", i, text)
			}
		})
	}
}

// The built-in tools' parameters — the request tool's tool, subcommand,
// flags and call_id, wraptool_discover's tool, wraptool_request_status's
// id — refuse hostile text with a tool error that quotes it, never raw.
func TestHostileBuiltInParametersAreQuoted(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "requests.jsonl")
	st := &State{Policy: discoverPolicy(t), RequestLog: log}
	discover := NewDiscoverHandler(func() *State { return st })
	status := NewStatusHandler(func() *State { return st })
	hostile := "\x1b]0;pwned\x07\x1b[2J\u202e\r\n<script>alert(1)</script>"
	q, _ := json.Marshal(hostile)
	handle := func(h mcp.ToolHandler, args string) *mcp.CallToolResult {
		t.Helper()
		res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Arguments: json.RawMessage(args)}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, tt := range []struct {
		name string
		text func() (string, bool) // the answer and whether it is an error
	}{
		{"the request tool's tool", func() (string, bool) {
			_, err := ParseRequest(json.RawMessage(`{"tool":` + string(q) + `,"subcommand":[],"rationale":"r"}`))
			return errText(err), err != nil
		}},
		{"the request tool's subcommand", func() (string, bool) {
			_, err := ParseRequest(json.RawMessage(`{"tool":"git","subcommand":[` + string(q) + `],"rationale":"r"}`))
			return errText(err), err != nil
		}},
		{"the request tool's flags", func() (string, bool) {
			_, err := ParseRequest(json.RawMessage(`{"tool":"git","subcommand":[],"flags":["--` + strings.Trim(string(q), `"`) + `"],"rationale":"r"}`))
			return errText(err), err != nil
		}},
		{"the request tool's call_id", func() (string, bool) {
			_, err := ParseRequest(json.RawMessage(`{"call_id":` + string(q) + `,"rationale":"r"}`))
			return errText(err), err != nil
		}},
		{"the request tool's rationale", func() (string, bool) {
			_, err := ParseRequest(json.RawMessage(`{"tool":"git","subcommand":[],"rationale":` + string(q) + `}`))
			return errText(err), err != nil
		}},
		{"wraptool_discover's tool", func() (string, bool) {
			res := handle(discover, `{"tool":`+string(q)+`}`)
			return toolsettest.ResultText(t, res), res.IsError
		}},
		{"wraptool_request_status's id", func() (string, bool) {
			res := handle(status, `{"id":`+string(q)+`}`)
			return toolsettest.ResultText(t, res), res.IsError
		}},
	} {
		t.Run(tt.name+" is refused and quoted", func(t *testing.T) {
			t.Parallel()
			text, isErr := tt.text()
			if !isErr {
				t.Fatalf("accepted: %q", text)
			}
			t.Logf("answered: %.160s", text)
			if i := strings.IndexFunc(text, func(r rune) bool { return !strconv.IsPrint(r) }); i >= 0 {
				t.Errorf("the error carries a raw control at %d: %q", i, text)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
