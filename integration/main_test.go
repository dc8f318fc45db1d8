package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// wraptoolBin is the binary TestMain builds, used by every test; fakecli is
// the fixture CLI the served configs wrap (toolset/testdata/fakecli);
// fakepsql behaves like psql's -h HOST (testdata/fakepsql); helpcli prints
// git-, Cobra- or GNU-style help and logs every argv it is started with
// (introspect/testdata/helpcli); fakeupstream is a stdio MCP server with
// echo, add, args, slow, crash, freeze, fail, secret, hidden, bad.name, env
// and toggle tools (actors/testdata/fakeupstream); savedhelp answers with
// saved help texts found beside the name it is run as
// (introspect/testdata/savedhelp).
var wraptoolBin, fakecli, fakepsql, helpcli, fakeupstream, savedhelp string

const (
	buildTimeout = 5 * time.Minute
	runTimeout   = 30 * time.Second
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

// testMain builds the binary into a temporary folder, runs the tests and
// removes the folder; it is separate from TestMain so deferred calls run
// before os.Exit.
func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "wraptool-integration-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)

	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	// One go build for every binary: the go command links them in
	// parallel, which is most of the start-up of a -short run.
	binaries := []struct {
		out *string
		src string
	}{
		{&wraptoolBin, "../cmd/wraptool"},
		{&fakecli, "../toolset/testdata/fakecli"},
		{&fakepsql, "./testdata/fakepsql"},
		{&helpcli, "../introspect/testdata/helpcli"},
		{&fakeupstream, "../actors/testdata/fakeupstream"},
		{&savedhelp, "../introspect/testdata/savedhelp"},
	}
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, b := range binaries {
		*b.out = filepath.Join(dir, filepath.Base(b.src))
		args = append(args, b.src)
	}
	if out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "integration: build the binaries: %v\n%s", err, out)
		return 1
	}
	for _, b := range binaries {
		if _, err := os.Stat(*b.out); err != nil {
			fmt.Fprintf(os.Stderr, "integration: build %s: %v\n", b.src, err)
			return 1
		}
	}
	return m.Run()
}

// runWraptool runs the built binary with args in a controlled environment:
// HOME is a fresh temporary folder and PATH is the parent's; env adds to or
// overrides those (a later entry wins). It returns the exit status.
func runWraptool(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runWraptoolIn(t, "", env, args...)
}

// runWraptoolIn is runWraptool with the child's working folder set to dir
// ("" means the test's own).
func runWraptoolIn(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCommandIn(t, dir, append([]string{wraptoolBin}, args...), env...)
}

// runCommandIn runs argv in dir ("" means the test's own) with HOME (a
// fresh folder) and PATH set, env added, bounded by runTimeout, and
// returns its output and exit status.
func runCommandIn(t *testing.T, dir string, argv []string, env ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCommandWithInput(t, dir, argv, nil, env...)
}

// runCommandWithInput is runCommandIn with stdin reading input (nil:
// nothing, as /dev/null).
func runCommandWithInput(t *testing.T, dir string, argv []string, input io.Reader, env ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = input
	cmd.Dir = dir
	cmd.Env = append([]string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err != nil && ctx.Err() != nil:
		t.Fatalf("%q did not finish within %v (stderr %q)", argv, runTimeout, errOut.String())
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("run %q: %v", argv, err)
	}
	return out.String(), errOut.String(), code
}
