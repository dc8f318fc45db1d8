//go:build linux

package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// The attacks of the review, replayed with the real git against a served
// gate: a token read and the config rewritten through /proc/self/cwd and
// through a symlink the repository carries, the checkout race, and the
// introspection cache forged so that a denied subcommand runs after a
// restart. Ordinary git use in a repository keeps working.

// gitTool is the tools: entry for git with the rules the attacks use and
// extra rules added.
func gitTool(gitBin, extra string) string {
	return `  git:
    binary: ` + gitBin + `
    env: {GIT_AUTHOR_NAME: t, GIT_AUTHOR_EMAIL: t@example.com, GIT_COMMITTER_NAME: t, GIT_COMMITTER_EMAIL: t@example.com, GIT_CONFIG_NOSYSTEM: "1"}
    allow:
      - subcommand: [diff]
        arg_constraints: {positional_max: 2}
      - subcommand: [log]
        flags: ["--format", "--output", "--max-count"]
        flag_constraints:
          "--format": {type: string}
          "--output": {type: string}
          "--max-count": {type: integer}
      - subcommand: [pull]
        flags: ["--ff-only"]
        flag_constraints: {"--ff-only": {type: boolean}}
        arg_constraints: {positional_max: 2, patterns: ["origin", "[A-Za-z0-9][A-Za-z0-9._/-]*"]}
      - subcommand: [commit]
        flags: ["--message", "--allow-empty"]
        flag_constraints: {"--message": {type: string}, "--allow-empty": {type: boolean}}
` + extra + `    deny:
      - subcommand: [config]
`
}

// gateRepos makes the remote and the clone of gitRepos in ~/src, so that
// /proc/self/cwd/../.. in the clone is the home folder, and commits to it
// (as an assistant allowed to commit could) two symlinks wraptool's own
// path check cannot follow: gate to the config's folder and cache to the
// introspection cache, both through /proc/self/cwd, which names the clone
// to git and another folder to wraptool.
func gateRepos(t *testing.T, g *gate) (remote, work string) {
	t.Helper()
	remote, work = gitRepos(t, filepath.Join(g.home, "src"))
	for name, to := range map[string]string{"gate": "/proc/self/cwd/../../.config/wraptool", "cache": "/proc/self/cwd/../../.cache/wraptool/introspection"} {
		if err := os.Symlink(to, filepath.Join(work, name)); err != nil {
			t.Fatal(err)
		}
	}
	git(t, work, "add", "gate", "cache")
	git(t, work, "commit", "-q", "-m", "links")
	git(t, work, "push", "-q", "origin", "main")
	return remote, work
}

// gitFormat is text as a git log --format value that prints it as it is.
func gitFormat(text string) string {
	return "tformat:" + strings.ReplaceAll(text, "%", "%%")
}

// outcome says how a call ended, in one line for the log.
func outcome(t *testing.T, res *mcp.CallToolResult) (denied bool, line string) {
	t.Helper()
	text := toolsettest.ResultText(t, res)
	first, _, _ := strings.Cut(text, "\n")
	if strings.HasPrefix(text, "DENIED: ") {
		_, reason, _ := strings.Cut(text, "Policy: ")
		reason, _, _ = strings.Cut(reason, "\n")
		return true, "denied: " + reason
	}
	var out struct {
		ExitCode int `json:"exit_code"`
		Stderr   string
	}
	structured(t, res, &out)
	stderr, _, _ := strings.Cut(strings.TrimSpace(out.Stderr), "\n")
	return false, "ran, exit " + strconv.Itoa(out.ExitCode) + ": " + first + " " + stderr
}

