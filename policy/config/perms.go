package config

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// fileKind says what a file that decides what runs must satisfy.
type fileKind int

const (
	// decides: the config, env files, overrides files, the request log.
	// Nobody but its owner may write it or replace it (its folder is not
	// writable by group or others, unless sticky as /tmp is), and its owner
	// is the user running wraptool or root.
	decides fileKind = iota
	// secret: token files. As decides, and nobody but the owner may read it.
	secret
)

// A program (a tool's binary, an upstream's command or script, the hook) is
// not a fileKind: runner.CheckProgram judges it, at load and again before
// every start, walking every folder up to "/".

// checkFile reports why path may not be trusted to decide what runs, or ""
// when it may. A file that does not exist is no problem here (the caller
// decides whether it must exist); its folder still is checked when it
// exists, because a missing file is created there later. The file is judged
// as it is read (symlinks followed), and both the folder holding the name and
// the folder holding the file it resolves to are checked: whoever may write
// either could swap the file.
func checkFile(path string, kind fileKind) string {
	folders := []string{filepath.Dir(path)}
	info, err := os.Stat(path)
	if err == nil {
		if msg := checkOwnerAndMode(path, info, kind); msg != "" {
			return msg
		}
		if real, err := filepath.EvalSymlinks(path); err == nil && filepath.Dir(real) != folders[0] {
			folders = append(folders, filepath.Dir(real))
		}
	}
	for _, dir := range folders {
		dinfo, err := os.Stat(dir)
		if err != nil {
			continue
		}
		if msg := checkFolder(path, dir, dinfo); msg != "" {
			return msg
		}
	}
	return ""
}

func checkOwnerAndMode(path string, info fs.FileInfo, kind fileKind) string {
	if msg := checkOwner(path, info); msg != "" {
		return msg
	}
	perm := info.Mode().Perm()
	if perm&0o022 != 0 {
		return fmt.Sprintf("%s is writable by group or others, and it decides what runs; fix with: chmod go-w %s", path, path)
	}
	if kind == secret && perm&0o044 != 0 {
		return fmt.Sprintf("%s is readable by group or others, and it holds a secret; fix with: chmod 600 %s", path, path)
	}
	return ""
}

func checkFolder(path, dir string, info fs.FileInfo) string {
	if msg := checkOwner(dir, info); msg != "" {
		return msg + " (it holds " + path + ")"
	}
	sticky := info.Mode()&fs.ModeSticky != 0
	if info.Mode().Perm()&0o022 != 0 && !sticky {
		return fmt.Sprintf("%s is in %s, which group or others may write, so they could replace it; fix with: chmod go-w %s", path, dir, dir)
	}
	return ""
}

// checkOwner refuses a file or folder owned by anyone but the user running
// wraptool or root: its owner could change it, or its mode, at any time.
func checkOwner(path string, info fs.FileInfo) string {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	self := os.Geteuid()
	if int(st.Uid) == self || st.Uid == 0 {
		return ""
	}
	return fmt.Sprintf("%s is owned by uid %d, not by you (uid %d) or root, so another user controls it; fix with: chown %d %s",
		path, st.Uid, self, self, path)
}

// readableByOthers reports whether group or others may read path.
func readableByOthers(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().Perm()&0o044 != 0
}

// isSelf reports whether path is the running wraptool binary: wrapping
// wraptool would hand the assistant the operator's side (approving its own
// requests, editing the config).
func isSelf(path string) bool {
	self, err := os.Executable()
	if err != nil {
		return false
	}
	a, err := os.Stat(self)
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}
