// Package toolsettest holds what the tests of toolset, toolset/runner, the
// actors and integration share: the fake CLI fixture, built once per test
// binary, helpers that watch the processes it starts, and small MCP client
// helpers. It imports neither toolset nor runner (only runner's leaf
// package launch, to dispatch the launcher), so their in-package tests can
// use it without an import cycle.
package toolsettest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/toolset/runner/launch"
)

// BuildFakeCLI compiles toolset/testdata/fakecli into dir and returns the
// binary's path. Call it once from TestMain: a build takes a second or two.
func BuildFakeCLI(dir string) (string, error) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("build fakecli: cannot locate the toolsettest source")
	}
	src := filepath.Join(filepath.Dir(self), "..", "testdata", "fakecli")
	out := filepath.Join(dir, "fakecli")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
	cmd.Dir = src
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build fakecli: %v\n%s", err, b)
	}
	return out, nil
}

// FakeCLIEnv hands an already built fixture's path to a helper subprocess
// (a re-run of the test binary, such as the runner's subreaper test), so
// RunWithFakeCLI skips the build there.
const FakeCLIEnv = "WRAPTOOL_TEST_FAKECLI"

// RunWithFakeCLI is a TestMain body: it builds the fixture into a temporary
// folder (or takes the one FakeCLIEnv names), stores its path in *fakecli,
// runs the tests, removes the folder and returns the exit code for os.Exit.
//
// A test binary started as wraptool's launcher (a child its tests start
// through it, as every child on macOS is) does not run its tests: it
// execs the child's program and never returns from here.
func RunWithFakeCLI(m *testing.M, fakecli *string) int {
	launch.Main()
	if *fakecli = os.Getenv(FakeCLIEnv); *fakecli != "" {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "fakecli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if *fakecli, err = BuildFakeCLI(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// Report is what fakecli prints by default: what the child really got.
type Report struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Cwd  string   `json:"cwd"`
}

// Alive reports whether pid runs; a zombie awaiting its reaper counts as
// dead.
func Alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// WaitForPID polls for a fixture's pidfile (fakecli's grandchild, setsid
// and pidfile modes write it once the process runs) and returns the pid.
func WaitForPID(t testing.TB, pidfile string) int {
	t.Helper()
	var pid int
	waittest.Until(t, 20*time.Second, func() error {
		data, err := os.ReadFile(pidfile)
		if err != nil || len(data) == 0 {
			return errors.New("the fixture never wrote its pidfile")
		}
		// A pid that does not parse (or 0, or 1) must never reach a
		// caller's kill: kill(0) signals the test's own process group.
		p, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || p < 2 {
			return fmt.Errorf("the pidfile holds %q, not a pid", data)
		}
		pid = p
		return nil
	})
	return pid
}

// Bearer is an http.RoundTripper that adds "Authorization: Bearer Token" to
// every request, for MCP clients in tests.
type Bearer struct {
	Token string
	Base  http.RoundTripper
}

// RoundTrip sends r with the token on a copy of its headers.
func (b Bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.Token)
	return b.Base.RoundTrip(r)
}

// ResultText is the text of a tool result's only content item; anything
// else fails the test.
func ResultText(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("result has %d content items, want 1: %+v", len(res.Content), res.Content)
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("result content is %T, want *mcp.TextContent", res.Content[0])
	}
	return text.Text
}
