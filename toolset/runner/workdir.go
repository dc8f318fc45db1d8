package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Problem is why a requested working directory was refused. The runner
// knows nothing of denial texts: the caller words each problem for the
// client (toolset quotes the path as the policy's denials do).
type Problem int

const (
	// NotDir: the path does not exist or is not a directory.
	NotDir Problem = iota + 1
	// Outside: the resolved directory lies outside every root, so a link
	// inside a root cannot lead the child out of it.
	Outside
	// Unusable: the directory could not be resolved or opened for another
	// reason (permissions, a loop of links); CwdError.Err says which.
	Unusable
)

// String names the problem for logs and Error.
func (p Problem) String() string {
	switch p {
	case NotDir:
		return "not a directory"
	case Outside:
		return "outside the allowed roots"
	case Unusable:
		return "cannot be used"
	}
	return "Problem(" + strconv.Itoa(int(p)) + ")"
}

// CwdError is a refused client-requested working directory. It is data,
// not a message, so the caller can word the denial its own way and quote
// the client's path safely.
type CwdError struct {
	// Path is the cwd as the client requested it, before any resolution.
	Path string
	// Problem is why it was refused.
	Problem Problem
	// Err is the cause of an Unusable directory; nil for the other problems.
	Err error
}

// Error is for logs; toolset words the denial the assistant reads.
func (e *CwdError) Error() string {
	msg := "cwd " + strconv.Quote(e.Path) + ": " + e.Problem.String()
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cause of an Unusable directory.
func (e *CwdError) Unwrap() error { return e.Err }

// Workdir decides the child's working directory. With no requested cwd it is
// defaultDir (the tool's working_dir; "" means the server's own). A requested
// cwd, relative ones taken from defaultDir, must be an existing directory and,
// when roots is non-empty, lie inside one of them once symlinks are resolved
// on both sides, so a link inside a root cannot lead out of it. The returned
// path is the resolved one. This check alone cannot stop a link swapped into
// the path after it; OpenWorkdir pins the directory. Every error is a
// *CwdError.
func Workdir(requested, defaultDir string, roots []string) (string, error) {
	if requested == "" {
		return defaultDir, nil
	}
	refuse := func(p Problem, err error) (string, error) {
		return "", &CwdError{Path: requested, Problem: p, Err: err}
	}
	path := requested
	if !filepath.IsAbs(path) {
		base := defaultDir
		if base == "" {
			wd, err := os.Getwd()
			if err != nil {
				return refuse(Unusable, err)
			}
			base = wd
		}
		path = filepath.Join(base, path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return refuse(NotDir, nil)
		}
		return refuse(Unusable, err)
	}
	if info, err := os.Stat(real); err != nil || !info.IsDir() {
		return refuse(NotDir, nil)
	}
	if !insideRoots(real, roots) {
		return refuse(Outside, nil)
	}
	return real, nil
}

// OpenWorkdir is Workdir, then the open that pins the result: the checked
// directory is opened once, and the opened handle is checked again (what it
// really is, read back from /proc/self/fd or, where there is none, its
// path resolved again and found to be the same directory, must lie inside
// a root), so a
// symlink swapped into the path after Workdir's check cannot move the child
// once Run starts it in the handle itself (Command.DirFile). It returns the
// handle and the path it resolves to; both are empty for the server's own
// directory (no request, no default), which the child simply inherits. A
// default directory is pinned the same way but not held to the roots. A
// refused request is a *CwdError; any other error concerns the default
// directory, which is the operator's to fix rather than the client's.
func OpenWorkdir(requested, defaultDir string, roots []string) (*os.File, string, error) {
	dir, err := Workdir(requested, defaultDir, roots)
	if err != nil || dir == "" {
		return nil, "", err
	}
	fail := func(err error) (*os.File, string, error) {
		switch {
		case requested == "":
			return nil, "", fmt.Errorf("working directory %s: %w", dir, err)
		case errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR):
			return nil, "", &CwdError{Path: requested, Problem: NotDir}
		}
		return nil, "", &CwdError{Path: requested, Problem: Unusable, Err: err}
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	f := os.NewFile(uintptr(fd), dir)
	real, err := handlePath(f, dir)
	if err != nil {
		f.Close()
		return fail(err)
	}
	if requested != "" && !insideRoots(real, roots) {
		f.Close()
		return nil, "", &CwdError{Path: requested, Problem: Outside}
	}
	return f, real, nil
}

// sameDirectory is the path of the opened directory f found without
// /proc: dir resolved again (symlinks followed), accepted only when what it
// resolves to now has f's device and inode. A path swapped after the open
// either still leads to f, whose path this then is, or does not and is
// refused; a caller checks the path against the roots afterwards, so the
// handle's directory was inside them when this read it.
func sameDirectory(f *os.File, dir string) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	var have syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &have); err != nil {
		return "", err
	}
	// Walked, not stat'ed: stat(2) would follow a component swapped for a
	// symlink after EvalSymlinks, and find f's inode through a path that
	// leaves the roots while real still names one inside them.
	now, err := statNoFollow(real)
	if err != nil {
		return "", err
	}
	if have.Dev != now.Dev || have.Ino != now.Ino {
		return "", errDirMoved
	}
	return real, nil
}

// statNoFollow stats the directory the absolute path names by opening it
// one component at a time from "/", each opened without following a
// symlink (O_NOFOLLOW), so what it reaches lies at that very path, every
// folder on the way a real one; a symlink anywhere on it is an error.
func statNoFollow(path string) (syscall.Stat_t, error) {
	var st syscall.Stat_t
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return st, fmt.Errorf("%q is not a clean absolute path", path)
	}
	fd, err := unix.Open("/", searchOnly|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return st, err
	}
	for _, comp := range strings.Split(path, "/")[1:] {
		if comp == "" {
			continue // "/" itself
		}
		next, err := unix.Openat(fd, comp, searchOnly|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return st, fmt.Errorf("open %s without following links: %w", path, err)
		}
		fd = next
	}
	defer unix.Close(fd)
	err = syscall.Fstat(fd, &st)
	return st, err
}

// errDirMoved: the directory opened is no longer the one its path names.
var errDirMoved = errors.New("the directory changed while it was opened")

// insideRoots reports whether the resolved path real lies inside the
// resolved form of some root; no roots admit everything.
func insideRoots(real string, roots []string) bool {
	if len(roots) == 0 {
		return true
	}
	for _, root := range roots {
		rootReal, err := filepath.EvalSymlinks(root)
		if err != nil {
			continue // a root that vanished admits nothing
		}
		if within(real, rootReal) {
			return true
		}
	}
	return false
}

// within reports whether path is root or below it; both are clean and
// absolute.
func within(path, root string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
