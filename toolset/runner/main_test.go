package runner

import (
	"os"
	"testing"

	"github.com/wraptool/wraptool/toolset/runner/launch"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// fakecli is the fixture binary, built once for the package's tests.
var fakecli string

func TestMain(m *testing.M) {
	// A child started through the launcher runs this binary first.
	launch.Main()
	if code, ok := helperChild(); ok {
		os.Exit(code)
	}
	os.Exit(toolsettest.RunWithFakeCLI(m, &fakecli))
}
