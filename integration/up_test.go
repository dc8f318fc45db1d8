package integration

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// startWraptool starts the binary with args and exactly env, and returns
// its stdout and stderr buffers. It waits (bounded) until the server serves
// or exits, and stops it (SIGTERM, then kill) when the test ends.
func startWraptool(t *testing.T, env []string, args ...string) (stdout, stderr *logBuffer, exited <-chan struct{}) {
	t.Helper()
	return startBinary(t, wraptoolBin, env, args...)
}

// startBinary is startWraptool for the wraptool binary at bin (a copy put
// elsewhere, say).
func startBinary(t *testing.T, bin string, env []string, args ...string) (stdout, stderr *logBuffer, exited <-chan struct{}) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	stdout, stderr = &logBuffer{}, &logBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	waittest.Until(t, startTimeout, func() error {
		if strings.Contains(stderr.String(), `msg="serving MCP"`) {
			return nil
		}
		select {
		case <-done:
			return nil
		default:
		}
		return fmt.Errorf("wraptool %q neither served nor exited:\n%s", args, stderr)
	})
	return stdout, stderr, done
}

// waitStdout waits (bounded) until stdout holds every one of wants and
// returns it, or what it holds when the wait ends. The child writes its
// set-up before it logs "serving MCP", but its stdout and stderr reach the
// test through two pipes copied apart, so the log line can arrive first.
func waitStdout(t *testing.T, stdout *logBuffer, wants ...string) string {
	t.Helper()
	waittest.Within(startTimeout, func() error {
		for _, w := range wants {
			if !strings.Contains(stdout.String(), w) {
				return fmt.Errorf("stdout lacks %q", w)
			}
		}
		return nil
	})
	return stdout.String()
}

// On first run serve writes the starter config and the token file it names,
// each logged with its absolute path. The starter listens on the fixed port
// 8717, which another process may hold: the files are written before the
// listener binds, so they are checked either way.
func TestServeFirstRunScaffolds(t *testing.T) {
	slow(t, "first-run scaffolding")
	t.Parallel()
	gitDir := t.TempDir()
	fakeGit := filepath.Join(gitDir, "git")
	if err := os.Symlink(fakecli, fakeGit); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		path    string
		wantGit string
	}{
		{"with git on PATH the starter wraps git pull", gitDir, fakeGit},
		{"without git the starter's rule is commented out", t.TempDir(), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			_, stderr, _ := startWraptool(t, []string{"HOME=" + home, "PATH=" + tc.path}, "serve")
			cfgPath := filepath.Join(home, ".config", "wraptool", "config.yaml")
			tokPath := filepath.Join(home, ".config", "wraptool", "mcp-token")
			log := stderr.String()
			for _, want := range []string{
				`msg="wrote the starter config; edit it to expose your tools" path=` + cfgPath,
				`msg="created token file" path=` + tokPath,
			} {
				if !strings.Contains(log, want) {
					t.Errorf("log lacks %q:\n%s", want, log)
				}
			}
			cfg, err := os.ReadFile(cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantGit != "" && !strings.Contains(string(cfg), "\n    binary: "+tc.wantGit+"\n") {
				t.Errorf("starter does not wrap %s:\n%s", tc.wantGit, cfg)
			}
			if tc.wantGit == "" && !strings.Contains(string(cfg), "\ntools: {}\n") {
				t.Errorf("starter without git is not tools: {}:\n%s", cfg)
			}
			for path, mode := range map[string]os.FileMode{cfgPath: 0o600, tokPath: 0o600, filepath.Dir(cfgPath): 0o700 | os.ModeDir} {
				info, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if got := info.Mode() & (os.ModePerm | os.ModeDir); got != mode {
					t.Errorf("%s mode %v, want %v", path, got, mode)
				}
			}
			tok, _ := os.ReadFile(tokPath)
			if !regexp.MustCompile(`^[0-9a-f]{64}\n$`).Match(tok) {
				t.Errorf("token file holds %q, want 64 hex digits", tok)
			}
		})
	}
}

