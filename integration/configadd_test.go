package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/introspect/introspecttest"
)

// TestConfigAddToARunningServer adds a Cobra-style tool to a config full of
// comments while the server runs: every original byte stays, the reload
// exposes nothing new (no list_changed: the later uncommenting of one rule
// brings exactly one), wraptool_discover lists the tool's subcommands, and
// refusals leave the file byte for byte as it was.
func TestConfigAddToARunningServer(t *testing.T) {
	slow(t, "config add under a running server")
	t.Parallel()
	dir := t.TempDir()
	texts := map[string]string{}
	files, err := filepath.Glob("../cmd/wraptool/testdata/configadd/ghlike/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("ghlike texts: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts[strings.ReplaceAll(strings.TrimSuffix(filepath.Base(f), ".txt"), "_", " ")] = string(b)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	ghlike, err := introspecttest.Install(savedhelp, bin, "ghlike", texts)
	if err != nil {
		t.Fatal(err)
	}
	cfg := "# wraptool config, by hand\n\n" + strings.Replace(serverConfig(t, dir, "  # the fixture\n"+toolsPull+"    # pull only\n"),
		"mcp:\n", "mcp:   # server\n", 1) + "\n# the end\n"
	s := startServerIn(t, dir, cfg)
	c := s.Connect(t, "/mcp")
	if got, want := c.WrappedTools(t), []string{"fake_pull"}; !slices.Equal(got, want) {
		t.Fatalf("tools before = %q, want %q", got, want)
	}
	reloads := strings.Count(s.Log(), `msg="config reloaded"`)

	env := []string{"PATH=" + bin}
	stdout, stderr, code := runWraptool(t, env, "--config", s.ConfigPath, "config", "add", "ghlike")
	if code != 0 {
		t.Fatalf("config add exited %d: %s", code, stderr)
	}
	if want := "added tool ghlike (" + ghlike + "): 9 subcommands listed as comments\n"; stdout != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
	if !strings.Contains(stderr, ghlike+" (owner ") {
		t.Errorf("stderr %q does not list the candidate with its owner", stderr)
	}
	after, err := os.ReadFile(s.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	// The block goes after the last tool's lines (its comment included),
	// before the trailing comment: everything else is the old file.
	at := strings.Index(cfg, "\n\n# the end\n") + 1
	block, ok := strings.CutPrefix(string(after), cfg[:at])
	if !ok || !strings.HasSuffix(block, cfg[at:]) {
		t.Fatalf("the original bytes are not kept around one block:\n%s", after)
	}
	block = strings.TrimSuffix(block, cfg[at:])
	if !strings.HasPrefix(block, "  ghlike:\n    binary: "+ghlike+"\n") || !strings.Contains(block, "      # - subcommand: [pr, list]        # List pull requests in a repository\n") {
		t.Errorf("inserted block:\n%s", block)
	}

	// The reload happened, and exposed nothing.
	s.WaitLog(t, `msg="config reloaded"`, reloads+1, eventTimeout)
	if got, want := c.WrappedTools(t), []string{"fake_pull"}; !slices.Equal(got, want) {
		t.Errorf("tools after the add = %q, want %q", got, want)
	}
	var got struct {
		Tools map[string]struct {
			Allowed   []string          `json:"allowed"`
			Available map[string]string `json:"available"`
		} `json:"tools"`
	}
	structured(t, c.Call(t, "wraptool_discover", map[string]any{}), &got)
	gh := got.Tools["ghlike"]
	if len(gh.Allowed) != 0 || gh.Available["pr"] != "Manage pull requests" || gh.Available["repo"] == "" || gh.Available["help"] != "" {
		t.Errorf("discover ghlike = %+v", gh)
	}

	// Refusals: the file stays byte for byte.
	for _, args := range [][]string{{"ghlike"}, {"fake"}, {"wraptool_x"}, {"other", "--binary", filepath.Join(dir, "config.yaml")}} {
		_, stderr, code := runWraptool(t, env, append([]string{"--config", s.ConfigPath, "config", "add"}, args...)...)
		now, _ := os.ReadFile(s.ConfigPath)
		if code != 1 || !bytes.Equal(now, after) {
			t.Errorf("config add %q: exit %d (want 1), file changed %v; stderr %q", args, code, !bytes.Equal(now, after), stderr)
		}
	}

	// Uncommenting one rule exposes it: exactly one list_changed, so the
	// add above sent none.
	edited := strings.Replace(string(after), "      # - subcommand: [pr, list]", "      - subcommand: [pr, list]", 1)
	edited = strings.Replace(edited, "      #   flags: []                     # has --state", "        flags: []                     # has --state", 1)
	if err := os.WriteFile(s.ConfigPath, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	expectOneListChanged(t, s, c)
	if got, want := c.WrappedTools(t), []string{"fake_pull", "ghlike_pr_list"}; !slices.Equal(got, want) {
		t.Errorf("tools after uncommenting = %q, want %q", got, want)
	}
}
