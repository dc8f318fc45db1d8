package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// commitTool wraps the real git with one rule that is not commit: `git
// commit` is what the assistant asks for.
func commitTool(gitBin, repo string) string {
	return `  git:
    binary: ` + gitBin + `
    working_dir: ` + repo + `
    env: {GIT_AUTHOR_NAME: t, GIT_AUTHOR_EMAIL: t@example.com, GIT_COMMITTER_NAME: t, GIT_COMMITTER_EMAIL: t@example.com, GIT_CONFIG_NOSYSTEM: "1"}
    allow:
      - subcommand: [status]
`
}

// TestGrantedCommitRuns is the newcomer's grant, end to end with the real
// git: the assistant asks for `git commit` with -m and --allow-empty, the
// operator approves it --once, --for 10m or --apply, and
// git_commit {"m":"x","allow-empty":true} runs. The preview says what git's
// help says: -m takes a value, --allow-empty is a switch. Before a grant's
// rule was introspected, -m counted as unproven (its value a positional,
// refused under positional_max 0) and the denial was the config's.
func TestGrantedCommitRuns(t *testing.T) {
	slow(t, "grants of git commit with the real git")
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	if _, err := exec.LookPath("man"); err != nil {
		t.Skip("no man: git commit --help prints nothing parseable")
	}
	for _, tt := range []struct {
		name string
		args []string // the approve flags
		want string   // in approve's output
	}{
		{"once", []string{"--once"}, " once"},
		{"for ten minutes", []string{"--for", "10m"}, " until "},
		{"applied to the config", []string{"--apply"}, "appended allow rule for git commit"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			repo := filepath.Join(dir, "repo")
			if err := os.Mkdir(repo, 0o700); err != nil {
				t.Fatal(err)
			}
			git(t, repo, "init", "-q", "-b", "main")
			s := startServerIn(t, dir, serverConfig(t, dir, commitTool(gitBin, repo)))
			c := s.Connect(t, "/mcp")
			cli := operatorCLI(t, s)
			id := request(t, c, askFor("git", []string{"commit"}, []string{"-m", "--allow-empty"}, "record an empty commit", ""))

			out, stderr, code := cli(append([]string{"requests", "approve", id}, tt.args...)...)
			if code != 0 || !strings.Contains(out, tt.want) {
				t.Fatalf("approve %v: exit %d, want %q in\n%s\n%s", tt.args, code, tt.want, out, stderr)
			}
			for _, want := range []string{"  -m  takes any value  — Use the given <msg> as the commit message", "  --allow-empty  a switch  — "} {
				if !strings.Contains(out, want) {
					t.Errorf("approve's preview lacks %q:\n%s", want, out)
				}
			}
			for _, never := range []string{"HELP UNKNOWN", "NOT IN", "value-taking unknown", "--allow-empty  takes"} {
				if strings.Contains(out, never) {
					t.Errorf("approve's preview says %q:\n%s", never, out)
				}
			}
			waitListChanged(t, s, c, "git_commit came into service")
			ran, text := runsOnceInForce(t, c, "git_commit", map[string]any{"m": "x", "allow-empty": true})
			if !ran {
				t.Fatalf("git_commit did not run under the approval: %s\n%s", text, s.Log())
			}
			if got := git(t, repo, "log", "--format=%s"); got != "x" {
				t.Errorf("git log after the call = %q, want the commit x", got)
			}
		})
	}
}
