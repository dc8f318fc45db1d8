package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/policy/requests"
)

// Hostile text on the operator's terminal: whatever a request
// log holds — written by wraptool for an assistant, or by any other process
// that can append to it — and whatever a config or a typed command line
// holds, reaches `requests list`, `approve`, `deny`, `watch`, `check` and
// `config validate` with no raw control character, escape sequence,
// bidirectional or zero-width character, and no byte that is not UTF-8.

// terminalPayloads are the sequences a line on a terminal must never carry
// raw: each would repaint the screen, retitle the window, move the cursor,
// hide text or fake a line.
var terminalPayloads = []struct{ name, s string }{
	{"an SGR colour", "\x1b[31mred\x1b[0m"},
	{"an OSC window title ending in BEL", "\x1b]0;pwned\x07"},
	{"an OSC title ending in ST", "\x1b]2;pwned\x1b\\"},
	{"CSI cursor moves and a clear", "\x1b[2J\x1b[H\x1b[1A\x1b[2K"},
	{"a C1 CSI as UTF-8", "\u009b2J"},
	{"a raw 8-bit CSI byte", "\x9b2J"},
	{"a bidirectional override", "abc\u202edcba"},
	{"a carriage return", "real\rfake"},
	{"backspaces", "abc\b\b\bxyz"},
	{"DEL", "a\x7fb"},
	{"NUL", "a\x00b"},
	{"a line separator", "a\u2028b"},
	{"a zero-width space", "git\u200bhub"},
	{"a newline faking a line", "x\napproved req_00000000 once"},
}

// rawControl returns the first thing in s that must not reach a terminal
// raw — a byte that is not UTF-8, or a rune strconv.IsPrint refuses (C0
// and C1 controls, DEL, line separators, bidirectional and zero-width
// characters, tags) other than newline and tab — and whether there is one.
func rawControl(s string) (string, bool) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return fmt.Sprintf("byte %#x at %d", s[i], i), true
		case r != '\n' && r != '\t' && !strconv.IsPrint(r):
			return fmt.Sprintf("%U at %d", r, i), true
		}
		i += size
	}
	return "", false
}

// expectNoRawControl fails when what (a command's stdout or stderr) holds
// anything rawControl finds.
func expectNoRawControl(t *testing.T, what, s string) {
	t.Helper()
	if bad, ok := rawControl(s); ok {
		t.Errorf("%s carries %s raw:\n%q", what, bad, s)
	}
}

// expectNoC0 fails when s holds a C0 control other than newline and tab,
// or DEL: what JSON output must escape (JSON leaves C1, bidirectional and
// zero-width characters as they are).
func expectNoC0(t *testing.T, what, s string) {
	t.Helper()
	if i := strings.IndexFunc(s, func(r rune) bool { return (r < 0x20 && r != '\n' && r != '\t') }); i >= 0 {
		t.Errorf("%s carries %U raw at %d:\n%q", what, rune(s[i]), i, s)
	}
}

// hostileLine is a request-log line as any process could append it: m
// encoded as JSON, with each "@P@" replaced by p as JSON text — except
// that bytes of p that are not UTF-8 are written raw, as a writer other
// than Go's encoder may leave them.
func hostileLine(t *testing.T, m map[string]any, p string) string {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var raw strings.Builder
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		if r == utf8.RuneError && size == 1 {
			raw.WriteByte(p[i])
		} else {
			q, _ := json.Marshal(string(r))
			raw.Write(q[1 : len(q)-1])
		}
		i += size
	}
	return strings.ReplaceAll(string(data), "@P@", raw.String()) + "\n"
}

// asRead is p as a reader of the log gets it: JSON decoding turns each
// byte that is not UTF-8 into U+FFFD.
func asRead(p string) string { return strings.ToValidUTF8(p, "\uFFFD") }

