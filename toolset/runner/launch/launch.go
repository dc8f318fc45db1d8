// Package launch is wraptool's launcher: wraptool re-executes itself under
// a fixed argv[0] (Marker), the launcher enters the checked working
// directory through the handle it inherits, applies the confinement it
// inherits, and execs the target in place, so the pid, the process group
// and the parent's tracking stay those of the process the parent started.
// This is how a child enters a checked directory where /proc/self/fd does
// not exist (macOS), and Linux tests run the same code confined.
//
// The protocol is private to one wraptool binary (both ends are built from
// this package), versioned, and parsed strictly all the same: the argv and
// descriptors the launcher reads come from its parent, but a process that
// runs wraptool with the marker must gain nothing from it. The launcher
// never runs a shell and never searches PATH.
//
// It is a package of its own, importing nothing of wraptool's, so every
// test main (toolsettest, which runner's own tests import) can dispatch it
// without an import cycle.
package launch

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// Marker is the launcher's argv[0]. A wraptool started under any other
// argv[0] is not the launcher.
const Marker = "wraptool-launch"

// version is the protocol's first argument; a launcher from another build
// of the protocol refuses to guess.
const version = "v1"

// StatusFD is the status pipe's write end, always the first inherited
// descriptor: the launcher writes why it failed there, and the pipe's
// close-on-exec end tells the parent the target was exec'd.
const StatusFD = 3

// ExitFailed is the launcher's exit status when it failed before the
// exec; the parent reads the status pipe, not this, to tell why.
const ExitFailed = 126

// maxOptions bounds the options before "--": status, dir, landlock.
const maxOptions = 3

// Spec is one launch: what the launcher inherits and what it execs.
// Descriptors follow StatusFD in a fixed order: the working directory,
// when Dir, then the Landlock ruleset, when Ruleset.
type Spec struct {
	// Dir: a directory handle is inherited; the launcher fchdir()s to it.
	Dir bool
	// Ruleset: a Landlock ruleset is inherited; the launcher restricts
	// itself with it before the exec (Linux only).
	Ruleset bool
	// Path is the program to exec: an absolute path, or one relative to
	// the working directory entered; never a name looked up in PATH.
	Path string
	// Argv is the target's argv, argv[0] included.
	Argv []string
}

// DirFD is the directory handle's descriptor number in the launcher.
func (s Spec) DirFD() int { return StatusFD + 1 }

// RulesetFD is the ruleset's descriptor number in the launcher.
func (s Spec) RulesetFD() int {
	if s.Dir {
		return StatusFD + 2
	}
	return StatusFD + 1
}

// Args is the launcher's argv for s, Marker first.
func (s Spec) Args() []string {
	args := []string{Marker, version, "status=" + strconv.Itoa(StatusFD)}
	if s.Dir {
		args = append(args, "dir="+strconv.Itoa(s.DirFD()))
	}
	if s.Ruleset {
		args = append(args, "landlock="+strconv.Itoa(s.RulesetFD()))
	}
	args = append(args, "--", s.Path)
	return append(args, s.Argv...)
}

// Parse reads a launcher argv (Marker first) back into a Spec, strictly:
// the version, the options in their fixed order with exactly the
// descriptor numbers that order gives, "--", a program path holding a
// slash, and a non-empty argv. Anything else is an error.
func Parse(args []string) (Spec, error) {
	var s Spec
	if len(args) < 2 || args[0] != Marker {
		return s, errors.New("not a launcher command line")
	}
	if args[1] != version {
		return s, fmt.Errorf("protocol %q, want %q", args[1], version)
	}
	rest := args[2:]
	if len(rest) == 0 || rest[0] != "status="+strconv.Itoa(StatusFD) {
		return s, errors.New("the status pipe option must come first, on descriptor " + strconv.Itoa(StatusFD))
	}
	rest = rest[1:]
	for n := 1; len(rest) > 0 && rest[0] != "--"; n++ {
		if n >= maxOptions {
			return s, errors.New("too many options")
		}
		name, value, ok := strings.Cut(rest[0], "=")
		switch {
		case !ok:
			return s, fmt.Errorf("option %q has no value", rest[0])
		case name == "dir" && !s.Dir && !s.Ruleset:
			s.Dir = true
			if value != strconv.Itoa(s.DirFD()) {
				return s, fmt.Errorf("dir on descriptor %q, want %d", value, s.DirFD())
			}
		case name == "landlock" && !s.Ruleset:
			s.Ruleset = true
			if value != strconv.Itoa(s.RulesetFD()) {
				return s, fmt.Errorf("landlock on descriptor %q, want %d", value, s.RulesetFD())
			}
		default:
			return s, fmt.Errorf("unexpected option %q", rest[0])
		}
		rest = rest[1:]
	}
	if len(rest) == 0 {
		return s, errors.New(`no "--" before the program`)
	}
	rest = rest[1:]
	if len(rest) < 2 {
		return s, errors.New("no program and argv after \"--\"")
	}
	s.Path, s.Argv = rest[0], rest[1:]
	if !strings.Contains(s.Path, "/") {
		return s, fmt.Errorf("program %q is not a path (the launcher never searches PATH)", s.Path)
	}
	return s, nil
}

// Main is the launcher's entry point; every main that may be started as
// the launcher (wraptool's, and the test mains that start children) calls
// it first thing. It returns at once unless argv[0] is Marker; then it
// never returns: it execs the target, or reports why it could not (on the
// status pipe when there is one, else on stderr) and exits ExitFailed.
func Main() {
	if len(os.Args) == 0 || os.Args[0] != Marker {
		return
	}
	// The confinement is the thread's, and the exec must come from it.
	runtime.LockOSThread()
	err := launch(os.Args)
	report(err)
	os.Exit(ExitFailed)
}

// launch returns only when it failed.
func launch(args []string) error {
	s, err := Parse(args)
	if err != nil {
		return fmt.Errorf("command line: %w", err)
	}
	if !isPipe(StatusFD) {
		return errors.New("descriptor " + strconv.Itoa(StatusFD) + " is not the status pipe")
	}
	if s.Ruleset {
		if err := restrict(s.RulesetFD()); err != nil {
			return fmt.Errorf("confine: %w", err)
		}
		syscall.Close(s.RulesetFD())
	}
	if s.Dir {
		if err := syscall.Fchdir(s.DirFD()); err != nil {
			return fmt.Errorf("enter the working directory: %w", err)
		}
		syscall.Close(s.DirFD())
	}
	syscall.CloseOnExec(StatusFD)
	// The environment as the launcher got it: nothing added or removed.
	err = syscall.Exec(s.Path, s.Argv, os.Environ())
	return fmt.Errorf("exec %s: %w", s.Path, err)
}

// report writes err where the parent reads it.
func report(err error) {
	msg := []byte(err.Error())
	if isPipe(StatusFD) {
		syscall.Write(StatusFD, msg)
		return
	}
	os.Stderr.Write(append([]byte("wraptool launcher: "), append(msg, '\n')...))
}

// isPipe reports whether fd is open and a pipe.
func isPipe(fd int) bool {
	var st syscall.Stat_t
	return syscall.Fstat(fd, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFIFO
}
