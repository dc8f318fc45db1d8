package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/cmd/wraptool/service"
)

// serviceFixture is a home, an installed-looking wraptool and a fake
// systemctl and launchctl (testdata/fakemanager) on PATH, which log
// their argv.
type serviceFixture struct {
	home, bin, fakes, config string
	goos                     string
	path                     string // $PATH
	exe                      string // what os.Executable answers
	gobin                    string
}

func newServiceFixture(t *testing.T, goos string) *serviceFixture {
	t.Helper()
	root := t.TempDir()
	f := &serviceFixture{home: filepath.Join(root, "home"), fakes: filepath.Join(root, "fakes"), goos: goos}
	f.bin = filepath.Join(f.home, "go", "bin", "wraptool")
	f.exe = f.bin
	f.config = filepath.Join(f.home, "cfg dir", "config.yaml")
	for _, d := range []string{filepath.Dir(f.bin), f.fakes} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(f.bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join("testdata", "fakemanager", "manager"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"systemctl", "launchctl"} {
		if err := os.WriteFile(filepath.Join(f.fakes, name), script, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.path = f.fakes + ":/usr/bin:/bin"
	return f
}

func (f *serviceFixture) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	env := map[string]string{"HOME": f.home, "PATH": f.path, "GOBIN": f.gobin}
	a := newApp(func(k string) string { return env[k] }, nil, nil)
	var out, errOut bytes.Buffer
	a.stdout, a.stderr, a.stdin = &out, &errOut, strings.NewReader("")
	a.svc = serviceSys{goos: f.goos, executable: func() (string, error) { return f.exe, nil }, uid: func() int { return 501 }}
	err := a.exec(t.Context(), append([]string{"--config", f.config}, args...))
	code = exitCode(err, &errOut)
	return out.String(), errOut.String(), code
}

// argv is what the fake managers were run with, one line each; taking it
// clears the log.
func (f *serviceFixture) argv(t *testing.T) []string {
	t.Helper()
	log := filepath.Join(f.fakes, "argv.log")
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(log)
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func (f *serviceFixture) unitFile() string {
	return filepath.Join(f.home, ".config", "systemd", "user", "wraptool.service")
}

func (f *serviceFixture) plistFile() string {
	return filepath.Join(f.home, "Library", "LaunchAgents", "dev.wraptool.serve.plist")
}

func wantArgv(t *testing.T, step string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s ran %q, want %q", step, got, want)
	}
}

// On Linux: install writes the unit (0644, the same --config, this
// binary) and runs daemon-reload then enable --now; status reads it back
// and asks is-enabled and is-active; uninstall disables, removes and
// reloads, leaving nothing behind.
func TestServiceLifecycleSystemd(t *testing.T) {
	t.Parallel()
	f := newServiceFixture(t, "linux")
	stdout, stderr, code := f.run(t, "service", "install")
	if code != exitOK {
		t.Fatalf("install: exit %d, stderr %q", code, stderr)
	}
	wantArgv(t, "install", f.argv(t), []string{"systemctl --user daemon-reload", "systemctl --user enable --now wraptool.service"})
	fi, err := os.Stat(f.unitFile())
	if err != nil {
		t.Fatalf("install wrote no unit: %v (stdout %q)", err, stdout)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("unit mode = %v, want 0644", fi.Mode().Perm())
	}
	got, _ := os.ReadFile(f.unitFile())
	want, _ := service.SystemdUnit(service.Spec{Binary: f.bin, Config: f.config,
		Env: []service.Var{{Name: "HOME", Value: f.home}, {Name: "PATH", Value: f.path}}})
	if string(got) != want {
		t.Errorf("unit:\n%s\nwant:\n%s", got, want)
	}

	stdout, _, code = f.run(t, "service", "status")
	wantStatus := "systemd user unit wraptool.service\ninstalled: " + shellQuote(f.unitFile()) + "\nconfig: " + shellQuote(f.config) +
		"\nenabled: enabled\nactive: active\n"
	if code != exitOK || stdout != wantStatus {
		t.Errorf("status: exit %d\n%s\nwant:\n%s", code, stdout, wantStatus)
	}
	wantArgv(t, "status", f.argv(t), []string{"systemctl --user is-enabled wraptool.service", "systemctl --user is-active wraptool.service"})

	// Installing again with the same unit reloads and enables, no restart.
	if _, stderr, code := f.run(t, "service", "install"); code != exitOK {
		t.Fatalf("second install: exit %d, %q", code, stderr)
	}
	wantArgv(t, "a second install", f.argv(t), []string{"systemctl --user daemon-reload", "systemctl --user enable --now wraptool.service"})

	_, stderr, code = f.run(t, "service", "uninstall")
	if code != exitOK {
		t.Fatalf("uninstall: exit %d, %q", code, stderr)
	}
	wantArgv(t, "uninstall", f.argv(t), []string{"systemctl --user disable --now wraptool.service", "systemctl --user daemon-reload"})
	entries, _ := os.ReadDir(filepath.Dir(f.unitFile()))
	if len(entries) != 0 {
		t.Errorf("uninstall left %v in %s", entries, filepath.Dir(f.unitFile()))
	}
	stdout, _, code = f.run(t, "service", "status")
	if code != exitOK || !strings.Contains(stdout, "installed: no") {
		t.Errorf("status after uninstall: exit %d, %q; want installed: no", code, stdout)
	}
}

// On macOS: install writes the agent and bootstraps it in gui/UID; a
// second install boots the old one out first; uninstall boots it out and
// removes the plist.
func TestServiceLifecycleLaunchd(t *testing.T) {
	t.Parallel()
	f := newServiceFixture(t, "darwin")
	if _, stderr, code := f.run(t, "service", "install"); code != exitOK {
		t.Fatalf("install: exit %d, stderr %q", code, stderr)
	}
	wantArgv(t, "install", f.argv(t), []string{"launchctl enable gui/501/dev.wraptool.serve", "launchctl bootstrap gui/501 " + f.plistFile()})
	got, err := os.ReadFile(f.plistFile())
	if err != nil {
		t.Fatal(err)
	}
	args, err := service.ProgramArguments(got)
	if err != nil || !slices.Equal(args, []string{f.bin, "--config", f.config, "serve"}) {
		t.Errorf("ProgramArguments = %q, %v", args, err)
	}
	if !bytes.Contains(got, []byte("<string>"+filepath.Join(f.home, "Library", "Logs", "wraptool.log")+"</string>")) {
		t.Errorf("the plist logs nowhere under ~/Library/Logs:\n%s", got)
	}
	if _, stderr, code := f.run(t, "service", "install"); code != exitOK {
		t.Fatalf("second install: exit %d, stderr %q", code, stderr)
	}
	wantArgv(t, "a second install", f.argv(t), []string{"launchctl bootout gui/501/dev.wraptool.serve",
		"launchctl enable gui/501/dev.wraptool.serve", "launchctl bootstrap gui/501 " + f.plistFile()})
	stdout, _, _ := f.run(t, "service", "status")
	if !strings.Contains(stdout, "config: "+shellQuote(f.config)+"\nloaded: yes\nrunning: yes\n") {
		t.Errorf("status = %q", stdout)
	}
	f.argv(t)
	if _, stderr, code := f.run(t, "service", "uninstall"); code != exitOK {
		t.Fatalf("uninstall: exit %d, stderr %q", code, stderr)
	}
	wantArgv(t, "uninstall", f.argv(t), []string{"launchctl bootout gui/501/dev.wraptool.serve"})
	if _, err := os.Lstat(f.plistFile()); !os.IsNotExist(err) {
		t.Errorf("uninstall left the plist: %v", err)
	}
}

// What install and uninstall refuse, and that a refusal writes nothing
// and runs nothing.
func TestServiceRefusals(t *testing.T) {
	t.Parallel()
	operators := "[Unit]\nDescription=my own wraptool\n[Service]\nExecStart=/usr/bin/wraptool serve\n"
	for _, tc := range []struct {
		name      string
		setup     func(t *testing.T, f *serviceFixture)
		args      []string
		wantErr   string
		wantUnit  string // the unit file's content after; "" means none
		wantArgv  []string
		wantCode  int
		checkLink bool
	}{
		{name: "an operator's unit is not replaced",
			setup: func(t *testing.T, f *serviceFixture) { writeUnit(t, f, operators) }, args: []string{"service", "install"},
			wantErr: "wraptool did not write it; leaving it alone (--force replaces it)", wantUnit: operators, wantCode: exitFailure},
		{name: "an operator's unit is not uninstalled",
			setup: func(t *testing.T, f *serviceFixture) { writeUnit(t, f, operators) }, args: []string{"service", "uninstall"},
			wantErr: "was not written by wraptool; leaving it alone", wantUnit: operators, wantCode: exitFailure},
		{name: "a symlink at the unit's path is refused even with --force",
			setup: func(t *testing.T, f *serviceFixture) {
				target := filepath.Join(f.home, "elsewhere")
				writeFile(t, target, operators)
				os.MkdirAll(filepath.Dir(f.unitFile()), 0o755)
				if err := os.Symlink(target, f.unitFile()); err != nil {
					t.Fatal(err)
				}
			}, args: []string{"service", "install", "--force"}, wantErr: "is not a regular file", wantUnit: operators, wantCode: exitFailure, checkLink: true},
		{name: "a config path holding a newline is refused",
			setup: func(t *testing.T, f *serviceFixture) {
				f.config = filepath.Join(f.home, "c\nExecStartPre=/bin/evil", "config.yaml")
			},
			args: []string{"service", "install"}, wantErr: "control character", wantCode: exitFailure},
		{name: "a go run build is refused with the go install to run",
			setup: func(t *testing.T, f *serviceFixture) {
				f.exe = filepath.Join(os.TempDir(), "go-build123", "b001", "exe", "wraptool")
				f.gobin = filepath.Join(f.home, "empty-gobin")
			},
			args: []string{"service", "install"}, wantErr: "run `go install ./cmd/wraptool` first", wantCode: exitFailure},
		{name: "a systemctl found only through a relative PATH entry is not run",
			setup: func(t *testing.T, f *serviceFixture) {
				wd, _ := os.Getwd()
				rel, err := filepath.Rel(wd, f.fakes)
				if err != nil {
					t.Skip(err)
				}
				f.path = rel
			},
			args: []string{"service", "install"}, wantErr: "`systemctl --user daemon-reload` failed: systemctl: not found on $PATH", wantUnit: "ours", wantCode: exitFailure},
		{name: "a failing manager is reported with what it said",
			setup: func(t *testing.T, f *serviceFixture) { writeFile(t, filepath.Join(f.fakes, "fail"), "enable\n") },
			args:  []string{"service", "install"}, wantErr: `enable --now wraptool.service` + "` failed: exit status 1: \"failed to enable: no user manager\"",
			wantUnit: "ours", wantCode: exitFailure,
			wantArgv: []string{"systemctl --user daemon-reload", "systemctl --user enable --now wraptool.service"}},
		{name: "uninstall with nothing installed says so",
			args: []string{"service", "uninstall"}, wantCode: exitOK},
		{name: "an argument is a usage error",
			args: []string{"service", "install", "now"}, wantErr: "service install takes no arguments", wantCode: exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newServiceFixture(t, "linux")
			if tc.setup != nil {
				tc.setup(t, f)
			}
			_, stderr, code := f.run(t, tc.args...)
			if code != tc.wantCode || !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("exit %d, stderr %q; want exit %d naming %q", code, stderr, tc.wantCode, tc.wantErr)
			}
			got, err := os.ReadFile(f.unitFile())
			switch {
			case tc.wantUnit == "" && !os.IsNotExist(err):
				t.Errorf("a unit was written: %q, %v", got, err)
			case tc.wantUnit == "ours" && !service.IsOurs(got):
				t.Errorf("unit = %q, want wraptool's", got)
			case tc.wantUnit != "" && tc.wantUnit != "ours" && string(got) != tc.wantUnit:
				t.Errorf("unit = %q, want it left as %q", got, tc.wantUnit)
			}
			if tc.checkLink {
				if fi, err := os.Lstat(f.unitFile()); err != nil || fi.Mode()&os.ModeSymlink == 0 {
					t.Errorf("the symlink was replaced: %v", err)
				}
			}
			wantArgv(t, tc.name, f.argv(t), tc.wantArgv)
		})
	}
}

