package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// argvLog reads helpcli's log: one JSON array of arguments per start.
func argvLog(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("helpcli log: %v", err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var argv []string
		if err := json.Unmarshal(sc.Bytes(), &argv); err != nil {
			t.Fatalf("helpcli log line %q: %v", sc.Text(), err)
		}
		out = append(out, argv)
	}
	return out
}

// isHelpForm reports whether argv is one of introspection's fixed forms for
// a subcommand made of tokens in subs: `sub… --help`, `sub… -h`, or
// `help sub…`; never `sub… help`.
func isHelpForm(argv []string, subs []string) bool {
	n := len(argv)
	var tokens []string
	switch {
	case n > 0 && (argv[n-1] == "--help" || argv[n-1] == "-h"):
		tokens = argv[:n-1]
	case n > 1 && argv[0] == "help":
		tokens = argv[1:]
	default:
		return false
	}
	for _, tok := range tokens {
		if !slices.Contains(subs, tok) {
			return false
		}
	}
	return true
}

// schemaOf returns the input schema of the tool name as plain JSON values.
func schemaOf(t *testing.T, c *mcpClient, name string) (description string, props map[string]map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	res, err := c.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name != name {
			continue
		}
		data, _ := json.Marshal(tool.InputSchema)
		var schema struct {
			Properties map[string]map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(data, &schema); err != nil {
			t.Fatal(err)
		}
		return tool.Description, schema.Properties
	}
	t.Fatalf("no tool %s", name)
	return "", nil
}

// Introspection starts a wrapped tool only with the fixed help forms, never
// with anything a client sent; discovery answers from what it learned, and
// schemas carry the help's types and descriptions.
func TestIntrospectionRunsOnlyHelpForms(t *testing.T) {
	slow(t, "introspection running only help forms")
	t.Parallel()
	dir := t.TempDir()
	cobraLog, gitLog := filepath.Join(scratch(t, dir), "fj.argv"), filepath.Join(scratch(t, dir), "vc.argv")
	s := startServerIn(t, dir, serverConfig(t, dir, `  fj:
    binary: `+helpcli+`
    env: {HELPCLI_LOG: `+cobraLog+`, HELPCLI_STYLE: cobra}
  vc:
    binary: `+helpcli+`
    env: {HELPCLI_LOG: `+gitLog+`}
    allow:
      - subcommand: [commit]
        flags: ["-m", "--depth", "--cleanup", "--verify", "-q"]
    deny:
      - subcommand: [remote]
`))
	for _, log := range []string{cobraLog, gitLog} {
		for _, argv := range argvLog(t, log) {
			if !isHelpForm(argv, []string{"commit"}) {
				t.Errorf("%s: helpcli was started with %q, not a help form", filepath.Base(log), argv)
			}
		}
	}
	before := len(argvLog(t, cobraLog)) + len(argvLog(t, gitLog))

	c := s.Connect(t, "/mcp")
	res := c.Call(t, "wraptool_discover", map[string]any{})
	var got struct {
		Tools map[string]struct {
			Allowed   []string          `json:"allowed"`
			Available map[string]string `json:"available"`
			Note      string            `json:"note"`
		} `json:"tools"`
	}
	structured(t, res, &got)
	fj, vc := got.Tools["fj"], got.Tools["vc"]
	if len(fj.Allowed) != 0 || fj.Available["pull"] != "Fetch from and integrate with another repository" || fj.Available["get"] == "" ||
		!strings.HasPrefix(fj.Note, "no allow rules") || fj.Available["help"] != "" {
		t.Errorf("fj (no rules): %+v", fj)
	}
	if !slices.Equal(vc.Allowed, []string{"commit"}) || vc.Available["pull"] == "" || vc.Available["commit"] != "" || vc.Available["remote"] != "" {
		t.Errorf("vc: %+v (remote is denied, commit allowed)", vc)
	}
	if text := toolsettest.ResultText(t, res); !strings.Contains(text, `"fj":{"allowed":[]`) {
		t.Errorf("text %s does not carry the catalog", text)
	}
	if res := c.Call(t, "wraptool_discover", map[string]any{"tool": "nope"}); !res.IsError {
		t.Errorf("an unknown tool is not an error")
	}

	desc, props := schemaOf(t, c, "vc_commit")
	if !strings.Contains(desc, "Record changes to the repository") {
		t.Errorf("vc_commit description %q lacks the help's", desc)
	}
	for prop, want := range map[string]string{"m": "string", "depth": "string", "cleanup": "boolean", "verify": "boolean", "q": "boolean"} {
		if props[prop]["type"] != want {
			t.Errorf("vc_commit.%s: type %v, want %s", prop, props[prop]["type"], want)
		}
	}
	if d, _ := props["m"]["description"].(string); !strings.Contains(d, "commit message") {
		t.Errorf("vc_commit.m description %q lacks the help line's", d)
	}
	if d, _ := props["depth"]["description"].(string); !strings.Contains(d, "deepen history of shallow clone") {
		t.Errorf("vc_commit.depth description %q lacks the help line's", d)
	}
	// Discovery and listing ran nothing.
	if after := len(argvLog(t, cobraLog)) + len(argvLog(t, gitLog)); after != before {
		t.Errorf("helpcli was started %d more times by discovery or listing", after-before)
	}
}

