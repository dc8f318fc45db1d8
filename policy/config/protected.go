package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// AuditKeep is how many rotated audit logs are kept beside the audit log
// (audit.jsonl.1 … audit.jsonl.5, the oldest dropped): the audit writer
// rotates to that many, and Protected lists each of them.
const AuditKeep = 5

// ConfinementOffWarning is what serve logs at every start and reload of a
// config that turns confinement off (and up prints).
const ConfinementOffWarning = "confinement is off: the processes wraptool starts can read its tokens and rewrite its config and logs"

// Protected is what the kernel keeps every process wraptool starts away from.
type Protected struct {
	// Hidden are absolute paths no started process may read, write, create,
	// remove, rename, link, truncate or execute, whole folders included.
	Hidden []string
	// ReadOnly are absolute paths of executables started processes may read
	// and execute but never write, truncate, rename or remove.
	ReadOnly []string
}

// Protected lists the config's protected set. self is wraptool's own
// executable ("" when unknown); o locates the default folders (nil: the real environment).
//
// Hidden holds wraptool's own files: the config, the token files, the env
// and overrides files, the request log and the grants key beside it, the
// audit log and its AuditKeep rotated files, the introspection cache folder
// and a unix listener's socket, whether or not each exists yet. It also
// holds the folders they are kept in when those are wraptool's: each of
// ConfigDir, DataDir and CacheDir that holds any of them, and any other
// folder that exists and holds at least one of them and nothing else (read
// at the call). ReadOnly holds self, every tool's binary, every
// mcp_servers command found in the PATH its process gets and each of its
// arguments that names an existing script (isScript), and the
// mcp.on_request command found the same way.
//
// Every path is absolute and cleaned, and where resolving its symlinks
// (its folder's, for one that does not exist yet) gives another path, both
// are listed: replacing the link or its target must both be refused. Each
// list is sorted and holds no path twice; a file inside a listed folder is
// listed too.
func (c *Config) Protected(self string, o *Options) Protected {
	hidden, readOnly := c.protectedItems(self, o)
	var p Protected
	for _, it := range hidden {
		p.Hidden = append(p.Hidden, it.forms()...)
	}
	for _, it := range readOnly {
		p.ReadOnly = append(p.ReadOnly, it.forms()...)
	}
	slices.Sort(p.Hidden)
	slices.Sort(p.ReadOnly)
	p.Hidden = slices.Compact(p.Hidden)
	p.ReadOnly = slices.Compact(p.ReadOnly)
	return p
}

// protectedItem is one protected path: as the config names it (made
// absolute), and with its symlinks resolved.
type protectedItem struct {
	path, real string
}

func newItem(path string) protectedItem {
	// Resolved as written: "/a/link/../x" is where the kernel goes (the
	// link's folder's parent), not the "/a/x" that cleaning the name gives.
	raw := path
	if !filepath.IsAbs(raw) {
		if wd, err := os.Getwd(); err == nil {
			raw = wd + string(filepath.Separator) + raw
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = filepath.Clean(path)
	}
	return protectedItem{abs, resolvePath(raw)}
}

func (it protectedItem) forms() []string {
	if it.real == it.path {
		return []string{it.path}
	}
	return []string{it.path, it.real}
}

// resolvePath resolves the symlinks of the absolute path p: all of them
// when p exists, else those of its deepest existing folder, with the rest
// joined on (it cannot hold symlinks yet). A path that cannot be resolved
// at all stays as it is.
func resolvePath(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	p = filepath.Clean(p)
	dir, rest := filepath.Dir(p), filepath.Base(p)
	for {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		up := filepath.Dir(dir)
		if up == dir {
			return p
		}
		dir, rest = up, filepath.Join(filepath.Base(dir), rest)
	}
}

// within reports whether p is dir or lies below it; both are clean and
// absolute.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir) && (dir == "/" || p[len(dir)] == '/')
}

