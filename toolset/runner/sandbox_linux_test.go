//go:build linux

package runner

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wraptool/wraptool/integration/waittest"
)

// requireLandlock skips a test on a kernel without Landlock, except in CI,
// whose kernel has it: there a missing Landlock is a failure.
func requireLandlock(t *testing.T) Support {
	t.Helper()
	sup := Probe(nil)
	if !sup.OK() {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI's kernel must offer Landlock: %v", sup.Err)
		}
		t.Skipf("no Landlock here: %v", sup.Err)
	}
	return sup
}

// jail is a home folder with wraptool's files in it, the way an operator's
// looks, and a sandbox protecting them.
type jail struct {
	root, home, work           string
	config, token, tool, other string
	hiddenExec                 string
	sb                         *Sandbox
}

func newJail(t *testing.T) *jail { return newJailStarting(t, false) }

// newJailStarting is newJail whose sandbox starts every process through
// the launcher (the path macOS takes) when viaLauncher is true.
func newJailStarting(t *testing.T, viaLauncher bool) *jail {
	t.Helper()
	sup := requireLandlock(t)
	sup.Launcher = viaLauncher
	root := t.TempDir()
	j := &jail{root: root, home: filepath.Join(root, "home"), work: filepath.Join(root, "home", "work")}
	j.config = filepath.Join(j.home, ".config", "wraptool", "config.yaml")
	j.token = filepath.Join(j.home, "mcp-token") // a protected file directly in $HOME
	j.tool = filepath.Join(j.home, "bin", "tool")
	j.other = filepath.Join(j.home, ".config", "gh", "hosts.yml")
	for path, body := range map[string]string{
		j.config:                                 "tools: {}\n",
		j.token:                                  "s3cret-token-bytes\n",
		j.other:                                  "gh: yes\n",
		filepath.Join(j.home, ".ssh", "id_test"): "PRIVATE KEY\n",
		filepath.Join(j.work, "readme"):          "work\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(j.tool), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(j.tool, []byte("#!/bin/sh\necho tool ran\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	j.hiddenExec = filepath.Join(filepath.Dir(j.config), "run.sh")
	if err := os.WriteFile(j.hiddenExec, []byte("#!/bin/sh\ntrue\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	j.sb = NewSandbox(Protected{
		Hidden:   []string{filepath.Dir(j.config), j.token},
		ReadOnly: []string{j.tool},
	}, sup)
	t.Cleanup(j.sb.Close)
	return j
}

// sh runs script with /bin/sh in the jail, in its work folder, confined.
func (j *jail) sh(t *testing.T, script string) Result {
	t.Helper()
	return Run(context.Background(), Command{
		Argv: []string{"/bin/sh", "-c", script}, Dir: j.work,
		Env: []string{"PATH=/usr/bin:/bin", "HOME=" + j.home}, Sandbox: j.sb,
	})
}

// attacks are what a confined child must not do to the jail j, each a
// script that exits 0 only when the attack worked. Every one works
// unconfined (TestSandboxAttacksWorkUnconfined), so each row can fail.
func attacks(j *jail) []struct{ name, script string } {
	cfgDir := filepath.Dir(j.config)
	rows := []struct{ name, script string }{
		{"read the config directly", "cat " + j.config},
		{"read the config through ..", "cat " + j.work + "/../.config/gh/../wraptool/config.yaml"},
		{"read the token directly", "cat " + j.token},
		{"read through /proc/self/cwd", "cd " + filepath.Dir(cfgDir) + " && cat /proc/self/cwd/wraptool/config.yaml"},
		{"read through /proc/thread-self/cwd", "cd " + j.home + " && cat /proc/thread-self/cwd/mcp-token"},
		{"read through /proc/PID/cwd", "cd " + j.home + " && cat /proc/$$/cwd/mcp-token"},
		{"read through /proc/PPID/root", "cat /proc/$PPID/root" + j.token},
		{"read through /dev/fd of a handle on an ancestor", "exec 3<" + j.home + " && cat /dev/fd/3/mcp-token"},
		{"read through a symlink it creates", "ln -s " + j.token + " link && cat link"},
		{"read through a symlinked folder it creates", "ln -s " + cfgDir + " d && cat d/config.yaml"},
		{"write the config", "echo x >> " + j.config},
		{"truncate the token", ": > " + j.token},
		{"truncate the token by path", "truncate -s 0 " + j.token},
		{"create a file beside the token", "echo x > " + j.home + "/new"},
		{"create a file in the protected folder", "echo x > " + cfgDir + "/new.yaml"},
		{"rename a file over the token", "echo x > f && mv -f f " + j.token},
		{"rename the token away", "mv " + j.token + " " + j.work + "/stolen"},
		{"remove the token", "rm -f " + j.token + " && test ! -e " + j.token},
		{"hard-link the token into the cwd", "ln " + j.token + " hard && cat hard"},
		{"execute a program in the protected folder", j.hiddenExec},
		{"write the tool binary", "echo 'echo owned' >> " + j.tool},
		{"truncate the tool binary", ": > " + j.tool},
		{"rename over the tool binary", "echo x > f && mv -f f " + j.tool},
		{"remove the tool binary", "rm -f " + j.tool + " && test ! -e " + j.tool},
		{"open the parent's memory", "exec 3</proc/$PPID/mem"},
		{"read the parent's environment", "cat /proc/$PPID/environ | grep -q ."},
		{"reach the parent's open files", "readlink /proc/$PPID/fd/0"},
		{"list the parent's working folder", "ls /proc/$PPID/cwd/ >/dev/null"},
	}
	if unshareWorks() {
		rows = append(rows, struct{ name, script string }{"mount over the protected folder", "unshare -Urm sh -c 'mount -t tmpfs none " + cfgDir + "'"})
	}
	if j.sb == nil || j.sb.support.ABI >= 6 { // signal scoping
		rows = append(rows, struct{ name, script string }{"signal the parent", "kill -0 $PPID"})
	}
	return rows
}

// unshareWorks reports whether this machine lets a process make a user
// and mount namespace, without which the mount attack cannot be tried.
func unshareWorks() bool {
	return exec.Command("unshare", "-Urm", "true").Run() == nil
}

func TestSandboxKeepsEveryPathAwayFromTheProtectedSet(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: every protected path tried from a confined child")
	}
	for _, viaLauncher := range []bool{false, true} {
		name := "direct"
		if viaLauncher {
			name = "through the launcher"
		}
		t.Run(name, func(t *testing.T) { attackJail(t, newJailStarting(t, viaLauncher)) })
	}
}

