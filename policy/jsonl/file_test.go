package jsonl

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs open and fails the test when it has not returned after 2s:
// a FIFO must be refused, not waited on.
func within(t *testing.T, open func() (*os.File, error)) (*os.File, error) {
	t.Helper()
	type result struct {
		f   *os.File
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := open()
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		if r.f != nil {
			t.Cleanup(func() { r.f.Close() })
		}
		return r.f, r.err
	case <-time.After(2 * time.Second):
		t.Fatal("the open still blocks after 2s")
		return nil, nil
	}
}

// unblockFIFO opens path's write end at cleanup, so that a reader a failed
// test left blocked in open(2) on the FIFO can finish.
func unblockFIFO(t *testing.T, path string) {
	t.Cleanup(func() {
		if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
			f.Close()
		}
	})
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode()
}

func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		r, _, e := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		flags = int(r)
		if e != 0 {
			ferr = e
		}
	}); err != nil {
		t.Fatal(err)
	}
	if ferr != nil {
		t.Fatal(ferr)
	}
	return flags&syscall.O_NONBLOCK != 0
}

func TestOpenPrivate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// setup prepares base and returns the path to open.
		setup func(t *testing.T, base string) string
		// check inspects the result of a successful open; nil when the
		// open must be refused as not a regular file.
		check func(t *testing.T, base, path string, f *os.File)
	}{
		{"a missing file is created 0600, in new folders made 0700",
			func(t *testing.T, base string) string { return filepath.Join(base, "a", "b", "log.jsonl") },
			func(t *testing.T, base, path string, _ *os.File) {
				if got := mode(t, path); got != 0o600 {
					t.Errorf("file mode = %v, want -rw-------", got)
				}
				for _, dir := range []string{filepath.Join(base, "a"), filepath.Join(base, "a", "b")} {
					if got := mode(t, dir).Perm(); got != 0o700 {
						t.Errorf("folder %s mode = %v, want 0700", dir, got)
					}
				}
			}},
		{"a loosened file is restricted to 0600 again",
			func(t *testing.T, base string) string {
				path := filepath.Join(base, "log.jsonl")
				if err := os.WriteFile(path, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path, 0o644); err != nil {
					t.Fatal(err)
				}
				return path
			},
			func(t *testing.T, _, path string, _ *os.File) {
				if got := mode(t, path); got != 0o600 {
					t.Errorf("file mode = %v, want -rw-------", got)
				}
			}},
		{"an existing file keeps its lines and is appended to, in blocking mode",
			func(t *testing.T, base string) string {
				path := filepath.Join(base, "log.jsonl")
				if err := os.WriteFile(path, []byte("{}\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				return path
			},
			func(t *testing.T, _, path string, f *os.File) {
				if nonblocking(t, f) {
					t.Error("the file is still in O_NONBLOCK mode")
				}
				if _, err := f.Write([]byte("[]\n")); err != nil {
					t.Fatal(err)
				}
				if got, _ := os.ReadFile(path); string(got) != "{}\n[]\n" {
					t.Errorf("file holds %q, want %q", got, "{}\n[]\n")
				}
			}},
		{"a symlink to a regular file is followed",
			func(t *testing.T, base string) string {
				target := filepath.Join(base, "target.jsonl")
				if err := os.WriteFile(target, []byte("{}\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				link := filepath.Join(base, "log.jsonl")
				if err := os.Symlink(target, link); err != nil {
					t.Fatal(err)
				}
				return link
			},
			func(t *testing.T, base, _ string, f *os.File) {
				if _, err := f.Write([]byte("[]\n")); err != nil {
					t.Fatal(err)
				}
				target := filepath.Join(base, "target.jsonl")
				if got, _ := os.ReadFile(target); string(got) != "{}\n[]\n" {
					t.Errorf("the target holds %q, want %q", got, "{}\n[]\n")
				}
				if got := mode(t, target); got != 0o600 {
					t.Errorf("the target's mode = %v, want -rw-------", got)
				}
			}},
		{"a FIFO is refused without blocking",
			func(t *testing.T, base string) string {
				path := filepath.Join(base, "log.jsonl")
				if err := syscall.Mkfifo(path, 0o600); err != nil {
					t.Fatal(err)
				}
				unblockFIFO(t, path)
				return path
			}, nil},
		{"a directory is refused",
			func(t *testing.T, base string) string {
				path := filepath.Join(base, "log.jsonl")
				if err := os.Mkdir(path, 0o700); err != nil {
					t.Fatal(err)
				}
				return path
			}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			path := tc.setup(t, base)
			f, err := within(t, func() (*os.File, error) { return OpenPrivate(path) })
			if tc.check == nil {
				checkNotRegular(t, path, err)
				return
			}
			if err != nil {
				t.Fatalf("OpenPrivate: %v", err)
			}
			tc.check(t, base, path, f)
		})
	}
}

func checkNotRegular(t *testing.T, path string, err error) {
	t.Helper()
	if !errors.Is(err, ErrNotRegular) {
		t.Fatalf("open = %v, want an error wrapping ErrNotRegular", err)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != path {
		t.Errorf("open error %q is not a *fs.PathError for %s", err, path)
	}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(t *testing.T, path string)
		// want is the content read, or "" with wantErr.
		want    string
		wantErr error
	}{
		{"a regular file is read", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("{}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "{}\n", nil},
		{"a missing file is ErrNotExist and is not created", func(*testing.T, string) {}, "", fs.ErrNotExist},
		{"a FIFO is refused without blocking", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
			unblockFIFO(t, path)
		}, "", ErrNotRegular},
		{"a directory is refused", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "", ErrNotRegular},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "log.jsonl")
			tc.setup(t, path)
			f, err := within(t, func() (*os.File, error) { return Open(path) })
			switch {
			case tc.wantErr == ErrNotRegular:
				checkNotRegular(t, path, err)
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("Open = %v, want %v", err, tc.wantErr)
				}
				if _, serr := os.Lstat(path); !errors.Is(serr, fs.ErrNotExist) {
					t.Errorf("Open created %s", path)
				}
			case err != nil:
				t.Fatalf("Open: %v", err)
			default:
				var b strings.Builder
				if _, err := f.WriteTo(&b); err != nil {
					t.Fatal(err)
				}
				if b.String() != tc.want {
					t.Errorf("read %q, want %q", b.String(), tc.want)
				}
			}
		})
	}
}

func TestEndTornLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, before, after string
		ended               bool
	}{
		{"an empty file is left alone", "", "", false},
		{"a file ending in a newline is left alone", "{}\n", "{}\n", false},
		{"a file ending in a blank line is left alone", "{}\n\n", "{}\n\n", false},
		{"a torn last line is ended with a newline", "{}\n{\"id\":\"a", "{}\n{\"id\":\"a\n", true},
		{"a lone torn brace is ended", "{", "{\n", true},
		{"a complete object without its newline is ended", "{}", "{}\n", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, path := newLog(t)
			if _, err := f.WriteString(tc.before); err != nil {
				t.Fatal(err)
			}
			ended, err := EndTornLine(f)
			if err != nil || ended != tc.ended {
				t.Fatalf("EndTornLine = %v, %v; want %v, nil", ended, err, tc.ended)
			}
			if got, _ := os.ReadFile(path); string(got) != tc.after {
				t.Errorf("file holds %q, want %q", got, tc.after)
			}
		})
	}
}
