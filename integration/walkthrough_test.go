package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// The front page's walkthrough, as the README writes it: the throwaway
// folder, the listener and the git binary it names, which the replay
// swaps for a temporary folder, a free port and the git on PATH.
const (
	walkthroughHeading = "## Five-minute walkthrough"
	walkthroughDemo    = "/tmp/wraptool-demo"
	walkthroughListen  = "127.0.0.1:8717"
	walkthroughGit     = "/usr/bin/git"
	// frontPageMaxLines is the longest README that counts as the front
	// page; a longer README.md is the old manual, and README.new.md is read.
	frontPageMaxLines = 250
)

// frontPage returns the front page's path and text: README.md once it is
// the short front page, else README.new.md beside it.
func frontPage(t *testing.T) (string, string) {
	t.Helper()
	for _, name := range []string{"../README.md", "../README.new.md"} {
		data, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		if strings.Count(string(data), "\n") <= frontPageMaxLines {
			return name, string(data)
		}
	}
	t.Fatalf("neither README.md nor README.new.md is a front page of at most %d lines", frontPageMaxLines)
	return "", ""
}

// walkStep is one fenced block of the walkthrough, in document order.
type walkStep struct {
	info string // the fence's info string: "sh runnable", "yaml config", "text assistant"
	body string
	line int // the fence's line in the README, for messages
}

// walkthroughSteps cuts the walkthrough section (its heading to the next
// "## ") out of md and returns its fenced blocks that the replay acts on.
func walkthroughSteps(md string) ([]walkStep, error) {
	start := strings.Index(md, "\n"+walkthroughHeading+"\n")
	if start < 0 {
		return nil, fmt.Errorf("no %q section", walkthroughHeading)
	}
	offset := strings.Count(md[:start+1], "\n")
	section := md[start+1:]
	if end := strings.Index(section[len(walkthroughHeading):], "\n## "); end >= 0 {
		section = section[:len(walkthroughHeading)+end+1]
	}
	var steps []walkStep
	var cur *walkStep
	for i, line := range strings.Split(section, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &walkStep{info: strings.TrimSpace(strings.TrimPrefix(line, "```")), line: offset + i + 1}
		case cur != nil && strings.TrimSpace(line) == "```":
			switch cur.info {
			case "sh runnable", "yaml config", "text assistant":
				steps = append(steps, *cur)
			}
			cur = nil
		case cur != nil:
			cur.body += line + "\n"
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("the block opened on line %d is never closed", cur.line)
	}
	return steps, nil
}

// shellCommand is one command line of a runnable block and the output the
// README shows for it: the comment lines right below it, "# " dropped.
type shellCommand struct {
	line   string
	expect []string
}

// shellCommands reads a runnable block: one command a line; a comment
// line right below a command (or its shown output) is that output, any
// other comment is prose.
func shellCommands(body string) []shellCommand {
	var cmds []shellCommand
	following := false
	for _, line := range strings.Split(body, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			following = false
		case strings.HasPrefix(trimmed, "#"):
			if following {
				out := strings.TrimPrefix(strings.TrimPrefix(trimmed, "#"), " ")
				cmds[len(cmds)-1].expect = append(cmds[len(cmds)-1].expect, out)
			}
		default:
			cmds = append(cmds, shellCommand{line: trimmed})
			following = true
		}
	}
	return cmds
}

// assistantCall is one call of a "text assistant" block: "→ TOOL {json}",
// then the result text the README shows.
type assistantCall struct {
	tool   string
	args   map[string]any
	expect []string
}

