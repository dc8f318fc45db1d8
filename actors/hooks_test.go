package actors

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// hookRecord is what fakecli's record mode writes: what the hook got.
type hookRecord struct {
	Argv  []string `json:"argv"`
	Env   []string `json:"env"`
	Stdin string   `json:"stdin"`
	Cwd   string   `json:"cwd"`
	pid   int
}

// readHookRecords returns the records fakecli wrote to dir so far (only
// whole ones: fakecli renames each into place).
func readHookRecords(t *testing.T, dir string) []hookRecord {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []hookRecord
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var r hookRecord
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r.pid, _ = strconv.Atoi(strings.TrimSuffix(filepath.Base(name), ".json"))
		out = append(out, r)
	}
	return out
}

// waitHookRecords waits (polling, bounded by wait: fakecli's files ring no
// bell) until dir holds n records, and returns them.
func waitHookRecords(t *testing.T, dir string, n int) []hookRecord {
	t.Helper()
	var got []hookRecord
	waitUntil(t, fmt.Sprintf("%d hook records in %s", n, dir), func() bool {
		got = readHookRecords(t, dir)
		return len(got) >= n
	})
	if len(got) != n {
		t.Fatalf("got %d hook records, want %d: %+v", len(got), n, got)
	}
	return got
}

// hookRequest is a new request as the request-log writer announces it.
func hookRequest(t *testing.T, id, rationale string) messages.RequestFiled {
	t.Helper()
	r := requests.Record{ID: id, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Tool: "fake",
		Subcommand: []string{"push"}, Flags: []string{"--force"}, Rationale: rationale, Status: requests.StatusPending}
	line, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return messages.RequestFiled{Record: r, Line: append(line, '\n')}
}

// hookSnapshot is a snapshot whose config lives in dir, names argv as its
// hook and has the tool the test requests name (fake).
func hookSnapshot(dir string, argv []string) *Snapshot {
	return &Snapshot{Config: &config.Config{File: filepath.Join(dir, "config.yaml"), Dir: dir,
		MCP: config.MCP{OnRequest: argv}, Tools: map[string]*config.Tool{"fake": {}}}}
}

// hookSnapshots is a Snapshots a test can change, which hands the test
// each snapshot it returned (testSnapshots counts a read before it loads,
// so a test cannot tell which snapshot a read got).
type hookSnapshots struct {
	cur  atomic.Pointer[Snapshot]
	read chan *Snapshot
}

func (s *hookSnapshots) Current() *Snapshot {
	snap := s.cur.Load()
	select {
	case s.read <- snap:
	default: // the test does not listen
	}
	return snap
}

// hookRig is a running Hooks actor fed by a test.
type hookRig struct {
	filed chan messages.RequestFiled
	snaps *hookSnapshots
	sink  *logSink
	stop  func() error
	dir   string // the config's folder
}

func startHooks(t *testing.T, argv []string, getenv func(string) string, timeout time.Duration) *hookRig {
	t.Helper()
	log, sink := newTestLogger()
	r := &hookRig{filed: make(chan messages.RequestFiled, 64), sink: sink, dir: t.TempDir()}
	r.snaps = &hookSnapshots{read: make(chan *Snapshot, 64)}
	r.snaps.cur.Store(hookSnapshot(r.dir, argv))
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	h := NewHooks(HooksOptions{Filed: r.filed, Snapshots: r.snaps, Getenv: getenv, Timeout: timeout, Log: log})
	r.stop = start(t, h)
	return r
}

