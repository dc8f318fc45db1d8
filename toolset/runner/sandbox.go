package runner

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Protected is what a Sandbox keeps every process it starts away from.
type Protected struct {
	// Hidden are absolute paths (files or whole folders) a confined
	// process can neither read, write, create, remove, rename, link,
	// truncate nor execute, by any path.
	Hidden []string
	// ReadOnly are absolute paths of executables a confined process may
	// read and execute but never write, truncate, rename or remove.
	ReadOnly []string
}

// Support is what this machine offers for confinement, as Probe finds it.
type Support struct {
	// Mechanism names the kernel feature used ("landlock", "seatbelt");
	// "" when none.
	Mechanism string
	// ABI is the mechanism's version in use (Landlock's ABI); 0 when none.
	ABI int
	// Err says why nothing can be confined; nil when Mechanism is usable.
	Err error
	// Launcher makes every start go through wraptool's launcher (package
	// launch), which enters the checked working directory by its handle
	// and carries the confinement across its exec: how macOS starts
	// children, and how Linux tests run that same path. False keeps
	// Linux's direct start (a restricted thread, /proc/self/fd).
	Launcher bool
}

// OK reports whether processes can be confined.
func (s Support) OK() bool { return s.Err == nil && s.Mechanism != "" }

// String is how /healthz, logs and `config validate` name it:
// "landlock (ABI 7)", "seatbelt (sandbox-exec)" (which has no ABI), or the
// reason nothing can be confined.
func (s Support) String() string {
	if !s.OK() {
		if s.Err != nil {
			return "unavailable: " + s.Err.Error()
		}
		return "unavailable"
	}
	if s.ABI == 0 {
		return s.Mechanism + " (sandbox-exec)"
	}
	return s.Mechanism + " (ABI " + strconv.Itoa(s.ABI) + ")"
}

// ErrNoConfinement wraps every reason this machine cannot confine a
// process; callers test for it with errors.Is.
var ErrNoConfinement = errors.New("cannot confine the processes wraptool starts")

// TestNoLandlockEnv names the variable that makes Probe report a kernel
// without Landlock, so the refusal and the opt-out can be tested on a
// kernel that has it. It can only take confinement away, which a
// configuration that requires it turns into a refusal to start: it never
// weakens a running server.
const TestNoLandlockEnv = "WRAPTOOL_TEST_NO_LANDLOCK"

// A Sandbox confines every process started through it (Command.Sandbox,
// Reaper.Start): the kernel, not a path check in wraptool's process, keeps
// the process and all it starts away from the Protected set, whatever
// path, link or race it uses. A nil *Sandbox confines nothing.
//
// The kernel's rules are built once and kept while they hold: before each
// start one stat of every protected path and of every folder above one
// shows whether anything they were built from changed (a new entry in
// such a folder, a protected file replaced), and then they are built
// anew. A Sandbox is safe for concurrent use.
type Sandbox struct {
	protected Protected
	support   Support

	// build is held while rules are built, so a burst of starts after a
	// change builds them once, not once per start.
	build sync.Mutex
	mu    sync.Mutex
	cur   *ruleset // nil until the first start, or after a change
}

