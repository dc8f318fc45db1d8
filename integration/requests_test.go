package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/toolset"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// requestTool is the built-in capability-request tool.
const requestTool = "wraptool_request_capability"

// idPattern is a request id.
var idPattern = regexp.MustCompile(`^req_[0-9a-f]{8}$`)

// requestFields are the fields of a request line, all present.
var requestFields = []string{"created_at", "enables", "flags", "id", "rationale", "status", "subcommand", "tool"}

// askFor is a wraptool_request_capability input.
func askFor(tool string, sub, flags []string, rationale, enables string) map[string]any {
	args := map[string]any{"tool": tool, "subcommand": sub, "rationale": rationale}
	if flags != nil {
		args["flags"] = flags
	}
	if enables != "" {
		args["enables"] = enables
	}
	return args
}

// request calls the request tool and returns the id it reports, failing
// the test on a tool error.
func request(t *testing.T, c *mcpClient, args map[string]any) string {
	t.Helper()
	res := c.Call(t, requestTool, args)
	text := toolsettest.ResultText(t, res)
	if res.IsError {
		t.Fatalf("%s(%v) is an error: %s", requestTool, args, text)
	}
	var out struct{ ID, Status string }
	structured(t, res, &out)
	if !idPattern.MatchString(out.ID) || out.Status != requests.StatusPending {
		t.Fatalf("structuredContent = %+v, want an id matching %s and status pending", res.StructuredContent, idPattern)
	}
	if want := "Request " + out.ID + " recorded (pending). "; !strings.HasPrefix(text, want) {
		t.Errorf("text = %q, want it to start with %q", text, want)
	}
	return out.ID
}

// logObjects splits a log into its lines, each decoded as a JSON object;
// it fails the test on a line that is not one, or a log not ending in a
// newline.
func logObjects(t *testing.T, data []byte) []map[string]json.RawMessage {
	t.Helper()
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Errorf("the log does not end with a newline: ...%q", data[max(0, len(data)-40):])
	}
	var objs []map[string]json.RawMessage
	for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(line, &obj); err != nil {
			t.Errorf("line %d %q is not a JSON object: %v", i+1, line, err)
			continue
		}
		objs = append(objs, obj)
	}
	return objs
}

// pendingLine is a request line as the test pre-fills it.
func pendingLine(t *testing.T, id, tool string, sub []string) []byte {
	t.Helper()
	data, err := json.Marshal(map[string]any{
		"id": id, "created_at": "2025-01-02T03:04:05Z", "tool": tool, "subcommand": sub,
		"flags": []string{}, "rationale": "pre-filled", "enables": "", "status": "pending",
	})
	if err != nil {
		t.Fatal(err)
	}
	return append(data, '\n')
}

