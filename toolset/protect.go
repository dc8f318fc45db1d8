package toolset

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
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
		names := []string{locate(p)}
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
// folder names nothing.
func (ps *protectedSet) names(p string) bool {
	forms := []string{locate(p)}
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

// locate cleans the absolute path p after resolving the symlinks of its
// folder, as the kernel would walk it: the deepest existing ancestor is
// resolved and the rest, which cannot hold symlinks yet, is joined to it and
// cleaned (so "x/new/../config.yaml" still lands on config.yaml). The last
// element itself is left unresolved.
func locate(p string) string {
	p = strings.TrimRight(p, "/")
	if p == "" {
		return "/"
	}
	i := strings.LastIndexByte(p, '/')
	dir, rest := p[:i], p[i+1:]
	for {
		d := dir
		if d == "" {
			d = "/"
		}
		if real, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(real, rest)
		}
		if dir == "" {
			return filepath.Clean(p)
		}
		j := strings.LastIndexByte(dir, '/')
		dir, rest = dir[:j], dir[j+1:]+"/"+rest
	}
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
