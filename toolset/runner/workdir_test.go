package runner

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestWorkdir(t *testing.T) {
	t.Parallel()
	base, _ := filepath.EvalSymlinks(t.TempDir())
	mk := func(p string) string {
		full := filepath.Join(base, p)
		if err := os.MkdirAll(full, 0o700); err != nil {
			t.Fatal(err)
		}
		return full
	}
	root := mk("root")
	inside := mk("root/repo")
	outside := mk("elsewhere")
	file := filepath.Join(root, "file")
	os.WriteFile(file, nil, 0o600)
	link := filepath.Join(root, "escape")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	linkedRoot := filepath.Join(base, "linked-root")
	if err := os.Symlink(root, linkedRoot); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name       string
		requested  string
		defaultDir string
		roots      []string
		want       string
		problem    Problem
	}{
		{"no request gives the tool's default", "", "/srv/tool", []string{root}, "/srv/tool", 0},
		{"no request and no default gives the server's own", "", "", nil, "", 0},
		{"without roots any directory is accepted", outside, "", nil, outside, 0},
		{"a directory inside a root is accepted", inside, "", []string{root}, inside, 0},
		{"the root itself is accepted", root, "", []string{root}, root, 0},
		{"a relative request is taken from the default", "repo", root, []string{root}, inside, 0},
		{"a directory outside every root is refused", outside, "", []string{root}, "", Outside},
		{"a symlink inside a root that points outside is refused", link, "", []string{root}, "", Outside},
		{"dot-dot cannot climb out of a root", filepath.Join(root, "..", "elsewhere"), "", []string{root}, "", Outside},
		{"a sibling sharing the root's prefix is outside", mk("root-sibling"), "", []string{root}, "", Outside},
		{"a root given through a symlink still admits its inside", inside, "", []string{linkedRoot}, inside, 0},
		{"a missing directory is refused", filepath.Join(root, "nope"), "", []string{root}, "", NotDir},
		{"a file is not a directory", file, "", []string{root}, "", NotDir},
		{"a relative missing directory is refused under its own name", "nope", root, []string{root}, "", NotDir},
		{"a vanished root admits nothing", inside, "", []string{filepath.Join(base, "gone")}, "", Outside},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Workdir(tc.requested, tc.defaultDir, tc.roots)
			if tc.problem == 0 {
				if err != nil || got != tc.want {
					t.Errorf("Workdir = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			var ce *CwdError
			if !errors.As(err, &ce) {
				t.Fatalf("Workdir = %q, %v; want a *CwdError", got, err)
			}
			if ce.Problem != tc.problem || ce.Path != tc.requested || ce.Err != nil {
				t.Errorf("refusal %+v, want problem %v for the path as requested, %q, with no cause", ce, tc.problem, tc.requested)
			}
		})
	}
}

// OpenWorkdir hands back the checked directory opened, with the path the
// handle resolves to; the server's own directory is not opened at all, and
// an unusable default directory is the operator's failure, not a refusal.
func TestOpenWorkdir(t *testing.T) {
	t.Parallel()
	base, _ := filepath.EvalSymlinks(t.TempDir())
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, dir := range []string{root, outside} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("a requested directory inside a root is opened", func(t *testing.T) {
		t.Parallel()
		f, real, err := OpenWorkdir(root, "", []string{root})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if real != root {
			t.Errorf("resolved path %q, want %q", real, root)
		}
		if info, err := f.Stat(); err != nil || !info.IsDir() {
			t.Errorf("the handle is not the directory: %v, %v", info, err)
		}
	})
	t.Run("the default directory is opened without the roots", func(t *testing.T) {
		t.Parallel()
		f, real, err := OpenWorkdir("", outside, []string{root})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if real != outside {
			t.Errorf("resolved path %q, want %q", real, outside)
		}
	})
	t.Run("the server's own directory is inherited, not opened", func(t *testing.T) {
		t.Parallel()
		if f, real, err := OpenWorkdir("", "", []string{root}); f != nil || real != "" || err != nil {
			t.Errorf("OpenWorkdir = %v, %q, %v; want nil, \"\", nil", f, real, err)
		}
	})
	t.Run("a refused request is a CwdError", func(t *testing.T) {
		t.Parallel()
		_, _, err := OpenWorkdir(outside, "", []string{root})
		var ce *CwdError
		if !errors.As(err, &ce) || ce.Problem != Outside {
			t.Errorf("error %v, want a *CwdError with Outside", err)
		}
	})
	t.Run("a missing default directory is an error naming it, not a CwdError", func(t *testing.T) {
		t.Parallel()
		missing := filepath.Join(base, "gone")
		_, _, err := OpenWorkdir("", missing, nil)
		var ce *CwdError
		if err == nil || errors.As(err, &ce) || !strings.HasPrefix(err.Error(), "working directory "+missing+": ") {
			t.Errorf("error %v, want a plain error naming %s", err, missing)
		}
	})
}