// Ordinary git works in the repository; the review's token read and
// config rewrite get nothing, whether wraptool's path check refuses them up
// front or the kernel refuses git's open (the symlink forms the check
// cannot see).
func TestConfinedGitCannotReachTheGate(t *testing.T) {
	slow(t, "confined git against wraptool's files")
	t.Parallel()
	requireLandlock(t)
	gitBin := gitPath(t)
	g := newGate(t, true)
	remote, work := gateRepos(t, g)
	cfg := g.config(t, "", gitTool(gitBin, ""), "")
	configtest.WriteFile(t, g.configPath, cfg, 0o600)
	s := g.start(t, "")
	c := s.Connect(t, "/mcp")
	before := g.fingerprint(t, gitBin)

	t.Run("git pull, log and commit still work", func(t *testing.T) {
		other := filepath.Join(g.home, "src", "other")
		git(t, filepath.Dir(other), "clone", "-q", remote, other)
		git(t, other, "commit", "-q", "--allow-empty", "-m", "three")
		git(t, other, "push", "-q", "origin", "main")
		if res := c.Call(t, "git_pull", map[string]any{"ff-only": true, "args": []any{"origin", "main"}, "cwd": work}); res.IsError {
			t.Fatalf("git pull --ff-only origin main: %s", toolsettest.ResultText(t, res))
		}
		if got, want := git(t, work, "rev-parse", "HEAD"), git(t, remote, "rev-parse", "main"); got != want {
			t.Errorf("pull did not fast-forward: HEAD %s, want %s", got, want)
		}
		res := c.Call(t, "git_log", map[string]any{"max-count": 1, "format": "tformat:%s", "cwd": work})
		if text := toolsettest.ResultText(t, res); res.IsError || !strings.HasPrefix(text, "three") {
			t.Errorf("git log: %s", text)
		}
		if res := c.Call(t, "git_commit", map[string]any{"allow-empty": true, "message": "four", "cwd": work}); res.IsError {
			t.Fatalf("git commit: %s", toolsettest.ResultText(t, res))
		}
		if got := git(t, work, "log", "-1", "--format=%s"); got != "four" {
			t.Errorf("the last commit is %q, want four", got)
		}
	})

	// Without the config's marker: the denial quotes the call's own
	// --format, which must not count as the config leaking.
	rewritten := strings.ReplaceAll(cfg, g.marker, "rewritten-marker") + "# rewritten by git log\n"
	outputs := map[string]string{}
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		// hidden marks a form wraptool's path check cannot see: the kernel
		// must stop it.
		hidden bool
	}{
		{name: "the admin token read by /proc/self/cwd from the config's parent folder", tool: "git_diff",
			args: map[string]any{"args": []any{"/proc/self/cwd/wraptool/admin-token", "/dev/null"}, "cwd": g.configHome}},
		{name: "the admin token read through the repository's symlink", tool: "git_diff", hidden: true,
			args: map[string]any{"args": []any{"gate/admin-token", "/dev/null"}, "cwd": work}},
		{name: "the MCP token read by ../ from the repository", tool: "git_diff",
			args: map[string]any{"args": []any{"../../.config/wraptool/mcp-token", "/dev/null"}, "cwd": work}},
		{name: "the config rewritten by /proc/self/cwd", tool: "git_log",
			args: map[string]any{"max-count": 1, "format": gitFormat(rewritten), "output": "/proc/self/cwd/../../.config/wraptool/config.yaml", "cwd": work}},
		{name: "the config rewritten through the repository's symlink", tool: "git_log", hidden: true,
			args: map[string]any{"max-count": 1, "format": gitFormat(rewritten), "output": "gate/config.yaml", "cwd": work}},
		{name: "the admin token blanked through the repository's symlink", tool: "git_log", hidden: true,
			args: map[string]any{"max-count": 1, "format": "tformat:", "output": "gate/admin-token", "cwd": work}},
		{name: "the grants key replaced by /proc/self/cwd", tool: "git_log",
			args: map[string]any{"max-count": 1, "format": "tformat:forged", "output": "/proc/self/cwd/../../.local/share/wraptool/grants.key", "cwd": work}},
	} {
		res := c.Call(t, tc.tool, tc.args)
		outputs[tc.name] = toolsettest.ResultText(t, res)
		denied, line := outcome(t, res)
		if denied && !strings.Contains(line, "wraptool protects") {
			t.Errorf("%s: %s, want a refusal naming what wraptool protects, or a run that reaches nothing", tc.name, line)
		}
		how := "wraptool's check"
		if !denied {
			how = "the run"
		}
		t.Logf("%s (%s; hidden from the path check: %v): %s", tc.name, how, tc.hidden, g.short(line))
	}
	g.checkNoSecrets(t, outputs)
	g.checkUnchanged(t, before)
}