func assistantCalls(body string) ([]assistantCall, error) {
	var calls []assistantCall
	for _, line := range strings.Split(strings.TrimRight(body, "\n"), "\n") {
		rest, ok := strings.CutPrefix(line, "→ ")
		if !ok {
			if len(calls) == 0 {
				return nil, fmt.Errorf("result line %q before any call", line)
			}
			calls[len(calls)-1].expect = append(calls[len(calls)-1].expect, line)
			continue
		}
		tool, args, _ := strings.Cut(rest, " ")
		c := assistantCall{tool: tool}
		dec := json.NewDecoder(strings.NewReader(args))
		dec.UseNumber()
		if err := dec.Decode(&c.args); err != nil {
			return nil, fmt.Errorf("call %q: arguments: %v", line, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("call %q: text after the arguments", line)
		}
		calls = append(calls, c)
	}
	return calls, nil
}

// splitWords splits a command line into words as a shell would for the
// plain lines the walkthrough uses: blanks separate, '…' and "…" quote
// literally. Anything a shell would expand or redirect is refused, so the
// README cannot show a line that means something else to a real shell.
func splitWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			if quote == '"' && strings.ContainsRune("$`\\!", r) {
				return nil, fmt.Errorf("%q: %q inside double quotes is not replayed", line, r)
			}
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.ContainsRune("$`\\|&;<>()*?[]{}~!#", r):
			return nil, fmt.Errorf("%q: %q is shell syntax the replay does not run", line, r)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%q: unclosed quote", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// shapeToken is what an expected line matches loosely: the README's "…"
// (anything), a request id, an age such as 3s, Landlock's ABI number and
// runs of blanks (table columns).
var shapeToken = regexp.MustCompile(`…|req_[0-9a-f]{8}|\b[0-9]+[smhd]\b|ABI [0-9]+|\s+`)

var requestID = regexp.MustCompile(`^req_[0-9a-f]{8}$`)

// shapeRegexp turns one expected line into an anchored pattern. A request
// id the README used before matches that request's real id; a new one is
// captured, and the README id of each capture group is returned in order.
func shapeRegexp(line string, ids map[string]string) (*regexp.Regexp, []string) {
	var b strings.Builder
	var captured []string
	b.WriteString("^")
	last := 0
	for _, loc := range shapeToken.FindAllStringIndex(line, -1) {
		b.WriteString(regexp.QuoteMeta(line[last:loc[0]]))
		tok := line[loc[0]:loc[1]]
		switch {
		case tok == "…":
			b.WriteString(".*")
		case requestID.MatchString(tok):
			if real, ok := ids[tok]; ok {
				b.WriteString(regexp.QuoteMeta(real))
			} else {
				b.WriteString("(req_[0-9a-f]{8})")
				captured = append(captured, tok)
			}
		case strings.HasPrefix(tok, "ABI "):
			b.WriteString("ABI [0-9]+")
		case strings.TrimSpace(tok) == "":
			b.WriteString(`\s+`)
		default:
			b.WriteString("[0-9]+[smhd]")
		}
		last = loc[1]
	}
	b.WriteString(regexp.QuoteMeta(line[last:]))
	b.WriteString("$")
	return regexp.MustCompile(b.String()), captured
}

// matchShape reports whether actual shows every expected line, in order
// (other lines may come between), each compared without its outer blanks.
// It returns the request ids it learned (README id to real id); ids itself
// is not changed, so a failed attempt teaches nothing.
func matchShape(expected []string, actual string, ids map[string]string) (map[string]string, error) {
	learned := map[string]string{}
	known := func() map[string]string {
		all := make(map[string]string, len(ids)+len(learned))
		for k, v := range ids {
			all[k] = v
		}
		for k, v := range learned {
			all[k] = v
		}
		return all
	}
	lines := strings.Split(actual, "\n")
	next := 0
	for _, want := range expected {
		want = strings.TrimSpace(want)
		if want == "" || want == "…" {
			continue
		}
		re, captured := shapeRegexp(want, known())
		found := false
		for next < len(lines) {
			m := re.FindStringSubmatch(strings.TrimSpace(lines[next]))
			next++
			if m == nil {
				continue
			}
			for i, readmeID := range captured {
				if prev, ok := learned[readmeID]; ok && prev != m[i+1] {
					return nil, fmt.Errorf("the README's %s stands for both %s and %s", readmeID, prev, m[i+1])
				}
				learned[readmeID] = m[i+1]
			}
			found = true
			break
		}
		if !found {
			return nil, fmt.Errorf("no line (after the ones matched before it) has the shape %q in:\n%s", want, actual)
		}
	}
	return learned, nil
}

// TestWalkthroughReplaysTheFrontPage runs the README's five-minute
// walkthrough as written: its commands against the built binary and real
// git with a local bare remote, its config as the server's, the
// assistant's calls through a go-sdk client, and checks every output has
// the shape the README shows.
func TestWalkthroughReplaysTheFrontPage(t *testing.T) {
	slow(t, "the README walkthrough's replay")
	t.Parallel()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed; .ci/run installs it")
	}
	path, md := frontPage(t)
	root := t.TempDir()
	demo := filepath.Join(root, "wraptool-demo")
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	md = strings.NewReplacer(walkthroughDemo, demo, walkthroughListen, listen, walkthroughGit, gitPath).Replace(md)
	steps, err := walkthroughSteps(md)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}

	w := &walker{t: t, dir: root, ids: map[string]string{},
		env: []string{"HOME=" + filepath.Join(root, "home"), "PATH=" + os.Getenv("PATH")}}
	if err := os.Mkdir(filepath.Join(root, "home"), 0o700); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, st := range steps {
		kinds[st.info]++
		switch st.info {
		case "sh runnable":
			for _, c := range shellCommands(st.body) {
				w.run(fmt.Sprintf("%s:%d", path, st.line), c)
			}
		case "yaml config":
			w.writeConfig(fmt.Sprintf("%s:%d", path, st.line), demo, st.body)
		case "text assistant":
			calls, err := assistantCalls(st.body)
			if err != nil {
				t.Fatalf("%s:%d: %v", path, st.line, err)
			}
			for _, c := range calls {
				w.call(fmt.Sprintf("%s:%d", path, st.line), c)
			}
		}
	}
	// A walkthrough that lost its loop would pass vacuously.
	if kinds["yaml config"] != 1 || kinds["text assistant"] < 2 || kinds["sh runnable"] < 3 || w.srv == nil {
		t.Fatalf("%s: the walkthrough has %v blocks and started no server (%v); it must show a config, commands, a serve and the assistant's calls",
			path, kinds, w.srv == nil)
	}
	if len(w.ids) < 2 {
		t.Errorf("the walkthrough approved %d requests the assistant filed, want one --once and one --apply", len(w.ids))
	}
}