func TestCwdErrorSaysWhatWentWrong(t *testing.T) {
	t.Parallel()
	cause := errors.New("permission denied")
	cases := []struct {
		name string
		err  *CwdError
		want string
	}{
		{"not a directory", &CwdError{Path: "/nope", Problem: NotDir}, `cwd "/nope": not a directory`},
		{"outside", &CwdError{Path: "/etc", Problem: Outside}, `cwd "/etc": outside the allowed roots`},
		{"unusable, with its cause", &CwdError{Path: "a\nb", Problem: Unusable, Err: cause}, `cwd "a\nb": cannot be used: permission denied`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
			if got := errors.Unwrap(tc.err); got != tc.err.Err {
				t.Errorf("Unwrap() = %v, want %v", got, tc.err.Err)
			}
		})
	}
}

// Without /proc the opened handle's path is its path resolved again, taken
// only while it still leads to the very directory opened (how macOS reads
// a handle back; Linux runs the same function here).
func TestSameDirectory(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// change changes dir after the open; it returns the path the
		// check must report ("" when it must refuse).
		change func(t *testing.T, dir, other string) string
	}{
		{"the path still leads to it", func(t *testing.T, dir, _ string) string { return dir }},
		{"a symlink on the way leads to it", func(t *testing.T, dir, _ string) string {
			link := dir + "-link"
			mustDo(t, os.Symlink(dir, link))
			return dir // the caller passes the link; see below
		}},
		{"the path was swapped for a symlink elsewhere", func(t *testing.T, dir, other string) string {
			mustDo(t, os.Rename(dir, dir+"-moved"), os.Symlink(other, dir))
			return ""
		}},
		{"a new folder took its name", func(t *testing.T, dir, _ string) string {
			mustDo(t, os.Rename(dir, dir+"-moved"), os.Mkdir(dir, 0o700))
			return ""
		}},
		{"the folder was removed", func(t *testing.T, dir, _ string) string {
			mustDo(t, os.Remove(dir))
			return ""
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base, _ := filepath.EvalSymlinks(t.TempDir())
			dir, other := filepath.Join(base, "dir"), filepath.Join(base, "other")
			mustDo(t, os.Mkdir(dir, 0o700), os.Mkdir(other, 0o700))
			f, err := os.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			want := tc.change(t, dir, other)
			asked := dir
			if _, err := os.Lstat(dir + "-link"); err == nil {
				asked = dir + "-link"
			}
			got, err := sameDirectory(f, asked)
			if want == "" {
				if err == nil {
					t.Errorf("sameDirectory = %q, want a refusal", got)
				}
				return
			}
			if err != nil || got != want {
				t.Errorf("sameDirectory = %q, %v; want %q", got, err, want)
			}
		})
	}
}

// mustDo fails the test at the first of errs that is not nil.
func mustDo(t *testing.T, errs ...error) {
	t.Helper()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// statNoFollow reaches a directory only through real folders: a component
// swapped for a symlink between the resolution and the check (the race
// stat(2) would follow into a folder outside the roots) is an error, not
// the symlink's target.
func TestStatNoFollowRefusesALinkOnTheWay(t *testing.T) {
	t.Parallel()
	base, _ := filepath.EvalSymlinks(t.TempDir())
	inside, outside := filepath.Join(base, "root", "x"), filepath.Join(base, "outside")
	mustDo(t, os.MkdirAll(inside, 0o700), os.Mkdir(outside, 0o700))
	want, err := os.Stat(inside)
	if err != nil {
		t.Fatal(err)
	}
	st, err := statNoFollow(inside)
	if err != nil || uint64(st.Ino) != want.Sys().(*syscall.Stat_t).Ino {
		t.Fatalf("statNoFollow(%s) = ino %d, %v; want the folder itself", inside, st.Ino, err)
	}
	// x becomes a link to the folder outside, as a swap mid-check makes it.
	mustDo(t, os.Rename(inside, inside+"-moved"), os.Symlink(outside, inside))
	if st, err := statNoFollow(inside); err == nil {
		t.Errorf("statNoFollow through a symlink = ino %d, want an error", st.Ino)
	}
	for _, bad := range []string{"relative/x", base + "/root/../root/x"} {
		if _, err := statNoFollow(bad); err == nil {
			t.Errorf("statNoFollow(%q) succeeded, want a refusal", bad)
		}
	}
}
