package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/policy/config/configtest"
)

// hookRecord is what fakecli's record mode writes: what the hook got.
type hookRecord struct {
	Argv  []string `json:"argv"`
	Env   []string `json:"env"`
	Stdin string   `json:"stdin"`
	Cwd   string   `json:"cwd"`
	pid   int
}

// hookConfig is serverConfig (the fake CLI with a pull rule) with argv as
// mcp.on_request, each element written as a quoted YAML string.
func hookConfig(t *testing.T, dir string, argv ...string) string {
	t.Helper()
	list, err := json.Marshal(argv) // a JSON array is a YAML flow sequence
	if err != nil {
		t.Fatal(err)
	}
	cfg := serverConfig(t, dir, toolsPull)
	return strings.Replace(cfg, "mcp:\n", "mcp:\n  on_request: "+string(list)+"\n", 1)
}

// hookRecords returns the records fakecli has written to dir (whole ones
// only: it renames each into place).
func hookRecords(t *testing.T, dir string) []hookRecord {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []hookRecord
	for _, name := range names {
		var r hookRecord
		if err := json.Unmarshal(configtest.ReadFile(t, name), &r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r.pid, _ = strconv.Atoi(strings.TrimSuffix(filepath.Base(name), ".json"))
		out = append(out, r)
	}
	return out
}

// waitHookRecord polls (bounded: fakecli's files ring no bell) until a
// record whose argv holds id appears, and returns it with all records.
func waitHookRecord(t *testing.T, s *server, dir, id string) (hookRecord, []hookRecord) {
	t.Helper()
	var found hookRecord
	var all []hookRecord
	waittest.Until(t, eventTimeout, func() error {
		all = hookRecords(t, dir)
		for _, r := range all {
			if slices.Contains(r.Argv, id) {
				found = r
				return nil
			}
		}
		return fmt.Errorf("no hook ran for %s (records: %+v):\n%s", id, all, s.Log())
	})
	return found, all
}

// logLineWith returns the first line of log holding every one of parts.
func logLineWith(log string, parts ...string) string {
	for line := range strings.Lines(log) {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return strings.TrimSuffix(line, "\n")
		}
	}
	return ""
}

// TestHookRunsOncePerNewRequest shows mcp.on_request end to end: the hook
// runs once for each new request and not for a de-duplicated one, its
// placeholders are replaced only where they are a whole argument, shell
// syntax stays text, and it gets the request's line on stdin and only the
// minimal environment, WRAPTOOL_REQUEST_ID, WRAPTOOL_SUMMARY and the desktop
// variables.
func TestHookRunsOncePerNewRequest(t *testing.T) {
	slow(t, "mcp.on_request end to end")
	t.Parallel()
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec")
	if err := os.Mkdir(rec, 0o700); err != nil {
		t.Fatal(err)
	}
	pwned := filepath.Join(dir, "pwned")
	cfg := hookConfig(t, dir, fakecli, "record", rec, "{id}", "{tool}", "$(touch "+pwned+")", "x{id}")
	s := startServerIn(t, dir, cfg, "DISPLAY=:7", "WRAPTOOL_TEST_SECRET=s3cret", "LD_PRELOAD=/nonexistent/evil.so")
	c := s.Connect(t, "/mcp")

	id := request(t, c, askFor("fake", []string{"push"}, []string{"--force"}, "the branch was rebased;\n$(touch "+pwned+")", ""))
	got, _ := waitHookRecord(t, s, rec, id)
	if again := request(t, c, askFor("fake", []string{"push"}, []string{"--force"}, "asked again", "")); again != id {
		t.Fatalf("the same capability got id %s, want the pending duplicate's %s", again, id)
	}
	third := request(t, c, askFor("fake", []string{"fetch"}, nil, "fetch first", ""))
	_, all := waitHookRecord(t, s, rec, third)
	// The hook's record is written before it exits, and the log line after.
	s.WaitLog(t, `msg="on_request hook ran"`, 2, eventTimeout)
	if len(all) != 2 {
		t.Errorf("the hook ran %d times for two new requests and one duplicate, want 2: %+v", len(all), all)
	}
	if n := strings.Count(s.Log(), `msg="on_request hook ran"`); n != 2 {
		t.Errorf("the log has %d hook runs, want 2:\n%s", n, s.Log())
	}
	t.Logf("%s", logLineWith(s.Log(), `msg="on_request hook ran"`, "id="+id))

	summary := "fake push --force: the branch was rebased; $(touch " + pwned + ")"
	wantArgv := []string{fakecli, "record", rec, id, "fake", "$(touch " + pwned + ")", "x{id}"}
	if !slices.Equal(got.Argv, wantArgv) {
		t.Errorf("argv =\n%q\nwant\n%q", got.Argv, wantArgv)
	}
	if _, err := os.Stat(pwned); !os.IsNotExist(err) {
		t.Errorf("%s exists (%v): shell syntax in the hook or the rationale was run", pwned, err)
	}
	firstLine, _, _ := strings.Cut(string(configtest.ReadFile(t, s.RequestLog)), "\n")
	if got.Stdin != firstLine+"\n" {
		t.Errorf("stdin = %q, want the request's line %q", got.Stdin, firstLine+"\n")
	}
	var keys []string
	for _, kv := range got.Env {
		k, v, _ := strings.Cut(kv, "=")
		keys = append(keys, k)
		want, check := map[string]string{"WRAPTOOL_REQUEST_ID": id, "WRAPTOOL_SUMMARY": summary, "DISPLAY": ":7",
			"HOME": filepath.Join(dir, "home"), "LANG": "C.UTF-8"}[k]
		if check && v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
		if k == "PATH" && !strings.HasPrefix(v, filepath.Dir(fakecli)+":") {
			t.Errorf("PATH = %q, want the hook's folder first", v)
		}
	}
	if want := []string{"DISPLAY", "HOME", "LANG", "PATH", "WRAPTOOL_REQUEST_ID", "WRAPTOOL_SUMMARY"}; !slices.Equal(keys, want) {
		t.Errorf("the hook's environment has %q, want exactly %q (nothing else of the server's)", keys, want)
	}
	if wantDir, _ := filepath.EvalSymlinks(dir); got.Cwd != wantDir {
		t.Errorf("the hook ran in %q, want the config's folder %q", got.Cwd, wantDir)
	}
}

