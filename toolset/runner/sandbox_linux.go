//go:build linux

package runner

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/wraptool/wraptool/toolset/runner/launch"
)

// Landlock in wraptool.
//
// Landlock grants access to file hierarchies; it has no "deny this
// subtree". So the rules are built from the other side: "/" and every
// folder above a protected item get only READ_DIR (listing, which flows
// down to every folder below, protected ones included: names are not
// secrets), and every other entry of those folders gets every right the
// kernel handles, a write-protected executable only READ_FILE and
// EXECUTE. A protected item gets no rule, so nothing below a folder above
// it reaches it, whatever name, link or /proc path leads there: the kernel
// checks the real hierarchy at each access. Entries that are symlinks get
// no rule (a link is followed to where it points, which is checked in its
// own right), nor do entries that are the same file as a protected item or
// a folder above one (a hard link, a bind mount).
//
// The restriction reaches only the child. The goroutine starting it locks
// itself to its OS thread, sets no_new_privs and restricts that thread
// alone (landlock_restrict_self without TSYNC is per thread), then forks
// from it, so the child inherits the restriction; the goroutine then ends
// still locked, which makes the Go runtime end the thread instead of
// reusing it. A locked thread never creates other threads (the runtime
// asks its template thread instead), so no restricted thread serves any
// other goroutine. docs/security.md's confinement section says why this was
// chosen over re-executing wraptool as a launcher.

// fileRights are the rights Landlock accepts on a file that is not a
// folder.
const fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
	unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV

// readExec is all a write-protected executable gets.
const readExec = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_EXECUTE

// freshness is how recently a listed folder may have changed for its rules
// to be kept: a change within the file system's clock tick of the build
// could leave the folder's times as they were.
const freshness = 25 * time.Millisecond

// Probe reports whether this kernel can confine, and with which Landlock
// ABI. getenv reads TestNoLandlockEnv ("enosys" or "eopnotsupp" simulate
// a kernel without Landlock, or with Landlock disabled); nil means none.
func Probe(getenv func(string) string) Support {
	errno := simulatedErrno(getenv)
	if errno == 0 {
		abi, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
		switch {
		case e == 0 && int(abi) >= minABI:
			return Support{Mechanism: "landlock", ABI: int(abi)}
		case e == 0:
			// Before ABI 3 Landlock has no truncate hook (truncate(2) by
			// path is always allowed), and before ABI 2 every rename or
			// link across folders fails.
			return Support{Err: fmt.Errorf("%w: this kernel's Landlock (ABI %d) cannot refuse truncating a file (Linux 6.2 or later, Landlock ABI %d, is needed)",
				ErrNoConfinement, abi, minABI)}
		}
		errno = e
	}
	var why string
	switch errno {
	case unix.ENOSYS:
		why = "this kernel has no Landlock (Linux 5.13 or later, built with CONFIG_SECURITY_LANDLOCK, is needed)"
	case unix.EOPNOTSUPP:
		why = "Landlock is disabled in this kernel (add landlock to the lsm= boot parameter)"
	default:
		why = "Landlock cannot be used: " + errno.Error()
	}
	return Support{Err: fmt.Errorf("%w: %s", ErrNoConfinement, why)}
}

// simulatedErrno is the error TestNoLandlockEnv asks Probe to report; 0
// when it asks for none.
func simulatedErrno(getenv func(string) string) unix.Errno {
	if getenv == nil {
		return 0
	}
	switch getenv(TestNoLandlockEnv) {
	case "":
		return 0
	case "eopnotsupp":
		return unix.EOPNOTSUPP
	}
	return unix.ENOSYS
}

// minABI is the oldest Landlock ABI that can keep the protected set whole.
const minABI = 3

