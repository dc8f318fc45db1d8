package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/wraptool/wraptool/introspect"
	"github.com/wraptool/wraptool/introspect/introspecttest"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/policy/requests/requeststest"
)

// requestsFixture is a config wrapping git (a stand-in answering
// gitHelpTexts) with a push rule, an introspection cache holding git's root
// and push helps as a running server would have left it, and a request log
// holding the requests given.
type requestsFixture struct {
	dir, config, log string
	env              map[string]string
	ids              []string
}

// gitHelpTexts are the stand-in git's help texts: its root help, listing
// push and fetch, and push's, listing the flags the tests ask for. fetch's
// help is never learned (no rule names fetch): it is unknown.
var gitHelpTexts = map[string]string{
	"--help": `usage: git [-v | --version] [-h | --help] [-C <path>] <command> [<args>]

These are common Git commands used in various situations:

   fetch      Download objects and refs from another repository
   push       Update remote refs along with associated objects
`,
	"push --help": `usage: git push [<options>] [<repository> [<refspec>...]]

    -v, --[no-]verbose    be more verbose
    --[no-]tags           push tags (can't be used with --all or --mirror)
    -f, --[no-]force      force updates
    --[no-]force-with-lease[=<refname>:<expect>]
                          require old value of ref to be at this value
    -u, --[no-]set-upstream
                          set upstream for git pull/status
    --[no-]receive-pack <receive-pack>
                          receive pack program
`,
}

const requestsConfig = `mcp:
  listen: 127.0.0.1:8717
  request_log: $DIR/requests.jsonl
tools:
  git:
    binary: $DIR/bin/git
    allow:
      # pushing, as the team agreed
      - subcommand: [push]
        flags: ["--set-upstream"]
    deny:
      - subcommand: [config]
`

