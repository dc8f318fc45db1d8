package actors

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/toolset/runner"
)

// upstreamProc is one run of an upstream: its process, in its own process
// group, the pipes wraptool holds, and once initialized its MCP session.
type upstreamProc struct {
	pid    int
	stdin  *os.File // wraptool's write end of the child's stdin
	stdout *os.File // wraptool's read end of the child's stdout
	// exited is closed once the process is reaped; status is set before.
	exited chan struct{}
	status error
	// closed is closed when the session's connection ends.
	closed chan struct{}
	// listChanged is rung by the SDK when the upstream's tools change.
	listChanged messages.Doorbell
	session     *mcp.ClientSession
	// gone is set, under mu, once the process has exited and before it is
	// reaped; signal holds mu across its check and its kill, so no signal
	// reaches a group id the reaped pid could have passed to another
	// process.
	mu   sync.Mutex
	gone bool
}

// signal sends sig to the upstream's process group while it has not
// exited.
func (u *upstreamProc) signal(sig syscall.Signal) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.gone {
		syscall.Kill(-u.pid, sig)
	}
}

// markGone records that the process has exited (it may not be reaped yet).
func (u *upstreamProc) markGone() {
	u.mu.Lock()
	u.gone = true
	u.mu.Unlock()
}

// spawn starts the upstream in its own process group, with the pipes made
// here rather than by os/exec (whose Wait would close them under the SDK's
// reader), tracked by the reaper so a sweep never takes it for a stray.
// Its stderr goes to the log, line by line.
func spawn(path string, args []string, dir string, env []string, reaper *runner.Reaper, sandbox *runner.Sandbox, log *slog.Logger) (*upstreamProc, error) {
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		if r, w, err = os.Pipe(); err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Env, cmd.Dir = env, dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	done, err := reaper.Start(cmd, sandbox)
	// The child holds its ends now (or never will).
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, err
	}
	up := &upstreamProc{pid: cmd.Process.Pid, stdin: inW, stdout: outR, exited: make(chan struct{}),
		closed: make(chan struct{}), listChanged: make(messages.Doorbell, 1)}
	go func() {
		// Whatever the upstream left in its group ends with it, killed
		// while its exited process still holds the group id.
		if !reaper.EndGroup(up.pid, up.markGone) {
			up.status = cmd.Wait()
			up.markGone()
			// The group id cannot have been reused while a member lived.
			syscall.Kill(-up.pid, syscall.SIGKILL)
		} else {
			up.status = cmd.Wait()
		}
		done()
		close(up.exited)
	}()
	go logStderr(errR, log)
	return up, nil
}

// attach records the initialized session and watches its end.
func (u *upstreamProc) attach(s *mcp.ClientSession) {
	u.session = s
	go func() {
		s.Wait()
		close(u.closed)
	}()
}

// exitedEarly reports whether the process has already exited, giving it a
// moment to be reaped: a start that failed on a closed pipe usually means
// the process just died, and its status says why better than the pipe.
func (u *upstreamProc) exitedEarly() bool {
	select {
	case <-u.exited:
		return true
	case <-time.After(100 * time.Millisecond):
		return false
	}
}

// exitStatus describes how the process ended; call it once exited is closed.
func (u *upstreamProc) exitStatus() string {
	var ee *exec.ExitError
	switch {
	case u.status == nil:
		return "exit status 0"
	case errors.As(u.status, &ee):
		return ee.ProcessState.String()
	}
	return u.status.Error()
}

// stop ends the upstream: the end of its input and SIGTERM to its group,
// then SIGKILL to the group if it has not exited within grace. It returns
// once the process is reaped and the session closed.
func (u *upstreamProc) stop(grace time.Duration) {
	u.stdin.Close()
	select {
	case <-u.exited:
	default:
		u.signal(syscall.SIGTERM)
		// A stopped (SIGSTOP) upstream acts on SIGTERM only once continued.
		u.signal(syscall.SIGCONT)
		select {
		case <-u.exited:
		case <-time.After(grace):
			u.signal(syscall.SIGKILL)
			<-u.exited
		}
	}
	if u.session != nil {
		u.session.Close()
	}
	u.stdout.Close()
}

// logStderr logs each line the upstream writes to stderr, with its server's
// name (log carries it), each cut to maxStderrLine bytes and at most
// stderrLinesPerSecond a second; lines beyond are counted, and the count
// logged.
func logStderr(r io.ReadCloser, log *slog.Logger) {
	defer r.Close()
	// One byte more than a line may have: a line of exactly maxStderrLine
	// bytes then fits with its newline, and only longer ones are cut.
	br := bufio.NewReaderSize(r, maxStderrLine+1)
	window, count, dropped := time.Now(), 0, 0
	flush := func() {
		if dropped > 0 {
			log.Warn("upstream stderr lines dropped (more than the log takes per second)", "dropped", dropped)
			dropped = 0
		}
	}
	defer flush()
	skipping := false // inside the rest of a line already cut
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 && !skipping {
			if now := time.Now(); now.Sub(window) >= time.Second {
				flush()
				window, count = now, 0
			}
			if count++; count > stderrLinesPerSecond {
				dropped++
			} else {
				text := strings.TrimRight(string(line), "\r\n")
				if errors.Is(err, bufio.ErrBufferFull) {
					log.Info("upstream stderr", "line", text[:maxStderrLine], "truncated", true)
				} else {
					log.Info("upstream stderr", "line", text)
				}
			}
		}
		skipping = errors.Is(err, bufio.ErrBufferFull)
		if err != nil && !skipping {
			return
		}
	}
}