// hostileLog writes a request log holding, for payload p, a request with p
// in every field the terminal shows (id, tool, subcommand, flag, rationale,
// enables), an exact-call request with p in its command and directory, a
// decision whose reason, decided_by and client hold p, and lines the
// reader skips whose warnings quote p. It returns the two pending ids.
func hostileLog(t *testing.T, f *requestsFixture, p string) (capID, exactID string) {
	t.Helper()
	capID, exactID = "req_"+asRead(p), "req_0e0e0e0e"
	decided := "req_0d0d0d0d"
	var b strings.Builder
	b.WriteString(hostileLine(t, map[string]any{"id": "req_@P@", "created_at": "2026-01-01T00:00:00Z", "tool": "git@P@",
		"subcommand": []string{"push@P@"}, "flags": []string{"--tags@P@"}, "rationale": "why @P@", "enables": "it enables @P@",
		"status": "pending"}, p))
	b.WriteString(hostileLine(t, map[string]any{"id": exactID, "created_at": "2026-01-01T00:00:00Z", "tool": "git",
		"subcommand": []string{"push"}, "flags": []string{}, "rationale": "exact", "status": "pending",
		"call": map[string]any{"tool": "git_push", "arguments": map[string]any{"args": []string{"@P@"}},
			"command": []string{"git", "push", "origin@P@"}, "cwd": "/tmp/@P@"}}, p))
	b.WriteString(hostileLine(t, map[string]any{"id": decided, "created_at": "2026-01-01T00:00:00Z", "tool": "git",
		"subcommand": []string{"pull"}, "flags": []string{}, "rationale": "r", "status": "pending"}, p))
	b.WriteString(hostileLine(t, map[string]any{"id": decided, "status": "denied", "decided_at": "2026-01-01T00:01:00Z",
		"reason": "no @P@", "applied": false, "decided_by": "cli@P@", "client": "Client@P@"}, p))
	b.WriteString(hostileLine(t, map[string]any{"id": "req_ghost@P@", "status": "approved", "decided_at": "2026-01-01T00:01:00Z", "applied": false}, p))
	b.WriteString(hostileLine(t, map[string]any{"id": "req_0f0f0f0f", "status": "maybe@P@"}, p))
	b.WriteString("not JSON " + p + "\n")
	if err := os.WriteFile(f.log, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return capID, exactID
}

// Every field `requests list`, `approve`, `deny` and `watch` print, from
// every kind of line a log can hold, is escaped for every payload: the
// output holds no raw control, and the field's escaped form is there.
func TestHostileTerminalOutputIsNeutralised(t *testing.T) {
	t.Parallel()
	for _, p := range terminalPayloads {
		t.Run(p.name+" is escaped in every field every requests command prints", func(t *testing.T) {
			t.Parallel()
			f := newRequestsFixture(t)
			capID, exactID := hostileLog(t, f, p.s)
			r := asRead(p.s) // as the log reads back
			tok := func(s string) string { return requests.Token(s) }

			// list, pending and all: id, tool, subcommand, flags, the exact
			// command; the rationale is cut to the width, so only its start.
			for _, args := range [][]string{{"requests", "list"}, {"requests", "list", "--status", "all"}} {
				out, stderr, code := f.run(t, args...)
				if code != 0 {
					t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
				}
				expectNoRawControl(t, strings.Join(args, " ")+" stdout", out)
				expectNoRawControl(t, strings.Join(args, " ")+" stderr (the warnings for skipped lines)", stderr)
				for _, want := range []string{tok(capID), tok("git" + r), tok("push" + r), tok("--tags" + r),
					"exactly: git push " + requests.Command([]string{"origin" + r})} {
					if !strings.Contains(out, want) {
						t.Errorf("%v does not show %q:\n%s", args, want, out)
					}
				}
				if !strings.Contains(stderr, "skipped") {
					t.Errorf("%v: no warning for the skipped lines: %q", args, stderr)
				}
			}

			// approve prints the request whole, its flag marked (the config
			// has no such tool, so nothing is known of its help), then its
			// effect (here a refusal to merge, quoting the tokens), then
			// records it: with --unlisted-ok, as the mark asks.
			out, stderr, _ := f.run(t, "requests", "approve", capID, "--unlisted-ok")
			expectNoRawControl(t, "approve stdout", out)
			expectNoRawControl(t, "approve stderr", stderr)
			for _, want := range []string{"Request " + tok(capID), "rationale: " + requests.Text("why "+r),
				tok("--tags"+r) + " (HELP UNKNOWN for '" + tok("git"+r) + " " + tok("push"+r) + "')",
				"enables:   " + requests.Text("it enables "+r), "approved " + tok(capID)} {
				if !strings.Contains(out, want) {
					t.Errorf("approve does not show %q:\n%s", want, out)
				}
			}
			// approve --once of the exact call shows its command and folder.
			out, stderr, _ = f.run(t, "requests", "approve", exactID, "--once")
			expectNoRawControl(t, "approve --once stdout", out)
			expectNoRawControl(t, "approve --once stderr", stderr)
			if want := "in:      " + tok("/tmp/"+r); !strings.Contains(out, want) {
				t.Errorf("approve --once does not show %q:\n%s", want, out)
			}
			// deny prints the id it decided.
			out, stderr, _ = f.run(t, "requests", "deny", exactID, "--reason", "no")
			expectNoRawControl(t, "deny output", out+stderr)
			if !strings.Contains(out, "denied "+exactID) {
				t.Errorf("deny printed %q", out)
			}
		})
	}
}

// `requests watch` without a terminal prints each pending request as a
// block; every field of it, and every warning, is escaped.
func TestHostileWatchOutputIsNeutralised(t *testing.T) {
	t.Parallel()
	for _, p := range terminalPayloads {
		t.Run(p.name+" is escaped in what watch prints", func(t *testing.T) {
			t.Parallel()
			f := newRequestsFixture(t)
			capID, _ := hostileLog(t, f, p.s)
			r := asRead(p.s) // as the log reads back
			out, stderr, stop := startWatch(t, f)
			var lines []string
			for rationales := 0; rationales < 2; {
				line := out.next(t, "the pending requests")
				lines = append(lines, line)
				if strings.HasPrefix(line, "  rationale: ") {
					rationales++
				}
			}
			if code := stop(); code != 0 {
				t.Errorf("exit status %d, want 0", code)
			}
			printed := strings.Join(lines, "\n")
			expectNoRawControl(t, "watch stdout", printed)
			expectNoRawControl(t, "watch stderr", stderr.String())
			for _, want := range []string{
				"Request " + requests.Token(capID) + ", filed ",
				"  asks for:  " + requests.Token("git"+r) + " " + requests.Token("push"+r) + " " + requests.Token("--tags"+r),
				"  rationale: " + requests.Text("why "+r),
				"  enables:   " + requests.Text("it enables "+r),
				"  exactly:   git push " + requests.Command([]string{"origin" + r}),
				"  in:        " + requests.Token("/tmp/"+r),
			} {
				if !strings.Contains(printed, want) {
					t.Errorf("watch does not print %q:\n%s", want, printed)
				}
			}
		})
	}
}

// `check` prints the argv it would run, or the denial text, for words the
// operator typed or a tests file holds: Go-quoted, never raw.
func TestHostileCheckOutputIsNeutralised(t *testing.T) {
	t.Parallel()
	dir := configtest.NewFixture(t, map[string]string{"config.yaml": `mcp:
  listen: 127.0.0.1:8717
  request_log: $DIR/requests.jsonl
tools:
  git:
    binary: $DIR/bin/git
    allow:
      - subcommand: [log]
        flags: ["--format"]
        flag_constraints:
          "--format": {type: string}
`})
	env := map[string]string{"HOME": filepath.Join(dir, "home")}
	cfg := filepath.Join(dir, "config.yaml")
	for _, p := range terminalPayloads {
		if strings.ContainsRune(p.s, 0) {
			continue // a NUL cannot be a word of a command line
		}
		t.Run(p.name+" is quoted in check's answers", func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct {
				args []string
				json bool
			}{
				{[]string{"check", "--", "git", "log", "--format=" + p.s, "x" + p.s}, false}, // allowed: the argv
				{[]string{"check", "--", "git", "log", "--pretty" + p.s, "x" + p.s}, false},  // denied: the denial text
				{[]string{"check", "--", "git" + p.s, "push" + p.s}, false},                  // an unknown tool
				{[]string{"check", "--json", "--", "git", "log", "x" + p.s}, true},           // allowed, as JSON
				{[]string{"check", "--json", "--", "git", "log", "--pretty=" + p.s, "-x"}, true},
			} {
				out, stderr, code := run(t, env, append([]string{"--config", cfg}, tc.args...)...)
				if code != 0 && code != 3 {
					t.Errorf("%q: exit %d, want 0 or 3; stderr %q", tc.args, code, stderr)
				}
				expectNoRawControl(t, fmt.Sprintf("%q stderr", tc.args), stderr)
				if !tc.json {
					expectNoRawControl(t, fmt.Sprintf("%q stdout", tc.args), out)
					// The positional is shown Go-quoted, every non-ASCII
					// character escaped.
					if q := strconv.QuoteToASCII(tc.args[len(tc.args)-1]); tc.args[2] == "git" && !strings.Contains(out, q) {
						t.Errorf("%q: stdout does not show %s:\n%s", tc.args, q, out)
					}
					continue
				}
				// --json is JSON escaping only, as for list --json:
				// C0 controls come out as \u00XX, and the words round-trip.
				expectNoC0(t, fmt.Sprintf("%q stdout", tc.args), out)
				var v struct{ Argv []string }
				if err := json.Unmarshal([]byte(out), &v); err != nil || !slices.Contains(v.Argv, tc.args[len(tc.args)-1]) &&
					!slices.Contains(v.Argv, tc.args[len(tc.args)-2]) {
					t.Errorf("%q: stdout %q does not carry the words (%v)", tc.args, out, err)
				}
			}
			tests := filepath.Join(t.TempDir(), "tests.yaml")
			body := fmt.Sprintf("- cmd: [git, log, %s]\n  want: deny\n- cmd: %s\n  want: allow\n",
				strconv.Quote("x"+p.s), strconv.Quote("git push "+strconv.Quote("x"+p.s)))
			if err := os.WriteFile(tests, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			out, stderr, code := run(t, env, "--config", cfg, "check", "--tests", tests)
			if code != 1 {
				t.Errorf("check --tests with two mismatches: exit %d, want 1; stderr %q", code, stderr)
			}
			expectNoRawControl(t, "check --tests stdout", out)
			expectNoRawControl(t, "check --tests stderr", stderr)
		})
	}
}

// `config validate` quotes a config's names and values in its first error
// Go-quoted: a config from elsewhere cannot repaint the terminal through the
// error that refuses it. (Paths and regular expressions are not yet
// quoted.)
func TestHostileConfigValuesAreQuotedInValidateErrors(t *testing.T) {
	t.Parallel()
	const head = "mcp:\n  listen: 127.0.0.1:8717\n  request_log: $DIR/requests.jsonl\n"
	const git = "tools:\n  git:\n    binary: $DIR/bin/git\n"
	p := "\x1b]0;pwned\x07\x1b[2J\u202e\r"
	q := func(s string) string { return strconv.Quote(s) } // a YAML double-quoted scalar reads Go's escapes
	tests := []struct {
		name, config, want string
	}{
		{"a tool name", head + "tools:\n  " + q("git"+p) + ":\n    binary: $DIR/bin/git\n",
			`tool name "git\x1b]0;pwned\a\x1b[2J\u202e\r" must match`},
		{"a subcommand token", head + git + "    allow:\n      - subcommand: [" + q("push"+p) + "]\n",
			`subcommand token "push\x1b]0;pwned\a\x1b[2J\u202e\r" must match`},
		{"a flag", head + git + "    allow:\n      - subcommand: [push]\n        flags: [" + q("--x"+p) + "]\n",
			`"--x\x1b]0;pwned\a\x1b[2J\u202e\r" is not a flag`},
		{"an unknown key", head + "  " + q("key"+p) + ": 1\ntools: {}\n", `mcp["key\x1b]0;pwned\a\x1b[2J\u202e\r"]: unknown field`},
		{"the listen address", "mcp:\n  listen: " + q("127.0.0.1:87"+p) + "\n  request_log: $DIR/requests.jsonl\ntools: {}\n",
			`want host:port, got "127.0.0.1:87\x1b]0;pwned\a\x1b[2J\u202e\r"`},
		{"a timeout", head + git + "    timeout: " + q("3s"+p) + "\n    allow: []\n", `got "3s\x1b]0;pwned\a\x1b[2J\u202e\r"`},
		{"an mcp_servers name", head + "mcp_servers:\n  " + q("fs"+p) + ":\n    command: [$DIR/bin/git]\ntools: {}\n",
			`server name "fs\x1b]0;pwned\a\x1b[2J\u202e\r" must match`},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is Go-quoted in the error", func(t *testing.T) {
			t.Parallel()
			dir := configtest.NewFixture(t, map[string]string{"config.yaml": tt.config})
			out, stderr, code := run(t, map[string]string{"HOME": filepath.Join(dir, "home")}, "config", "validate", filepath.Join(dir, "config.yaml"))
			if code != 1 {
				t.Fatalf("exit %d, want 1; stdout %q stderr %q", code, out, stderr)
			}
			expectNoRawControl(t, "config validate stderr", stderr)
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr %q does not hold %q", stderr, tt.want)
			}
		})
	}
}