func newRequestsFixture(t *testing.T, reqs ...requests.Request) *requestsFixture {
	t.Helper()
	dir := configtest.NewFixture(t, map[string]string{"config.yaml": requestsConfig})
	f := &requestsFixture{dir: dir, config: filepath.Join(dir, "config.yaml"), log: filepath.Join(dir, "requests.jsonl"),
		env: map[string]string{"HOME": filepath.Join(dir, "home")}}
	f.learnHelps(t)
	for i, r := range reqs {
		if r.Flags == nil {
			r.Flags = []string{}
		}
		s, err := requests.Submit(t.Context(), f.log, r, time.Now().Add(time.Duration(i-len(reqs))*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		f.ids = append(f.ids, s.ID)
	}
	return f
}

// learnHelps installs the savedhelp fixture as the config's git, answering
// gitHelpTexts, and learns its root and push helps into the introspection
// cache under the fixture's HOME, where the CLI's cache-only load finds
// them.
func (f *requestsFixture) learnHelps(t *testing.T) {
	t.Helper()
	bin := filepath.Join(f.dir, "bin")
	if err := os.Remove(filepath.Join(bin, "git")); err != nil {
		t.Fatal(err)
	}
	git, err := introspecttest.Install(savedHelp, bin, "git", gitHelpTexts)
	if err != nil {
		t.Fatal(err)
	}
	in := introspect.New(&introspect.Options{CacheDir: f.cacheDir(t)})
	defer in.Close()
	c := in.Learn(t.Context(), []introspect.Tool{{Name: "git", Binary: git, Subcommands: [][]string{{"push"}}}}, false)
	if _, ok := c.Help("git", []string{"push"}); !ok {
		t.Fatalf("the stand-in git's push help was not learned")
	}
}

// cacheDir is the introspection cache's folder, as the CLI finds it.
func (f *requestsFixture) cacheDir(t *testing.T) string {
	t.Helper()
	dir, err := config.CacheDir(&config.Options{Getenv: func(k string) string { return f.env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "introspection")
}

func (f *requestsFixture) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return run(t, f.env, append([]string{"--config", f.config}, args...)...)
}

func (f *requestsFixture) record(t *testing.T, id string) *requests.Record {
	t.Helper()
	return requeststest.Record(t, f.log, id)
}

func TestRequestsList(t *testing.T) {
	t.Parallel()
	f := newRequestsFixture(t,
		requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force-with-lease"},
			Rationale: "publish the branch so the reviewer sees it; this rationale is long enough to be cut in the table"},
		requests.Request{Tool: "gіt", Subcommand: []string{"push"}, Rationale: "ok\x1b[2J\x1b[Hall is well\u202e"},
		requests.Request{Tool: "git", Subcommand: []string{}, Flags: []string{"-C"}, Rationale: "anything"},
	)
	if _, _, code := f.run(t, "requests", "deny", f.ids[2], "--reason", "no"); code != 0 {
		t.Fatalf("deny: exit %d", code)
	}

	out, stderr, code := f.run(t, "requests", "list")
	if code != 0 || stderr != "" {
		t.Fatalf("list: exit %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") {
		t.Fatalf("list (pending only) = %q", out)
	}
	for _, line := range lines {
		if n := utf8.RuneCountInString(line); n > 80 {
			t.Errorf("line is %d wide, over 80: %q", n, line)
		}
		if strings.ContainsAny(line, "\x1b\u202e") {
			t.Errorf("a raw control character reached the terminal: %q", line)
		}
	}
	if !strings.Contains(out, `g\u0456t`) || !strings.Contains(out, `ok\x1b[2J`) {
		t.Errorf("the homoglyph tool or the escape sequence is not shown escaped:\n%s", out)
	}
	if !strings.Contains(lines[1], "…") {
		t.Errorf("the long rationale is not cut with an ellipsis: %q", lines[1])
	}

	all, _, _ := f.run(t, "requests", "list", "--status", "all")
	if !strings.Contains(all, "<ANY SUBCOMMAND>") || !strings.Contains(all, "denied") {
		t.Errorf("list --status all:\n%s", all)
	}

	js, _, code := f.run(t, "requests", "list", "--json", "--status", "all")
	if code != 0 {
		t.Fatalf("list --json: exit %d", code)
	}
	var n int
	for _, line := range strings.Split(strings.TrimSuffix(js, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON object: %q", line)
		}
		n++
		if _, ok := m["subcommand"].([]any); !ok {
			t.Errorf("subcommand is not an array (never null): %s", line)
		}
		if m["id"] == f.ids[2] && (m["status"] != "denied" || m["reason"] != "no" || m["decided_by"] != "cli" || m["applied"] != false) {
			t.Errorf("the denied record: %s", line)
		}
		if m["id"] == f.ids[0] && !strings.HasSuffix(m["rationale"].(string), "cut in the table") {
			t.Errorf("--json cut the rationale: %s", line)
		}
	}
	if n != 3 {
		t.Errorf("%d JSON lines, want 3", n)
	}
	if _, stderr, code := f.run(t, "requests", "list", "--status", "maybe"); code != 2 || !strings.Contains(stderr, "--status") {
		t.Errorf("a bad --status: exit %d, %q", code, stderr)
	}
}

func TestRequestsApproveAndDeny(t *testing.T) {
	t.Parallel()
	t.Run("flags after the ID; --apply merges and records applied", func(t *testing.T) {
		t.Parallel()
		f := newRequestsFixture(t, requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force-with-lease"}, Rationale: "r"})
		out, stderr, code := f.run(t, "requests", "approve", f.ids[0], "--apply")
		if code != 0 {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		for _, want := range []string{"asks for:  git push --force-with-lease\n", "as the rule will stand:", "--set-upstream",
			"--force-with-lease  a switch  — require old value of ref to be at this value\n",
			"added flags --force-with-lease to git push", "approved " + f.ids[0]} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		cfg, _ := os.ReadFile(f.config)
		if !strings.Contains(string(cfg), "# pushing, as the team agreed") || !strings.Contains(string(cfg), "--force-with-lease") {
			t.Errorf("config after apply:\n%s", cfg)
		}
		if r := f.record(t, f.ids[0]); r.Status != "approved" || r.Applied == nil || !*r.Applied || r.DecidedBy != "cli" {
			t.Errorf("record %+v", r)
		}
	})
	t.Run("a new rule is appended with positional_max 0", func(t *testing.T) {
		t.Parallel()
		// No rule names fetch, so its help was never learned: --prune
		// is approved only with --unlisted-ok.
		f := newRequestsFixture(t, requests.Request{Tool: "git", Subcommand: []string{"fetch"}, Flags: []string{"--prune"}, Rationale: "r"})
		out, _, code := f.run(t, "requests", "approve", "--apply", "--unlisted-ok", f.ids[0])
		if code != 0 || !strings.Contains(out, "positional arguments: none (positional_max: 0") || !strings.Contains(out, "appended allow rule for git fetch") {
			t.Errorf("exit %d:\n%s", code, out)
		}
	})
	t.Run("approve without --apply records the decision only", func(t *testing.T) {
		t.Parallel()
		f := newRequestsFixture(t, requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--tags"}, Rationale: "r"})
		before, _ := os.ReadFile(f.config)
		out, _, code := f.run(t, "requests", "approve", f.ids[0])
		if want := "approved " + f.ids[0] + " (nothing is allowed until a rule exists: --apply writes it, --once / --for grant it now)\n"; code != 0 || !strings.HasSuffix(out, want) {
			t.Errorf("exit %d, want the output to end %q:\n%s", code, want, out)
		}
		// Its preview says what it records, not that it grants.
		if strings.Contains(out, "Approving grants") || !strings.Contains(out, "Approving records the decision only: it allows nothing until a rule exists.\n") ||
			!strings.Contains(out, "the rule for git push would stand as:\n  --set-upstream") {
			t.Errorf("the preview of a plain approval:\n%s", out)
		}
		if after, _ := os.ReadFile(f.config); string(after) != string(before) {
			t.Errorf("the config changed without --apply")
		}
		if r := f.record(t, f.ids[0]); r.Status != "approved" || *r.Applied {
			t.Errorf("record %+v", r)
		}
	})
	t.Run("a refused apply leaves the config and the request as they were", func(t *testing.T) {
		t.Parallel()
		f := newRequestsFixture(t,
			requests.Request{Tool: "git", Subcommand: []string{"config", "set"}, Flags: []string{}, Rationale: "r"},
			requests.Request{Tool: "gh", Subcommand: []string{"pr", "list"}, Flags: []string{}, Rationale: "r"},
		)
		before, _ := os.ReadFile(f.config)
		for i, want := range []string{"deny", "gh"} {
			_, stderr, code := f.run(t, "requests", "approve", f.ids[i], "--apply")
			if code != 1 || !strings.Contains(stderr, "stays pending") || !strings.Contains(stderr, want) {
				t.Errorf("%s: exit %d, stderr %q", f.ids[i], code, stderr)
			}
			if r := f.record(t, f.ids[i]); r.Status != "pending" {
				t.Errorf("%s is %s after a refused apply", f.ids[i], r.Status)
			}
		}
		if after, _ := os.ReadFile(f.config); string(after) != string(before) {
			t.Errorf("a refused apply changed the config")
		}
	})
	t.Run("deny records the reason; unknown and decided ids exit 1", func(t *testing.T) {
		t.Parallel()
		f := newRequestsFixture(t, requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force"}, Rationale: "r"})
		if out, _, code := f.run(t, "requests", "deny", f.ids[0], "--reason", "use --force-with-lease instead"); code != 0 || out != "denied "+f.ids[0]+"\n" {
			t.Errorf("deny: exit %d, %q", code, out)
		}
		if r := f.record(t, f.ids[0]); r.Status != "denied" || *r.Reason != "use --force-with-lease instead" {
			t.Errorf("record %+v", r)
		}
		if _, stderr, code := f.run(t, "requests", "approve", f.ids[0]); code != 1 || !strings.Contains(stderr, f.ids[0]+" is already denied") {
			t.Errorf("deciding twice: exit %d, %q", code, stderr)
		}
		if _, stderr, code := f.run(t, "requests", "deny", "req_deadbeef"); code != 1 || !strings.Contains(stderr, "no request has the id req_deadbeef") {
			t.Errorf("unknown id: exit %d, %q", code, stderr)
		}
		if _, stderr, code := f.run(t, "requests", "approve"); code != 2 || !strings.Contains(stderr, "one request ID") {
			t.Errorf("no id: exit %d, %q", code, stderr)
		}
		if _, stderr, code := f.run(t, "requests", "approve", f.ids[0], "--frobnicate"); code != 2 || !strings.Contains(stderr, `unknown flag "frobnicate"`) {
			t.Errorf("an unknown flag after the id: exit %d, %q", code, stderr)
		}
	})
	t.Run("any subcommand is approvable only where a bare rule exists", func(t *testing.T) {
		t.Parallel()
		f := newRequestsFixture(t, requests.Request{Tool: "git", Subcommand: []string{}, Flags: []string{"-C"}, Rationale: "r"})
		if _, stderr, code := f.run(t, "requests", "approve", f.ids[0]); code != 1 || !strings.Contains(stderr, "git <ANY SUBCOMMAND>") || !strings.Contains(stderr, "bare rule") {
			t.Errorf("exit %d, %q", code, stderr)
		}
	})
}

// TestRequestsListSaysWhenThereAreNone shows the line an empty list
// prints, for each status. Before, --status all printed "no  requests".
func TestRequestsListSaysWhenThereAreNone(t *testing.T) {
	t.Parallel()
	f := newRequestsFixture(t)
	for _, tc := range []struct{ args, want string }{
		{"", "no pending requests\n"},
		{"pending", "no pending requests\n"},
		{"approved", "no approved requests\n"},
		{"denied", "no denied requests\n"},
		{"all", "no requests\n"},
	} {
		args := []string{"requests", "list"}
		if tc.args != "" {
			args = append(args, "--status", tc.args)
		}
		if out, stderr, code := f.run(t, args...); code != 0 || out != tc.want {
			t.Errorf("%v: exit %d, %q (stderr %q), want %q", args, code, out, stderr, tc.want)
		}
	}
}
