package integration

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wraptool/wraptool/integration/waittest"
)

// restartTimeout bounds the service's restart after a kill: systemd waits
// RestartSec (5 s), then serve loads and binds.
const restartTimeout = 60 * time.Second

// `service install` under the real systemd user manager: the unit starts
// serve with the test's config (its /healthz answers), a kill -9 of the
// server is followed by a new server, and `service uninstall` stops it
// and removes every file it made. It needs a running user manager and no
// wraptool.service of the operator's; otherwise it skips, saying which.
func TestServiceUnderRealSystemd(t *testing.T) {
	slow(t, "service install under the real systemd user manager")
	systemctl, err := exec.LookPath("systemctl")
	if err != nil {
		t.Skip("no systemctl on PATH: the real install, restart after kill -9 and uninstall are covered only by the fake-systemctl tests")
	}
	state, _ := exec.CommandContext(t.Context(), systemctl, "--user", "is-system-running").Output()
	if s := strings.TrimSpace(string(state)); s != "running" && s != "degraded" {
		t.Skipf("no systemd user manager answers (systemctl --user is-system-running says %q, XDG_RUNTIME_DIR=%q): "+
			"the real install, restart after kill -9 and uninstall are covered only by the fake-systemctl tests", s, os.Getenv("XDG_RUNTIME_DIR"))
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip(err)
	}
	unit := filepath.Join(home, ".config", "systemd", "user", "wraptool.service")
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		unit = filepath.Join(x, "systemd", "user", "wraptool.service")
	}
	if _, err := os.Lstat(unit); err == nil {
		t.Skipf("%s already exists: this test does not touch a service of yours", unit)
	}

	dir := t.TempDir()
	cfg := serverConfig(t, dir, "")
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var url string
	for _, line := range strings.Split(cfg, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "listen: "); ok {
			url = "http://" + v
		}
	}
	env := append(os.Environ(), "HOME="+home)
	svc := func(args ...string) (string, string, int) {
		return runWraptool(t, env, append([]string{"--config", cfgPath, "service"}, args...)...)
	}
	t.Cleanup(func() { svc("uninstall") })

	if out, stderr, code := svc("install"); code != 0 {
		t.Fatalf("install: exit %d\n%s%s", code, out, stderr)
	}
	waitHealthy(t, url)
	pid := mainPID(t, systemctl)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", pid, err)
	}
	waittest.Until(t, restartTimeout, func() error {
		if p := mainPIDOrZero(t, systemctl); p == 0 || p == pid {
			return fmt.Errorf("no new server after kill -9 of %d (MainPID %d)", pid, p)
		}
		return nil
	})
	waitHealthy(t, url)
	if out, _, _ := svc("status"); !strings.Contains(out, "active: active") || !strings.Contains(out, "config: ") {
		t.Errorf("status after the restart:\n%s", out)
	}

	if out, stderr, code := svc("uninstall"); code != 0 {
		t.Fatalf("uninstall: exit %d\n%s%s", code, out, stderr)
	}
	if _, err := os.Lstat(unit); !os.IsNotExist(err) {
		t.Errorf("uninstall left %s (%v)", unit, err)
	}
	if err := exec.CommandContext(t.Context(), systemctl, "--user", "cat", "wraptool.service").Run(); err == nil {
		t.Error("systemd still knows wraptool.service after uninstall")
	}
	waittest.Until(t, startTimeout, func() error {
		if resp, err := http.Get(url + "/healthz"); err == nil {
			resp.Body.Close()
			return fmt.Errorf("%s still answers after uninstall", url)
		}
		return nil
	})
}

func mainPID(t *testing.T, systemctl string) int {
	t.Helper()
	pid := mainPIDOrZero(t, systemctl)
	if pid == 0 {
		t.Fatal("systemd names no MainPID for wraptool.service")
	}
	return pid
}

func mainPIDOrZero(t *testing.T, systemctl string) int {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), systemctl, "--user", "show", "-p", "MainPID", "--value", "wraptool.service").Output()
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return pid
}
