package toolset

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy"
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

// A client that can write inside a root keeps swapping the requested cwd
// between a real directory and a symlink to a folder outside every root.
// Whatever the timing, no call may run outside the roots: the working
// directory is checked, opened once, checked again through the handle, and
// the child starts in that handle, never by looking the path up again. A
// call that sees the link is refused, and one whose folder vanished fails to
// start; both are fine.
func TestExecuteCwdSwappedForASymlinkNeverRunsOutsideTheRoots(t *testing.T) {
	t.Parallel()
	base, _ := filepath.EvalSymlinks(t.TempDir())
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	cwd, parked, link := filepath.Join(root, "d"), filepath.Join(root, "d.real"), filepath.Join(root, "link")
	for _, dir := range []string{cwd, outside} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	stop, swapped := make(chan struct{}), make(chan error, 1)
	go func() {
		// rename cannot put a symlink over a directory, so each swap is
		// two renames: the name is briefly missing, a directory, or the link.
		for {
			select {
			case <-stop:
				swapped <- nil
				return
			default:
			}
			for _, mv := range [][2]string{{cwd, parked}, {link, cwd}, {cwd, link}, {parked, cwd}} {
				if err := os.Rename(mv[0], mv[1]); err != nil {
					swapped <- err
					return
				}
			}
		}
	}()
	defer func() {
		close(stop)
		if err := <-swapped; err != nil {
			t.Errorf("swapping the cwd: %v", err)
		}
	}()

	p := newPolicy(t, policy.Tool{Name: "fake", Binary: fakecli, Allow: []*policy.AllowRule{{Subcommand: []string{"report"}, Flags: help()}}})
	rt := Runtime{Env: []string{}, Roots: []string{root}, Timeout: time.Minute}
	// At least 400 calls, and enough of them running (most see the link or
	// a missing name and are refused) for the test to mean something.
	var ran, calls int
	var escaped []string
	deadline := time.Now().Add(2 * time.Minute)
	for ; calls < 400 || ran < 20; calls++ {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d calls ran in two minutes: the test proves too little", ran, calls)
		}
		d := p.Evaluate(policy.Call{Tool: "fake", Subcommand: []string{"report"}, Params: map[string]any{"cwd": cwd}})
		res, d := Execute(context.Background(), d, rt)
		if !d.Allowed() {
			if d.Refusal.Kind != policy.KindCwd {
				t.Fatalf("refusal %v: %s", d.Refusal.Kind, d.Refusal.Reason)
			}
			continue
		}
		if res.Err != nil && strings.HasPrefix(res.Err.Error(), "failed to start: ") {
			continue // the folder vanished under the start: nothing ran
		}
		var r report
		if err := json.Unmarshal([]byte(res.Stdout), &r); err != nil {
			t.Fatalf("exit %d, err %v, stdout %q: %v", res.ExitCode, res.Err, res.Stdout, err)
		}
		ran++
		if !within(r.Cwd, root) {
			escaped = append(escaped, r.Cwd)
		}
	}
	if len(escaped) > 0 {
		t.Errorf("%d of %d runs (%d calls) started outside the root %s, in %q", len(escaped), ran, calls, root, escaped[0])
	}
}