// TestHookHangingIsKilled shows a hook that never ends: the request tool
// answers at once, and the hook is killed at 10 s and logged as a failure;
// one still running when the server stops is killed without holding it up.
func TestHookHangingIsKilled(t *testing.T) {
	slow(t, "a hanging hook killed at its timeout")
	t.Parallel()
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec")
	if err := os.Mkdir(rec, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := hookConfig(t, dir, fakecli, "recordwait", rec, filepath.Join(dir, "never-created"), "{id}")
	s := startServerIn(t, dir, cfg)
	c := s.Connect(t, "/mcp")

	filed := time.Now()
	id := request(t, c, askFor("fake", []string{"push"}, nil, "hang the hook", ""))
	if took := time.Since(filed); took > 5*time.Second {
		t.Errorf("the request tool took %v, want it not to wait for the hook", took)
	}
	hook, _ := waitHookRecord(t, s, rec, id)
	log := s.WaitLog(t, `msg="on_request hook failed"`, 1, 40*time.Second)
	killed := time.Since(filed)
	line := logLineWith(log, `msg="on_request hook failed"`, "id="+id)
	if line == "" || !strings.Contains(line, `error="killed after 10s"`) || !strings.Contains(line, "level=WARN") {
		t.Fatalf("failure line %q, want a warning with the id and \"killed after 10s\":\n%s", line, log)
	}
	// The log line's own time, not when the poll saw it.
	if at, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(strings.Fields(line)[0], "time=")); err == nil {
		killed = at.Sub(filed)
	}
	if killed < 10*time.Second || killed > 30*time.Second {
		t.Errorf("the hook was killed %v after the request, want between 10s and 30s", killed)
	}
	t.Logf("hook killed %v after the request was filed: %s", killed.Round(time.Millisecond), line)
	waittest.Gone(t, eventTimeout, hook.pid)

	// A hook still running at shutdown is killed, and never holds the
	// server up.
	second := request(t, c, askFor("fake", []string{"fetch"}, nil, "hang another", ""))
	hook, _ = waitHookRecord(t, s, rec, second)
	stopping := time.Now()
	s.Signal(t, syscall.SIGTERM)
	if err := s.Wait(t, 5*time.Second); err != nil {
		t.Errorf("serve exited with %v after SIGTERM, want status 0:\n%s", err, s.Log())
	}
	t.Logf("serve stopped %v after SIGTERM with a hook running", time.Since(stopping).Round(time.Millisecond))
	if line := logLineWith(s.Log(), "on_request hook stopped: the server is shutting down", "id="+second); line == "" {
		t.Errorf("no shutdown line for %s:\n%s", second, s.Log())
	}
	waittest.Gone(t, eventTimeout, hook.pid)
}
