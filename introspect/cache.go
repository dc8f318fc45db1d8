package introspect

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/wraptool/wraptool/introspect/helptext"
)

// cacheVersion is part of every cache key: bump it when the entry format or
// what helptext makes of a help text changes, so old entries simply miss.
const cacheVersion = 1

// maxEntrySize bounds a cache file read: an entry holds one parsed help of
// at most two capped streams, far below this.
const maxEntrySize = 8 << 20

// binKey identifies one build of a binary: its absolute path, size and
// modification time. An upgrade changes the size or the time, so its helps
// miss and are fetched again.
type binKey struct {
	path  string
	size  int64
	mtime int64 // nanoseconds since the epoch
}

// statBinary keys the binary at path, following symlinks (an upgrade that
// repoints /usr/bin/tool changes the size or time of what it points to).
func statBinary(path string) (binKey, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return binKey{}, err
	}
	info, err := os.Stat(abs)
	if err != nil {
		return binKey{}, err
	}
	if !info.Mode().IsRegular() {
		return binKey{}, fmt.Errorf("%s is not a regular file", abs)
	}
	return binKey{path: abs, size: info.Size(), mtime: info.ModTime().UnixNano()}, nil
}

// entryKey is what an entry's file name hashes; it is stored in the entry as
// well, so a read checks it really got the entry it asked for.
type entryKey struct {
	Version    int      `json:"version"`
	Binary     string   `json:"binary"`
	Size       int64    `json:"size"`
	ModTimeNs  int64    `json:"mtime_ns"`
	Subcommand []string `json:"subcommand"`
}

func newEntryKey(b binKey, sub []string) entryKey {
	if sub == nil {
		sub = []string{} // one spelling for the root, in the hash and the file
	}
	return entryKey{Version: cacheVersion, Binary: b.path, Size: b.size, ModTimeNs: b.mtime, Subcommand: sub}
}

// fileName is the entry's file name: the hex SHA-256 of the key's JSON.
func (k entryKey) fileName() string {
	b, _ := json.Marshal(k) // plain strings and numbers: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]) + ".json"
}

// cacheEntry is one cache file: the key, when it was fetched, and the help.
type cacheEntry struct {
	entryKey
	FetchedAt time.Time     `json:"fetched_at"`
	Help      helptext.Help `json:"help"`
}

// fresh reports whether something fetched at fetched is still good at now
// under ttl. A time in the future (a clock set back) is not trusted.
func fresh(fetched, now time.Time, ttl time.Duration) bool {
	age := now.Sub(fetched)
	return age >= 0 && age < ttl
}

// diskCache is the folder holding the entries; a nil *diskCache caches
// nothing.
type diskCache struct {
	dir string
}

// errUnsafe marks a cache file or folder that someone other than its owner
// may write: a cached help decides which flags take values, so it is not
// used.
var errUnsafe = errors.New("writable by group or others, or not owned by this user or root")

// openCache readies dir for use. With write set the folder is created (mode
// 0700) and tightened to 0700 when looser; otherwise it is only checked, so
// a cache-only caller touches nothing. A folder that does not exist yet
// gives a cache that misses.
func openCache(dir string, write bool) (*diskCache, error) {
	if dir == "" {
		return nil, nil
	}
	if write {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create cache folder: %w", err)
		}
	}
	info, err := os.Lstat(dir)
	if err != nil {
		if !write && errors.Is(err, fs.ErrNotExist) {
			return &diskCache{dir: dir}, nil
		}
		return nil, fmt.Errorf("cache folder: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("cache folder %s is not a folder", dir)
	}
	if !ownedByUs(info) {
		return nil, fmt.Errorf("cache folder %s: %w", dir, errUnsafe)
	}
	if info.Mode().Perm()&0o077 != 0 {
		if !write {
			if info.Mode().Perm()&0o022 != 0 {
				return nil, fmt.Errorf("cache folder %s: %w", dir, errUnsafe)
			}
		} else if err := os.Chmod(dir, 0o700); err != nil {
			return nil, fmt.Errorf("cache folder: %w", err)
		}
	}
	return &diskCache{dir: dir}, nil
}

// ownedByUs reports whether info's owner is this user or root.
func ownedByUs(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && (st.Uid == 0 || int(st.Uid) == os.Geteuid())
}

// path is where k's entry lives.
func (c *diskCache) path(k entryKey) string { return filepath.Join(c.dir, k.fileName()) }

// read returns the entry for k. A missing entry is fs.ErrNotExist; an
// unreadable, unsafe, corrupt or mismatched one is another error, and the
// caller treats both as a miss (a later write replaces the file). Nothing
// but a parsed help is ever written, and a parsed help lists something, so
// an entry whose help lists nothing (a blanked or forged file) is not one
// wraptool wrote: it too is a miss, never a known help with no flags. Only
// a regular file is read (a symlink, a folder or a FIFO in its place is a
// miss), and at most maxEntrySize bytes of it.
func (c *diskCache) read(k entryKey) (cacheEntry, error) {
	if c == nil {
		return cacheEntry{}, fs.ErrNotExist
	}
	f, err := os.OpenFile(c.path(k), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return cacheEntry{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return cacheEntry{}, err
	}
	if !info.Mode().IsRegular() {
		return cacheEntry{}, errors.New("not a regular file")
	}
	if !ownedByUs(info) || info.Mode().Perm()&0o022 != 0 {
		return cacheEntry{}, errUnsafe
	}
	data, err := io.ReadAll(io.LimitReader(f, maxEntrySize+1))
	if err != nil {
		return cacheEntry{}, err
	}
	if len(data) > maxEntrySize {
		return cacheEntry{}, errors.New("entry too large")
	}
	var e cacheEntry
	if err := json.Unmarshal(data, &e); err != nil {
		return cacheEntry{}, fmt.Errorf("corrupt entry: %w", err)
	}
	if e.Subcommand == nil {
		e.Subcommand = []string{}
	}
	if !sameKey(e.entryKey, k) || e.FetchedAt.IsZero() {
		return cacheEntry{}, errors.New("entry does not match its key")
	}
	if e.Help.Empty() {
		return cacheEntry{}, errors.New("entry holds no parsed help (no flags, no subcommands)")
	}
	return e, nil
}

func sameKey(a, b entryKey) bool {
	if a.Version != b.Version || a.Binary != b.Binary || a.Size != b.Size ||
		a.ModTimeNs != b.ModTimeNs || len(a.Subcommand) != len(b.Subcommand) {
		return false
	}
	for i := range a.Subcommand {
		if a.Subcommand[i] != b.Subcommand[i] {
			return false
		}
	}
	return true
}

// write stores e atomically: a temporary file in the same folder, written,
// made 0600, synced and renamed over the entry, then the folder synced, so a
// crash leaves the old entry or the new one, never half of one.
func (c *diskCache) write(e cacheEntry) error {
	if c == nil {
		return nil
	}
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode cache entry: %w", err)
	}
	path := c.path(e.entryKey)
	tmp, err := os.CreateTemp(c.dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("write cache entry: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write cache entry: %w", err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("write cache entry: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write cache entry: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write cache entry: %w", err)
	}
	if info, err := os.Lstat(path); err == nil && !info.Mode().IsRegular() {
		return fmt.Errorf("write cache entry: %s is not a regular file", path)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write cache entry: %w", err)
	}
	ok = true
	if d, err := os.Open(c.dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
