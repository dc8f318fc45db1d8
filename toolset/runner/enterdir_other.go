//go:build !linux

package runner

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// launchByDefault is true: without /proc/self/fd a child can enter its
// checked directory only by the handle itself, which the launcher does
// with fchdir before it execs the program.
const launchByDefault = true

// fdPath names an open file through /dev/fd. It serves only the program
// check of a relative program path; the launcher enters the handle itself.
func fdPath(f *os.File) string {
	return "/dev/fd/" + strconv.Itoa(int(f.Fd()))
}

// handlePath is the path the opened directory f really is, without
// /proc: dir resolved again, accepted only when it is the very directory
// f holds (sameDirectory).
func handlePath(f *os.File, dir string) (string, error) {
	return sameDirectory(f, dir)
}

// searchOnly opens a folder on the way for searching only (O_SEARCH): the
// no-follow walk needs no read permission on the folders it passes, as a
// path lookup does not.
const searchOnly = unix.O_SEARCH
