package toolset

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// A path through a process-relative link — /proc/self/…, /proc/thread-self/…,
// /proc/<pid>/…, /dev/fd/…, /dev/stdin, /dev/stdout, /dev/stderr — means one
// file to wraptool and another to the child (/proc/self/cwd is wraptool's
// folder when wraptool looks, the child's when the child opens it), so the
// protected-path check cannot vouch for it: every spelling of one, written
// out, reached by cleaning, from a relative value, through "~" or through a
// symlink that already exists, is refused with the protected-path reason. A
// path that merely looks alike runs.
func TestProcessRelativePathsAreRefusedWithTheProtectedReason(t *testing.T) {
	t.Parallel()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	own, _ := filepath.EvalSymlinks(t.TempDir())
	config := filepath.Join(own, "config.yaml")
	if err := os.WriteFile(config, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Links an operator's tool could have left in the call's folder: the
	// client cannot make them, but they exist.
	for link, target := range map[string]string{
		"selflink": "/proc/self",     // a folder link to /proc/self
		"cwdlink":  "/proc/self/cwd", // resolved in one go, it would be wraptool's own folder
		"out":      "/dev/stdout",    // a file link
		"proclink": "/proc",          // a harmless link, then self
		"tmplink":  "/tmp",
		"hop":      "proclink/self", // a relative link to a link
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	rule := &policy.AllowRule{Subcommand: []string{"report"}, Flags: help("--output"),
		FlagConstraints: map[string]*policy.Constraint{"--output": {Type: "string"}}}
	p := newPolicy(t, policy.Tool{Name: "fake", Binary: fakecli, Allow: []*policy.AllowRule{rule}})
	rt := Runtime{WorkingDir: root, Env: []string{"HOME=/proc"}, Timeout: time.Minute, Protected: NewProtectedFiles([]string{config})}
	st := &State{Policy: p, Runtimes: map[string]Runtime{"fake": rt}}
	cs := serve(t, st, func() *State { return st }, context.Background())

	const names = " names a file wraptool protects"
	const flag = "value of '--output'" + names
	arg := func(v string) string { return "positional argument " + policy.Quote(v) + names }
	type row struct {
		name   string
		args   map[string]any
		reason string // the Policy line without its period; "" when the call runs
	}
	rows := []row{
		{"/proc/self/cwd as a flag value", map[string]any{"output": "/proc/self/cwd"}, flag},
		{"/proc/self itself", map[string]any{"args": []any{"/proc/self"}}, arg("/proc/self")},
		{"/proc/self/root/… as a positional", map[string]any{"args": []any{"/proc/self/root" + config}}, arg("/proc/self/root" + config)},
		{"/proc/thread-self/…", map[string]any{"output": "/proc/thread-self/cwd/x"}, flag},
		{"/proc/<pid>/… of a running process", map[string]any{"args": []any{"/proc/1/root"}}, arg("/proc/1/root")},
		{"/proc/<pid>/… of any pid", map[string]any{"output": "/proc/4194304/cwd/config.yaml"}, flag},
		{"/dev/fd/…", map[string]any{"output": "/dev/fd/3"}, flag},
		{"/dev/fd itself", map[string]any{"args": []any{"/dev/fd"}}, arg("/dev/fd")},
		{"/dev/stdin", map[string]any{"args": []any{"/dev/stdin"}}, arg("/dev/stdin")},
		{"/dev/stdout", map[string]any{"output": "/dev/stdout"}, flag},
		{"/dev/stderr", map[string]any{"output": "/dev/stderr"}, flag},
		// Spellings that clean to one.
		{"a dot inside the path", map[string]any{"output": "/proc/./self/cwd"}, flag},
		{"a doubled leading slash", map[string]any{"args": []any{"//proc/self/x"}}, arg("//proc/self/x")},
		{"a trailing slash", map[string]any{"args": []any{"/proc/self/"}}, arg("/proc/self/")},
		{"a climb back into self", map[string]any{"output": "/proc/self/../self/cwd"}, flag},
		{"a climb out of self, which cleans to /proc/etc/passwd", map[string]any{"output": "/proc/self/cwd/../../etc/passwd"}, flag},
		{"a climb into /dev", map[string]any{"output": "/tmp/../dev/./fd/1"}, flag},
		// Relative values, from the call's cwd.
		{"self/cwd from /proc", map[string]any{"cwd": "/proc", "output": "self/cwd"}, flag},
		{"a pid from /proc", map[string]any{"cwd": "/proc", "args": []any{"1/cwd"}}, arg("1/cwd")},
		{"../proc/self/cwd from /tmp", map[string]any{"cwd": "/tmp", "output": "../proc/self/cwd"}, flag},
		{"stdout from /dev", map[string]any{"cwd": "/dev", "args": []any{"stdout"}}, arg("stdout")},
		{"fd/1 from /dev", map[string]any{"cwd": "/dev", "output": "fd/1"}, flag},
		{"./self from /proc", map[string]any{"cwd": "/proc", "args": []any{"./self"}}, arg("./self")},
		// "~" is the child's HOME, here /proc: handled like any other path.
		{"~/self/cwd with HOME=/proc", map[string]any{"output": "~/self/cwd"}, flag},
		// Links that exist in the call's folder, resolved hop by hop.
		{"a folder link to /proc/self", map[string]any{"output": "selflink/cwd"}, flag},
		{"a folder link to /proc/self/cwd", map[string]any{"args": []any{"cwdlink/config.yaml"}}, arg("cwdlink/config.yaml")},
		{"a file link to /dev/stdout", map[string]any{"output": "out"}, flag},
		{"a link to /proc, then self", map[string]any{"output": "proclink/self/cwd"}, flag},
		{"a relative link to a link to /proc, then self", map[string]any{"args": []any{"hop/cwd"}}, arg("hop/cwd")},
		{"a link to /tmp, then a climb into /proc/self", map[string]any{"output": "tmplink/../proc/self/cwd"}, flag},
		// Alike, but not process-relative: they run.
		{"/proc itself runs", map[string]any{"args": []any{"/proc", "/proc/"}}, ""},
		{"/proc/cpuinfo runs", map[string]any{"output": "/proc/cpuinfo"}, ""},
		{"/proc/selfish runs", map[string]any{"output": "/proc/selfish"}, ""},
		{"/proc/1x runs", map[string]any{"args": []any{"/proc/1x", "/proc/thread-selfie"}}, ""},
		{"/dev/null runs", map[string]any{"output": "/dev/null"}, ""},
		{"/dev/fdx and /dev/stdinx run", map[string]any{"args": []any{"/dev/fdx", "/dev/stdinx"}}, ""},
		{"a folder named proc elsewhere runs", map[string]any{"output": filepath.Join(root, "proc/self/cwd")}, ""},
		{"self/cwd from the call's own folder runs", map[string]any{"output": "self/cwd", "args": []any{"fd/1"}}, ""},
		{"/proc reached by a link runs", map[string]any{"args": []any{"proclink", "proclink/cpuinfo"}}, ""},
	}
	// /proc/net is itself a link to self/net on Linux: a path through it is
	// process-relative too.
	if info, err := os.Lstat("/proc/net"); err == nil && info.Mode()&os.ModeSymlink != 0 {
		rows = append(rows, row{"/proc/net, a link to self/net", map[string]any{"output": "/proc/net/dev"}, flag})
	}
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := call(t, cs, "fake_report", tt.args)
			text := toolsettest.ResultText(t, res)
			if tt.reason == "" {
				var r toolsettest.Report
				if res.IsError || json.Unmarshal([]byte(text), &r) != nil {
					t.Fatalf("did not run: %s", text)
				}
				return
			}
			if !res.IsError || !strings.HasPrefix(text, "DENIED: ") {
				t.Fatalf("not refused: isError %v, %q", res.IsError, text)
			}
			if !strings.Contains(text, "\n\nPolicy: "+tt.reason+".\n") {
				t.Errorf("text:\n%s\nwant the Policy line %q", text, tt.reason)
			}
		})
	}

	t.Run("without protected files a process-relative path runs", func(t *testing.T) {
		t.Parallel()
		d := p.Evaluate(policy.Call{Tool: "fake", Subcommand: []string{"report"}, Params: map[string]any{"output": "/proc/self/cwd"}})
		bare := rt
		bare.Protected = nil
		if res, d := Execute(context.Background(), d, bare); !d.Allowed() || res.ExitCode != 0 {
			t.Errorf("refused or failed: %+v, exit %d", d.Refusal, res.ExitCode)
		}
	})
}
