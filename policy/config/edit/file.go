package edit

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/internal/safefile"
)

// lockWait bounds how long an apply waits for another apply's lock, as
// writers of the request log wait for theirs.
const lockWait = 5 * time.Second

// tempPrefix names an apply's temporary file beside the config:
// ".config.yaml.apply-123456". The leading dot keeps editors and listings
// quiet; the watcher reacts only to the config's own name.
func tempPrefix(file string) string { return "." + filepath.Base(file) + ".apply-" }

// editConfig is the one way a command edits the config in place (an
// apply, `config add`): under the config's lock it reads the file, has
// edit turn its bytes into the new text (nil: nothing to write), and
// replaces the file only if nobody changed it meanwhile; otherwise nothing
// is written and the error says to try again. beforeCommit, when set
// (tests), runs after the new file is written and before that last check.
func editConfig(path string, edit func(data []byte) ([]byte, error), beforeCommit func()) error {
	// A symlinked config is written through: the file replaced is the
	// link's target, in the target's folder. Renaming over the link itself
	// would turn it into a plain file and cut the operator's link (to a
	// dotfiles checkout, say) without a word; and the target's folder is
	// the one ReadFile has checked nobody else may write.
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("%s: cannot read config: %w", path, unwrapPath(err))
	}
	lk, err := lockConfig(path, target)
	if err != nil {
		return err
	}
	defer lk.f.Close() // releases the lock

	data, err := config.ReadFile(path)
	if err != nil {
		return err
	}
	if !lk.current(path) {
		return changedMeanwhile(path)
	}
	out, err := edit(data)
	if err != nil || out == nil {
		return err
	}
	if lk.locked {
		removeStale(target)
	}
	var refused error
	commit := func() error {
		if beforeCommit != nil {
			beforeCommit()
		}
		now, err := config.ReadFile(path)
		switch {
		case err != nil:
			refused = err
		case !bytes.Equal(now, data) || !lk.current(path):
			refused = changedMeanwhile(path)
		}
		return refused
	}
	if err := replaceFile(target, lk.info, out, commit); err != nil {
		if refused != nil {
			return refused
		}
		return fmt.Errorf("%s: write config: %w", path, err)
	}
	return nil
}

// refusal is a refusal with a sentence of its own that still matches its
// sentinel with errors.Is, as the merge's refusals do.
type refusal struct {
	err error
	msg string
}

func (e *refusal) Error() string { return e.msg }
func (e *refusal) Unwrap() error { return e.err }

func changedMeanwhile(path string) error {
	return &refusal{config.ErrChangedMeanwhile, fmt.Sprintf(
		"%s changed while the request was being applied; nothing was written: apply it again", path)}
}

// configLock is an exclusive flock on the config file itself. Applies
// replace the file by rename, so the lock belongs to one version of the
// file: a waiter that gets the lock of a version already replaced lets it go
// and locks the current one. Locking the config rather than a lock file
// beside it leaves nothing behind in the operator's folder.
type configLock struct {
	f    *os.File
	info fs.FileInfo // the locked file, as opened
	// locked is false on a file system without flock: the apply then
	// relies on the check before the rename alone.
	locked bool
}

// lockConfig opens the file at target (path as resolved) and takes its
// lock, refusing anything but a regular file; it waits up to lockWait for
// another apply.
func lockConfig(path, target string) (*configLock, error) {
	deadline := time.Now().Add(lockWait)
	for {
		// O_NONBLOCK: opening a FIFO put where the config belongs must
		// not hang the command.
		f, err := os.OpenFile(target, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: cannot read config: %w", path, unwrapPath(err))
		}
		info, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: cannot read config: %w", path, unwrapPath(err))
		}
		if !info.Mode().IsRegular() {
			// Worded as ReadFile words it, so PreviewApply and
			// ApplyRequest refuse alike.
			f.Close()
			what := "is a directory"
			if !info.IsDir() {
				what = "is not a regular file but " + safefile.DescribeMode(info.Mode())
			}
			return nil, fmt.Errorf("%s: cannot read config: %s", path, what)
		}
		lk := &configLock{f: f, info: info, locked: true}
		for {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if err == nil || !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
				break
			}
			if time.Now().After(deadline) {
				f.Close()
				return nil, fmt.Errorf("%s: another apply has held the config's lock for %v; nothing was written", path, lockWait)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err != nil {
			if !errors.Is(err, syscall.ENOLCK) && !errors.Is(err, syscall.EOPNOTSUPP) {
				f.Close()
				return nil, fmt.Errorf("%s: lock config: %w", path, err)
			}
			lk.locked = false
		}
		if lk.current(path) {
			return lk, nil
		}
		// Replaced while we waited: lock the version now in place.
		f.Close()
		if time.Now().After(deadline) {
			return nil, changedMeanwhile(path)
		}
		if target, err = filepath.EvalSymlinks(path); err != nil {
			return nil, fmt.Errorf("%s: cannot read config: %w", path, unwrapPath(err))
		}
	}
}

// current reports whether path still names the locked file.
func (lk *configLock) current(path string) bool {
	info, err := os.Stat(path)
	return err == nil && os.SameFile(info, lk.info)
}

// replaceFile writes data to a new file beside target and renames it over
// target, keeping orig's permission bits (and, for root, its owner): a
// reader sees the old file or the new one, never a part, and a crash leaves
// at worst a stray temporary file (removed by the next apply). commit runs
// last before the rename and can still call it off. The temporary file is
// removed on any failure.
func replaceFile(target string, orig fs.FileInfo, data []byte, commit func() error) (err error) {
	dir := filepath.Dir(target)
	tmp, err := os.CreateTemp(dir, tempPrefix(target)+"*")
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Chmod(orig.Mode().Perm()); err != nil {
		return err
	}
	if st, ok := orig.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
		if err := tmp.Chown(int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := commit(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return err
	}
	renamed = true
	// The rename is the commit; the folder's fsync makes it survive a
	// power cut. Should that fail, the new config is in place but maybe not
	// durable, and the error says so.
	if err := safefile.SyncDir(dir); err != nil {
		return fmt.Errorf("the config was replaced, but syncing %s failed: %w", dir, err)
	}
	return nil
}

// removeStale removes temporary files earlier applies left when they were
// killed between creating and renaming them. It runs only under the lock,
// when no other apply of this config is between those steps.
func removeStale(target string) {
	dir, prefix := filepath.Dir(target), tempPrefix(target)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) && e.Type().IsRegular() {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
