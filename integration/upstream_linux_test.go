//go:build linux

package integration

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy/config/configtest"
)

// An upstream runs under the rules of the config in force: a reload that
// turns confinement on restarts it, though its entry is unchanged.
func TestUpstreamRestartsWhenItsConfinementChanges(t *testing.T) {
	slow(t, "an upstream restarted when confinement changes")
	t.Parallel()
	requireLandlock(t)
	dir := t.TempDir()
	servers := `  fake:
    command: $UPSTREAM
    args: [-marks, $DIR/work/marks]
    allow: [{tool: echo}]
`
	on := serversConfig(t, dir, servers)
	off := strings.Replace(on, "mcp:\n", "mcp:\n  confinement: off\n", 1)
	s := startServerIn(t, dir, off)
	marksFile := filepath.Join(dir, "work", "marks")
	waitMarks(t, marksFile, "start pid=", 1)
	before := strings.Count(s.Log(), `msg="config reloaded"`)
	configtest.ReplaceFile(t, s.ConfigPath, on)
	s.WaitLog(t, `msg="config reloaded"`, before+1, eventTimeout)
	s.WaitLog(t, `because="its confinement changed"`, 1, eventTimeout)
	waitMarks(t, marksFile, "start pid=", 2)
	if !strings.Contains(s.Log(), "confinement is off") {
		t.Errorf("no warning while confinement was off:\n%s", s.Log())
	}
}
