//go:build linux

package runner

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// launchByDefault is false: on Linux an unconfined start, like a confined
// one, enters its directory through /proc/self/fd between fork and exec,
// with no second exec of wraptool per call (docs/security.md says why);
// only a Support with Launcher set (tests) takes the launcher.
const launchByDefault = false

// fdPath names an open file through /proc/self/fd. In a child between fork
// and exec, where the descriptor is inherited, it names the same file.
func fdPath(f *os.File) string {
	return "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
}

// handlePath is the path the opened directory f really is, read back from
// the kernel; dir is the path it was opened by (unused here).
func handlePath(f *os.File, dir string) (string, error) {
	return os.Readlink(fdPath(f))
}

// searchOnly opens a folder on the way for searching only (O_PATH): the
// no-follow walk needs no read permission on the folders it passes, as a
// path lookup does not.
const searchOnly = unix.O_PATH
