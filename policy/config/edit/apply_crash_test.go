package edit

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
)

// The crash test's child runs when these are set: the config to apply to,
// and the index of the first request of the sequence to apply.
const (
	crashConfigEnv = "WRAPTOOL_TEST_APPLY_CRASH_CONFIG"
	crashStartEnv  = "WRAPTOOL_TEST_APPLY_CRASH_START"
)

const crashConfig = `# the crash test's config
mcp:
  listen: 127.0.0.1:8717
tools:
  git:
    binary: $DIR/bin/git
    allow:
      - subcommand: [status]   # stays first
    deny:
      - subcommand: [config]
`

// crashRequest is the i-th request of the sequence the child applies: every
// fourth opens a new rule, the others add a flag to it.
func crashRequest(i int) (sub, flags []string) {
	first := i - i%4
	return []string{fmt.Sprintf("s%d", first)}, []string{fmt.Sprintf("--f%d", i)}
}

// TestApplyCrashChild is the crash test's child process; run alone it does
// nothing.
func TestApplyCrashChild(t *testing.T) {
	cfg := os.Getenv(crashConfigEnv)
	if cfg == "" {
		t.Skip("the child of TestApplyCrashLeavesOldOrNewConfig")
	}
	start, _ := strconv.Atoi(os.Getenv(crashStartEnv))
	o := applyOptions(filepath.Dir(cfg))
	fmt.Println("ready")
	for i := start; i < start+10000; i++ {
		sub, flags := crashRequest(i)
		if _, err := ApplyRequest(cfg, "git", sub, flags, o); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(3)
		}
	}
	os.Exit(0)
}

// A child process applies requests in a loop and is killed with SIGKILL at
// varied moments. After every kill the config parses and is exactly one of
// the states the sequence produces — the one before some apply or the one
// after it, never a mix — and the temporary files killed applies leave
// behind neither collide with the config's name nor stop a later apply.
func TestApplyCrashLeavesOldOrNewConfig(t *testing.T) {
	t.Parallel()
	dir := configtest.ApplyFixture(t)
	cfg := configtest.WriteConfig(t, dir, "config.yaml", crashConfig, 0o600)
	o := applyOptions(dir)

	// states[k] is the config after the first k requests.
	states := [][]byte{configtest.ReadFile(t, cfg)}
	state := func(k int) []byte {
		for len(states) <= k {
			n := len(states) - 1
			sub, flags := crashRequest(n)
			m, err := config.MergeRequest(cfg, states[n], "git", sub, flags, o)
			if err != nil {
				t.Fatalf("planning request %d: %v", n, err)
			}
			states = append(states, m.Out)
		}
		return states[k]
	}

	rounds := 40
	if testing.Short() {
		rounds = 10
	}
	k, writes := 0, 0
	leftovers := map[string]bool{}
	// The kills are spread over the first ten steps of applying; a machine
	// slow enough that ten rounds wrote nothing gets steps twice as long,
	// up to 64 ms, so the kills reach past the first write there too.
	step := time.Millisecond
	for round := range rounds {
		if round > 0 && round%10 == 0 && writes == 0 && step < 64*time.Millisecond {
			step *= 2
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestApplyCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashConfigEnv+"="+cfg, crashStartEnv+"="+strconv.Itoa(k))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		if line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: child did not start: %q %s", round, line, stderr.String())
		}
		// Spread the kills over the first steps of applying.
		time.Sleep(time.Duration(round%10) * step)
		cmd.Process.Signal(syscall.SIGKILL)
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("round %d: child ended on its own (%v): %s", round, err, stderr.String())
		}

		got := configtest.ReadFile(t, cfg)
		next := -1
		for j := k; j <= k+1000 && next < 0; j++ {
			if bytes.Equal(got, state(j)) {
				next = j
			}
		}
		if next < 0 {
			t.Fatalf("round %d: the config is none of the states the sequence produces:\n%s", round, got)
		}
		if _, err := config.Parse(cfg, got, o); err != nil {
			t.Fatalf("round %d: the config does not parse: %v", round, err)
		}
		writes += next - k
		k = next
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if name := e.Name(); name != "config.yaml" && name != "bin" {
				if !strings.HasPrefix(name, ".config.yaml.apply-") {
					t.Errorf("round %d: unexpected file %s beside the config", round, name)
				}
				leftovers[name] = true
			}
		}
	}
	t.Logf("%d rounds, %d applies written, %d temporary files left by kills", rounds, writes, len(leftovers))
	if writes == 0 {
		t.Errorf("no apply completed in %d rounds: the kills came too early to test anything", rounds)
	}

	// A later apply succeeds over whatever the kills left, and cleans up.
	sub, flags := crashRequest(k)
	if _, err := ApplyRequest(cfg, "git", sub, flags, o); err != nil {
		t.Fatalf("apply after the kills: %v", err)
	}
	if got := configtest.ReadFile(t, cfg); !bytes.Equal(got, state(k+1)) {
		t.Errorf("apply after the kills wrote:\n%s\nwant:\n%s", got, state(k+1))
	}
	assertNoTemp(t, dir)
}
