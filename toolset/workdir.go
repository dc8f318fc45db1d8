package toolset

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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
// path is the resolved one, which narrows the window for a link swapped after
// the check. A refusal is a *CwdError.
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
	if len(roots) == 0 {
		return real, nil
	}
	for _, root := range roots {
		rootReal, err := filepath.EvalSymlinks(root)
		if err != nil {
			continue // a root that vanished admits nothing
		}
		if within(real, rootReal) {
			return real, nil
		}
	}
	return "", &CwdError{Reason: "cwd " + policy.Quote(requested) + " is outside the allowed roots"}
}

// within reports whether path is root or below it; both are clean and
// absolute.
func within(path, root string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