// protectedItems are Protected's two lists before flattening: the hidden
// items (files first, then the folders that hold them) and the read-only
// ones.
func (c *Config) protectedItems(self string, o *Options) (hidden, readOnly []protectedItem) {
	files := append([]string{c.File}, c.OwnFiles()...)
	if c.AuditEnabled() {
		for i := 1; i <= AuditKeep; i++ {
			files = append(files, c.MCP.AuditLog+"."+strconv.Itoa(i))
		}
	}
	if dir, err := CacheDir(o); err == nil {
		files = append(files, filepath.Join(dir, "introspection"))
	}
	if c.MCP.Transport == "unix" && c.MCP.Listen != "" {
		files = append(files, c.MCP.Listen)
	}
	seen := map[string]bool{}
	for _, f := range files {
		if f == "" {
			continue
		}
		it := newItem(f)
		if !seen[it.path] || !seen[it.real] {
			hidden = append(hidden, it)
		}
		seen[it.path], seen[it.real] = true, true
	}
	hidden = append(hidden, protectedFolders(hidden, seen, o)...)

	programs := []string{self}
	for _, name := range sortedKeys(c.Tools) {
		programs = append(programs, c.Tools[name].Binary)
	}
	for _, name := range sortedKeys(c.MCPServers) {
		s := c.MCPServers[name]
		if cmd, ok := lookCommand(s.Command, s.WorkingDir, o, s.FileEnv, s.Env); ok {
			programs = append(programs, cmd)
		}
		for _, a := range s.Args {
			if script, ok := existingFile(a, s.WorkingDir); ok && isScript(script) {
				programs = append(programs, script)
			}
		}
	}
	if len(c.MCP.OnRequest) > 0 {
		if cmd, ok := lookCommand(c.MCP.OnRequest[0], "", o, nil, nil); ok {
			programs = append(programs, cmd)
		}
		// A hook's script (python3 notify.py) is a program too; the hook
		// runs in the config's folder, where a relative one lies.
		for _, a := range c.MCP.OnRequest[1:] {
			if script, ok := existingFile(a, c.Dir); ok && isScript(script) {
				programs = append(programs, script)
			}
		}
	}
	for _, p := range programs {
		if p != "" && filepath.IsAbs(p) {
			readOnly = append(readOnly, newItem(p))
		}
	}
	return hidden, readOnly
}

// defaultFolders are wraptool's own folders by name, each once (on macOS
// the config and data folders are one).
func defaultFolders(o *Options) []string {
	var out []string
	for _, f := range []func(*Options) (string, error){ConfigDir, DataDir, CacheDir} {
		if dir, err := f(o); err == nil && filepath.IsAbs(dir) && !slices.Contains(out, filepath.Clean(dir)) {
			out = append(out, filepath.Clean(dir))
		}
	}
	return out
}

// protectedFolders are the folders holding the items that are wraptool's:
// a default folder holding any item, and any other folder that exists and
// holds at least one item and nothing else. seen holds every form of the
// items.
func protectedFolders(items []protectedItem, seen map[string]bool, o *Options) []protectedItem {
	var out []protectedItem
	listed := map[string]bool{}
	add := func(it protectedItem) {
		if !listed[it.path] || !listed[it.real] {
			out = append(out, it)
		}
		listed[it.path], listed[it.real] = true, true
	}
	holds := func(dir protectedItem) bool {
		for _, it := range items {
			for _, f := range it.forms() {
				if f != dir.path && f != dir.real && (within(f, dir.path) || within(f, dir.real)) {
					return true
				}
			}
		}
		return false
	}
	for _, d := range defaultFolders(o) {
		if dir := newItem(d); holds(dir) {
			add(dir)
		}
	}
	for _, it := range items {
		for _, f := range it.forms() {
			dir := filepath.Dir(f)
			if dir == "/" || listed[dir] || slices.ContainsFunc(out, func(d protectedItem) bool { return within(dir, d.path) || within(dir, d.real) }) {
				continue
			}
			if onlyProtected(dir, seen) {
				add(newItem(dir))
			}
		}
	}
	return out
}

// onlyProtected reports whether dir exists and holds at least one entry,
// each of which is in protected.
func onlyProtected(dir string, protected map[string]bool) bool {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		return false
	}
	for _, e := range entries {
		if !protected[filepath.Join(dir, e.Name())] {
			return false
		}
	}
	return true
}

// lookCommand is where the process started as cmd finds its program: cmd
// itself when it holds a slash (a relative one taken from dir, the
// process's working directory, "" for the server's own), else the first
// executable regular file of that name in the PATH the process gets — the
// server's (o's environment), unless fileEnv or env set one — with empty
// and relative entries dropped and /usr/bin:/bin when none is left, as the
// runner builds a child's environment and looks its command up.
func lookCommand(cmd, dir string, o *Options, fileEnv, env map[string]string) (string, bool) {
	if cmd == "" {
		return "", false
	}
	if strings.Contains(cmd, "/") {
		if !filepath.IsAbs(cmd) && dir != "" {
			cmd = filepath.Join(dir, cmd)
		}
		abs, err := filepath.Abs(cmd)
		return abs, err == nil
	}
	path := o.getenv("PATH")
	for _, vars := range []map[string]string{fileEnv, env} {
		if v, ok := vars["PATH"]; ok {
			path = v
		}
	}
	var dirs []string
	for _, dir := range filepath.SplitList(path) {
		if filepath.IsAbs(dir) {
			dirs = append(dirs, dir)
		}
	}
	if len(dirs) == 0 {
		dirs = []string{"/usr/bin", "/bin"}
	}
	for _, dir := range dirs {
		candidate := filepath.Join(dir, cmd)
		if info, err := os.Stat(candidate); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
			return candidate, true
		}
	}
	return "", false
}