// walker replays the walkthrough: the shell's folder and exports, the
// server it started and the assistant's session.
type walker struct {
	t      *testing.T
	dir    string
	env    []string
	ids    map[string]string // README request id → the id the replay got
	config string            // the config's contents as the README writes it
	srv    *server
	client *mcpClient
}

// writeConfig writes the walkthrough's config where its prose says to save
// it, and reads the listener and token file the assistant will use.
func (w *walker) writeConfig(where, demo, body string) {
	w.t.Helper()
	if err := os.WriteFile(filepath.Join(demo, "config.yaml"), []byte(body), 0o600); err != nil {
		w.t.Fatalf("%s: save the config (is the folder made first?): %v", where, err)
	}
	w.config = body
}

func (w *walker) run(where string, c shellCommand) {
	t := w.t
	t.Helper()
	for readme, real := range w.ids {
		c.line = strings.ReplaceAll(c.line, readme, real)
	}
	if id := regexp.MustCompile(`req_[0-9a-f]{8}`).FindString(c.line); id != "" && !strings.Contains(strings.Join(mapValues(w.ids), " "), id) {
		t.Fatalf("%s: %q names %s, which no output above showed", where, c.line, id)
	}
	words, err := splitWords(c.line)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if !replayable[words[0]] {
		t.Fatalf("%s: %q: the replay runs only %v", where, c.line, mapKeys(replayable))
	}
	switch words[0] {
	case "cd":
		if len(words) != 2 {
			t.Fatalf("%s: %q: cd takes one folder", where, c.line)
		}
		w.dir = w.abs(words[1])
		return
	case "export":
		for _, kv := range words[1:] {
			if !strings.Contains(kv, "=") {
				t.Fatalf("%s: %q: export NAME=VALUE only", where, c.line)
			}
			w.env = append(w.env, kv)
		}
		return
	case "wraptool":
		words[0] = wraptoolBin
		if len(words) == 2 && (words[1] == "serve" || words[1] == "up") {
			w.serve(where, words)
			return
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, words[0], words[1:]...)
	cmd.Dir, cmd.Env = w.dir, w.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %q: %v\nstdout:\n%s\nstderr:\n%s", where, c.line, err, out.String(), errOut.String())
	}
	learned, err := matchShape(c.expect, out.String()+errOut.String(), w.ids)
	if err != nil {
		t.Fatalf("%s: %q: %v", where, c.line, err)
	}
	w.learn(learned)
}