// TestHooks runs the hook for real, with the fake CLI as the hook.
func TestHooks(t *testing.T) {
	t.Parallel()
	fakecli, err := toolsettest.BuildFakeCLI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	t.Run("the hook gets the request's line on stdin, the minimal environment and the config's folder", func(t *testing.T) {
		t.Parallel()
		rec := t.TempDir()
		server := map[string]string{
			"PATH": "/usr/local/bin::relative/bin:/usr/bin", "HOME": "/home/operator", "LANG": "fr_FR.UTF-8",
			"DISPLAY": ":1", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus", "XDG_RUNTIME_DIR": "",
			"WRAPTOOL_SECRET": "hunter2", "AWS_SECRET_ACCESS_KEY": "hunter3", "LD_PRELOAD": "/tmp/evil.so",
			"WRAPTOOL_REQUEST_ID": "req_forged00",
		}
		rig := startHooks(t, []string{fakecli, "record", rec, "{id}", "{tool}"},
			func(k string) string { return server[k] }, 0)
		m := hookRequest(t, "req_00000001", "a rationale\nwith \x1b[1m escapes")
		rig.filed <- m
		got := waitHookRecords(t, rec, 1)[0]

		wantArgv := []string{fakecli, "record", rec, "req_00000001", "fake"}
		if !slices.Equal(got.Argv, wantArgv) {
			t.Errorf("argv = %q, want %q", got.Argv, wantArgv)
		}
		wantEnv := []string{
			"DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus",
			"DISPLAY=:1",
			"HOME=/home/operator",
			"LANG=C.UTF-8",
			"PATH=" + filepath.Dir(fakecli) + ":/usr/local/bin:/usr/bin",
			"WRAPTOOL_REQUEST_ID=req_00000001",
			`WRAPTOOL_SUMMARY=fake push --force: a rationale with \x1b[1m escapes`,
		}
		if !slices.Equal(got.Env, wantEnv) {
			t.Errorf("environment =\n%q\nwant exactly\n%q", got.Env, wantEnv)
		}
		if got.Stdin != string(m.Line) {
			t.Errorf("stdin = %q, want the request's line %q", got.Stdin, m.Line)
		}
		wantDir, _ := filepath.EvalSymlinks(rig.dir)
		if got.Cwd != wantDir {
			t.Errorf("working directory = %q, want the config's folder %q", got.Cwd, wantDir)
		}
		rig.sink.waitFor(t, "on_request hook ran", "id=req_00000001")
	})

	t.Run("the hook is read from the snapshot in service for each request", func(t *testing.T) {
		t.Parallel()
		rec := t.TempDir()
		rig := startHooks(t, nil, nil, 0)
		rig.filed <- hookRequest(t, "req_00000001", "before the hook")
		if snap := receive(t, rig.snaps.read, "the first request's read of the snapshot"); len(snap.Config.MCP.OnRequest) != 0 {
			t.Fatalf("the first request read the hook %q, want none", snap.Config.MCP.OnRequest)
		}
		rig.snaps.cur.Store(hookSnapshot(rig.dir, []string{fakecli, "record", rec, "{id}"}))
		rig.filed <- hookRequest(t, "req_00000002", "after the hook")
		got := waitHookRecords(t, rec, 1)
		rig.sink.waitFor(t, "on_request hook ran", "id=req_00000002")
		if want := []string{fakecli, "record", rec, "req_00000002"}; !slices.Equal(got[0].Argv, want) {
			t.Errorf("argv = %q, want %q: only the request filed after the hook appeared runs it", got[0].Argv, want)
		}
		if lines := rig.sink.lines("on_request"); len(lines) != 1 {
			t.Errorf("log has %d on_request lines, want 1:\n%s", len(lines), rig.sink.String())
		}
	})

	t.Run("at most MaxHooks run at once; the rest wait their turn", func(t *testing.T) {
		t.Parallel()
		rec, release := t.TempDir(), filepath.Join(t.TempDir(), "release")
		rig := startHooks(t, []string{fakecli, "recordwait", rec, release, "{id}"}, nil, time.Minute)
		const n = MaxHooks + 2
		for i := range n {
			rig.filed <- hookRequest(t, fmt.Sprintf("req_%08d", i), "burst")
		}
		waitHookRecords(t, rec, MaxHooks)
		// The actor has taken the next request and waits for a slot; only
		// the last is still queued. No slot frees before the release, so no
		// fifth hook can have started.
		waitUntil(t, "the actor waiting for a slot", func() bool { return len(rig.filed) == n-MaxHooks-1 })
		if got := readHookRecords(t, rec); len(got) != MaxHooks {
			t.Fatalf("%d hooks started before any ended, want %d", len(got), MaxHooks)
		}
		if err := os.WriteFile(release, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		got := waitHookRecords(t, rec, n)
		rig.sink.waitForN(t, n, "on_request hook ran")
		var ids []string
		for _, r := range got {
			ids = append(ids, r.Argv[len(r.Argv)-1])
		}
		slices.Sort(ids)
		if want := []string{"req_00000000", "req_00000001", "req_00000002", "req_00000003", "req_00000004", "req_00000005"}; !slices.Equal(ids, want) {
			t.Errorf("hooks ran for %q, want each of %q once", ids, want)
		}
	})

	t.Run("a hook that hangs is killed at the timeout and logged", func(t *testing.T) {
		t.Parallel()
		rec := t.TempDir()
		never := filepath.Join(t.TempDir(), "never")
		rig := startHooks(t, []string{fakecli, "recordwait", rec, never, "{id}"}, nil, 200*time.Millisecond)
		rig.filed <- hookRequest(t, "req_0000000a", "hang")
		got := waitHookRecords(t, rec, 1)
		rig.sink.waitFor(t, "level=WARN", "on_request hook failed", "id=req_0000000a", `error="killed after 200ms"`)
		waittest.Gone(t, wait, got[0].pid)
	})

	t.Run("a failing hook is logged with its exit status and stderr", func(t *testing.T) {
		t.Parallel()
		rig := startHooks(t, []string{fakecli, "exit", "3"}, nil, 0)
		rig.filed <- hookRequest(t, "req_0000000b", "fail")
		rig.sink.waitFor(t, "level=WARN", "on_request hook failed", "id=req_0000000b", "exit_code=3", `stderr="to stderr"`,
			`command="`+fakecli+` exit 3"`)
	})

	t.Run("a bare command is found in the hook's PATH, a relative one in the config's folder", func(t *testing.T) {
		t.Parallel()
		rec := t.TempDir()
		path := func(k string) string {
			if k == "PATH" {
				return "/nonexistent:" + filepath.Dir(fakecli)
			}
			return ""
		}
		rig := startHooks(t, []string{filepath.Base(fakecli), "record", rec, "{id}"}, path, 0)
		rig.filed <- hookRequest(t, "req_00000010", "bare")
		got := waitHookRecords(t, rec, 1)
		if got[0].Argv[0] != fakecli {
			t.Errorf("the bare command ran as %q, want %q", got[0].Argv[0], fakecli)
		}
		if err := os.Symlink(fakecli, filepath.Join(rig.dir, "notify")); err != nil {
			t.Fatal(err)
		}
		rig.snaps.cur.Store(hookSnapshot(rig.dir, []string{"./notify", "record", rec, "{id}"}))
		rig.filed <- hookRequest(t, "req_00000011", "relative")
		got = waitHookRecords(t, rec, 2)
		rig.sink.waitForN(t, 2, "on_request hook ran")
		if !slices.ContainsFunc(got, func(r hookRecord) bool { return r.Argv[0] == filepath.Join(rig.dir, "notify") }) {
			t.Errorf("no hook ran as %s: %+v", filepath.Join(rig.dir, "notify"), got)
		}
	})

	t.Run("a hook whose command is not found is logged", func(t *testing.T) {
		t.Parallel()
		rig := startHooks(t, []string{"wraptool-no-such-hook", "{id}"}, nil, 0)
		rig.filed <- hookRequest(t, "req_0000000c", "missing")
		rig.sink.waitFor(t, "level=WARN", "on_request hook failed", "id=req_0000000c", "wraptool-no-such-hook", "not found")
	})

	t.Run("a hook under a folder others may write by the time it runs is not started", func(t *testing.T) {
		t.Parallel()
		rec := t.TempDir()
		open := filepath.Join(t.TempDir(), "open")
		if err := os.MkdirAll(filepath.Join(open, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
		hook := filepath.Join(open, "sub", "notify")
		copyFile(t, fakecli, hook)
		rig := startHooks(t, []string{hook, "record", rec, "{id}"}, nil, 0)
		rig.filed <- hookRequest(t, "req_00000020", "safe layout")
		waitHookRecords(t, rec, 1)
		rig.sink.waitFor(t, "on_request hook ran", "id=req_00000020")
		if err := os.Chmod(open, 0o777); err != nil {
			t.Fatal(err)
		}
		rig.filed <- hookRequest(t, "req_00000021", "swapped layout")
		rig.sink.waitFor(t, "level=WARN", "on_request hook failed", "id=req_00000021", "refused to start",
			"is under "+open+", which group or others may write", "chmod go-w "+open)
		if got := readHookRecords(t, rec); len(got) != 1 {
			t.Errorf("the hook ran under a world-writable folder: %d records, want 1", len(got))
		}
	})

	t.Run("a hook's script under a folder others may write is not started", func(t *testing.T) {
		t.Parallel()
		rig := startHooks(t, nil, nil, 0)
		marker := filepath.Join(rig.dir, "ran")
		if err := os.Mkdir(filepath.Join(rig.dir, "open"), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(rig.dir, "open"), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(rig.dir, "open", "notify.sh"), []byte("touch "+marker+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		rig.snaps.cur.Store(hookSnapshot(rig.dir, []string{"/bin/sh", "open/notify.sh"}))
		rig.filed <- hookRequest(t, "req_00000022", "script")
		rig.sink.waitFor(t, "level=WARN", "on_request hook failed", "id=req_00000022", "its argument open/notify.sh",
			"chmod go-w "+filepath.Join(rig.dir, "open"))
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("the script ran: %s exists", marker)
		}
	})

	t.Run("stopping kills the running hooks and Run returns once they are reaped", func(t *testing.T) {
		t.Parallel()
		rec := t.TempDir()
		never := filepath.Join(t.TempDir(), "never")
		rig := startHooks(t, []string{fakecli, "recordwait", rec, never, "{id}"}, nil, 0)
		rig.filed <- hookRequest(t, "req_0000000d", "one")
		rig.filed <- hookRequest(t, "req_0000000e", "two")
		got := waitHookRecords(t, rec, 2)
		began := time.Now()
		if err := rig.stop(); err != nil {
			t.Errorf("Run returned %v, want nil", err)
		}
		if took := time.Since(began); took > prompt {
			t.Errorf("Run returned %v after its context ended, want within %v (the hooks' timeout is %v)", took, prompt, HookTimeout)
		}
		// Run waited for them: they are reaped already, no polling.
		for _, r := range got {
			if toolsettest.Alive(r.pid) {
				t.Errorf("hook %d still runs after Run returned", r.pid)
			}
		}
		if lines := rig.sink.lines("on_request hook stopped: the server is shutting down"); len(lines) != 2 {
			t.Errorf("log has %d shutdown lines, want 2:\n%s", len(lines), rig.sink.String())
		}
		if lines := rig.sink.lines("on_request hook failed"); len(lines) != 0 {
			t.Errorf("a hook killed by shutdown was logged as a failure:\n%s", strings.Join(lines, "\n"))
		}
	})
}

// copyFile copies the executable src to dst (0700).
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o700); err != nil {
		t.Fatal(err)
	}
}
