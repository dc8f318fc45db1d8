package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wraptool/wraptool/integration/waittest"
)

// Go 1.24 and later cache a `go run` binary in the build cache
// (GOCACHE/xx/<hash>-d/wraptool), which the cache cleaner removes: the
// stdio entry `up` prints must name the wraptool `go install` puts in
// GOBIN instead, and say to run that install first.
func TestUpUnderGoRunCacheNamesTheInstalledBinary(t *testing.T) {
	slow(t, "the stdio entry of a go run build")
	t.Parallel()
	dir := t.TempDir()
	cache := filepath.Join(dir, "gocache")
	exe := filepath.Join(cache, "10", strings.Repeat("ab", 32)+"-d", "wraptool")
	copyProgram(t, wraptoolBin, exe)
	gobin := filepath.Join(dir, "gobin")
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"GOCACHE names the cache", []string{"GOCACHE=" + cache, "GOBIN=" + gobin}},
		{"the cache entry's shape alone, as when go env -w set GOCACHE", []string{"GOBIN=" + gobin}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfgPath := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(cfgPath, []byte(serverConfig(t, dir, "")), 0o600); err != nil {
				t.Fatal(err)
			}
			out := startProgram(t, exe, append([]string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}, tc.env...), "--config", cfgPath, "up")
			stdout := waitStdout(t, out, "connect\"\n")
			want := `"command": "` + filepath.Join(gobin, "wraptool") + `"`
			if !strings.Contains(stdout, want) || strings.Contains(stdout, exe) {
				t.Errorf("stdio entry does not name %s (and not the cached %s):\n%s", want, exe, stdout)
			}
			if !strings.Contains(stdout, "run `go install ./cmd/wraptool` first") {
				t.Errorf("up does not say to run go install first:\n%s", stdout)
			}
		})
	}
}

// startProgram starts the wraptool binary at bin with args and exactly env,
// waits (bounded) until it serves or exits, stops it when the test ends
// (SIGTERM, then kill) and returns its stdout.
func startProgram(t *testing.T, bin string, env []string, args ...string) *logBuffer {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	stdout, stderr := &logBuffer{}, &logBuffer{}
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
		select {
		case <-done:
			t.Fatalf("%s %q exited:\n%s", bin, args, stderr)
		default:
		}
		if strings.Contains(stderr.String(), `msg="serving MCP"`) {
			return nil
		}
		return fmt.Errorf("%s %q did not serve:\n%s", bin, args, stderr)
	})
	return stdout
}
