package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// ErrUntrusted wraps every reason CheckProgram refuses a program: someone
// other than the user running wraptool (or root) could change or replace
// it. Callers test for it with errors.Is.
var ErrUntrusted = errors.New("a program others could change is not run")

// maxLinks bounds the symlinks one check follows, as the kernel's ELOOP
// does, so a loop of links cannot keep it walking.
const maxLinks = 40

// CheckProgram refuses the program at path (absolute; its symlinks are
// followed) when anyone but the user running wraptool or root could change
// what runs as it: the file must be owned by that user or root and not be
// writable by group or others, and so must every folder the path goes
// through, from the file's own up to "/", for the path as given and for
// every symlink on it and its target (whoever may write the folder holding a
// link could re-point it). A folder others may write counts as safe only when
// root owns it and its sticky bit is set, as /tmp: others can then neither
// rename nor remove what is in it. This is what OpenSSH asks of every
// component of a key's path.
//
// It reads modes and owners (not ACLs). The error names the program, the
// offending file or folder and the chmod or chown that fixes it, and wraps
// ErrUntrusted; a path that cannot be walked (a missing folder) gives an
// error that wraps the cause instead.
func CheckProgram(path string) error {
	return checkProgram(path, os.Geteuid())
}

// checkProgram is CheckProgram for the user self, so tests can check a
// folder that some other user owns for that user.
func checkProgram(path string, self int) error {
	return checkPath(path, self, false)
}

// checkPath is checkProgram; with folderOK a path naming a folder is
// checked as one more folder on the way (a folder an interpreter runs,
// python3 /srv/app) instead of being refused.
func checkPath(path string, self int, folderOK bool) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("check %s: not an absolute path", path)
	}
	w := trustWalk{program: path, self: self}
	rootInfo, err := os.Stat("/")
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	if err := w.folder("/", rootInfo); err != nil {
		return err
	}
	// The walk resolves the path one name at a time, as the kernel does:
	// cur is the symlink-free folder the next name is looked up in, and
	// every folder it has been is checked on entry, so each of cur's
	// ancestors has been checked too.
	cur, pending, links := "/", splitPath(path), 0
	for len(pending) > 0 {
		name := pending[0]
		pending = pending[1:]
		if name == ".." {
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		info, err := os.Lstat(next)
		if err != nil {
			return fmt.Errorf("check %s: %w", path, err)
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			if links++; links > maxLinks {
				return fmt.Errorf("check %s: %w", path, syscall.ELOOP)
			}
			if err := w.link(cur, next, info); err != nil {
				return err
			}
			target, err := os.Readlink(next)
			if err != nil {
				return fmt.Errorf("check %s: %w", path, err)
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			pending = append(splitPath(target), pending...)
			continue
		}
		if len(pending) == 0 && !(folderOK && info.IsDir()) {
			return w.file(next, info)
		}
		if !info.IsDir() {
			return fmt.Errorf("check %s: %s: %w", path, next, syscall.ENOTDIR)
		}
		if err := w.folder(next, info); err != nil {
			return err
		}
		cur = next
	}
	if folderOK {
		return nil
	}
	return fmt.Errorf("check %s: it names a folder, not a program", path)
}

// splitPath is p's names in order, without the empty and "." ones.
func splitPath(p string) []string {
	var out []string
	for _, name := range strings.Split(p, "/") {
		if name != "" && name != "." {
			out = append(out, name)
		}
	}
	return out
}

// trustWalk is one CheckProgram: what it checks, and for whom.
type trustWalk struct {
	program string
	self    int
}

// folder checks one folder the path goes through, dir (which holds no
// symlink) as Lstat described it.
func (w *trustWalk) folder(dir string, info fs.FileInfo) error {
	uid, ok := ownerOf(info)
	if !ok {
		return nil
	}
	if uid != w.self && uid != 0 {
		return w.untrusted("%s is owned by uid %d, not by you (uid %d) or root, so another user controls it (%s lies under it); fix with: chown %d %s",
			dir, uid, w.self, w.program, w.self, dir)
	}
	if info.Mode().Perm()&0o022 == 0 {
		return nil
	}
	sticky := info.Mode()&fs.ModeSticky != 0
	if sticky && uid == 0 {
		return nil // as /tmp: others may add entries, not touch ours
	}
	why := ""
	if sticky {
		why = " (its sticky bit counts only on a folder root owns)"
	}
	return w.untrusted("%s is under %s, which group or others may write%s, so they could put another program in its place; fix with: chmod go-w %s",
		w.program, dir, why, dir)
}

// link checks a symlink the path goes through, at name in the folder dir:
// in a folder others may write (which passed only because root owns it and
// it is sticky, as /tmp), the sticky bit lets the link's owner remove it
// and make another, re-pointing it between this check and the start; so
// there it must be owned by the user or root. Elsewhere only whoever may
// write dir could replace it, and dir was checked.
func (w *trustWalk) link(dir, name string, info fs.FileInfo) error {
	dinfo, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("check %s: %w", w.program, err)
	}
	if dinfo.Mode().Perm()&0o022 == 0 {
		return nil
	}
	uid, ok := ownerOf(info)
	if !ok || uid == w.self || uid == 0 {
		return nil
	}
	return w.untrusted("%s goes through the link %s, which uid %d owns in %s, a folder others may write: its owner may re-point it at any time; "+
		"fix with: name the target instead, or chown -h %d %s", w.program, name, uid, dir, w.self, name)
}

