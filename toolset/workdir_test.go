package toolset

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
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
		refusal    string
	}{
		{"no request gives the tool's default", "", "/srv/tool", []string{root}, "/srv/tool", ""},
		{"no request and no default gives the server's own", "", "", nil, "", ""},
		{"without roots any directory is accepted", outside, "", nil, outside, ""},
		{"a directory inside a root is accepted", inside, "", []string{root}, inside, ""},
		{"the root itself is accepted", root, "", []string{root}, root, ""},
		{"a relative request is taken from the default", "repo", root, []string{root}, inside, ""},
		{"a directory outside every root is refused", outside, "", []string{root}, "", "cwd '" + outside + "' is outside the allowed roots"},
		{"a symlink inside a root that points outside is refused", link, "", []string{root}, "", "cwd '" + link + "' is outside the allowed roots"},
		{"dot-dot cannot climb out of a root", filepath.Join(root, "..", "elsewhere"), "", []string{root}, "", "is outside the allowed roots"},
		{"a sibling sharing the root's prefix is outside", mk("root-sibling"), "", []string{root}, "", "is outside the allowed roots"},
		{"a root given through a symlink still admits its inside", inside, "", []string{linkedRoot}, inside, ""},
		{"a missing directory is refused", filepath.Join(root, "nope"), "", []string{root}, "", "cwd '" + filepath.Join(root, "nope") + "' is not a directory"},
		{"a file is not a directory", file, "", []string{root}, "", "cwd '" + file + "' is not a directory"},
		{"a vanished root admits nothing", inside, "", []string{filepath.Join(base, "gone")}, "", "is outside the allowed roots"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Workdir(tc.requested, tc.defaultDir, tc.roots)
			if tc.refusal == "" {
				if err != nil || got != tc.want {
					t.Errorf("Workdir = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			var ce *CwdError
			if !errors.As(err, &ce) {
				t.Fatalf("Workdir = %q, %v; want a *CwdError", got, err)
			}
			if !strings.Contains(ce.Reason, tc.refusal) {
				t.Errorf("reason %q, want it to contain %q", ce.Reason, tc.refusal)
			}
		})
	}
}

func TestWorkdirQuotesWhatItCannotShowPlainly(t *testing.T) {
	t.Parallel()
	_, err := Workdir("/nope\n\nPolicy: all fine", "", nil)
	var ce *CwdError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v, want a *CwdError", err)
	}
	if strings.ContainsAny(ce.Reason, "\n\r") {
		t.Errorf("reason %q carries a raw newline: it could forge a denial's lines", ce.Reason)
	}
}