// NewSandbox returns a Sandbox keeping started processes away from p,
// using what sup says the machine offers. When sup is not OK every start
// fails with its reason: a process that cannot be confined is not started.
func NewSandbox(p Protected, sup Support) *Sandbox {
	// Kept as written, not cleaned: "/a/link/../x" is resolved as the
	// kernel walks it (see forms).
	clean := func(paths []string) []string {
		var out []string
		for _, path := range paths {
			if filepath.IsAbs(path) {
				out = append(out, path)
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	return &Sandbox{protected: Protected{Hidden: clean(p.Hidden), ReadOnly: clean(p.ReadOnly)}, support: sup}
}

// Protected is the set the Sandbox keeps processes away from.
func (s *Sandbox) Protected() Protected {
	if s == nil {
		return Protected{}
	}
	return Protected{Hidden: slices.Clone(s.protected.Hidden), ReadOnly: slices.Clone(s.protected.ReadOnly)}
}

// Support is what the Sandbox confines with.
func (s *Sandbox) Support() Support {
	if s == nil {
		return Support{}
	}
	return s.support
}

// start starts cmd confined; on a nil Sandbox it only starts it. Whether
// it goes through the launcher is launcherFor's to say.
func (s *Sandbox) start(cmd *exec.Cmd) error {
	if s == nil {
		if launcherFor(nil) {
			return startLaunched(cmd, -1, nil)
		}
		return cmd.Start()
	}
	if !s.support.OK() {
		err := s.support.Err
		if err == nil {
			err = errors.New("no confinement mechanism on this platform")
		}
		return confineError(err)
	}
	rs, err := s.acquire()
	if err != nil {
		return confineError(err)
	}
	defer s.release(rs)
	return rs.start(cmd, s.support.Launcher)
}

// confineError words a failure to confine for the call's error.
func confineError(err error) error {
	if errors.Is(err, ErrNoConfinement) {
		return err
	}
	return &confineErr{err}
}

type confineErr struct{ err error }

func (e *confineErr) Error() string { return ErrNoConfinement.Error() + ": " + e.err.Error() }
func (e *confineErr) Unwrap() []error {
	return []error{ErrNoConfinement, e.err}
}

// acquire returns the rules in force, built anew when what they were
// built from changed; the caller releases them after the start.
func (s *Sandbox) acquire() (*ruleset, error) {
	if rs := s.current(); rs != nil {
		return rs, nil
	}
	s.build.Lock()
	defer s.build.Unlock()
	// Another start may have built them while this one waited.
	if rs := s.current(); rs != nil {
		return rs, nil
	}
	rs, err := buildRuleset(newPlan(s.protected), s.support)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	rs.refs = 1
	// Rules built while a folder they list was changing serve this start
	// only: an entry added in the same clock tick would not show.
	if rs.keep && s.cur == nil {
		s.cur = rs
		rs.refs++
	}
	s.mu.Unlock()
	return rs, nil
}

// current returns the kept rules, with a reference for the caller, when
// they still hold; rules that no longer do are dropped, and it returns nil.
func (s *Sandbox) current() *ruleset {
	s.mu.Lock()
	cur := s.cur
	if cur != nil {
		cur.refs++
	}
	s.mu.Unlock()
	if cur == nil {
		return nil
	}
	if cur.valid() {
		return cur
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == cur {
		s.cur = nil
		s.dropLocked(cur) // the Sandbox's reference
	}
	s.dropLocked(cur) // ours
	return nil
}

func (s *Sandbox) release(rs *ruleset) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropLocked(rs)
}

// dropLocked drops one reference; the last one closes the rules.
func (s *Sandbox) dropLocked(rs *ruleset) {
	if rs.refs--; rs.refs == 0 {
		rs.close()
	}
}

// Close releases the rules the Sandbox keeps. Starts still under way keep
// theirs until they are done; a later start builds them anew.
func (s *Sandbox) Close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil {
		s.dropLocked(s.cur)
		s.cur = nil
	}
}

// plan is which folders lie above a protected item and which paths are
// items, every path in the forms the kernel walks: each given path with its
// folder's symlinks resolved, and, when it exists, wholly resolved.
type plan struct {
	// above are the folders on the way to an item, "/" included, each
	// outside every hidden item.
	above map[string]bool
	// hidden and readOnly are the items by path.
	hidden, readOnly map[string]bool
	// runInside are the read-only items inside a hidden folder (a tool
	// binary kept in ~/.config/wraptool): nothing reaches them through the
	// folder, so each gets a rule of its own to be read and run.
	runInside []string
	// shadows are, by folder, the names of entries that may become a
	// hidden item by a rename (see shadowed).
	shadows map[string][]string
	// links are the symlinks on the way to an item, outside every hidden
	// folder; given are the items as they were given (cleaned), hidden
	// (false) or read-only (true). Landlock needs neither (the folders
	// above are closed to new entries); Seatbelt, which matches paths,
	// needs both, or a link could be swapped for a folder of the child's
	// making at the name wraptool opens.
	links []string
	given map[string]bool
	// watch are the paths whose identity, when it changes, means the rules
	// must be built anew: the given paths as given, their forms, and the
	// folders above, whose change times count too (timed).
	watch []string
	timed []bool
}

func newPlan(p Protected) *plan {
	pl := &plan{above: map[string]bool{}, hidden: map[string]bool{}, readOnly: map[string]bool{}, shadows: map[string][]string{}, given: map[string]bool{}}
	watch := map[string]bool{}
	var links []string
	add := func(path string, ro bool) {
		watch[path] = true
		// Hidden wins over read-only, as for the resolved forms.
		if c := filepath.Clean(path); !ro {
			pl.given[c] = false
		} else if _, seen := pl.given[c]; !seen {
			pl.given[c] = true
		}
		// A symlink on the way (~/proj/.wraptool -> ~/dotfiles/wraptool)
		// is part of the path wraptool opens: the folder holding it lies
		// above the item too, so the link can be neither removed nor
		// replaced by a folder of the child's making.
		links = append(links, symlinksOn(path, 0)...)
		for _, f := range forms(path) {
			watch[f] = true
			if ro {
				pl.readOnly[f] = true
			} else {
				pl.hidden[f] = true
			}
		}
	}
	for _, path := range p.Hidden {
		add(path, false)
	}
	for _, path := range p.ReadOnly {
		if !dacGuards(path) {
			add(path, true)
		}
	}
	// A path hidden as well as read-only is hidden.
	for path := range pl.hidden {
		delete(pl.readOnly, path)
	}
	underHidden := func(path string) bool {
		for h := range pl.hidden {
			if path != h && within(path, h) {
				return true
			}
		}
		return false
	}
	items := make([]string, 0, len(pl.hidden)+len(pl.readOnly))
	for path := range pl.hidden {
		items = append(items, path)
	}
	for path := range pl.readOnly {
		items = append(items, path)
	}
	for _, link := range links {
		watch[link] = true
		if !underHidden(link) {
			items = append(items, link)
			pl.links = append(pl.links, link)
		}
	}
	for _, item := range items {
		if underHidden(item) || item == "/" {
			if pl.readOnly[item] && item != "/" {
				pl.runInside = append(pl.runInside, item)
			}
			continue // a hidden folder covers it
		}
		for dir := filepath.Dir(item); ; dir = filepath.Dir(dir) {
			pl.above[dir] = true
			watch[dir] = true
			if dir == "/" {
				break
			}
		}
	}
	pl.above["/"] = true
	watch["/"] = true
	for h := range pl.hidden {
		dir := filepath.Dir(h)
		pl.shadows[dir] = append(pl.shadows[dir], filepath.Base(h))
	}
	for path := range watch {
		pl.watch = append(pl.watch, path)
	}
	slices.Sort(pl.watch)
	for _, path := range pl.watch {
		pl.timed = append(pl.timed, pl.above[path])
	}
	return pl
}

// insideHidden reports whether path is a hidden item or lies inside one.
func (pl *plan) insideHidden(path string) bool {
	for h := range pl.hidden {
		if within(path, h) {
			return true
		}
	}
	return false
}

// shadowed reports whether the entry name in a folder holding the hidden
// files hidden may become one of them by a rename, or is a copy of one: an
// atomic write's temporary file (wraptool's own are ".config.yaml.apply-…",
// ".config.yaml.tmp-…", ".grants.key.…"), an editor's swap or backup file,
// or the socket's temporary folder. Such an entry gets no rule: a rule
// follows the file it was made for, and a temporary file renamed over the
// config would carry it. The default folders, hidden whole, need none of
// this.
func shadowed(name string, hidden []string) bool {
	if strings.HasPrefix(name, ".wraptool-") {
		return true
	}
	for _, b := range hidden {
		switch {
		case strings.HasPrefix(name, "."+b+"."), strings.HasPrefix(name, b+"."), strings.HasPrefix(name, "#"+b),
			name == b+"~", strings.HasPrefix(name, ".#"+b):
			return true
		}
	}
	return false
}

// dacGuards reports whether the file system's own permissions already keep
// this user from writing, replacing or removing the executable at path:
// this user is not root, and neither path nor any folder above it is
// owned by this user or writable by group or others (a root-owned folder
// with the sticky bit, as /tmp, counts as safe, its entries owned by
// others). Then path needs no rule: a system binary such as /usr/bin/git
// would otherwise turn /usr/bin, with its thousand entries, into a
// folder listed entry by entry.
func dacGuards(path string) bool {
	uid := os.Geteuid()
	if uid == 0 || !filepath.IsAbs(path) {
		return false
	}
	if real, err := filepath.EvalSymlinks(path); err != nil || (real != path && !dacWalk(real, uid)) {
		return false
	}
	return dacWalk(path, uid)
}

// dacWalk is dacGuards' check of path and every folder above it, as
// named (a symlink's own mode bits mean nothing; its owner does).
func dacWalk(path string, uid int) bool {
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil || int(st.Uid) == uid {
			return false
		}
		mode := uint32(st.Mode)
		if mode&syscall.S_IFMT == syscall.S_IFLNK {
			mode &^= 0o777
		}
		sticky := mode&syscall.S_IFMT == syscall.S_IFDIR && mode&syscall.S_ISVTX != 0 && st.Uid == 0
		if mode&0o022 != 0 && !sticky {
			return false
		}
		if p == "/" {
			return true
		}
	}
}

// symlinksOn lists the symlinks the kernel follows on the way to the
// absolute path, as it walks it: each component in turn, a link's target
// walked in its own right (depth bounds a loop, as the kernel's 40 do).
func symlinksOn(path string, depth int) []string {
	if depth > 40 || !filepath.IsAbs(path) {
		return nil
	}
	var links []string
	cur := "/"
	for _, comp := range strings.Split(path, "/") {
		switch comp {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, comp)
		info, err := os.Lstat(next)
		if err != nil {
			return links // the rest does not exist yet
		}
		if info.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		links = append(links, next)
		target, err := os.Readlink(next)
		if err != nil {
			return links
		}
		if !filepath.IsAbs(target) {
			target = cur + "/" + target
		}
		links = append(links, symlinksOn(target, depth+1)...)
		real, err := filepath.EvalSymlinks(next)
		if err != nil {
			return links
		}
		cur = real
	}
	return links
}

// forms are the names the kernel may reach path by: its folder's symlinks
// resolved (where the path itself does not exist yet), and, when it
// exists, the path wholly resolved.
func forms(path string) []string {
	out := []string{Locate(path)}
	if real, err := filepath.EvalSymlinks(path); err == nil && real != out[0] {
		out = append(out, real)
	}
	return out
}

// Locate cleans the absolute path p after resolving the symlinks of its
// folder, as the kernel would walk it: the deepest existing ancestor is
// resolved and the rest, which cannot hold symlinks yet, is joined to it and
// cleaned (so "x/new/../config.yaml" still lands on config.yaml). The last
// element itself is left unresolved. The per-call path check (toolset) and
// the sandbox's rules use it alike, so both name a file the same way.
func Locate(p string) string {
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

// A Confiner hands out the Sandbox for a protected set, the same one while
// the set stays the same, so the rules a Sandbox keeps outlive reloads and
// grants that change nothing they were built from. One serves a server's
// whole life; a nil *Confiner confines nothing. Safe for concurrent use.
type Confiner struct {
	support Support

	mu      sync.Mutex
	last    *Sandbox
	lastKey any
}

// NewConfiner returns a Confiner whose sandboxes confine with sup; when sup
// is not OK, every start they are asked for fails with its reason.
func NewConfiner(sup Support) *Confiner { return &Confiner{support: sup} }

// Support is what the Confiner's sandboxes confine with.
func (c *Confiner) Support() Support {
	if c == nil {
		return Support{}
	}
	return c.support
}

// ForKey is For for the protected set protected computes, which it does
// not call while key (compared with ==) is the one of the last call: the
// snapshots a grant change builds from one load share its set without
// working it out again.
func (c *Confiner) ForKey(key any, protected func() Protected) *Sandbox {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	if key != nil && key == c.lastKey && c.last != nil {
		defer c.mu.Unlock()
		return c.last
	}
	c.mu.Unlock()
	sb := c.For(protected())
	c.mu.Lock()
	c.lastKey = key
	c.mu.Unlock()
	return sb
}

// For returns the Sandbox keeping started processes away from p.
func (c *Confiner) For(p Protected) *Sandbox {
	if c == nil {
		return nil
	}
	sb := NewSandbox(p, c.support)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last != nil && slices.Equal(c.last.protected.Hidden, sb.protected.Hidden) &&
		slices.Equal(c.last.protected.ReadOnly, sb.protected.ReadOnly) {
		return c.last
	}
	if c.last != nil {
		c.last.Close() // starts under way keep their rules until done
	}
	c.last, c.lastKey = sb, nil // the key named the set that went
	return sb
}