// A second start never overwrites the config or the token.
func TestServeNeverOverwritesConfigOrToken(t *testing.T) {
	slow(t, "a second start keeping config and token")
	t.Parallel()
	dir := t.TempDir()
	cfg := serverConfig(t, dir, "")
	tokPath := filepath.Join(dir, "mcp-token")
	if err := os.WriteFile(tokPath, []byte("operator-chosen-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServerIn(t, dir, cfg)
	if s.Token != "operator-chosen-token" {
		t.Errorf("token = %q, want the operator's", s.Token)
	}
	if got, _ := os.ReadFile(s.ConfigPath); string(got) != cfg {
		t.Errorf("config changed:\n%s", got)
	}
	if strings.Contains(s.Log(), "created token file") || strings.Contains(s.Log(), "wrote the starter") {
		t.Errorf("log claims a file was written:\n%s", s.Log())
	}
}

// up prints ready-to-paste client set-up for the running server, as
// `setup` does — the claude line for /mcp reading the token from
// WRAPTOOL_TOKEN, the file forms for every client, the stdio entry — with
// the token in none of it, then serves.
func TestUpPrintsClientSetup(t *testing.T) {
	slow(t, "up's client set-up")
	t.Parallel()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	port := freePort(t)
	cfg := fmt.Sprintf("mcp:\n  listen: 127.0.0.1:%d\n  auth_token_file: %s\n  request_log: %s\n",
		port, filepath.Join(dir, "mcp-token"), filepath.Join(dir, "requests.jsonl"))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, _ := startWraptool(t, []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}, "--config", cfgPath, "up")
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, url)
	tokBytes, err := os.ReadFile(filepath.Join(dir, "mcp-token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tokBytes))
	wants := []string{
		"wraptool is serving MCP at " + url + "\n",
		`export WRAPTOOL_TOKEN="$(cat ` + filepath.Join(dir, "mcp-token") + `)"`,
		"claude mcp add --scope user --transport http wraptool " + url + `/mcp --header "Authorization: Bearer ${WRAPTOOL_TOKEN}"`,
		"codex mcp add wraptool --url " + url + "/mcp --bearer-token-env-var WRAPTOOL_TOKEN",
		"(wraptool setup mcp-remote) ==",
	}
	out := waitStdout(t, stdout, wants...)
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, token) {
		t.Errorf("the set-up holds the token:\n%s", out)
	}
	// Every JSON block parses; the stdio entries start this binary with
	// the config by its absolute path; the others point at this server.
	stdio := 0
	for _, block := range regexp.MustCompile(`(?s)\n(\{\n.*?\n\})\n`).FindAllStringSubmatch(out, -1) {
		var v struct {
			MCPServers map[string]struct {
				URL     string   `json:"url"`
				HTTPURL string   `json:"httpUrl"`
				Command string   `json:"command"`
				Args    []string `json:"args"`
			} `json:"mcpServers"`
			Servers map[string]struct {
				URL string `json:"url"`
			} `json:"servers"`
			MCP map[string]struct {
				URL string `json:"url"`
			} `json:"mcp"`
		}
		if err := json.Unmarshal([]byte(block[1]), &v); err != nil {
			t.Fatalf("block %q: %v", block[1], err)
		}
		e := v.MCPServers["wraptool"]
		switch {
		case e.Command == wraptoolBin:
			if strings.Join(e.Args, " ") != "--config "+cfgPath+" connect" {
				t.Errorf("stdio entry %+v, want %s --config %s connect", e, wraptoolBin, cfgPath)
			}
			stdio++
		case e.Command == "npx": // mcp-remote
			if !slices.Contains(e.Args, url+"/mcp") {
				t.Errorf("mcp-remote entry %+v does not point at %s/mcp", e, url)
			}
		case e.URL+e.HTTPURL+v.Servers["wraptool"].URL+v.MCP["wraptool"].URL != url+"/mcp":
			t.Errorf("entry %s does not point at %s/mcp", block[1], url)
		}
	}
	if stdio != 2 {
		t.Errorf("%d stdio entries (Claude Desktop, the Inspector's file), want 2:\n%s", stdio, out)
	}
	if strings.Contains(stderr.String(), token) {
		t.Errorf("the token leaked into the log:\n%s", stderr)
	}
	// And it serves, with that token.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "up", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   url + "/mcp",
		HTTPClient: &http.Client{Transport: toolsettest.Bearer{Token: token, Base: http.DefaultTransport}},
	}, nil)
	if err != nil {
		t.Fatalf("connect with the printed set-up: %v", err)
	}
	session.Close()
}

// With admin.listen, up prints the review UI's address (its own host name,
// derived from the admin token) and serve logs it; the admin token never
// reaches the log.
func TestUpPrintsTheReviewUI(t *testing.T) {
	slow(t, "up printing the review UI")
	t.Parallel()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	adminPort := freePort(t)
	cfg := fmt.Sprintf("mcp:\n  listen: 127.0.0.1:%d\n  auth_token_file: %s\n  request_log: %s\nadmin:\n  listen: 127.0.0.1:%d\n  auth_token_file: %s\n",
		freePort(t), filepath.Join(dir, "mcp-token"), filepath.Join(dir, "requests.jsonl"), adminPort, filepath.Join(dir, "admin-token"))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, _ := startWraptool(t, []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}, "--config", cfgPath, "up")
	tok, err := os.ReadFile(filepath.Join(dir, "admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("wraptool-admin:" + strings.TrimSpace(string(tok))))
	want := fmt.Sprintf("http://w-%x.localhost:%d/", sum[:8], adminPort)
	if out := waitStdout(t, stdout, "Review the assistant's requests at "+want); !strings.Contains(out, "Review the assistant's requests at "+want) {
		t.Errorf("stdout lacks the review UI %s:\n%s", want, out)
	}
	if !strings.Contains(stderr.String(), "url="+want) || strings.Contains(stderr.String(), strings.TrimSpace(string(tok))) {
		t.Errorf("the log lacks the UI's URL or carries the admin token:\n%s", stderr)
	}
}
