package toolset

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/wraptool/wraptool/toolset/runner"
)

// ProtectedFiles are wraptool's own files, as every call of a snapshot
// checks them. Resolving them (each folder's symlinks, each file's, their
// identities) was 120 µs of every call, a tenth of an allowed call's server
// CPU, and their resolution changes only when one of them, or a folder on
// the way, is replaced; so the resolved set is kept and, before each call,
// checked with one stat of each file and each folder: when any is another
// file than it was (device and inode), appeared or vanished, the set is
// resolved again. A folder re-pointed to the same files changes no
// identity, and the set still refuses those files by identity.
type ProtectedFiles struct {
	paths []string
	// stat are the paths, then their folders once each (most of
	// wraptool's files share two or three): what a call stats.
	stat []string

	mu  sync.Mutex
	set *protectedSet
	ids []fileID // of each of stat, when set was resolved
}

// fileID is what one stat says of a protected path: whether it exists,
// and which file it is.
type fileID struct {
	exists   bool
	dev, ino uint64
}

// NewProtectedFiles keeps paths, the absolute paths of wraptool's own
// files; nil or empty protects nothing.
func NewProtectedFiles(paths []string) *ProtectedFiles {
	p := &ProtectedFiles{paths: slices.Clone(paths), stat: slices.Clone(paths)}
	for _, path := range paths {
		if dir := filepath.Dir(path); !slices.Contains(p.stat[len(paths):], dir) {
			p.stat = append(p.stat, dir)
		}
	}
	return p
}

// Paths are the files protected, as given.
func (p *ProtectedFiles) Paths() []string {
	if p == nil {
		return nil
	}
	return slices.Clone(p.paths)
}

// current is the set to check a call against: the kept one while every
// file and folder is the one it was, else a new resolution. Nil protects
// nothing.
func (p *ProtectedFiles) current() *protectedSet {
	if p == nil || len(p.paths) == 0 {
		return nil
	}
	ids := make([]fileID, len(p.stat))
	for i, path := range p.stat {
		ids[i] = statID(path)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.set == nil || !slices.Equal(ids, p.ids) {
		p.set, p.ids = newProtectedSet(p.paths), ids
	}
	return p.set
}

func statID(path string) fileID {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return fileID{}
	}
	return fileID{exists: true, dev: uint64(st.Dev), ino: st.Ino}
}

// protectedSet is wraptool's own files (Runtime.Protected) and the folders
// holding them, resolved; ProtectedFiles keeps one while it holds. Each file counts under two
// names, its folder's symlinks resolved and, when it exists, the whole path
// resolved; its folder under both names' folders. Existing ones are also
// kept by identity (device and inode), which catches hard links and bind
// mounts.
type protectedSet struct {
	files, folders map[string]bool
	infos          []os.FileInfo
}

func newProtectedSet(paths []string) *protectedSet {
	ps := &protectedSet{files: map[string]bool{}, folders: map[string]bool{}}
	addInfo := func(path string) {
		if info, err := os.Stat(path); err == nil {
			ps.infos = append(ps.infos, info)
		}
	}
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			continue // the lead passes absolute paths; a relative one names nothing stable
		}
		names := []string{runner.Locate(p)}
		if real, err := filepath.EvalSymlinks(p); err == nil {
			names = append(names, real)
			addInfo(p)
		}
		for _, name := range names {
			ps.files[name] = true
			ps.folders[filepath.Dir(name)] = true
			addInfo(filepath.Dir(name))
		}
	}
	return ps
}

// names reports whether the absolute path p names a protected file or
// folder: its folder-resolved or fully resolved form is one of them, or it
// exists and is the same file as one. A path merely inside a protected
// folder names nothing. A path that goes through a process-relative link
// (see throughProcessLink) counts as naming one: it means one file to
// wraptool and another to the child, so no check made here could tell what
// the child would reach.
func (ps *protectedSet) names(p string) bool {
	if throughProcessLink(p) {
		return true
	}
	forms := []string{runner.Locate(p)}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		forms = append(forms, real)
	}
	for _, f := range forms {
		if ps.files[f] || ps.folders[f] {
			return true
		}
	}
	if info, err := os.Stat(p); err == nil {
		return ps.same(info)
	}
	return false
}