// handled are the file-system rights and scopes the rules handle at abi:
// every right the kernel knows, so none is left unrestricted, and signal
// scoping where it exists. Abstract unix sockets stay open: desktop
// notifications and X11 use them, and wraptool listens on none.
func handled(abi int) (fs, scoped uint64) {
	fs = 1<<13 - 1 // EXECUTE through MAKE_SYM
	if abi >= 2 {
		fs |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		fs |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		fs |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	if abi >= 9 {
		// Connecting to a unix socket by path: a unix listener's socket
		// is protected like the files.
		fs |= unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	}
	if abi >= 6 {
		scoped = unix.LANDLOCK_SCOPE_SIGNAL
	}
	return fs, scoped
}

// ruleset is one built Landlock ruleset and what it was built from.
type ruleset struct {
	fd     int
	refs   int // guarded by the Sandbox's mu
	keep   bool
	watch  []string
	timed  []bool
	stamps []stamp
}

// stamp is what one lstat says of a watched path.
type stamp struct {
	exists       bool
	dev, ino     uint64
	mode         uint32
	mtime, ctime unix.Timespec
}

// stampOf stamps path; timed adds its change times. A folder above a
// protected item is timed: its times change with its entries, which the
// rules are built from. A protected file or folder is not: its times
// change with every write (the audit log's with every call), which
// changes nothing the rules grant, so it is stamped by identity alone.
func stampOf(path string, timed bool) stamp {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return stamp{}
	}
	s := stamp{exists: true, dev: st.Dev, ino: st.Ino, mode: st.Mode}
	if timed {
		s.mtime, s.ctime = st.Mtim, st.Ctim
	}
	return s
}

func stampAll(paths []string, timed []bool) []stamp {
	out := make([]stamp, len(paths))
	for i, p := range paths {
		out[i] = stampOf(p, timed[i])
	}
	return out
}

// valid reports whether every watched path is as it was when the rules
// were built.
func (rs *ruleset) valid() bool {
	if !rs.keep {
		return false
	}
	for i, p := range rs.watch {
		if stampOf(p, rs.timed[i]) != rs.stamps[i] {
			return false
		}
	}
	return true
}

func (rs *ruleset) close() { unix.Close(rs.fd) }

type devIno struct{ dev, ino uint64 }

func identity(path string) (devIno, bool) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return devIno{}, false
	}
	return devIno{st.Dev, st.Ino}, true
}

// buildRuleset builds the rules for pl.
func buildRuleset(pl *plan, sup Support) (*ruleset, error) {
	start := time.Now()
	fsRights, scoped := handled(sup.ABI)
	attr := unix.LandlockRulesetAttr{Handled_access_fs: fsRights, Scoped: scoped}
	// Up to the scopes: the quiet fields are for audit logging, unused
	// here, and a kernel before them refuses a longer struct only when
	// its tail is not zero.
	size := unsafe.Offsetof(attr.Quiet_access_fs)
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return nil, fmt.Errorf("create the Landlock ruleset: %w", e)
	}
	rs := &ruleset{fd: int(fd), watch: pl.watch, timed: pl.timed}
	// Stamped before the folders are listed: a change during the build
	// shows at the next start.
	rs.stamps = stampAll(pl.watch, pl.timed)

	skip, ro := map[devIno]bool{}, map[devIno]bool{}
	for path := range pl.hidden {
		if id, ok := identity(path); ok {
			skip[id] = true
		}
	}
	for path := range pl.above {
		if id, ok := identity(path); ok {
			skip[id] = true
		}
	}
	for path := range pl.readOnly {
		if id, ok := identity(path); ok && !skip[id] {
			ro[id] = true
		}
	}
	if err := rs.allowPath("/", unix.LANDLOCK_ACCESS_FS_READ_DIR); err != nil {
		rs.close()
		return nil, err
	}
	for _, path := range pl.runInside {
		var st unix.Stat_t
		if unix.Stat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			if err := rs.allowPath(path, readExec&fsRights); err != nil {
				rs.close()
				return nil, err
			}
		}
	}
	above := make([]string, 0, len(pl.above))
	for dir := range pl.above {
		above = append(above, dir)
	}
	slices.Sort(above)
	for _, dir := range above {
		if err := rs.allowEntries(dir, pl, skip, ro, fsRights); err != nil {
			rs.close()
			return nil, err
		}
	}
	rs.keep = true
	cutoff := start.Add(-freshness)
	for i, p := range rs.watch {
		st := rs.stamps[i]
		if pl.above[p] && st.exists && (tsTime(st.mtime).After(cutoff) || tsTime(st.ctime).After(cutoff)) {
			rs.keep = false
		}
	}
	return rs, nil
}

func tsTime(ts unix.Timespec) time.Time { return time.Unix(ts.Sec, ts.Nsec) }

// allowPath adds a rule granting rights on the hierarchy at path.
func (rs *ruleset) allowPath(path string, rights uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s for the Landlock rules: %w", path, err)
	}
	defer unix.Close(fd)
	return rs.allowFD(fd, path, rights)
}

func (rs *ruleset) allowFD(fd int, path string, rights uint64) error {
	attr := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(fd)}
	_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rs.fd), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if e != 0 {
		return fmt.Errorf("landlock rule for %s: %w", path, e)
	}
	return nil
}