// serve starts the long-running command in the background, as the README
// says to do in a second terminal, and waits (bounded) until it serves and
// its watcher sees edits.
func (w *walker) serve(where string, argv []string) {
	t := w.t
	t.Helper()
	var cfg struct {
		MCP struct {
			Listen        string
			AuthTokenFile string `yaml:"auth_token_file"`
		}
	}
	if err := yaml.Unmarshal([]byte(w.config), &cfg); err != nil || cfg.MCP.Listen == "" || cfg.MCP.AuthTokenFile == "" {
		t.Fatalf("%s: serve before a config naming mcp.listen and mcp.auth_token_file (%v)", where, err)
	}
	// Debug level only for the replay: its "reload skipped" line says the
	// watcher is in place, so the later --apply is seen.
	_, stderr, exited := startBinary(t, argv[0], append(append([]string{}, w.env...), "WRAPTOOL_LOG_LEVEL=debug"), argv[1:]...)
	select {
	case <-exited:
		t.Fatalf("%s: %q exited:\n%s", where, argv[1:], stderr)
	default:
	}
	w.srv = &server{URL: "http://" + cfg.MCP.Listen, stderr: stderr, exited: make(chan struct{})}
	w.srv.WaitLog(t, `msg="reload skipped"`, 1, startTimeout)
	token, err := os.ReadFile(cfg.MCP.AuthTokenFile)
	if err != nil {
		t.Fatalf("%s: the token file the config names: %v", where, err)
	}
	w.srv.Token = strings.TrimSpace(string(token))
}

// call makes one of the assistant's calls and checks its result's shape.
// A result the README shows as running, which is still denied, is retried
// (bounded): a grant or an applied rule reaches the policy a moment after
// the operator's command returns, and a denied call consumes nothing.
func (w *walker) call(where string, c assistantCall) {
	t := w.t
	t.Helper()
	if w.srv == nil {
		t.Fatalf("%s: the assistant calls %s before the walkthrough serves", where, c.tool)
	}
	if w.client == nil {
		w.client = w.srv.Connect(t, "/mcp")
	}
	wantDenied := len(c.expect) > 0 && strings.HasPrefix(c.expect[0], "DENIED: ")
	var text string
	var learned map[string]string
	var mismatch error
	waittest.Within(eventTimeout, func() error {
		text = toolsettest.ResultText(t, w.client.Call(t, c.tool, c.args))
		learned, mismatch = matchShape(c.expect, text, w.ids)
		if mismatch != nil && !wantDenied && strings.HasPrefix(text, "DENIED: ") {
			return mismatch
		}
		return nil
	})
	if mismatch != nil {
		t.Fatalf("%s: %s %v: %v\nserver log:\n%s", where, c.tool, c.args, mismatch, w.srv.Log())
	}
	w.learn(learned)
}

func (w *walker) learn(learned map[string]string) {
	for k, v := range learned {
		w.ids[k] = v
	}
}

func (w *walker) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(w.dir, p)
}

