package integration

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// impostor is a program of this same user on mcp.listen (a confined
// child can bind TCP) that answers every path like a wraptool's /healthz,
// and keeps every byte it was sent.
type impostor struct {
	addr string
	mu   sync.Mutex
	got  bytes.Buffer
}

func startImpostor(t *testing.T) *impostor {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	im := &impostor{addr: ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		im.mu.Lock()
		r.Write(&im.got) // the whole request, headers and body
		im.mu.Unlock()
		w.Write([]byte("ok\nconfinement: landlock (ABI 7)\n"))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return im
}

func (im *impostor) received() string {
	im.mu.Lock()
	defer im.mu.Unlock()
	return im.got.String()
}

// TestConnectAndUpRefuseAnImpostorOfTheSameUser shows that a listener of
// this user that answers like a wraptool but cannot prove it holds the
// token gets no token from connect (exit 1 naming the address), and that
// up beside it says the port is held by another program. Before, the
// owner check alone let connect send the token in its first request, and
// up printed "already serving".
func TestConnectAndUpRefuseAnImpostorOfTheSameUser(t *testing.T) {
	t.Parallel()
	im := startImpostor(t)
	dir := t.TempDir()
	const token = "token-of-the-impostor-test-0123456789abcdef"
	tokenFile := filepath.Join(dir, "mcp-token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg := fmt.Sprintf("mcp:\n  listen: %s\n  auth_token_file: %s\n  request_log: %s\n",
		im.addr, tokenFile, filepath.Join(dir, "requests.jsonl"))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}

	// The client's initialize waits on stdin, so a connect that trusted
	// the listener would send it, with the token, to the impostor.
	out, stderr, code := runWraptoolWithInput(t, env,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n",
		"--config", cfgPath, "connect")
	if last := lastLineOf(stderr); code != 1 || !strings.Contains(last, im.addr) || !strings.Contains(last, "prove") {
		t.Errorf("connect beside an impostor: exit %d, %q; want 1, naming %s and the missing proof", code, last, im.addr)
	}
	if out != "" {
		t.Errorf("connect wrote %q to stdout, want nothing", out)
	}

	out, stderr, code = runWraptool(t, env, "--config", cfgPath, "up")
	if last := lastLineOf(stderr); code != 1 || !strings.Contains(last, "mcp.listen "+im.addr+" is held by another program") {
		t.Errorf("up beside an impostor: exit %d, %q; want 1 and %q", code, last, "held by another program")
	}
	if strings.Contains(out, "already serving") {
		t.Errorf("up claims a wraptool serves:\n%s", out)
	}

	got := im.received()
	if got == "" {
		t.Fatal("the impostor was sent nothing: the test proves nothing")
	}
	if strings.Contains(got, token) || strings.Contains(strings.ToLower(got), "authorization") {
		t.Errorf("the impostor received the token:\n%s", got)
	}
}

// runWraptoolWithInput is runWraptool with stdin holding input.
func runWraptoolWithInput(t *testing.T, env []string, input string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCommandWithInput(t, "", append([]string{wraptoolBin}, args...), strings.NewReader(input), env...)
}