// attackJail tries every attack on j from a child j's sandbox confines.
func attackJail(t *testing.T, j *jail) {
	attacks := attacks(j)
	before := snapshotFiles(t, j.config, j.token, j.tool)
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			res := j.sh(t, a.script)
			if res.Err != nil {
				t.Fatalf("run failed to start: %v", res.Err)
			}
			if res.ExitCode == 0 {
				t.Errorf("the attack succeeded: stdout %q stderr %q", res.Stdout, res.Stderr)
			}
			if strings.Contains(res.Stdout+res.Stderr, "s3cret-token-bytes") || strings.Contains(res.Stdout, "tools: {}") {
				t.Errorf("protected bytes reached the output: %q", res.Stdout+res.Stderr)
			}
		})
	}
	if after := snapshotFiles(t, j.config, j.token, j.tool); after != before {
		t.Errorf("protected files changed:\n before %s\n after  %s", before, after)
	}
}

func TestSandboxLeavesEverythingElseAsItWas(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: what a confined child may still reach")
	}
	j := newJail(t)
	allowed := []struct{ name, script, want string }{
		{"read a credential beside the protected folder", "cat " + j.home + "/.ssh/id_test", "PRIVATE KEY"},
		{"write a sibling of the protected folder", "echo more >> " + j.other + " && cat " + j.other, "more"},
		{"write and read back in the cwd", "echo hi > out && cat out", "hi"},
		{"create and remove a folder in the cwd", "mkdir -p d/e && rmdir d/e d && echo ok", "ok"},
		{"rename across folders in the cwd", "mkdir a b && echo x > a/f && mv a/f b/f && cat b/f", "x"},
		{"run the write-protected tool", j.tool, "tool ran"},
		{"read the write-protected tool", "head -c 9 " + j.tool, "#!/bin/sh"},
		{"list the names in the protected folder", "ls " + filepath.Dir(j.config), "config.yaml"},
		{"list the folder above", "ls " + j.home, "mcp-token"},
		{"run a descendant of a descendant", "sh -c 'sh -c \"cat " + j.home + "/.ssh/id_test\"'", "PRIVATE KEY"},
		{"use /dev/null", "echo x > /dev/null && echo ok", "ok"},
	}
	for _, a := range allowed {
		t.Run(a.name, func(t *testing.T) {
			res := j.sh(t, a.script)
			if res.Err != nil || res.ExitCode != 0 || !strings.Contains(res.Stdout, a.want) {
				t.Errorf("exit %d, err %v, stdout %q, stderr %q; want success printing %q", res.ExitCode, res.Err, res.Stdout, res.Stderr, a.want)
			}
		})
	}
}