// replayable is every program a walkthrough line may start: a README
// line is run by go test, so anything else (rm, curl, sudo) is refused
// rather than trusted.
var replayable = map[string]bool{"cd": true, "export": true, "mkdir": true, "git": true, "wraptool": true}

func mapKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func mapValues(m map[string]string) []string {
	var vs []string
	for _, v := range m {
		vs = append(vs, v)
	}
	return vs
}

// TestWalkthroughShape checks the loose comparison the replay relies on:
// what it lets vary (ids, ages, column widths, "…") and what it must not
// (text, order, regular-expression characters taken literally).
func TestWalkthroughShape(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		expected []string
		actual   string
		ids      map[string]string
		ok       bool
		learned  map[string]string
	}{
		{"ids and ages vary", []string{"Request req_e9387746, filed 3s ago:"}, "Request req_0123abcd, filed 12m ago:", nil, true,
			map[string]string{"req_e9387746": "req_0123abcd"}},
		{"a known id must be that id", []string{"approved req_e9387746 once"}, "approved req_0123abcd once",
			map[string]string{"req_e9387746": "req_ffffffff"}, false, nil},
		{"column widths vary", []string{"ID            AGE  STATUS"}, "ID  AGE STATUS", nil, true, map[string]string{}},
		{"the ellipsis stands for the rest", []string{"Request req_e9387746 recorded (pending). …"},
			"Request req_0123abcd recorded (pending). The operator will review it.", nil, true, map[string]string{"req_e9387746": "req_0123abcd"}},
		{"other lines between", []string{"a", "c"}, "a\nb\nc", nil, true, map[string]string{}},
		{"order matters", []string{"c", "a"}, "a\nb\nc", nil, false, nil},
		{"text matters", []string{"approved req_e9387746 once (within 24h)"}, "denied req_0123abcd", nil, false, nil},
		{"a whole line, not a part", []string{"main -> main"}, " * [new branch]      main -> main", nil, false, nil},
		{"brackets and stars are literal", []string{"* [new branch] main -> main"}, "* n main -> main", nil, false, nil},
		{"a dot is literal", []string{"ok: a.yaml"}, "ok: axyaml", nil, false, nil},
		{"the ABI number varies", []string{"confinement: required; this kernel confines with landlock (ABI 7)"},
			"confinement: required; this kernel confines with landlock (ABI 9)", nil, true, map[string]string{}},
		{"a count does not vary", []string{"ok: c.yaml (1 tools, 1 allow rules, 0 mcp_servers)"},
			"ok: c.yaml (2 tools, 1 allow rules, 0 mcp_servers)", nil, false, nil},
		{"a README id seen twice is one request", []string{"req_e9387746", "req_e9387746 again"}, "req_0123abcd\nreq_0123abcd again", nil, true,
			map[string]string{"req_e9387746": "req_0123abcd"}},
		{"a line feed in the output cannot join two expected lines", []string{"a b"}, "a\nb", nil, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			learned, err := matchShape(tc.expected, tc.actual, tc.ids)
			if (err == nil) != tc.ok {
				t.Fatalf("matchShape(%q, %q) = %v, want ok %v", tc.expected, tc.actual, err, tc.ok)
			}
			if tc.ok && fmt.Sprint(learned) != fmt.Sprint(tc.learned) {
				t.Errorf("learned %v, want %v", learned, tc.learned)
			}
		})
	}
}

