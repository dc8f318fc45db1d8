package toolset

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/wraptool/wraptool/policy"
)

// CwdError is a refused working directory. Reason is the text of the
// denial's Policy: line (see policy.Decision.Refuse).
type CwdError struct {
	Reason string
}

func (e *CwdError) Error() string { return e.Reason }

// Workdir decides the child's working directory. With no requested cwd it is
// defaultDir (the tool's working_dir; "" means the server's own). A requested
// cwd, relative ones taken from defaultDir, must be an existing directory and,
// when roots is non-empty, lie inside one of them once symlinks are resolved
// on both sides, so a link inside a root cannot lead out of it. The returned
// path is the resolved one. This check alone cannot stop a link swapped into
// the path after it; Execute pins the directory with openWorkdir. A refusal is
// a *CwdError.
func Workdir(requested, defaultDir string, roots []string) (string, error) {
	if requested == "" {
		return defaultDir, nil
	}
	path := requested
	if !filepath.IsAbs(path) {
		base := defaultDir
		if base == "" {
			wd, err := os.Getwd()
			if err != nil {
				return "", err
			}
			base = wd
		}
		path = filepath.Join(base, path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return "", &CwdError{Reason: "cwd " + policy.Quote(requested) + " is not a directory"}
		}
		return "", &CwdError{Reason: "cwd " + policy.Quote(requested) + " cannot be used: " + err.Error()}
	}
	if info, err := os.Stat(real); err != nil || !info.IsDir() {
		return "", &CwdError{Reason: "cwd " + policy.Quote(requested) + " is not a directory"}
	}
	if !insideRoots(real, roots) {
		return "", outsideRoots(requested)
	}
	return real, nil
}

// openWorkdir is Workdir, then the open that pins the result: the checked
// directory is opened once, and the opened handle is checked again (what it
// really is, read back from /proc/self/fd, must lie inside a root), so a
// symlink swapped into the path after Workdir's check cannot move the child:
// Run starts the child in the handle itself. It returns the handle and the
// path it resolves to; both are empty for the server's own directory (no
// request, no default), which the child simply inherits. A default
// directory is pinned the same way but not held to the roots. A refusal is a
// *CwdError; any other error concerns the default directory.
func openWorkdir(requested, defaultDir string, roots []string) (*os.File, string, error) {
	dir, err := Workdir(requested, defaultDir, roots)
	if err != nil || dir == "" {
		return nil, "", err
	}
	fail := func(err error) (*os.File, string, error) {
		switch {
		case requested == "":
			return nil, "", fmt.Errorf("working directory %s: %w", dir, err)
		case errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR):
			return nil, "", &CwdError{Reason: "cwd " + policy.Quote(requested) + " is not a directory"}
		}
		return nil, "", &CwdError{Reason: "cwd " + policy.Quote(requested) + " cannot be used: " + err.Error()}
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	f := os.NewFile(uintptr(fd), dir)
	real, err := os.Readlink(fdPath(f))
	if err != nil {
		f.Close()
		return fail(err)
	}
	if requested != "" && !insideRoots(real, roots) {
		f.Close()
		return nil, "", outsideRoots(requested)
	}
	return f, real, nil
}

// fdPath names an open file through /proc/self/fd. In a child between fork
// and exec, where the descriptor is inherited, it names the same file.
func fdPath(f *os.File) string {
	return "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
}

func outsideRoots(requested string) error {
	return &CwdError{Reason: "cwd " + policy.Quote(requested) + " is outside the allowed roots"}
}

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