// existingFile is arg as the absolute path of an existing regular file,
// a relative one taken from dir (the process's working directory; "" is
// the server's own), or false when arg names none.
// isScript reports whether the regular file at path is a program an
// interpreter runs: executable, or named as a script (.py, .js, …). Other
// files an upstream is given (a database, a data folder's file) stay
// writable: it may have to write them.
func isScript(path string) bool {
	if info, err := os.Stat(path); err == nil && info.Mode()&0o111 != 0 {
		return true
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".py", ".pyc", ".js", ".mjs", ".cjs", ".ts", ".mts", ".sh", ".bash", ".rb", ".pl", ".lua", ".php", ".jar", ".exs", ".r":
		return true
	}
	return false
}

func existingFile(arg, dir string) (string, bool) {
	if arg == "" || strings.HasPrefix(arg, "-") {
		return "", false
	}
	p := arg
	if !filepath.IsAbs(p) && dir != "" {
		p = filepath.Join(dir, p)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", false
	}
	if info, err := os.Stat(abs); err != nil || !info.Mode().IsRegular() {
		return "", false
	}
	return abs, true
}

// protectedWarnings warns about each protected item inside an allowed cwd
// root or a working_dir: the folders from there down to the item cannot
// take new entries while wraptool confines what it starts. An item inside
// a listed folder is covered by that folder's warning.
func (c *Config) protectedWarnings(o *Options, warn func(fieldPath, string, ...any)) {
	type place struct {
		path fieldPath
		dir  string
	}
	var places []place
	mp := fieldPath{}.key("mcp")
	for i, r := range c.MCP.AllowedCwdRoots {
		places = append(places, place{mp.key("allowed_cwd_roots").index(i), r})
	}
	for _, name := range sortedKeys(c.Tools) {
		if d := c.Tools[name].WorkingDir; d != "" {
			places = append(places, place{fieldPath{}.key("tools").key(name).key("working_dir"), d})
		}
	}
	for _, name := range sortedKeys(c.MCPServers) {
		if d := c.MCPServers[name].WorkingDir; d != "" {
			places = append(places, place{fieldPath{}.key("mcp_servers").key(name).key("working_dir"), d})
		}
	}
	if len(places) == 0 {
		return
	}
	self, _ := os.Executable()
	hidden, readOnly := c.protectedItems(self, o)
	items := append(hidden, readOnly...)
	covered := func(it protectedItem) bool {
		return slices.ContainsFunc(hidden, func(h protectedItem) bool {
			return h != it && (within(it.path, h.path) && it.path != h.path || within(it.real, h.real) && it.real != h.real)
		})
	}
	defaults := defaultFolders(o)
	home, _ := o.home()
	tilde := func(p string) string {
		if home != "" && within(p, home) && p != home {
			return "~" + p[len(home):]
		}
		return p
	}
	suggest := make([]string, len(defaults))
	for i, d := range defaults {
		suggest[i] = tilde(d)
	}
	for _, pl := range places {
		root := newItem(pl.dir)
		for _, it := range items {
			if covered(it) {
				continue
			}
			// Compare like with like: the forms as written, or both resolved.
			var item, top string
			switch {
			case within(it.path, root.path):
				item, top = it.path, root.path
			case within(it.real, root.real):
				item, top = it.real, root.real
			default:
				continue
			}
			if item == top {
				warn(pl.path, "%s is itself protected by wraptool: tools running there can neither read nor change anything in it; "+
					"name a folder that holds none of wraptool's files", pl.dir)
				continue
			}
			fix := "keep wraptool's files out of it, in " + list(suggest)
			if slices.Contains(defaults, it.path) || slices.Contains(defaults, it.real) {
				fix = "wraptool keeps its files there by default, so name a folder that does not hold it"
			}
			warn(pl.path, "%s holds %s, which wraptool protects: tools running there cannot create, remove or rename entries in the folders above it (%s); %s",
				pl.dir, it.path, strings.Join(foldersAbove(item, top), ", "), fix)
		}
	}
}

// foldersAbove are the folders from item's own up to top, which holds it.
func foldersAbove(item, top string) []string {
	var out []string
	for dir := filepath.Dir(item); within(dir, top); dir = filepath.Dir(dir) {
		out = append(out, dir)
		if dir == top {
			break
		}
	}
	return out
}

// list joins words as a sentence does: "a", "a and b", "a, b and c".
func list(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return fmt.Sprintf("%s and %s", strings.Join(words[:len(words)-1], ", "), words[len(words)-1])
}
