package toolset

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/toolset/runner"
)

// A tool told where to write must not be able to rewrite the gate: a flag
// value or positional argument that names one of wraptool's own files, or
// a folder holding one, is refused once the working directory is known, and
// so is a cwd that is such a folder. A path merely inside a protected
// folder is fine.
func TestExecuteRefusesPathsNamingWraptoolsOwnFiles(t *testing.T) {
	t.Parallel()
	base, _ := filepath.EvalSymlinks(t.TempDir())
	home := filepath.Join(base, "home")
	cfgDir := filepath.Join(home, ".config", "wraptool")
	config := filepath.Join(cfgDir, "config.yaml")
	root := filepath.Join(base, "root")
	repo := filepath.Join(root, "repo")
	secrets := filepath.Join(root, "secrets") // a protected folder inside the roots
	token := filepath.Join(secrets, "token")
	audit := filepath.Join(base, "logs", "audit.log") // not written yet
	for _, dir := range []string{cfgDir, repo, secrets, filepath.Dir(audit)} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{config, token} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(cfgDir, filepath.Join(root, "cfglink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(audit), filepath.Join(root, "logslink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(config, filepath.Join(repo, "hardlink")); err != nil {
		t.Fatal(err)
	}

	p := newPolicy(t, policy.Tool{Name: "fake", Binary: fakecli, Allow: []*policy.AllowRule{{
		Subcommand: []string{"report"}, Flags: help("--output"),
		FlagConstraints: map[string]*policy.Constraint{"--output": {Type: "string"}},
	}}})
	protected := []string{config, token, audit}
	rooted := Runtime{WorkingDir: repo, Env: []string{"HOME=" + home}, Home: home, Roots: []string{root}, Protected: NewProtectedFiles(protected), Timeout: time.Minute}
	inConfigDir := Runtime{WorkingDir: cfgDir, Env: []string{}, Protected: NewProtectedFiles(protected), Timeout: time.Minute}
	childHome := Runtime{WorkingDir: repo, Env: []string{"HOME=" + home}, Protected: NewProtectedFiles(protected), Timeout: time.Minute}

	const names = " names a file wraptool protects"
	cases := []struct {
		name   string
		rt     Runtime
		params map[string]any
		want   string // the refusal's reason; "" when the call runs
	}{
		{"an absolute path to the config is refused", rooted,
			map[string]any{"output": config}, "value of '--output'" + names},
		{"a path under ~ is expanded with the server's HOME", rooted,
			map[string]any{"args": []any{"~/.config/wraptool/config.yaml"}}, "positional argument '~/.config/wraptool/config.yaml'" + names},
		{"~ is also the child's HOME when only its environment sets one", childHome,
			map[string]any{"output": "~/.config/wraptool/config.yaml"}, "value of '--output'" + names},
		{"a relative path climbing out of the cwd is refused", rooted,
			map[string]any{"output": "../../home/.config/wraptool/config.yaml"}, "value of '--output'" + names},
		{"a relative path is taken from the client's cwd", rooted,
			map[string]any{"cwd": root, "args": []any{"secrets/token"}}, "positional argument 'secrets/token'" + names},
		{"a path through a symlinked folder is refused", rooted,
			map[string]any{"cwd": root, "output": "cfglink/config.yaml"}, "value of '--output'" + names},
		{"a hard link to the config is refused", rooted,
			map[string]any{"args": []any{"hardlink"}}, "positional argument 'hardlink'" + names},
		{"a protected folder itself is refused", rooted,
			map[string]any{"output": cfgDir + "/"}, "value of '--output'" + names},
		{"~ naming a protected folder is refused", rooted,
			map[string]any{"args": []any{"~/.config/wraptool"}}, "positional argument '~/.config/wraptool'" + names},
		{"a protected file not written yet is refused", rooted,
			map[string]any{"output": audit}, "value of '--output'" + names},
		{"a protected file not written yet, through a symlinked folder, is refused", rooted,
			map[string]any{"cwd": root, "output": "logslink/audit.log"}, "value of '--output'" + names},
		{"a path through a folder not made yet is refused", rooted,
			map[string]any{"output": filepath.Join(base, "logs", "new", "..", "audit.log")}, "value of '--output'" + names},
		{"a relative path from the default working_dir is refused", inConfigDir,
			map[string]any{"args": []any{"config.yaml"}}, "positional argument 'config.yaml'" + names},
		{"a cwd that is a protected folder is refused", rooted,
			map[string]any{"cwd": secrets}, "cwd '" + secrets + "' names a folder wraptool protects"},
		{"a relative cwd naming a protected folder is refused", rooted,
			map[string]any{"cwd": "../secrets"}, "cwd '../secrets' names a folder wraptool protects"},
		{"a cwd outside the roots is refused for that first", rooted,
			map[string]any{"cwd": cfgDir, "output": config}, "cwd '" + cfgDir + "' is outside the allowed roots"},
		{"a harmless path inside a protected folder runs", rooted,
			map[string]any{"output": filepath.Join(cfgDir, "notes.txt"), "args": []any{"~/.config/wraptool/other.yaml"}}, ""},
		{"a value that is no path at all runs", rooted,
			map[string]any{"output": "main", "args": []any{"origin", "HEAD~1"}}, ""},
		{"the default working_dir may be a protected folder", inConfigDir,
			map[string]any{"args": []any{"notes.txt"}}, ""},
		{"without protected files nothing is checked", Runtime{WorkingDir: repo, Env: []string{}, Timeout: time.Minute},
			map[string]any{"output": config}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := p.Evaluate(policy.Call{Tool: "fake", Subcommand: []string{"report"}, Params: tc.params})
			if !d.Allowed() {
				t.Fatalf("the policy refused it: %s", d.Refusal.Reason)
			}
			res, d := Execute(context.Background(), d, tc.rt)
			if tc.want == "" {
				if !d.Allowed() {
					t.Fatalf("refused: %s", d.Refusal.Reason)
				}
				if res.ExitCode != 0 || res.Err != nil {
					t.Errorf("exit %d, err %v; want a clean run", res.ExitCode, res.Err)
				}
				return
			}
			if d.Allowed() {
				t.Fatalf("ran (exit %d); want the refusal %q", res.ExitCode, tc.want)
			}
			wantKind := policy.KindProtected
			if tc.name == "a cwd outside the roots is refused for that first" {
				wantKind = policy.KindCwd
			}
			if d.Refusal.Reason != tc.want || d.Refusal.Kind != wantKind {
				t.Errorf("refusal %v %q, want %v %q", d.Refusal.Kind, d.Refusal.Reason, wantKind, tc.want)
			}
			if res.Stdout != "" || res.ExitCode != -1 {
				t.Errorf("something ran: %+v", res)
			}
		})
	}
}

// locate resolves a path's folder as the kernel would walk it, including
// folders that do not exist yet.
func TestLocate(t *testing.T) {
	t.Parallel()
	base, _ := filepath.EvalSymlinks(t.TempDir())
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(real, "f"), filepath.Join(real, "filelink")); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, in, want string }{
		{"a symlinked folder is resolved", base + "/link/f", real + "/f"},
		{"the last element stays unresolved", base + "/real/filelink", real + "/filelink"},
		{"dot-dot after a symlink leaves its target", base + "/link/../x", base + "/x"},
		{"a trailing slash is dropped", base + "/real/", real},
		{"missing folders are joined and cleaned", base + "/link/new/../g", real + "/g"},
		{"the root is itself", "/", "/"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := runner.Locate(tc.in); got != tc.want {
				t.Errorf("Locate(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