// The review's race with git alone: one call keeps checking out a branch
// where x is a folder and one where x is a symlink to the config's folder,
// while another keeps writing git log --output=x/config.yaml. wraptool's
// check sees whichever x is there when it looks; git opens later. Bounded
// to 30 s; it ends sooner once the kernel has refused git's open through
// the symlink a few times (the race was won, and stopped) or the config
// changed.
func TestConfinedGitCheckoutRace(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the race runs for seconds")
	}
	requireLandlock(t)
	gitBin := gitPath(t)
	g := newGate(t, true)
	_, work := gateRepos(t, g)
	git(t, work, "checkout", "-q", "-b", "link")
	if err := os.Symlink(g.cfgDir, filepath.Join(work, "x")); err != nil {
		t.Fatal(err)
	}
	git(t, work, "add", "x")
	git(t, work, "commit", "-q", "-m", "x is a link")
	git(t, work, "checkout", "-q", "-b", "dir", "main")
	configtest.WriteFile(t, filepath.Join(work, "x", "config.yaml"), "placeholder\n", 0o600)
	git(t, work, "add", "x")
	git(t, work, "commit", "-q", "-m", "x is a folder")
	cfg := g.config(t, "", gitTool(gitBin, `      - subcommand: [checkout]
        flags: ["--force"]
        flag_constraints: {"--force": {type: boolean}}
        arg_constraints: {positional_max: 1, pattern: "dir|link"}
`), "")
	configtest.WriteFile(t, g.configPath, cfg, 0o600)
	s := g.start(t, "")
	checkouts, writes := s.Connect(t, "/mcp"), s.Connect(t, "/mcp")
	before := g.fingerprint(t, gitBin)

	const bound, enough = 30 * time.Second, 3
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	changed := func() bool { return stateOf(t, g.configPath).sum != before.fixed[g.configPath].sum }
	var swaps, swapErrors, upFront, kernel, otherFailures, ran atomic.Int64
	var lastOther atomic.Value
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			branch := []string{"link", "dir"}[i%2]
			res, err := checkouts.CallTool(ctx, &mcp.CallToolParams{Name: "git_checkout", Arguments: map[string]any{"force": true, "args": []any{branch}, "cwd": work}})
			if err == nil && !res.IsError {
				swaps.Add(1)
			} else if ctx.Err() == nil {
				swapErrors.Add(1)
			}
		}
	})
	wg.Go(func() {
		defer cancel()
		for ctx.Err() == nil {
			res, err := writes.CallTool(ctx, &mcp.CallToolParams{Name: "git_log", Arguments: map[string]any{
				"max-count": 1, "format": "tformat:# overwritten by git log through a swapped folder", "output": "x/config.yaml", "cwd": work}})
			if err != nil {
				continue
			}
			text := resultText(res)
			switch {
			case strings.Contains(text, "names a file wraptool protects"):
				upFront.Add(1)
			case res.IsError && strings.Contains(text, "Permission denied"):
				kernel.Add(1)
			case res.IsError:
				otherFailures.Add(1)
				lastOther.Store(text)
			default:
				ran.Add(1)
			}
			if kernel.Load() >= enough || changed() {
				return
			}
		}
	})
	started := time.Now()
	wg.Wait()
	other, _ := lastOther.Load().(string)
	t.Logf("after %v: %d checkouts (%d failed); git log --output=x/config.yaml: %d refused by the path check, %d ran, %d refused by the kernel, %d failed otherwise (last: %.200q)",
		time.Since(started).Round(time.Millisecond), swaps.Load(), swapErrors.Load(), upFront.Load(), ran.Load(), kernel.Load(), otherFailures.Load(), other)
	if !changed() && kernel.Load() == 0 {
		t.Errorf("in %v no git log passed the path check and then met the symlink: the race was not shown", bound)
	}
	g.checkUnchanged(t, before)
}

// cacheEntries reads the introspection cache's entries: file name →
// binary, subcommand and the decoded entry.
type cacheEntryFile struct {
	path       string
	binary     string
	subcommand []string
	raw        map[string]any
}

func cacheEntries(t *testing.T, dir string) []cacheEntryFile {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []cacheEntryFile
	for _, name := range names {
		var e struct {
			Binary     string   `json:"binary"`
			Subcommand []string `json:"subcommand"`
		}
		var raw map[string]any
		data := configtest.ReadFile(t, name)
		if json.Unmarshal(data, &e) != nil || json.Unmarshal(data, &raw) != nil {
			continue
		}
		out = append(out, cacheEntryFile{path: name, binary: e.Binary, subcommand: e.Subcommand, raw: raw})
	}
	return out
}

