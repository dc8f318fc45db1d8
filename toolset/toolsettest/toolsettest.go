// Package toolsettest builds the test fixtures shared by toolset's tests and
// the integration tests, so every package runs the same fake CLI.
package toolsettest

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
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
