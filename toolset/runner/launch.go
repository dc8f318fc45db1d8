package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"unicode"

	"golang.org/x/sys/unix"

	"github.com/wraptool/wraptool/toolset/runner/launch"
)

// maxLaunchStatus bounds what the parent reads of a failed launcher's
// report; the launcher writes one short line.
const maxLaunchStatus = 1024

// selfPath is wraptool's own executable, resolved once: the launcher every
// start through it runs. A memo of a fact about the process, never
// changed once read.
var selfPath = sync.OnceValues(os.Executable)

// launcherFor reports whether a start confined by sb goes through the
// launcher: as sb's Support says, and for no Sandbox, as the platform
// does by default (enterdir_*.go).
func launcherFor(sb *Sandbox) bool {
	if sb == nil {
		return launchByDefault
	}
	return sb.support.Launcher
}

// startLaunched starts cmd through the launcher: it becomes wraptool's own
// executable under launch.Marker, inheriting the status pipe, the checked
// working directory (cmd.ExtraFiles[0], put there by Run, when there is
// one) and ruleset (a Landlock ruleset descriptor; -1 for none), and the
// launcher execs cmd's program (behind prefix, a confining command such as
// sandbox-exec's, when not empty) in the same process. It returns once the
// target was exec'd; a launcher that failed before (the directory, the
// confinement, the exec itself) has been reaped and its reason is the
// error, as a failed direct start's is.
func startLaunched(cmd *exec.Cmd, ruleset int, prefix []string) error {
	if cmd.Err != nil || cmd.Process != nil {
		return cmd.Start() // reports the lookup failure, or the second start
	}
	var dir *os.File
	switch len(cmd.ExtraFiles) {
	case 0:
	case 1:
		dir = cmd.ExtraFiles[0]
	default:
		return errors.New("launcher: only the working directory may be inherited")
	}
	if !strings.Contains(cmd.Path, "/") {
		return fmt.Errorf("launcher: program %q is not a path", cmd.Path)
	}
	spec := launch.Spec{Path: cmd.Path, Argv: cmd.Args}
	if len(spec.Argv) == 0 {
		spec.Argv = []string{cmd.Path}
	}
	if len(prefix) > 0 {
		spec.Path = prefix[0]
		spec.Argv = append(append(prefix[:len(prefix):len(prefix)], cmd.Path), spec.Argv[1:]...)
		cmd.Env = withoutDyld(cmd.Env)
	}
	self, err := selfPath()
	if err != nil {
		return fmt.Errorf("launcher: locate wraptool's executable: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("launcher: status pipe: %w", err)
	}
	defer r.Close()
	files := []*os.File{w}
	if dir != nil {
		files = append(files, dir)
		spec.Dir = true
	}
	if ruleset >= 0 {
		// A copy the launcher inherits: the Sandbox may close its own
		// once this start releases it.
		fd, err := dupCloexec(ruleset)
		if err != nil {
			w.Close()
			return fmt.Errorf("launcher: pass the ruleset: %w", err)
		}
		rs := os.NewFile(uintptr(fd), "landlock-ruleset")
		defer rs.Close()
		files = append(files, rs)
		spec.Ruleset = true
	}
	cmd.Path, cmd.Args, cmd.ExtraFiles = self, spec.Args(), files
	if dir != nil {
		cmd.Dir = "" // the launcher enters the handle itself
	}
	err = cmd.Start()
	w.Close() // the launcher holds the only write end now
	if err != nil {
		return err
	}
	// End of file: the launcher's exec closed its end. Bytes: it failed.
	// A launcher that hangs is killed with cmd's context, which ends this
	// read too.
	msg, _ := io.ReadAll(io.LimitReader(r, maxLaunchStatus))
	if len(msg) == 0 {
		return nil
	}
	cmd.Wait() // the launcher exits at once; reap it
	return errors.New("launcher: " + printable(msg))
}

// printable keeps a launcher's report one line of valid text, whatever
// bytes it holds.
func printable(b []byte) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return '?'
	}, strings.ToValidUTF8(string(b), "?"))
}

// dupCloexec duplicates fd, close-on-exec, above the standard three.
func dupCloexec(fd int) (int, error) {
	return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
}

// withoutDyld drops macOS's dynamic loader variables (DYLD_INSERT_LIBRARIES,
// DYLD_LIBRARY_PATH, …) from env, for a launch behind a confining prefix.
// The launcher runs before the confinement does, and macOS's loader would
// honour them in it (wraptool has no hardened runtime): a library a
// confined child planted where such a variable points would run
// unconfined, beside the token. The program never got them anyway: the
// system drops them when it runs /usr/bin/sandbox-exec, a protected
// system binary.
func withoutDyld(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "DYLD_") {
			out = append(out, kv)
		}
	}
	return out
}