// file checks the program itself, found at real once its symlinks are
// resolved.
func (w *trustWalk) file(real string, info fs.FileInfo) error {
	if info.IsDir() {
		return fmt.Errorf("check %s: it names a folder, not a program", w.program)
	}
	uid, ok := ownerOf(info)
	if !ok {
		return nil
	}
	name := w.program
	if real != w.program {
		name = w.program + " (" + real + ")"
	}
	if uid != w.self && uid != 0 {
		return w.untrusted("%s is owned by uid %d, not by you (uid %d) or root, so another user controls it; fix with: chown %d %s",
			name, uid, w.self, w.self, real)
	}
	if info.Mode().Perm()&0o022 != 0 {
		return w.untrusted("%s is writable by group or others, and it decides what runs; fix with: chmod go-w %s", name, real)
	}
	return nil
}

func (w *trustWalk) untrusted(format string, args ...any) error {
	return &untrustedError{msg: fmt.Sprintf(format, args...)}
}

// untrustedError is a refusal of CheckProgram; it unwraps to ErrUntrusted.
type untrustedError struct{ msg string }

func (e *untrustedError) Error() string { return e.msg }
func (e *untrustedError) Unwrap() error { return ErrUntrusted }

// ownerOf is the uid owning info's file; false where the platform does not
// say.
func ownerOf(info fs.FileInfo) (int, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// startCheck is the check every Start runs; only the benchmark that weighs
// its cost replaces it.
var startCheck = checkStart

// checkStart runs CheckProgram on the program cmd is about to start, as the
// child will find it: a relative path (an upstream's "./server") is taken
// from cmd.Dir, else from the server's own working directory. A cmd whose
// lookup already failed is left for Start to report.
func checkStart(cmd *exec.Cmd) error {
	if cmd.Err != nil || cmd.Path == "" {
		return nil
	}
	p := cmd.Path
	if !filepath.IsAbs(p) {
		base := cmd.Dir
		if base == "" {
			wd, err := os.Getwd()
			if err != nil {
				return fmt.Errorf("check %s: %w", p, err)
			}
			base = wd
		}
		p = filepath.Join(base, p)
	}
	if err := CheckProgram(p); err != nil {
		return fmt.Errorf("refused to start %s: %w", cmd.Path, err)
	}
	return nil
}

// CheckScripts checks what an interpreter would run among args (python3
// server.py, node --require=./pre.js, python3 /srv/app): a script decides
// what runs as much as the interpreter. Each argument that names an existing
// file, and the value of each --option=VALUE or -x=VALUE that does, is held
// to CheckProgram; one that names a folder is checked as a folder on the
// way, and so are the files an interpreter runs from a folder (__main__.py,
// index.js, package.json and the main it names). A path that does not exist
// yet is refused when the folder it would be created in is one others may
// write (even /tmp): whoever creates it first decides what runs. A relative
// path is taken from dir, the process's working directory ("" for the
// server's own), where the process will open it. It returns the index of
// the first argument refused, with the reason.
func CheckScripts(args []string, dir string) (int, error) {
	return checkScripts(args, dir, os.Geteuid())
}

// checkScripts is CheckScripts for the user self.
func checkScripts(args []string, dir string, self int) (int, error) {
	for i, a := range args {
		for _, p := range scriptPaths(a) {
			if err := checkScript(p, dir, self); err != nil {
				return i, err
			}
		}
	}
	return -1, nil
}

// scriptPaths are the paths an argument may name: itself, unless it is an
// option; an option's attached value (--require=x.js, -r=x.js).
func scriptPaths(a string) []string {
	if a == "" {
		return nil
	}
	if !strings.HasPrefix(a, "-") {
		return []string{a}
	}
	if _, v, ok := strings.Cut(a, "="); ok && v != "" {
		return []string{v}
	}
	return nil
}

// folderEntries are the files an interpreter runs when it is given a
// folder: python's __main__.py, node's package.json (and its main) or index
// file.
var folderEntries = []string{"__main__.py", "package.json", "index.js", "index.mjs", "index.cjs"}

// checkScript checks one path an argument names (see CheckScripts).
func checkScript(a, dir string, self int) error {
	p := a
	if !filepath.IsAbs(p) {
		if dir == "" {
			wd, err := os.Getwd()
			if err != nil {
				return fmt.Errorf("check %s: %w", a, err)
			}
			dir = wd
		}
		p = filepath.Join(dir, p)
	}
	info, err := os.Stat(p)
	if err != nil {
		return missingScript(a, p)
	}
	switch {
	case info.Mode().IsRegular():
		return checkPath(p, self, false)
	case !info.IsDir():
		return nil
	}
	if err := checkPath(p, self, true); err != nil {
		return err
	}
	entries := slices.Clone(folderEntries)
	if main := packageMain(filepath.Join(p, "package.json")); main != "" {
		entries = append(entries, main, main+".js")
	}
	for _, e := range entries {
		f := filepath.Join(p, e)
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			if err := checkPath(f, self, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// missingScript refuses a path that names nothing yet when the folder it
// would be created in exists and others may write it: a name in /tmp or
// /dev/shm is whoever's who creates it first. An argument without a slash
// is more likely a word (stdio, a subcommand) than a file, and is left
// alone.
func missingScript(a, p string) error {
	if !strings.Contains(a, "/") {
		return nil
	}
	parent := filepath.Dir(p)
	info, err := os.Stat(parent)
	if err != nil || !info.IsDir() || info.Mode().Perm()&0o022 == 0 {
		return nil
	}
	return &untrustedError{msg: fmt.Sprintf("%s does not exist yet, and %s lets others create it, so whoever does first decides what runs; "+
		"fix with: create it yourself, or keep it in a folder only you may write", a, parent)}
}

// packageMain is the "main" a package.json names, inside its folder; ""
// when there is none or it would leave the folder. The file is read only up
// to a small bound: it is a hint for which file to check, not a parse of
// what node will do.
func packageMain(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var pkg struct {
		Main string `json:"main"`
	}
	if err := json.NewDecoder(io.LimitReader(f, 64<<10)).Decode(&pkg); err != nil {
		return ""
	}
	main := filepath.Clean(pkg.Main)
	if pkg.Main == "" || filepath.IsAbs(main) || main == ".." || strings.HasPrefix(main, "../") {
		return ""
	}
	return main
}
