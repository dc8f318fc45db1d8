// Package atomicfile replaces a whole file so that a crash, or a reader at
// any moment, sees the old bytes or the new ones, never part of either: a
// temporary file in the same folder (named "."+name+".tmp…", the pattern
// the confinement's protected set covers), written, given its mode,
// synced, renamed over the file, and the folder synced. The files wraptool
// rewrites whole outside the config (the stored sessions, a service unit)
// go through it.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Replace writes data to path with mode, atomically. The file is renamed
// into place, so a symlink at path is replaced, never followed: callers
// that must not replace something foreign check path first.
func Replace(path string, data []byte, mode os.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	// The mode first: CreateTemp makes it 0600, and a wider mode is given
	// only once the file is whole; a narrower one is in place before any
	// byte is written.
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil // renamed: the new file is in place, maybe not yet durable
	}
	defer d.Close()
	d.Sync()
	return nil
}