// `requests list --json` and `watch --json` print the record as stored,
// with JSON's escaping only: every C0 control (ESC, CR, BS, NUL, BEL) comes
// out as \u00XX, so no escape sequence runs, and the value decodes back
// exactly. JSON leaves DEL, C1 controls and bidirectional or zero-width
// characters as they are: a reader that shows them on a terminal must
// escape them itself.
func TestHostileListJSONEscapesEveryC0Control(t *testing.T) {
	t.Parallel()
	for _, p := range terminalPayloads {
		t.Run(p.name+" round-trips through list --json with no raw C0 control", func(t *testing.T) {
			t.Parallel()
			f := newRequestsFixture(t)
			capID, _ := hostileLog(t, f, p.s)
			r := asRead(p.s)
			out, _, code := f.run(t, "requests", "list", "--json", "--status", "all")
			if code != 0 {
				t.Fatalf("exit %d", code)
			}
			expectNoC0(t, "list --json", out)
			var found bool
			for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				var rec requests.Record
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("not a JSON record: %q", line)
				}
				if rec.ID == capID {
					found = true
					if rec.Tool != "git"+r || rec.Rationale != "why "+r || !slices.Equal(rec.Flags, []string{"--tags" + r}) {
						t.Errorf("the record does not decode to what the log holds: %+v", rec)
					}
				}
			}
			if !found {
				t.Errorf("list --json lacks %q:\n%s", capID, out)
			}
			// As stored: JSON escapes U+2028 and U+2029, and leaves DEL,
			// C1 controls and bidirectional characters as they are.
			if strings.ContainsRune(r, '\u2028') && strings.ContainsRune(out, '\u2028') {
				t.Errorf("list --json holds U+2028 raw")
			}
			for _, kept := range []rune{'\x7f', '\u009b', '\u202e', '\u200b'} {
				if strings.ContainsRune(r, kept) && !strings.ContainsRune(out, kept) {
					t.Errorf("list --json escaped %U beyond JSON's rules", kept)
				}
			}
		})
	}
}