// forgeTakesValue is entry with -P made a flag that takes a value, as a
// fresh entry: what makes `git -P config …` pass `config` as -P's value,
// out of the deny rule's sight.
func forgeTakesValue(t *testing.T, entry map[string]any) string {
	t.Helper()
	const valueRequired, typeString = 2, 3 // helptext.ValueRequired, policy.TypeString
	help, _ := entry["help"].(map[string]any)
	if help == nil {
		t.Fatalf("the cache entry has no help: %v", entry)
	}
	flags, _ := help["Flags"].([]any)
	found := false
	for _, f := range flags {
		if m, ok := f.(map[string]any); ok && m["Short"] == "-P" {
			m["Value"], m["Type"], m["Placeholder"], found = valueRequired, typeString, "<command>", true
		}
	}
	if !found {
		flags = append(flags, map[string]any{"Short": "-P", "Value": valueRequired, "Type": typeString, "Placeholder": "<command>"})
	}
	help["Flags"] = flags
	entry["fetched_at"] = time.Now().UTC().Format(time.RFC3339Nano)
	data, err := json.Marshal(entry)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// git log --output can neither forge nor blank an introspection cache
// entry, by any of three paths; after a restart, `git -P config …` is still
// refused by deny: [config]. And a corrupt entry (the operator's own
// process may write one) leaves the help unknown to the operator's CLI.
func TestConfinedGitCannotForgeTheCache(t *testing.T) {
	slow(t, "git forging the introspection cache")
	t.Parallel()
	requireLandlock(t)
	gitBin := gitPath(t)
	g := newGate(t, true)
	_, work := gateRepos(t, g)
	cfg := g.config(t, "", gitTool(gitBin, `      - subcommand: []
        flags: ["-P"]
      - subcommand: [push]
        arg_constraints: {positional_max: 0}
`), "")
	configtest.WriteFile(t, g.configPath, cfg, 0o600)
	s := g.start(t, "")
	c := s.Connect(t, "/mcp")
	pwned := filepath.Join(g.work, "pwned")
	smuggle := map[string]any{"P": "config", "args": []any{"alias.x", "!touch " + pwned}, "cwd": work}
	refused := func(t *testing.T, c *mcpClient, when string) {
		t.Helper()
		res := c.Call(t, "git", smuggle)
		if text := toolsettest.ResultText(t, res); !res.IsError || !strings.Contains(text, "Policy: subcommand 'config' is denied for 'git'.") {
			t.Errorf("%s: git -P config alias.x …: isError %v:\n%s", when, res.IsError, text)
		}
		if data := configtest.ReadFile(t, filepath.Join(work, ".git", "config")); strings.Contains(string(data), "alias") {
			t.Errorf("%s: the alias was written:\n%s", when, data)
		}
	}
	refused(t, c, "before the attack")

	var root, push cacheEntryFile
	for _, e := range cacheEntries(t, g.introDir) {
		switch {
		case e.binary == gitBin && len(e.subcommand) == 0:
			root = e
		case e.binary == gitBin && slices.Equal(e.subcommand, []string{"push"}):
			push = e
		}
	}
	if root.path == "" || push.path == "" {
		t.Fatalf("no cache entries for git's root help and git push in %s (%d entries)", g.introDir, len(cacheEntries(t, g.introDir)))
	}
	before := g.fingerprint(t, gitBin)
	forged := forgeTakesValue(t, root.raw)
	name := filepath.Base(root.path)
	for _, tc := range []struct {
		what, format, output string
	}{
		{"forged by its path", forged, root.path},
		{"forged by ../ from the repository", forged, "../../.cache/wraptool/introspection/" + name},
		{"forged through the repository's symlink", forged, "cache/" + name},
		{"blanked by its path", "", push.path},
		{"blanked through the repository's symlink", "", "cache/" + filepath.Base(push.path)},
	} {
		res := c.Call(t, "git_log", map[string]any{"max-count": 1, "format": gitFormat(tc.format), "output": tc.output, "cwd": work})
		_, line := outcome(t, res)
		t.Logf("an entry %s: %s", tc.what, g.short(line))
	}
	g.checkUnchanged(t, before)

	s.stop(t)
	s = g.start(t, "")
	c = s.Connect(t, "/mcp")
	refused(t, c, "after a restart")
	if _, err := os.Stat(pwned); err == nil {
		t.Errorf("the smuggled alias ran")
	}

	t.Run("a corrupt help is HELP UNKNOWN to the operator", func(t *testing.T) {
		// The operator's CLI cannot tell whether git push lists --rece (it
		// could be a prefix of --receive-pack): the help is unknown, shown
		// so, and approving needs --unlisted-ok.
		configtest.WriteFile(t, push.path, "{corrupt", 0o600)
		id := request(t, c, askFor("git", []string{"push"}, []string{"--rece"}, "receive-pack, or so", ""))
		cli := func(args ...string) (string, string, int) {
			t.Helper()
			return runWraptool(t, g.env(), append([]string{"--config", g.configPath}, args...)...)
		}
		out, stderr, code := cli("requests", "list")
		if code != 0 || !strings.Contains(out, "HELP UNKNOWN") {
			t.Errorf("requests list: exit %d, want 0 and the request marked HELP UNKNOWN:\n%s%s", code, out, stderr)
		}
		out, stderr, code = cli("requests", "approve", id, "--once")
		if code != 1 || !strings.Contains(stderr, "--unlisted-ok") {
			t.Errorf("requests approve %s --once: exit %d, want 1 and a refusal naming --unlisted-ok:\n%s%s", id, code, out, stderr)
		}
	})
}