// --force replaces an operator's unit, and the replaced unit is restarted
// so the running service is the one the file names.
func TestServiceInstallForceReplacesAndRestarts(t *testing.T) {
	t.Parallel()
	f := newServiceFixture(t, "linux")
	writeUnit(t, f, "[Unit]\nDescription=mine\n")
	if _, stderr, code := f.run(t, "service", "install", "--force"); code != exitOK {
		t.Fatalf("install --force: exit %d, %q", code, stderr)
	}
	got, _ := os.ReadFile(f.unitFile())
	if !service.IsOurs(got) {
		t.Errorf("unit = %q, want wraptool's", got)
	}
	wantArgv(t, "install --force", f.argv(t), []string{"systemctl --user daemon-reload", "systemctl --user enable --now wraptool.service",
		"systemctl --user restart wraptool.service"})
}

func writeUnit(t *testing.T, f *serviceFixture, content string) {
	t.Helper()
	writeFile(t, f.unitFile(), content)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// up offers the service after the set-up, when this terminal is what
// keeps the server running; not when another wraptool already serves.
func TestUpOffersTheService(t *testing.T) {
	t.Parallel()
	const offer = "To start wraptool at login: wraptool service install\n"
	for _, tc := range []struct {
		name   string
		status string
		want   bool
	}{
		{"a server up just started", "wraptool is serving MCP at http://127.0.0.1:8765", true},
		{"a wraptool already serving", alreadyServing + "http://127.0.0.1:8765 (config /c.yaml): nothing more to start.", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			a := newApp(func(string) string { return "" }, &out, &bytes.Buffer{})
			err := a.printClientSetup(setupTarget{URL: "http://127.0.0.1:8765", ConfigPath: "/c.yaml", Status: tc.status})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.HasSuffix(out.String(), "\n"+offer); got != tc.want {
				t.Errorf("ends with the offer = %v, want %v:\n%s", got, tc.want, out.String())
			}
		})
	}
}