// A wrapped tool's help text (here through an overrides file, which wins
// over what introspection learned) reaches `requests approve`'s effect as
// one line with no raw control: escape sequences, a title, CR, BS and a
// bidi override do not pass.
func TestHostileHelpTextInTheApprovalEffect(t *testing.T) {
	t.Parallel()
	p := "\x1b]0;pwned\x07\x1b[2J\u202e\r\b\u009b31m\n"
	f := newRequestsFixture(t, requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--tags"}, Rationale: "r"})
	overrides := filepath.Join(f.dir, "overrides.yaml")
	body := "subcommands:\n  push:\n    description: " + strconv.Quote("push "+p) + "\n    flags:\n      \"--tags\":\n" +
		"        type: boolean\n        description: " + strconv.Quote("tags "+p+"end") + "\n"
	if err := os.WriteFile(overrides, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(f.config)
	if err != nil {
		t.Fatal(err)
	}
	withOverrides := strings.Replace(string(cfg), "    binary: "+f.dir+"/bin/git\n",
		"    binary: "+f.dir+"/bin/git\n    introspection:\n      overrides_file: "+overrides+"\n", 1)
	if withOverrides == string(cfg) {
		t.Fatalf("the fixture's config changed shape:\n%s", cfg)
	}
	if err := os.WriteFile(f.config, []byte(withOverrides), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := f.run(t, "requests", "approve", f.ids[0])
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	expectNoRawControl(t, "approve stdout", out)
	expectNoRawControl(t, "approve stderr", stderr)
	line := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "  --tags  ") {
			line = l
		}
	}
	// The controls are dropped before the help is shown; what is left is
	// one line of text.
	if want := "  --tags  a switch  — tags ]0;pwned [2J 31m end"; line != want {
		t.Errorf("the effect's --tags line is %q, want %q:\n%s", line, want, out)
	}
}
