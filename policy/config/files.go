package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"syscall"

	"github.com/wraptool/wraptool/policy/config/internal/safefile"
)

// Size limits for the files a load reads. Each is far above what a real file
// needs; a larger one is a mistake (or an attack) that must not cost memory.
const (
	maxConfigBytes = 4 << 20
	maxEnvBytes    = 1 << 20
	maxTokenBytes  = 64 << 10
)

// files reads each file one load needs exactly once and remembers its bytes:
// validation, the env merge and the token step all see the same bytes, and
// the load's hash covers precisely what was read. A load owns its files; it
// is not safe for concurrent use.
type files struct {
	read map[string]fileRead
}

type fileRead struct {
	data []byte
	err  error
}

func newFiles() *files { return &files{read: map[string]fileRead{}} }

// clone copies f's reads into a new set (a nil f gives an empty one), so a
// second parse of a loaded config reads nothing from disk again.
func (f *files) clone() *files {
	out := newFiles()
	if f != nil {
		for p, r := range f.read {
			out.read[p] = r
		}
	}
	return out
}

// fileSet is the config's files, made on first use for a Config built by
// hand rather than parsed.
func (c *Config) fileSet() *files {
	if c.files == nil {
		c.files = newFiles()
	}
	return c.files
}

// get returns path's bytes, reading it on first use. It reads only a
// regular file of at most limit bytes, opened without blocking: a FIFO or a
// device named where a file belongs would otherwise stall a reload (and
// with it the server's shutdown) or fill memory. Errors name the path; a
// missing file wraps fs.ErrNotExist.
func (f *files) get(path string, limit int64) ([]byte, error) {
	if r, ok := f.read[path]; ok {
		return r.data, r.err
	}
	data, err := readRegular(path, limit)
	f.read[path] = fileRead{data, err}
	return data, err
}

// put records bytes read elsewhere (the config itself, read before parsing).
func (f *files) put(path string, data []byte) {
	f.read[path] = fileRead{data: data}
}

// hash identifies everything the load read but the except paths: each path
// with its bytes, or with the fact that it could not be read. Two loads with
// equal hashes saw the same files.
func (f *files) hash(except ...string) string {
	paths := make([]string, 0, len(f.read))
	for p := range f.read {
		if !slices.Contains(except, p) {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	h := sha256.New()
	for _, p := range paths {
		r := f.read[p]
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(r.data))
		h.Write(r.data)
		if r.err != nil {
			fmt.Fprintf(h, "\x00error: %v", r.err)
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// fileError is a file a load could not use: "path: problem". It unwraps to
// the cause, so a missing file matches fs.ErrNotExist.
type fileError struct {
	Path string
	Err  error
}

func (e *fileError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *fileError) Unwrap() error { return e.Err }

// readRegular reads a regular file of at most limit bytes.
func readRegular(path string, limit int64) ([]byte, error) {
	fail := func(err error) ([]byte, error) {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &fileError{path, err}
	}
	fd, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fail(err)
	}
	defer fd.Close()
	info, err := fd.Stat()
	switch {
	case err != nil:
		return fail(err)
	case info.IsDir():
		return fail(errors.New("is a directory"))
	case !info.Mode().IsRegular():
		return fail(fmt.Errorf("is not a regular file but %s", safefile.DescribeMode(info.Mode())))
	case info.Size() > limit:
		return fail(fmt.Errorf("is %d bytes; at most %d are read", info.Size(), limit))
	}
	data, err := readAll(io.LimitReader(fd, limit+1), info.Size())
	if err != nil {
		return fail(err)
	}
	if int64(len(data)) > limit {
		return fail(fmt.Errorf("grew past %d bytes while being read", limit))
	}
	return data, nil
}

// readAll is io.ReadAll starting from a buffer of the size Stat gave (plus
// one byte, to see EOF without growing): growing from 512 bytes, io.ReadAll
// allocated 5 MB to read a 2.5 MB config.
func readAll(r io.Reader, size int64) ([]byte, error) {
	b := make([]byte, 0, size+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grew while being read
		}
	}
}