// allowEntries adds a rule for every entry of the folder dir, which lies
// above a protected item, that is neither an item, a folder above one, a
// symlink, nor the same file as one of those.
func (rs *ruleset) allowEntries(dir string, pl *plan, skip, ro map[devIno]bool, fsRights uint64) error {
	var names []string
	if d, err := os.Open(dir); err == nil {
		// A folder that cannot be listed keeps its entries out of reach,
		// but for the executables listed below.
		names, _ = d.Readdirnames(-1)
		d.Close()
	}
	for path := range pl.readOnly {
		if filepath.Dir(path) == dir && !slices.Contains(names, filepath.Base(path)) {
			names = append(names, filepath.Base(path))
		}
	}
	for _, name := range names {
		path := filepath.Join(dir, name)
		if pl.above[path] || pl.hidden[path] || shadowed(name, pl.shadows[dir]) {
			continue
		}
		fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // gone, or out of this user's reach anyway
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			continue
		}
		id := devIno{st.Dev, st.Ino}
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		var rights uint64
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFLNK, skip[id]:
			unix.Close(fd)
			continue
		case pl.readOnly[path] || ro[id]:
			rights = readExec & fsRights
			if isDir {
				rights |= unix.LANDLOCK_ACCESS_FS_READ_DIR
			}
		case isDir:
			rights = fsRights
		default:
			rights = fsRights & fileRights
		}
		err = rs.allowFD(fd, path, rights)
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return nil
}

// start starts cmd from a thread restricted by the rules, so the child and
// all it starts inherit them and wraptool does not.
//
// Never from the process's main thread: the Go runtime does not end that
// one when a goroutine exits locked to it, it parks it for good, and the
// thread-group leader would keep the restriction (and share the child's
// Landlock domain, so scoping would not keep the child from it). A start
// that lands there lets go of the thread and tries again from a new
// goroutine; wraptool's main locks its goroutine to the main thread, so
// there it never happens.
//
// Through the launcher (viaLauncher) nothing in wraptool is restricted:
// the launcher inherits the ruleset and restricts its own thread before
// the exec, as macOS's launcher applies its confinement.
func (rs *ruleset) start(cmd *exec.Cmd, viaLauncher bool) error {
	if viaLauncher {
		return startLaunched(cmd, rs.fd, nil)
	}
	for {
		errc := make(chan error, 1)
		retry := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			if unix.Gettid() == unix.Getpid() {
				runtime.UnlockOSThread()
				close(retry)
				return
			}
			// Never unlocked: the thread carries the restriction and
			// ends with this goroutine.
			if err := launch.RestrictThread(rs.fd); err != nil {
				errc <- confineError(err)
				return
			}
			errc <- cmd.Start()
		}()
		select {
		case err := <-errc:
			return err
		case <-retry:
		}
	}
}

// NotDumpable makes this process not dumpable, as ssh-agent does: no
// other process of the same user (a confined child included) can read its
// memory, environment or open files through /proc or ptrace.
func NotDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl PR_SET_DUMPABLE", err)
	}
	return nil
}

// ScrubEnviron overwrites the environment block the kernel shows as
// /proc/PID/environ with zero bytes. Go keeps its own copy of the
// environment, so nothing in wraptool reads the block after start-up.
// Non-dumpable already keeps other processes of a non-root user out, but
// a root process passes that check, and Landlock's ptrace scoping does not
// cover environ on every kernel (it reads through a check that lets a
// confined root child in); a blank block leaves it nothing to read.
func ScrubEnviron() error {
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return err
	}
	start, end, err := envBounds(string(data))
	if err != nil {
		return err
	}
	if end <= start {
		return nil
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer mem.Close()
	_, err = mem.WriteAt(make([]byte, end-start), int64(start))
	return err
}

// envBounds reads env_start and env_end, the 50th and 51st fields of a
// /proc/PID/stat line, counted after the command name, which may hold
// spaces and parentheses.
func envBounds(stat string) (start, end uint64, err error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, errors.New("malformed /proc/self/stat")
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is the 3rd field (state); env_start is the 50th.
	if len(f) < 49 {
		return 0, 0, errors.New("/proc/self/stat has no environment bounds")
	}
	if start, err = strconv.ParseUint(f[47], 10, 64); err == nil {
		end, err = strconv.ParseUint(f[48], 10, 64)
	}
	return start, end, err
}