// TestSandboxAttacksWorkUnconfined is the control: without a sandbox
// every attack works, each in a jail of its own (some destroy it), so no
// row of the table above passes merely because it cannot work.
func TestSandboxAttacksWorkUnconfined(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: the sandbox attacks run unconfined as a control")
	}
	names := attacks(newJail(t))
	for i := range names {
		t.Run(names[i].name, func(t *testing.T) {
			j := newJail(t)
			j.sb = nil
			a := attacks(j)[i]
			if res := j.sh(t, a.script); res.ExitCode != 0 {
				t.Errorf("unconfined, %q exited %d: %s", a.script, res.ExitCode, res.Stderr)
			}
		})
	}
}

func TestSandboxSeesEntriesMadeAfterItsRulesWereBuilt(t *testing.T) {
	j := newJail(t)
	if res := j.sh(t, "true"); res.ExitCode != 0 {
		t.Fatalf("first run: %+v", res)
	}
	// The operator's own process adds a repository in $HOME, a folder
	// above a protected item, after the rules were built.
	repo := filepath.Join(j.home, "repo")
	if err := os.MkdirAll(repo, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "f"), []byte("fresh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := j.sh(t, "cat "+repo+"/f && echo y > "+repo+"/g"); res.ExitCode != 0 || !strings.Contains(res.Stdout, "fresh") {
		t.Errorf("exit %d stdout %q stderr %q; a folder made after the rules must be reachable", res.ExitCode, res.Stdout, res.Stderr)
	}
	// A protected file replaced by rename (as wraptool's own atomic
	// writes do) stays protected.
	tmp := j.token + ".tmp"
	if err := os.WriteFile(tmp, []byte("s3cret-token-bytes rotated\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, j.token); err != nil {
		t.Fatal(err)
	}
	if res := j.sh(t, "cat "+j.token); res.ExitCode == 0 {
		t.Errorf("the replaced token was readable: %q", res.Stdout)
	}
}

func TestSandboxKeepsItsRulesWhileNothingChanges(t *testing.T) {
	j := newJail(t)
	// The folders watched include the shared temporary folder above the
	// jail, where parallel tests make and remove entries: an attempt whose
	// build raced such a change is rightly not valid, so take the first
	// that nothing disturbed (bounded).
	var rs *ruleset
	for attempt := 0; ; attempt++ {
		built, err := buildRuleset(newPlan(j.sb.protected), j.sb.support)
		if err != nil {
			t.Fatal(err)
		}
		built.keep = true // as if every folder had been still for a while
		if built.valid() {
			rs = built
			break
		}
		built.close()
		if attempt == 50 {
			t.Fatal("rules built a moment ago were never valid in 50 attempts")
		}
	}
	defer rs.close()
	if err := os.WriteFile(filepath.Join(j.home, "new"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if rs.valid() {
		t.Error("rules stayed valid after a new entry in a folder above a protected item")
	}
}

func TestSandboxThatCannotConfineStartsNothing(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	sup := Probe(func(k string) string {
		if k == TestNoLandlockEnv {
			return "enosys"
		}
		return ""
	})
	if sup.OK() {
		t.Fatal("the simulated kernel without Landlock can confine")
	}
	sb := NewSandbox(Protected{Hidden: []string{"/nonexistent/wraptool"}}, sup)
	res := Run(context.Background(), Command{Argv: []string{"/bin/sh", "-c", "touch " + marker}, Env: []string{}, Sandbox: sb})
	if !errors.Is(res.Err, ErrNoConfinement) || res.ExitCode != -1 {
		t.Errorf("Run: exit %d err %v; want exit -1 and ErrNoConfinement", res.ExitCode, res.Err)
	}
	if !strings.Contains(res.Err.Error(), "this kernel has no Landlock") {
		t.Errorf("error %q does not name what is missing", res.Err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the process ran although it could not be confined")
	}
}

func TestProbeNamesWhatIsMissing(t *testing.T) {
	for _, tt := range []struct{ sim, want string }{
		{"enosys", "this kernel has no Landlock (Linux 5.13 or later, built with CONFIG_SECURITY_LANDLOCK, is needed)"},
		{"eopnotsupp", "Landlock is disabled in this kernel (add landlock to the lsm= boot parameter)"},
	} {
		t.Run(tt.sim, func(t *testing.T) {
			sup := Probe(func(string) string { return tt.sim })
			if sup.OK() || !errors.Is(sup.Err, ErrNoConfinement) || !strings.HasSuffix(sup.Err.Error(), tt.want) {
				t.Errorf("Probe = %v; want an ErrNoConfinement ending %q", sup, tt.want)
			}
		})
	}
}

func TestConfinedStartLeavesWraptoolUnconfined(t *testing.T) {
	j := newJail(t)
	for i := range 20 {
		if res := j.sh(t, "true"); res.ExitCode != 0 {
			t.Fatalf("run %d: %+v", i, res)
		}
	}
	// Every thread of this process still reads the token.
	for range 50 {
		if _, err := os.ReadFile(j.token); err != nil {
			t.Fatalf("wraptool lost access to its own file after confined starts: %v", err)
		}
	}
}

func TestConfinerKeepsOneSandboxPerSet(t *testing.T) {
	c := NewConfiner(Support{Mechanism: "landlock", ABI: 7})
	a := c.For(Protected{Hidden: []string{"/x/b", "/x/a", "/x/a"}})
	if b := c.For(Protected{Hidden: []string{"/x/a", "/x/b"}}); b != a {
		t.Error("the same set gave another sandbox")
	}
	if b := c.For(Protected{Hidden: []string{"/x/a"}}); b == a {
		t.Error("another set gave the same sandbox")
	}
	var nilC *Confiner
	if nilC.For(Protected{Hidden: []string{"/x"}}) != nil {
		t.Error("a nil Confiner confined")
	}
}

// snapshotFiles is the bytes of each file, for a before/after comparison.
func snapshotFiles(t *testing.T, paths ...string) string {
	t.Helper()
	var b bytes.Buffer
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(p + "=" + strconv.Quote(string(data)) + " ")
	}
	return b.String()
}

// TestScrubEnvironHelper is the child of TestScrubEnvironBlanksProcEnviron:
// it blanks its environment block, says so, and waits for stdin to close.
func TestScrubEnvironHelper(t *testing.T) {
	mode := os.Getenv("WRAPTOOL_SCRUB_HELPER")
	if mode == "" {
		t.Skip("run by TestScrubEnvironBlanksProcEnviron")
	}
	if mode == "scrub" {
		if err := ScrubEnviron(); err != nil {
			t.Fatal(err)
		}
	}
	if os.Getenv("WRAPTOOL_SCRUB_CANARY") != "canary-value" {
		t.Fatal("Go's own copy of the environment was lost")
	}
	os.Stdout.WriteString("ready\n")
	io.Copy(io.Discard, os.Stdin)
}

func TestScrubEnvironBlanksProcEnviron(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: the /proc environ scrub starts many confined children")
	}
	for _, scrub := range []bool{false, true} {
		t.Run("scrub="+strconv.FormatBool(scrub), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestScrubEnvironHelper$")
			cmd.Env = append(os.Environ(), "WRAPTOOL_SCRUB_CANARY=canary-value")
			if scrub {
				cmd.Env = append(cmd.Env, "WRAPTOOL_SCRUB_HELPER=scrub")
			} else {
				cmd.Env = append(cmd.Env, "WRAPTOOL_SCRUB_HELPER=keep")
			}
			stdin, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { stdin.Close(); cmd.Wait() }()
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || line != "ready\n" {
				t.Fatalf("helper said %q, %v", line, err)
			}
			env, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/environ")
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.Contains(env, []byte("canary-value")); got == scrub {
				t.Errorf("scrub=%v: /proc/PID/environ holds the canary: %v (%q)", scrub, got, env)
			}
		})
	}
}

func TestEnvBounds(t *testing.T) {
	fields := make([]string, 52)
	for i := range fields {
		fields[i] = strconv.Itoa(i + 1)
	}
	line := "123 (a) b) c) " + strings.Join(fields[2:], " ")
	start, end, err := envBounds(line)
	if err != nil || start != 50 || end != 51 {
		t.Errorf("envBounds = %d, %d, %v; want fields 50 and 51", start, end, err)
	}
	for _, bad := range []string{"", "no paren", "1 (x) S 1 2"} {
		if _, _, err := envBounds(bad); err == nil {
			t.Errorf("envBounds(%q) found bounds", bad)
		}
	}
}

// BenchmarkStart measures what confinement adds to a start, side by side:
// /bin/true unconfined, confined with kept rules, and confined with the
// rules built anew for every start.
func BenchmarkStart(b *testing.B) {
	sup := Probe(nil)
	if !sup.OK() {
		b.Skip(sup.Err)
	}
	home := b.TempDir()
	cfg := filepath.Join(home, ".config", "wraptool")
	if err := os.MkdirAll(cfg, 0o700); err != nil {
		b.Fatal(err)
	}
	protected := Protected{Hidden: []string{cfg}, ReadOnly: []string{"/bin/true"}}
	kept := NewSandbox(protected, sup)
	defer kept.Close()
	run := func(b *testing.B, sb func() *Sandbox) {
		for b.Loop() {
			if res := Run(context.Background(), Command{Argv: []string{"/bin/true"}, Env: []string{}, Sandbox: sb()}); res.ExitCode != 0 {
				b.Fatalf("%+v", res)
			}
		}
	}
	b.Run("unconfined", func(b *testing.B) { run(b, func() *Sandbox { return nil }) })
	b.Run("confined", func(b *testing.B) { run(b, func() *Sandbox { return kept }) })
	// The path macOS takes: one more exec, of this test binary, per start.
	launched := sup
	launched.Launcher = true
	viaLauncher := NewSandbox(protected, launched)
	defer viaLauncher.Close()
	b.Run("confined-launcher", func(b *testing.B) { run(b, func() *Sandbox { return viaLauncher }) })
	b.Run("confined-rebuilt", func(b *testing.B) {
		run(b, func() *Sandbox { return NewSandbox(protected, sup) })
	})
}

func TestDACGuardsOnlyWhatThisUserCannotReplace(t *testing.T) {
	if os.Geteuid() == 0 {
		// Root passes every permission: nothing is guarded.
		if dacGuards("/usr/bin/true") || dacGuards("/bin/true") {
			t.Error("as root, a system binary counts as guarded by permissions")
		}
		return
	}
	if !dacGuards("/usr/bin/true") {
		t.Error("/usr/bin/true, root's in root's folders, is not guarded")
	}
	mine := filepath.Join(t.TempDir(), "tool")
	if err := os.WriteFile(mine, nil, 0o700); err != nil {
		t.Fatal(err)
	}
	if dacGuards(mine) {
		t.Error("a binary this user owns counts as guarded")
	}
}

func TestSandboxRuleNeverFollowsATemporaryFileOverAProtectedOne(t *testing.T) {
	j := newJail(t)
	// An atomic write's temporary file beside the token, as wraptool's own
	// writes and editors leave them, exists when the rules are built.
	tmp := filepath.Join(j.home, ".mcp-token.tmp-123")
	if err := os.WriteFile(tmp, []byte("s3cret-token-bytes next\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ready, goOn := filepath.Join(j.work, "ready"), filepath.Join(j.work, "go")
	done := make(chan Result, 1)
	go func() {
		// A call already running when the write completes.
		done <- j.sh(t, "touch "+ready+"; i=0; while [ ! -e "+goOn+" ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; cat "+j.token)
	}()
	waittest.File(t, 10*time.Second, ready)
	if err := os.Rename(tmp, j.token); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goOn, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.ExitCode == 0 || strings.Contains(res.Stdout, "s3cret") {
		t.Errorf("a child confined before the rename read the new token: exit %d stdout %q", res.ExitCode, res.Stdout)
	}
}

func TestShadowed(t *testing.T) {
	for _, tt := range []struct {
		name string
		want bool
	}{
		{".config.yaml.apply-123", true},
		{".config.yaml.tmp-9", true},
		{".grants.key.42", true},
		{"config.yaml~", true},
		{".config.yaml.swp", true},
		{"#config.yaml#", true},
		{".wraptool-sock-1", true},
		{"config.yml", false},
		{"notes.txt", false},
		{".bashrc", false},
	} {
		if got := shadowed(tt.name, []string{"config.yaml", "grants.key"}); got != tt.want {
			t.Errorf("shadowed(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// mainThreadHelperEnv runs the test binary as mainThreadHelper.
const mainThreadHelperEnv = "WRAPTOOL_MAIN_THREAD_HELPER"

// helperChild runs the test binary as mainThreadHelper when
// TestNoThreadKeepsTheRestriction started it so: confined starts from the
// main goroutine, which may run on the main thread.
func helperChild() (code int, ok bool) {
	if os.Getenv(mainThreadHelperEnv) == "" {
		return 0, false
	}
	return mainThreadHelper(), true
}

// mainThreadHelper starts confined processes from the main goroutine,
// then prints how many of its own threads carry no_new_privs (which only
// a restricted thread has): a thread the runtime kept instead of ending.
func mainThreadHelper() int {
	sup := Probe(nil)
	dir, err := os.MkdirTemp("", "wraptool-m0-")
	if err != nil {
		return 1
	}
	defer os.RemoveAll(dir)
	sb := NewSandbox(Protected{Hidden: []string{filepath.Join(dir, "secret")}}, sup)
	defer sb.Close()
	for range 20 {
		if res := Run(context.Background(), Command{Argv: []string{"/bin/true"}, Env: []string{}, Sandbox: sb}); res.ExitCode != 0 {
			os.Stdout.WriteString("start failed: " + res.Stderr + "\n")
			return 1
		}
	}
	tasks, _ := os.ReadDir("/proc/self/task")
	restricted := 0
	for _, task := range tasks {
		status, err := os.ReadFile("/proc/self/task/" + task.Name() + "/status")
		if err == nil && strings.Contains(string(status), "NoNewPrivs:\t1") {
			restricted++
		}
	}
	os.Stdout.WriteString("restricted threads: " + strconv.Itoa(restricted) + "\n")
	return 0
}

// TestNoThreadKeepsTheRestriction: a confined start never restricts a
// thread that outlives it. The runtime parks the main thread instead of
// ending it when a goroutine exits locked to it, so a start there would
// leave wraptool's thread-group leader restricted and in its child's
// domain.
func TestNoThreadKeepsTheRestriction(t *testing.T) {
	requireLandlock(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), mainThreadHelperEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "restricted threads: 0" {
		t.Errorf("after confined starts from the main goroutine: %s, want 0", got)
	}
}

// TestSandboxKeepsSymlinksOnTheWayInPlace: a config reached through a
// symlinked folder (~/proj/.wraptool -> ~/dotfiles/wraptool) is read by
// wraptool through the link, so the link can be neither moved away nor
// replaced by a folder of the child's making.
func TestSandboxKeepsSymlinksOnTheWayInPlace(t *testing.T) {
	j := newJail(t)
	real := filepath.Join(j.home, "dotfiles", "wraptool")
	if err := os.MkdirAll(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "config.yaml"), []byte("tools: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(j.home, "proj")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(proj, ".wraptool")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	j.sb = NewSandbox(Protected{Hidden: []string{filepath.Join(link, "config.yaml")}}, j.sb.support)
	t.Cleanup(j.sb.Close)
	res := Run(context.Background(), Command{
		Argv: []string{"/bin/sh", "-c", "mv .wraptool .old; rm -f .wraptool; mkdir .wraptool && echo 'mcp: {confinement: off}' > .wraptool/config.yaml"},
		Dir:  proj, Env: []string{"PATH=/usr/bin:/bin"}, Sandbox: j.sb,
	})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if target, err := os.Readlink(link); err != nil || target != real {
		t.Errorf("the link is now %q (%v), want it still pointing at %s; the child said %q", target, err, real, res.Stderr)
	}
	if data, _ := os.ReadFile(filepath.Join(link, "config.yaml")); string(data) != "tools: {}\n" {
		t.Errorf("wraptool would read %q through the link", data)
	}
	// Other entries of the folder holding the link stay usable.
	if res := Run(context.Background(), Command{Argv: []string{"/bin/sh", "-c", "ls " + proj + " >/dev/null && cat " + j.home + "/.ssh/id_test"},
		Env: []string{"PATH=/usr/bin:/bin"}, Sandbox: j.sb}); res.ExitCode != 0 {
		t.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
	}
}

func TestSandboxRunsAnExecutableKeptInAProtectedFolder(t *testing.T) {
	j := newJail(t)
	inside := filepath.Join(filepath.Dir(j.config), "hook.sh")
	if err := os.WriteFile(inside, []byte("#!/bin/sh\necho hook ran\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	j.sb = NewSandbox(Protected{Hidden: []string{filepath.Dir(j.config)}, ReadOnly: []string{inside}}, j.sb.support)
	t.Cleanup(j.sb.Close)
	if res := j.sh(t, inside); res.ExitCode != 0 || !strings.Contains(res.Stdout, "hook ran") {
		t.Errorf("exit %d stdout %q stderr %q; want the executable to run", res.ExitCode, res.Stdout, res.Stderr)
	}
	for _, attack := range []string{"cat " + j.config, "echo x >> " + inside, "ls " + filepath.Dir(j.config) + " >/dev/null && cat " + filepath.Dir(j.config) + "/config.yaml"} {
		if res := j.sh(t, attack); res.ExitCode == 0 {
			t.Errorf("%s worked: %q", attack, res.Stdout)
		}
	}
}

// TestSandboxResolvesDotDotAfterALink: "home/lnk/../tok" is, to the
// kernel, the folder lnk points to's parent, not home: that file is the
// one protected.
func TestSandboxResolvesDotDotAfterALink(t *testing.T) {
	j := newJail(t)
	deep := filepath.Join(j.home, ".ssh", "deep")
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(deep, filepath.Join(j.home, "lnk")); err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(j.home, ".ssh", "tok")
	if err := os.WriteFile(tok, []byte("s3cret-token-bytes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	j.sb = NewSandbox(Protected{Hidden: []string{j.home + "/lnk/../tok"}}, j.sb.support)
	t.Cleanup(j.sb.Close)
	if res := j.sh(t, "cat "+tok); res.ExitCode == 0 {
		t.Errorf("the file the kernel reaches by %s/lnk/../tok was readable: %q", j.home, res.Stdout)
	}
}

// TestSandboxConcurrentStartsWhileFoldersChange: starts from many
// goroutines share, rebuild and retire the rules while the folder above a
// protected file changes under them; every one runs, none reaches the
// token (the race detector watches the bookkeeping).
func TestSandboxConcurrentStartsWhileFoldersChange(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: confined starts racing folder changes run for seconds")
	}
	j := newJail(t)
	stop := make(chan struct{})
	churned := make(chan struct{})
	go func() {
		defer close(churned)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			f := filepath.Join(j.home, "churn-"+strconv.Itoa(i%5))
			os.WriteFile(f, nil, 0o600)
			os.Remove(f)
		}
	}()
	var failures atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				res := j.sh(t, "cat "+j.home+"/.ssh/id_test && ! cat "+j.token+" 2>/dev/null")
				if res.ExitCode != 0 || strings.Contains(res.Stdout, "s3cret") {
					failures.Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	<-churned
	if n := failures.Load(); n > 0 {
		t.Errorf("%d of 80 starts did not run as confined", n)
	}
}

func TestConfinerForKeyComputesOncePerKey(t *testing.T) {
	c := NewConfiner(Support{Mechanism: "landlock", ABI: 7})
	calls := 0
	set := func() Protected { calls++; return Protected{Hidden: []string{"/x/a"}} }
	k1, k2 := new(int), new(int)
	a := c.ForKey(k1, set)
	if b := c.ForKey(k1, set); b != a || calls != 1 {
		t.Errorf("the same key: same sandbox %v, %d computations, want true and 1", b == a, calls)
	}
	if b := c.ForKey(k2, set); b != a || calls != 2 {
		t.Errorf("another key, the same set: same sandbox %v, %d computations, want true and 2", b == a, calls)
	}
}