// isFolder reports whether the directory at the resolved path real, whose
// opened handle reports info, is a protected folder.
func (ps *protectedSet) isFolder(real string, info os.FileInfo) bool {
	return ps.folders[real] || ps.same(info)
}

func (ps *protectedSet) same(info os.FileInfo) bool {
	for _, pi := range ps.infos {
		if os.SameFile(info, pi) {
			return true
		}
	}
	return false
}

// maxLinks bounds the symlinks throughProcessLink follows, as the kernel's
// own limit (40) does: past it the child could not open the path either.
const maxLinks = 40

// throughProcessLink reports whether the absolute path p, walked as the
// kernel walks it, passes through a link whose target depends on the
// process that follows it: /proc/self, /proc/thread-self, /proc/<pid>,
// /dev/fd, /dev/stdin, /dev/stdout or /dev/stderr. It looks twice: at p
// as written, its ".." taken lexically ("/proc/self/cwd/../../x" cleans
// to "/proc/x" but starts at /proc/self), and along the walk that follows
// every existing symlink one hop at a time, ".." climbing from where the
// last link led, so a folder that is a symlink to /proc/self/cwd (which
// filepath.EvalSymlinks would resolve straight to wraptool's own folder) is
// caught at the hop. /proc itself, /proc/cpuinfo, /dev/null, /dev/fdx or
// /proc/selfish are not such links.
func throughProcessLink(p string) bool {
	if processRelative(p) {
		return true
	}
	dest, rest, links := "/", p, 0
	for rest != "" {
		var elem string
		elem, rest, _ = strings.Cut(strings.TrimLeft(rest, "/"), "/")
		switch elem {
		case "", ".":
			continue
		case "..":
			dest = filepath.Dir(dest)
			continue
		}
		next := filepath.Join(dest, elem)
		if processLink(next) {
			return true
		}
		info, err := os.Lstat(next)
		if err != nil || info.Mode()&os.ModeSymlink == 0 {
			dest = next // a missing one holds no links: the rest is walked as written
			continue
		}
		target, err := os.Readlink(next)
		if links++; err != nil || links > maxLinks {
			return false
		}
		if filepath.IsAbs(target) {
			dest = "/"
		}
		rest = target + "/" + rest
	}
	return false
}

// processRelative reports whether the absolute path p, read element by
// element as written ("" and "." skipped, ".." taking the last one off),
// stands on a process-relative link at some point (see processLink).
func processRelative(p string) bool {
	walk := "/"
	for _, elem := range strings.Split(p, "/") {
		switch elem {
		case "", ".":
			continue
		case "..":
			walk = filepath.Dir(walk)
			continue
		}
		walk = filepath.Join(walk, elem)
		if processLink(walk) {
			return true
		}
	}
	return false
}

// processLink reports whether the clean absolute path p is one of the
// links whose target depends on the process following it.
func processLink(p string) bool {
	dir, name := filepath.Split(p)
	switch dir {
	case "/proc/":
		return name == "self" || name == "thread-self" || allDigits(name)
	case "/dev/":
		return name == "fd" || name == "stdin" || name == "stdout" || name == "stderr"
	}
	return false
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// candidates reads a client-chosen token as paths: absolute as it is; "~"
// and "~/…" under each of homes; anything else relative to base, the
// call's checked working directory (none when base is ""). An empty token
// names nothing.
func candidates(value, base string, homes []string) []string {
	switch {
	case value == "", base == "" && !filepath.IsAbs(value) && value != "~" && !strings.HasPrefix(value, "~/"):
		return nil
	case filepath.IsAbs(value):
		return []string{value}
	case value == "~" || strings.HasPrefix(value, "~/"):
		var out []string
		for _, h := range homes {
			out = append(out, h+value[1:])
		}
		return out
	}
	return []string{base + "/" + value}
}

// homes are the folders "~" may stand for: the server's HOME, and the
// child's when its environment sets another.
func homes(rt Runtime) []string {
	var out []string
	for _, h := range []string{rt.Home, envValue(rt.Env, "HOME")} {
		if filepath.IsAbs(h) && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}
