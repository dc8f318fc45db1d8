// Package safefile holds the file primitives that policy/config's loader
// (which creates a missing token file) and its editors (which create and
// replace the config) share, so that both create files one way: written in
// full under a temporary name, fsynced, then linked into place, the folder
// fsynced after. Nothing here keeps state; every function is safe for
// concurrent use.
package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// CreateExclusive writes data to path with mode 0600 unless path exists,
// and reports whether it did. A crash never leaves a partial file at path:
// the data is written under a temporary name and hard-linked into place,
// which fails when path exists, even when it was created concurrently.
func CreateExclusive(path string, data []byte) (created bool, err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Close(); err != nil {
		return false, err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		return false, err
	}
	return true, SyncDir(dir)
}

// SyncDir makes a new directory entry durable: without it, a power cut
// after a rename or link can lose the new name.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// DescribeMode names a file type that is not a regular file, for a refusal
// that says what stands where the config belongs: "a named pipe".
func DescribeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}