func TestRequestToolRecordsAndDeduplicates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, toolsPull))
	c := s.Connect(t, "/mcp")
	push := askFor("fake", []string{"push"}, []string{"--force", "--no-verify"}, "the branch was rebased", "push the rebased branch")

	before := time.Now().UTC().Add(-time.Minute)
	id := request(t, c, push)
	after := time.Now().UTC().Add(time.Minute)

	info, err := os.Stat(s.RequestLog)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("request log mode = %v, want 0600", perm)
	}
	first := configtest.ReadFile(t, s.RequestLog)
	objs := logObjects(t, first)
	if len(objs) != 1 {
		t.Fatalf("the log has %d lines, want 1:\n%s", len(objs), first)
	}
	line := objs[0]
	if got := slices.Sorted(maps.Keys(line)); !slices.Equal(got, requestFields) {
		t.Errorf("request line fields = %q, want %q", got, requestFields)
	}
	wantValues := map[string]string{
		"id":         `"` + id + `"`,
		"tool":       `"fake"`,
		"subcommand": `["push"]`,
		"flags":      `["--force","--no-verify"]`,
		"rationale":  `"the branch was rebased"`,
		"enables":    `"push the rebased branch"`,
		"status":     `"pending"`,
	}
	for field, want := range wantValues {
		if got := string(line[field]); got != want {
			t.Errorf("%s = %s, want %s", field, got, want)
		}
	}
	var created string
	if err := json.Unmarshal(line["created_at"], &created); err != nil {
		t.Fatalf("created_at %s is not a string", line["created_at"])
	}
	when, err := time.Parse(time.RFC3339Nano, created)
	switch {
	case err != nil:
		t.Errorf("created_at %q is not RFC 3339: %v", created, err)
	case !strings.HasSuffix(created, "Z"):
		t.Errorf("created_at %q is not in UTC", created)
	case when.Before(before) || when.After(after):
		t.Errorf("created_at %q is not around now (%s)", created, before.Add(time.Minute).Format(time.RFC3339))
	}

	// What the request tool is asked next, in order, against that one line.
	steps := []struct {
		name    string
		args    map[string]any
		wantErr string // a substring of the tool error; "" for success
		wantNew bool   // a new id and a new line; otherwise the log is unchanged
	}{
		{name: "an identical request returns the same id and writes nothing", args: push},
		{name: "the same capability with another rationale returns the same id",
			args: askFor("fake", []string{"push"}, []string{"--force", "--no-verify"}, "asked again", "")},
		{name: "another flag set is a new request", args: askFor("fake", []string{"push"}, []string{"--force"}, "only force", ""), wantNew: true},
		{name: "another subcommand is a new request", args: askFor("fake", []string{"fetch"}, nil, "fetch first", ""), wantNew: true},
		{name: "a flag without dashes is bad input", args: askFor("fake", []string{"push"}, []string{"force"}, "x", ""), wantErr: `"force"`},
		{name: "an empty rationale is bad input", args: askFor("fake", []string{"push"}, nil, " ", ""), wantErr: "rationale"},
		{name: "a request for wraptool's own tools is bad input", args: askFor("wraptool_x", []string{}, nil, "x", ""), wantErr: "wraptool_x"},
	}
	ids := map[string]bool{id: true}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			before := configtest.ReadFile(t, s.RequestLog)
			if step.wantErr != "" {
				res := c.Call(t, requestTool, step.args)
				if text := toolsettest.ResultText(t, res); !res.IsError || !strings.Contains(text, step.wantErr) {
					t.Errorf("result isError=%v %q, want a tool error mentioning %s", res.IsError, text, step.wantErr)
				}
			} else {
				got := request(t, c, step.args)
				switch {
				case step.wantNew && ids[got]:
					t.Errorf("id = %s, an id already given, want a new one", got)
				case !step.wantNew && got != id:
					t.Errorf("id = %s, want the pending duplicate's %s", got, id)
				}
				ids[got] = true
			}
			after := configtest.ReadFile(t, s.RequestLog)
			switch {
			case step.wantNew && (!bytes.HasPrefix(after, before) || len(logObjects(t, after)) != len(logObjects(t, before))+1):
				t.Errorf("the log went from\n%s\nto\n%s\nwant one line appended", before, after)
			case !step.wantNew && !bytes.Equal(after, before):
				t.Errorf("the log changed from\n%s\nto\n%s\nwant it unchanged", before, after)
			}
		})
	}
}

