package actors

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"
)

// listenUnix binds a socket with mode 0600. A stale socket left by a dead
// process is replaced; a live one is refused. The socket is created inside a
// private (0700) temporary folder, restricted, then renamed into place, so
// nobody can connect while its mode is still the umask's.
func listenUnix(path string) (net.Listener, error) {
	if info, err := os.Lstat(path); err == nil {
		if info.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, ErrSocketInUse
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	tmpDir, err := os.MkdirTemp(filepath.Dir(path), ".wraptool-sock-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmpDir)
	tmp := filepath.Join(tmpDir, "s")
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	err = os.Chmod(tmp, 0o600)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}
