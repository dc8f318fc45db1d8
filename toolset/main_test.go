package toolset

import (
	"fmt"
	"os"
	"testing"

	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// fakecli is the fixture binary, built once for the package's tests.
var fakecli string

// fakecliEnv hands the fixture's path to a helper subprocess (a re-run of
// this test binary, see TestReaperInASubreaper), which then skips the build.
const fakecliEnv = "WRAPTOOL_TOOLSET_TEST_FAKECLI"

func TestMain(m *testing.M) {
	if fakecli = os.Getenv(fakecliEnv); fakecli != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "toolset-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakecli, err = toolsettest.BuildFakeCLI(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
