package integration

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// up on a config whose server already runs prints the set-up, as setup
// does, says it is already serving and exits 0; setup itself says where
// it serves. Neither prints the token.
func TestUpOnARunningServer(t *testing.T) {
	slow(t, "up and setup beside a running server")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, ""))
	env := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}

	out, stderr, code := runWraptool(t, env, "--config", s.ConfigPath, "up")
	if code != 0 {
		t.Fatalf("up: exit %d, want 0:\n%s", code, stderr)
	}
	want := "wraptool is already serving MCP at " + s.URL + " (config " + s.ConfigPath + "): nothing more to start.\n"
	if !strings.HasPrefix(out, want) {
		t.Errorf("up's stdout begins %q, want %q", firstLineOf(out), want)
	}
	setupOut, setupErr, setupCode := runWraptool(t, env, "--config", s.ConfigPath, "setup")
	if setupCode != 0 || !strings.HasPrefix(setupOut, "wraptool is serving MCP at "+s.URL+"\n") {
		t.Fatalf("setup: exit %d, stdout begins %q:\n%s", setupCode, firstLineOf(setupOut), setupErr)
	}
	// The same set-up after the first line.
	_, upRest, _ := strings.Cut(out, "\n")
	_, setupRest, _ := strings.Cut(setupOut, "\n")
	if upRest != setupRest {
		t.Errorf("up printed another set-up than setup:\nup:\n%s\nsetup:\n%s", upRest, setupRest)
	}
	for _, o := range []string{out, stderr, setupOut, setupErr} {
		if strings.Contains(o, s.Token) {
			t.Errorf("the token was printed:\n%s", o)
		}
	}
	if !strings.Contains(out, "codex mcp add wraptool --url "+s.URL+"/mcp --bearer-token-env-var WRAPTOOL_TOKEN") {
		t.Errorf("up's set-up lacks the codex line:\n%s", out)
	}
	// serve beside it is an error that points at setup.
	_, serveErr, serveCode := runWraptool(t, env, "--config", s.ConfigPath, "serve")
	if want := "a wraptool already serves mcp.listen "; serveCode != 1 || !strings.Contains(lastLineOf(serveErr), want) ||
		!strings.Contains(lastLineOf(serveErr), "`wraptool setup` prints its client set-up") {
		t.Errorf("serve beside a running wraptool: exit %d, %q; want 1 and %q", serveCode, lastLineOf(serveErr), want)
	}
}

// up on a port held by a plain TCP listener (no wraptool) exits 1 naming
// the address, the config file and mcp.listen to change; serve says the
// same.
func TestUpOnAPortHeldByAnotherProgram(t *testing.T) {
	slow(t, "up on a port another program holds")
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg := fmt.Sprintf("mcp:\n  listen: %s\n  auth_token_file: %s\n  request_log: %s\n",
		addr, filepath.Join(dir, "mcp-token"), filepath.Join(dir, "requests.jsonl"))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	for _, command := range []string{"up", "serve"} {
		out, stderr, code := runWraptool(t, env, "--config", cfgPath, command)
		last := lastLineOf(stderr)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1:\n%s", command, code, stderr)
		}
		for _, want := range []string{"mcp.listen " + addr + " is held by another program", "change mcp.listen in " + cfgPath, "address already in use"} {
			if !strings.Contains(last, want) {
				t.Errorf("%s: the error %q lacks %q", command, last, want)
			}
		}
		if strings.Contains(out, "already serving") {
			t.Errorf("%s: claims a wraptool serves:\n%s", command, out)
		}
	}
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func lastLineOf(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}
