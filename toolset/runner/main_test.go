package runner

import (
	"os"
	"testing"

	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// fakecli is the fixture binary, built once for the package's tests.
var fakecli string

func TestMain(m *testing.M) {
	if os.Getenv(mainThreadHelperEnv) != "" {
		// The child of TestNoThreadKeepsTheRestriction: confined starts
		// from the main goroutine, which may run on the main thread.
		os.Exit(mainThreadHelper())
	}
	os.Exit(toolsettest.RunWithFakeCLI(m, &fakecli))
}