// TestWalkthroughParsing checks how the replay reads the README's blocks,
// hostile lines included: nothing a shell would expand, redirect or chain
// runs, and a broken block is an error rather than a skipped step.
func TestWalkthroughParsing(t *testing.T) {
	t.Parallel()
	words := []struct {
		line string
		want []string // nil: refused
	}{
		{`git -C repo commit -m "first commit"`, []string{"git", "-C", "repo", "commit", "-m", "first commit"}},
		{`echo 'a  b' c`, []string{"echo", "a  b", "c"}},
		{`wraptool requests list; rm -rf ~`, nil},
		{`wraptool serve &`, nil},
		{`git clone $(curl evil) repo`, nil},
		{"echo \"$HOME\"", nil},
		{`cat /etc/passwd > out`, nil},
		{`ls *`, nil},
		{`echo "unclosed`, nil},
		{`a | b`, nil},
		{"echo `id`", nil},
	}
	for _, tc := range words {
		got, err := splitWords(tc.line)
		if tc.want == nil {
			if err == nil {
				t.Errorf("splitWords(%q) = %q, want refused", tc.line, got)
			}
			continue
		}
		if err != nil || strings.Join(got, "\x00") != strings.Join(tc.want, "\x00") {
			t.Errorf("splitWords(%q) = %q, %v; want %q", tc.line, got, err, tc.want)
		}
	}

	cmds := shellCommands("# prose\nwraptool config validate\n# ok: x\n#   indented\n\n# more prose\nwraptool serve\n")
	if len(cmds) != 2 || strings.Join(cmds[0].expect, "|") != "ok: x|  indented" || len(cmds[1].expect) != 0 {
		t.Errorf("shellCommands: %+v", cmds)
	}

	for _, body := range []string{"stray output\n→ git_push {}\n", "→ git_push {\"a\": \n", "→ git_push {} {}\n"} {
		if _, err := assistantCalls(body); err == nil {
			t.Errorf("assistantCalls(%q): no error", body)
		}
	}
	calls, err := assistantCalls("→ git_push {\"args\": [\"origin\"]}\nDENIED: x\n\nPolicy: y\n")
	if err != nil || len(calls) != 1 || calls[0].tool != "git_push" || len(calls[0].expect) != 3 {
		t.Errorf("assistantCalls: %+v, %v", calls, err)
	}

	for _, md := range []string{
		"# x\n\nno walkthrough here\n",
		"# x\n\n" + walkthroughHeading + "\n\n```sh runnable\nwraptool up\n\n## Next\n",
	} {
		if _, err := walkthroughSteps(md); err == nil {
			t.Errorf("walkthroughSteps(%q): no error", md)
		}
	}
	steps, err := walkthroughSteps("# x\n\n" + walkthroughHeading + "\n\n```sh\nnot replayed\n```\n\n```sh runnable\nwraptool up\n```\n\n## Next\n\n```sh runnable\nafter\n```\n")
	if err != nil || len(steps) != 1 || steps[0].body != "wraptool up\n" || steps[0].line != 9 {
		t.Errorf("walkthroughSteps: %+v, %v", steps, err)
	}
}

// TestFrontPageSections checks the front page's outline: at most
// frontPageMaxLines lines, the newcomer's sections in reading order, and a
// line in the map for every document of docs/.
func TestFrontPageSections(t *testing.T) {
	t.Parallel()
	path, md := frontPage(t)
	sections := []string{
		"## Install",
		"## Run and test",
		walkthroughHeading,
		"## Connecting a client",
		"## Platform support",
		"## Dependencies",
		"## Documentation",
	}
	at := 0
	for _, s := range sections {
		i := strings.Index(md[at:], "\n"+s+"\n")
		if i < 0 {
			t.Fatalf("%s: no %q after the sections before it", path, s)
		}
		at += i + 1
	}
	docs := md[at:]
	for _, doc := range []string{"configuration", "policy", "approvals", "clients", "upstream-servers",
		"operations", "security", "performance", "architecture"} {
		if !strings.Contains(docs, "- [docs/"+doc+".md](docs/"+doc+".md) — ") {
			t.Errorf("%s: the map of docs/ has no line for docs/%s.md", path, doc)
		}
	}
	for _, cmd := range []string{
		"go install github.com/wraptool/wraptool/cmd/wraptool@latest",
		"go run ./cmd/wraptool up",
		"go test ./...",
		"wraptool setup",
		"requests approve req_",
	} {
		if !strings.Contains(md, cmd) {
			t.Errorf("%s does not show %q", path, cmd)
		}
	}
}