// A help that hangs costs its timeout (5 s), once: start-up waits for it,
// then serves the tool with the heuristic's types. A SIGTERM during the wait
// stops the server at once.
func TestIntrospectionHangingHelp(t *testing.T) {
	slow(t, "a hanging help at start-up")
	t.Parallel()
	const helpTimeout = 5 * time.Second
	config := func(dir string) string {
		return serverConfig(t, dir, `  slow:
    binary: `+helpcli+`
    env: {HELPCLI_HANG: "pull --help"}
    allow:
      - subcommand: [pull]
        flags: ["-x", "--all"]
`)
	}
	t.Run("served after one timeout with heuristic types", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		start := time.Now()
		s := startServerIn(t, dir, config(dir))
		took := time.Since(start)
		if took < helpTimeout || took > 3*helpTimeout {
			t.Errorf("served after %v; want one help timeout (%v) and at most 3× it", took, helpTimeout)
		}
		if !strings.Contains(s.Log(), "timed out after 5s") {
			t.Errorf("no warning about the hanging help:\n%s", s.Log())
		}
		c := s.Connect(t, "/mcp")
		_, props := schemaOf(t, c, "slow_pull")
		if props["x"]["type"] != "string" || props["all"]["type"] != "string" {
			t.Errorf("slow_pull: x %v, all %v; want the heuristic's string for both", props["x"], props["all"])
		}
	})
	t.Run("SIGTERM while waiting stops at once", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		fifo := filepath.Join(dir, "hang.fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "config.yaml")
		cfg := strings.Replace(config(dir), `HELPCLI_HANG: "pull --help"`, `HELPCLI_HANG: "pull --help", HELPCLI_FIFO: `+fifo, 1)
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(wraptoolBin, "--config", path, "serve")
		cmd.Env = []string{"HOME=" + filepath.Join(dir, "home"), "PATH=" + os.Getenv("PATH")}
		var stderr logBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() { cmd.Process.Kill() })
		// The hanging help writes its pid to the FIFO: then the wait is on.
		pids := make(chan int, 1)
		go func() {
			var pid int
			if f, err := os.Open(fifo); err == nil {
				fmt.Fscan(f, &pid)
				f.Close()
			}
			pids <- pid
		}()
		var pid int
		select {
		case pid = <-pids:
		case <-time.After(eventTimeout):
			t.Fatalf("the hanging help never started:\n%s", stderr.String())
		}
		stop := time.Now()
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("exit %v, want status 0\n%s", err, stderr.String())
			}
		case <-time.After(eventTimeout):
			t.Fatalf("still running %v after SIGTERM:\n%s", eventTimeout, stderr.String())
		}
		if took := time.Since(stop); took > 2*time.Second {
			t.Errorf("stopped %v after SIGTERM, during a 5 s help wait", took)
		}
		if strings.Contains(stderr.String(), `msg="serving MCP"`) {
			t.Errorf("it served before stopping:\n%s", stderr.String())
		}
		if pid > 0 && syscall.Kill(pid, 0) == nil {
			t.Errorf("the help run %d outlived the server", pid)
		}
	})
}

// The real git: git_pull's schema marks --rebase a switch (its value is
// optional: --rebase[=…]) and --depth a value, with git's own words — from
// `git pull --help` (the manual, where man is installed) or `git pull -h`.
func TestIntrospectionOfTheRealGit(t *testing.T) {
	slow(t, "introspection of the real git")
	t.Parallel()
	gitBin := gitPath(t)
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, `  git:
    binary: `+gitBin+`
    allow:
      - subcommand: [pull]
        flags: ["--rebase", "--depth", "-q"]
`))
	c := s.Connect(t, "/mcp")
	desc, props := schemaOf(t, c, "git_pull")
	if !strings.Contains(desc, "Fetch from and integrate with another repository") {
		t.Errorf("git_pull description %q lacks git's", desc)
	}
	for _, tc := range []struct{ prop, typ, words string }{
		{"rebase", "boolean", "rebas"},
		{"depth", "string", "shallow"},
		{"q", "boolean", "-q: "}, // the manual says "squelch", -h says "quiet"
	} {
		d, _ := props[tc.prop]["description"].(string)
		if props[tc.prop]["type"] != tc.typ || !strings.Contains(strings.ToLower(d), tc.words) {
			t.Errorf("git_pull.%s: type %v, description %q; want %s and git's words (%q)", tc.prop, props[tc.prop]["type"], d, tc.typ, tc.words)
		}
	}
}