func TestRequestToolPendingLimit(t *testing.T) {
	slow(t, "the request tool's pending limit")
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "requests.jsonl")
	var prefill []byte
	for i := range requests.MaxPending {
		prefill = append(prefill, pendingLine(t, fmt.Sprintf("req_%08x", i), "fake", []string{fmt.Sprintf("s%d", i)})...)
	}
	if err := os.WriteFile(path, prefill, 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServerIn(t, dir, serverConfig(t, dir, toolsPull))
	c := s.Connect(t, "/mcp")

	refused := func(args map[string]any) {
		t.Helper()
		before := configtest.ReadFile(t, path)
		res := c.Call(t, requestTool, args)
		if text := toolsettest.ResultText(t, res); !res.IsError || !strings.Contains(text, "pending limit is reached") {
			t.Errorf("request 1,001 = isError %v %q, want a tool error saying the pending limit is reached", res.IsError, text)
		}
		if !bytes.Equal(configtest.ReadFile(t, path), before) {
			t.Errorf("a refused request changed the log")
		}
	}
	refused(askFor("fake", []string{"push"}, nil, "one too many", ""))

	// A decision frees a slot.
	if err := requests.Decide(t.Context(), path, "req_00000007", requests.Decision{Status: requests.StatusDenied, Reason: "not needed", Applied: false, DecidedBy: "cli"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	id := request(t, c, askFor("fake", []string{"push"}, nil, "one too many", ""))
	recs, warns, err := requests.Read(path)
	if err != nil || len(warns) > 0 {
		t.Fatalf("requests.Read = %v, warnings %v", err, warns)
	}
	pending := 0
	for _, r := range recs {
		if r.Status == requests.StatusPending {
			pending++
		}
	}
	if len(recs) != requests.MaxPending+1 || pending != requests.MaxPending || recs[len(recs)-1].ID != id {
		t.Errorf("the log holds %d requests, %d pending, last %s; want %d, %d pending, last %s",
			len(recs), pending, recs[len(recs)-1].ID, requests.MaxPending+1, requests.MaxPending, id)
	}
	// And the limit holds again.
	refused(askFor("fake", []string{"fetch"}, nil, "and another", ""))
}

func TestRequestLogConcurrentWriters(t *testing.T) {
	slow(t, "concurrent request log writers")
	t.Parallel()
	const perWriter = 40
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, toolsPull))
	// Both transports, and enough sessions that none reaches the
	// per-session limit of pending requests.
	var clients []*mcpClient
	for range perWriter / toolset.MaxPendingPerSession {
		clients = append(clients, s.Connect(t, "/mcp"), s.Connect(t, "/sse"))
	}

	var (
		mu    sync.Mutex
		ids   = map[string]bool{}
		wg    sync.WaitGroup
		errs  = make(chan error, 3*perWriter)
		start = make(chan struct{})
	)
	record := func(id string) {
		mu.Lock()
		defer mu.Unlock()
		if ids[id] {
			errs <- fmt.Errorf("id %s given twice", id)
		}
		ids[id] = true
	}
	// The server, through both sessions at once...
	for i := range perWriter {
		wg.Go(func() {
			<-start
			// Not c.Call: t.Fatal must not run off the test's goroutine.
			ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
			defer cancel()
			res, err := clients[i%len(clients)].CallTool(ctx, &mcp.CallToolParams{Name: requestTool,
				Arguments: askFor("fake", []string{fmt.Sprintf("server%d", i)}, []string{"--x"}, strings.Repeat("r", 2000), "e")})
			if err != nil {
				errs <- fmt.Errorf("server request %d: %v", i, err)
				return
			}
			var out struct{ ID string }
			data, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(data, &out)
			if res.IsError || !idPattern.MatchString(out.ID) {
				errs <- fmt.Errorf("server request %d: isError %v, structuredContent %s", i, res.IsError, data)
				return
			}
			record(out.ID)
		})
	}
	// ...and a second process's writer (this test process, taking the
	// same flock) appending at the same time.
	wg.Go(func() {
		<-start
		for i := range perWriter {
			sub, err := requests.Submit(context.Background(), s.RequestLog, requests.Request{
				Tool: "other", Subcommand: []string{fmt.Sprintf("local%d", i)}, Flags: []string{},
				Rationale: strings.Repeat("l", 2000),
			}, time.Now())
			if err != nil || sub.Existing {
				errs <- fmt.Errorf("local request %d: %+v, %v", i, sub, err)
				continue
			}
			record(sub.ID)
		}
	})
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	objs := logObjects(t, configtest.ReadFile(t, s.RequestLog))
	if len(objs) != 2*perWriter {
		t.Errorf("the log has %d lines, want %d", len(objs), 2*perWriter)
	}
	recs, warns, err := requests.Read(s.RequestLog)
	if err != nil || len(warns) > 0 {
		t.Fatalf("requests.Read = %v, warnings %v", err, warns)
	}
	inLog := map[string]bool{}
	for _, r := range recs {
		inLog[r.ID] = true
	}
	if !maps.Equal(inLog, ids) {
		t.Errorf("the log holds %d ids, the writers were given %d; want the same set", len(inLog), len(ids))
	}
}

func TestRequestLogTornLineRepaired(t *testing.T) {
	slow(t, "a torn request log line repaired")
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "requests.jsonl")
	const torn = `{"id":"req_0badc0de","created_at":"2025-01-02T03:04:05Z","tool":"fa`
	prefill := append(pendingLine(t, "req_00c0ffee", "fake", []string{"pull"}), torn...)
	if err := os.WriteFile(path, prefill, 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServerIn(t, dir, serverConfig(t, dir, toolsPull))
	c := s.Connect(t, "/mcp")

	id := request(t, c, askFor("fake", []string{"push"}, nil, "after a crash", ""))
	id2 := request(t, c, askFor("fake", []string{"fetch"}, nil, "and after that", ""))

	data := configtest.ReadFile(t, path)
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) != 5 || lines[4] != "" {
		t.Fatalf("the log has lines %q, want the pre-filled line, the torn one, and the two new ones", lines)
	}
	if lines[0] != string(pendingLine(t, "req_00c0ffee", "fake", []string{"pull"})) || lines[1] != torn+"\n" {
		t.Errorf("the first lines are %q, want the pre-filled line and the torn one ended with a newline", lines[:2])
	}
	for i, want := range []string{id, id2} {
		var rec struct{ ID string }
		if err := json.Unmarshal([]byte(lines[2+i]), &rec); err != nil || rec.ID != want {
			t.Errorf("line %d = %q, want the request %s on a line of its own", 3+i, lines[2+i], want)
		}
	}

	recs, warns, err := requests.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.ID)
	}
	if want := []string{"req_00c0ffee", id, id2}; !slices.Equal(got, want) {
		t.Errorf("requests.Read ids = %q, want %q", got, want)
	}
	if len(warns) != 1 || warns[0].Line != 2 {
		t.Errorf("requests.Read warnings = %v, want one for line 2", warns)
	}
	if !strings.Contains(s.Log(), "skipped a line") {
		t.Errorf("the server did not warn about the torn line:\n%s", s.Log())
	}
}
