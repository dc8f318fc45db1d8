package integration

//lint:file-ignore SA1019 sampling, elicitation and roots are deprecated from protocol 2026-07-28 on but still spoken; TestUpstreamCannotReachTheClient shows an upstream cannot use them through wraptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// serversConfig is a served config (no wrapped tools) with servers as its
// mcp_servers section; $UPSTREAM is the fixture server, $DIR the test's
// folder.
func serversConfig(t *testing.T, dir, servers string) string {
	t.Helper()
	scratch(t, dir) // the upstreams' marks files
	return serverConfig(t, dir, "") + "mcp_servers:\n" + expandUpstream(dir, servers)
}

func expandUpstream(dir, s string) string {
	return strings.NewReplacer("$UPSTREAM", fakeupstream, "$DIR", dir).Replace(s)
}

// rewriteServers replaces the mcp_servers section of s's config and waits
// for the reload that follows.
func rewriteServers(t *testing.T, s *server, servers string) {
	t.Helper()
	data, err := os.ReadFile(s.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(string(data), "mcp_servers:\n")
	before := strings.Count(s.Log(), `msg="config reloaded"`)
	configtest.ReplaceFile(t, s.ConfigPath, head+"mcp_servers:\n"+expandUpstream(s.Dir, servers))
	s.WaitLog(t, `msg="config reloaded"`, before+1, eventTimeout)
}

// directUpstream connects the go-sdk client straight to a new fixture
// process over stdio, for comparing what wraptool passes through.
func directUpstream(t *testing.T, args ...string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(fakeupstream, args...)}, nil)
	if err != nil {
		t.Fatalf("connect to the fixture directly: %v", err)
	}
	t.Cleanup(func() { session.Close() })
	return session
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// callErr calls a tool and returns the protocol error, failing when there
// is none.
func callErr(t *testing.T, c *mcpClient, name string, args any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err == nil {
		t.Fatalf("call %s succeeded, want a protocol error: %s", name, resultText(res))
	}
	return err
}

// marks reads the fixture's event file.
func marks(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(data)
}

// waitMarks polls (bounded) until the fixture's event file holds n lines
// containing substr; the fixture writes it, so there is no event to wait on.
func waitMarks(t *testing.T, path, substr string, n int) string {
	t.Helper()
	var m string
	waittest.Until(t, eventTimeout, func() error {
		if m = marks(t, path); strings.Count(m, substr) < n {
			return fmt.Errorf("the fixture did not record %q %d times; it recorded:\n%s", substr, n, m)
		}
		return nil
	})
	return m
}

// pids returns the pids the fixture recorded on lines starting with what.
func pids(m, what string) []int {
	var out []int
	for _, match := range regexp.MustCompile(`(?m)^`+what+` pid=(\d+)`).FindAllStringSubmatch(m, -1) {
		n, _ := strconv.Atoi(match[1])
		out = append(out, n)
	}
	return out
}

// waitListChanged waits (bounded) for one tools/list_changed on c.
func waitListChanged(t *testing.T, s *server, c *mcpClient, why string) {
	t.Helper()
	select {
	case <-c.ListChanged:
	case <-time.After(eventTimeout):
		t.Fatalf("no tools/list_changed within %v (%s):\n%s", eventTimeout, why, s.Log())
	}
}

// waitTools polls the tool list (bounded) until it is want: a restart's
// withdrawal and offer may come as one or two list_changed.
func waitTools(t *testing.T, s *server, c *mcpClient, want []string) {
	t.Helper()
	waittest.Poll{Every: 100 * time.Millisecond, Wake: c.ListChanged}.Until(t, eventTimeout, func() error {
		if got := c.WrappedTools(t); !slices.Equal(got, want) {
			return fmt.Errorf("tools are %v, want %v:\n%s", got, want, s.Log())
		}
		return nil
	})
}

// TestUpstreamFilterPrefixAndPassThrough shows the exposure rules (exact
// allow names, default deny, deny wins, name rules) and that definitions,
// arguments, results and protocol errors pass through as the upstream gave
// them.
func TestUpstreamFilterPrefixAndPassThrough(t *testing.T) {
	slow(t, "upstream exposure rules and pass-through")
	t.Parallel()
	dir := t.TempDir()
	cfg := serversConfig(t, dir, `  fake:
    command: $UPSTREAM
    args: [-marks, $DIR/work/marks]
    allow: [{tool: echo}, {tool: add}, {tool: args}, {tool: fail}, {tool: secret}, {tool: bad.name}, {tool: nosuch}]
    deny: [{tool: secret}, {tool: hidden}]
  other:
    command: $UPSTREAM
    name_prefix: up
    allow: [{tool: echo}]
`)
	s := startServerIn(t, dir, cfg)
	c := s.Connect(t, "/mcp")

	want := []string{"fake_add", "fake_args", "fake_echo", "fake_fail", "up_echo"}
	if got := c.WrappedTools(t); !slices.Equal(got, want) {
		t.Fatalf("exposed %v, want %v", got, want)
	}
	for _, line := range []string{
		`msg="config warning" where="` + s.ConfigPath + `:10: mcp_servers.fake.allow[5].tool: is not exposed: the exposed name \"fake_bad.name\" does not match`,
		`msg="upstream tool not exposed" component=registry server=fake tool=bad.name`,
		`msg="upstream tool not exposed" component=registry server=fake tool=nosuch reason="it is allowed, but the upstream server does not offer it"`,
	} {
		if !strings.Contains(s.Log(), line) {
			t.Errorf("the log lacks %s:\n%s", line, s.Log())
		}
	}

	t.Run("definitions pass through under the prefix", func(t *testing.T) {
		direct := directUpstream(t)
		ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
		defer cancel()
		upstream := map[string]*mcp.Tool{}
		for tool, err := range direct.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			upstream[tool.Name] = tool
		}
		listed, err := c.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, got := range listed.Tools {
			name, ok := strings.CutPrefix(got.Name, "fake_")
			if !ok {
				name, ok = strings.CutPrefix(got.Name, "up_")
			}
			if !ok {
				continue
			}
			seen++
			renamed := *upstream[name]
			renamed.Name = got.Name
			if g, w := asJSON(t, got), asJSON(t, &renamed); g != w {
				t.Errorf("%s:\n got %s\nwant %s", got.Name, g, w)
			}
		}
		if seen != len(want) {
			t.Errorf("compared %d definitions, want %d", seen, len(want))
		}
	})

	t.Run("arguments and results pass through", func(t *testing.T) {
		text := "héllo \u2028 \"quoted\" \\ <b>"
		if got := resultText(c.Call(t, "fake_echo", map[string]any{"text": text})); got != text {
			t.Errorf("fake_echo: got %q, want %q", got, text)
		}
		if got := resultText(c.Call(t, "up_echo", map[string]any{"text": "via up"})); got != "via up" {
			t.Errorf("up_echo: got %q", got)
		}
		var sum struct{ Sum float64 }
		res := c.Call(t, "fake_add", map[string]any{"a": 2, "b": 3.5})
		structured(t, res, &sum)
		if sum.Sum != 5.5 || resultText(res) != "5.5" {
			t.Errorf("fake_add: got %+v %q", sum, resultText(res))
		}
		args := map[string]any{"x": []any{1.0, map[string]any{"y": nil}}, "z": "ü", "deep": map[string]any{"a": map[string]any{"b": true}}}
		var back map[string]any
		if err := json.Unmarshal([]byte(resultText(c.Call(t, "fake_args", args))), &back); err != nil || !reflect.DeepEqual(back, args) {
			t.Errorf("fake_args: got %v (%v), want %v", back, err, args)
		}
		res = c.Call(t, "fake_fail", nil)
		if !res.IsError || resultText(res) != "failed on purpose" {
			t.Errorf("fake_fail: got isError=%v %q, want the upstream's tool error as it is", res.IsError, resultText(res))
		}
	})

	t.Run("an upstream protocol error passes through", func(t *testing.T) {
		bad := map[string]any{"text": 5}
		got := callErr(t, c, "fake_echo", bad)
		ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
		defer cancel()
		_, want := directUpstream(t).CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: bad})
		var g, w *jsonrpc.Error
		if !errors.As(got, &g) || !errors.As(want, &w) || g.Code != w.Code || g.Message != w.Message {
			t.Errorf("through wraptool: %v\ndirect: %v", got, want)
		}
	})

	t.Run("denied and unlisted tools are not callable", func(t *testing.T) {
		for _, name := range []string{"fake_secret", "fake_hidden", "fake_bad.name", "up_add", "secret", "echo"} {
			unknownToolCall(t, c, name)
		}
		if m := marks(t, filepath.Join(dir, "work", "marks")); strings.Contains(m, "secret called") || strings.Contains(m, "hidden called") {
			t.Errorf("a hidden tool ran upstream:\n%s", m)
		}
	})
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestUpstreamTimeoutCancellationAndProgress shows a call bounded by the
// server's timeout (the upstream is told to cancel), a client's
// cancellation reaching the upstream, and progress notes forwarded under
// the client's own token.
func TestUpstreamTimeoutCancellationAndProgress(t *testing.T) {
	slow(t, "upstream timeouts, cancellation and progress")
	t.Parallel()
	dir := t.TempDir()
	marksFile := filepath.Join(dir, "work", "marks")
	s := startServerIn(t, dir, serversConfig(t, dir, `  fake:
    command: $UPSTREAM
    args: [-marks, $DIR/work/marks]
    timeout: 1s
    allow: [{tool: slow}, {tool: echo}]
`))

	t.Run("timeout", func(t *testing.T) {
		c := s.Connect(t, "/mcp")
		start := time.Now()
		res := c.Call(t, "fake_slow", map[string]any{"ms": 20000, "steps": 200})
		took := time.Since(start)
		if !res.IsError || !strings.Contains(resultText(res), `upstream server "fake" did not answer slow within its timeout (1s); the call was cancelled`) {
			t.Errorf("got isError=%v %q", res.IsError, resultText(res))
		}
		if took > 3*time.Second {
			t.Errorf("the 1s timeout took %v", took)
		}
		waitMarks(t, marksFile, "cancelled slow", 1)
		if got := resultText(c.Call(t, "fake_echo", map[string]any{"text": "after"})); got != "after" {
			t.Errorf("the upstream is unusable after a timeout: %q", got)
		}
	})

	t.Run("progress and cancellation", func(t *testing.T) {
		notes := make(chan *mcp.ProgressNotificationParams, 64)
		client := mcp.NewClient(&mcp.Implementation{Name: "progress", Version: "1"}, &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				notes <- req.Params
			},
		})
		c := s.connectWith(t, client, "/mcp")
		ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
		defer cancel()
		params := &mcp.CallToolParams{Name: "fake_slow", Arguments: map[string]any{"ms": 300, "steps": 3}}
		params.SetProgressToken("client-token-7")
		res, err := c.CallTool(ctx, params)
		if err != nil || res.IsError || resultText(res) != "done" {
			t.Fatalf("fake_slow: %v %v", err, res)
		}
		var got []string
		for len(got) < 3 {
			select {
			case n := <-notes:
				got = append(got, fmt.Sprintf("%v %v/%v %s", n.ProgressToken, n.Progress, n.Total, n.Message))
			case <-time.After(eventTimeout):
				t.Fatalf("progress notes: got %q within %v, want 3", got, eventTimeout)
			}
		}
		want := []string{"client-token-7 1/3 step 1", "client-token-7 2/3 step 2", "client-token-7 3/3 step 3"}
		if !slices.Equal(got, want) {
			t.Errorf("progress notes:\n got %q\nwant %q", got, want)
		}

		// Cancel a long call after its first note: the upstream hears it.
		before := strings.Count(marks(t, marksFile), "cancelled slow")
		cctx, ccancel := context.WithCancel(ctx)
		params = &mcp.CallToolParams{Name: "fake_slow", Arguments: map[string]any{"ms": 20000, "steps": 200}}
		params.SetProgressToken(8)
		errc := make(chan error, 1)
		go func() {
			_, err := c.CallTool(cctx, params)
			errc <- err
		}()
		select {
		case n := <-notes:
			if n.ProgressToken != 8.0 {
				t.Errorf("progress token %v (%T), want the client's 8", n.ProgressToken, n.ProgressToken)
			}
		case <-time.After(eventTimeout):
			t.Fatal("no progress note from the long call")
		}
		ccancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call: %v", err)
		}
		waitMarks(t, marksFile, "cancelled slow", before+1)
	})
}

// connectWith is Connect with the caller's own client (its handlers).
func (s *server) connectWith(t *testing.T, client *mcp.Client, endpoint string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.BaseURL() + endpoint, HTTPClient: &http.Client{Transport: toolsettest.Bearer{Token: s.Token, Base: http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, s.Log())
	}
	t.Cleanup(func() { session.Close() })
	return session
}

// TestUpstreamCrashAndRestart shows an upstream that exits: the call in
// flight gets a tool error, its tools are withdrawn, and after the first
// backoff (1s) it is restarted and its tools exposed again, on the same
// client session.
func TestUpstreamCrashAndRestart(t *testing.T) {
	slow(t, "an upstream crash and restart")
	t.Parallel()
	dir := t.TempDir()
	marksFile := filepath.Join(dir, "work", "marks")
	s := startServerIn(t, dir, serversConfig(t, dir, `  fake:
    command: $UPSTREAM
    args: [-marks, $DIR/work/marks]
    allow: [{tool: crash}, {tool: echo}]
`))
	c := s.Connect(t, "/mcp")
	all := []string{"fake_crash", "fake_echo"}
	if got := c.WrappedTools(t); !slices.Equal(got, all) {
		t.Fatalf("exposed %v", got)
	}
	first := pids(marks(t, marksFile), "start")

	crashed := time.Now()
	res := c.Call(t, "fake_crash", nil)
	if !res.IsError || !strings.Contains(resultText(res), `upstream server "fake" stopped while handling the call`) {
		t.Errorf("the call in flight: isError=%v %q", res.IsError, resultText(res))
	}
	waitListChanged(t, s, c, "the crashed upstream's tools withdrawn")
	if got := c.WrappedTools(t); len(got) != 0 && !slices.Equal(got, all) {
		t.Errorf("after the crash: %v", got)
	}
	s.WaitLog(t, `msg="upstream server failed; its tools are withdrawn until it restarts"`, 1, eventTimeout)
	if line := logLines(s.Log(), "upstream server failed")[0]; !strings.Contains(line, "exit status 3") || !strings.Contains(line, "restart_in=1s") {
		t.Errorf("failure line: %s", line)
	}
	waitTools(t, s, c, all)
	s.WaitLog(t, `msg="upstream server ready"`, 2, eventTimeout)
	if took := time.Since(crashed); took > 3*time.Second+time.Second {
		t.Errorf("restart took %v; the first backoff is 1s", took)
	}
	if got := resultText(c.Call(t, "fake_echo", map[string]any{"text": "again"})); got != "again" {
		t.Errorf("after the restart: %q", got)
	}
	second := pids(waitMarks(t, marksFile, "start pid=", 2), "start")
	if len(first) != 1 || len(second) != 2 || second[1] == first[0] {
		t.Errorf("start pids %v then %v: want a new process", first, second)
	}
}

// TestUpstreamListChangedFollowed shows the upstream's own list_changed
// followed: a newly offered allowed tool appears (one list_changed to the
// client), a new tool the policy does not allow changes nothing, and a
// removed one disappears.
func TestUpstreamListChangedFollowed(t *testing.T) {
	slow(t, "an upstream's list_changed followed")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serversConfig(t, dir, `  fake:
    command: $UPSTREAM
    allow: [{tool: toggle}, {tool: extra}]
`))
	c := s.Connect(t, "/mcp")
	if got := c.WrappedTools(t); !slices.Equal(got, []string{"fake_toggle"}) {
		t.Fatalf("exposed %v", got)
	}
	c.Call(t, "fake_toggle", map[string]any{"name": "extra", "present": true})
	waitListChanged(t, s, c, "an allowed tool appeared upstream")
	if got := c.WrappedTools(t); !slices.Equal(got, []string{"fake_extra", "fake_toggle"}) {
		t.Fatalf("after the upstream added extra: %v", got)
	}
	if got := resultText(c.Call(t, "fake_extra", map[string]any{"text": "x"})); got != `extra: {"text":"x"}` {
		t.Errorf("fake_extra: %q", got)
	}
	// A tool the policy does not name: the upstream's list_changed is
	// followed (logged) but changes nothing the client sees.
	changes := strings.Count(s.Log(), `msg="upstream server's tools changed"`)
	c.Call(t, "fake_toggle", map[string]any{"name": "unlisted", "present": true})
	s.WaitLog(t, `msg="upstream server's tools changed"`, changes+1, eventTimeout)
	c.Call(t, "fake_toggle", map[string]any{"name": "extra", "present": false})
	waitListChanged(t, s, c, "an allowed tool vanished upstream")
	if got := c.WrappedTools(t); !slices.Equal(got, []string{"fake_toggle"}) {
		t.Errorf("after the upstream removed extra: %v", got)
	}
	if n := len(c.ListChanged); n != 0 {
		t.Errorf("%d more list_changed: the unlisted tool sent one", n)
	}
}

// TestUpstreamReload shows reloads that add a server, change one's filter
// (applied without a restart), change one's start (restarted), and remove
// one (stopped, its process gone), while the client's session stays.
func TestUpstreamReload(t *testing.T) {
	slow(t, "upstream reloads")
	t.Parallel()
	dir := t.TempDir()
	a := `  fake:
    command: $UPSTREAM
    args: [-marks, $DIR/a]
    allow: [{tool: env}]
`
	b := `  bee:
    command: $UPSTREAM
    args: [-marks, $DIR/work/b]
    name_prefix: b
    allow: [{tool: echo}]
`
	s := startServerIn(t, dir, serversConfig(t, dir, a))
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(s.Log())
		}
	})
	c := s.Connect(t, "/mcp")
	pidOf := func(tool string) int {
		var env struct{ Pid int }
		if err := json.Unmarshal([]byte(resultText(c.Call(t, tool, nil))), &env); err != nil {
			t.Fatal(err)
		}
		return env.Pid
	}
	pid := pidOf("fake_env")

	rewriteServers(t, s, a+b)
	waitTools(t, s, c, []string{"b_echo", "fake_env"})
	if got := resultText(c.Call(t, "b_echo", map[string]any{"text": "bee"})); got != "bee" {
		t.Errorf("b_echo: %q", got)
	}
	if p := pidOf("fake_env"); p != pid {
		t.Errorf("adding a server restarted another (pid %d → %d)", pid, p)
	}
	beePid := pids(waitMarks(t, filepath.Join(dir, "work", "b"), "start pid=", 1), "start")[0]

	// A filter change: applied live, no restart.
	rewriteServers(t, s, strings.Replace(a, "{tool: env}", "{tool: env}, {tool: add}", 1)+b)
	waitTools(t, s, c, []string{"b_echo", "fake_add", "fake_env"})
	if p := pidOf("fake_env"); p != pid {
		t.Errorf("an allow change restarted the upstream (pid %d → %d)", pid, p)
	}

	// A start change: restarted.
	rewriteServers(t, s, strings.Replace(a, "$DIR/a]", "$DIR/a, -stderr-lines, \"1\"]", 1)+b)
	s.WaitLog(t, `msg="stopping upstream server" component=upstream server=fake because="its entry changed"`, 1, eventTimeout)
	s.WaitLog(t, `msg="upstream server ready" component=upstream server=fake`, 2, eventTimeout)
	waitTools(t, s, c, []string{"b_echo", "fake_env"})
	if p := pidOf("fake_env"); p == pid {
		t.Errorf("an args change did not restart the upstream (pid %d)", p)
	}
	if strings.Contains(s.Log(), `server=bee because`) {
		t.Errorf("an unchanged server was stopped:\n%s", s.Log())
	}

	// Removal: stopped, tools gone, process gone.
	rewriteServers(t, s, strings.Replace(a, "$DIR/a]", "$DIR/a, -stderr-lines, \"1\"]", 1))
	s.WaitLog(t, `msg="stopping upstream server" component=upstream server=bee because="removed from the config"`, 1, eventTimeout)
	waitTools(t, s, c, []string{"fake_env"})
	waittest.Gone(t, eventTimeout, beePid)
	if got := c.WrappedTools(t); !slices.Equal(got, []string{"fake_env"}) {
		t.Errorf("tools %v", got)
	}
}

// TestUpstreamConcurrentClients has 16 clients call one upstream at once:
// every reply reaches the call that made it.
func TestUpstreamConcurrentClients(t *testing.T) {
	slow(t, "16 clients on one upstream")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serversConfig(t, dir, `  fake:
    command: $UPSTREAM
    allow: [{tool: echo}, {tool: slow}]
`))
	const clients, calls = 16, 25
	var wg sync.WaitGroup
	errs := make(chan string, clients*calls)
	for i := range clients {
		c := s.Connect(t, []string{"/mcp", "/sse"}[i%2])
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range calls {
				ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
				want := fmt.Sprintf("client %d call %d", i, j)
				res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "fake_echo", Arguments: map[string]any{"text": want}})
				cancel()
				switch {
				case err != nil:
					errs <- fmt.Sprintf("%s: %v", want, err)
				case resultText(res) != want:
					errs <- fmt.Sprintf("%s: got the reply %q", want, resultText(res))
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestUpstreamEnvironmentAndWorkingDir shows the tools' environment rules
// and working_dir applied to an upstream: nothing of wraptool's own
// environment but PATH and HOME reaches it.
func TestUpstreamEnvironmentAndWorkingDir(t *testing.T) {
	slow(t, "an upstream's environment and working_dir")
	t.Parallel()
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "up.env"), []byte("# a comment\nFROM_FILE=file\nBOTH=file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServerIn(t, dir, serversConfig(t, dir, `  fake:
    command: $UPSTREAM
    working_dir: $DIR/work
    env_files: [$DIR/up.env]
    env: {INLINE: inline, BOTH: inline}
    allow: [{tool: env}]
`), "PARENT_SECRET=must-not-leak")
	c := s.Connect(t, "/mcp")
	var got struct {
		Env []string
		Cwd string
	}
	if err := json.Unmarshal([]byte(resultText(c.Call(t, "fake_env", nil))), &got); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range got.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	want := map[string]string{"FROM_FILE": "file", "INLINE": "inline", "BOTH": "inline", "LANG": "C.UTF-8",
		"HOME": filepath.Join(dir, "home")}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
	if !strings.HasPrefix(env["PATH"], filepath.Dir(fakeupstream)+":") {
		t.Errorf("PATH %q does not start with the command's folder", env["PATH"])
	}
	for k := range env {
		if _, ok := want[k]; !ok && k != "PATH" {
			t.Errorf("unexpected variable %s=%q reached the upstream", k, env[k])
		}
	}
	if real, _ := filepath.EvalSymlinks(work); got.Cwd != real && got.Cwd != work {
		t.Errorf("cwd %q, want %q", got.Cwd, work)
	}
}

// TestUpstreamStartFailures shows upstreams that cannot start: serving is
// not held back past their first attempt, each failure is logged with its
// cause, and retried with backoff.
func TestUpstreamStartFailures(t *testing.T) {
	slow(t, "upstreams that cannot start")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serversConfig(t, dir, `  missing:
    command: no-such-upstream-command
  early:
    command: $UPSTREAM
    args: [-exit-at-start, "7"]
  slowstart:
    command: $UPSTREAM
    args: [-start-delay, 30s]
    init_timeout: 500ms
`))
	c := s.Connect(t, "/mcp")
	if got := c.WrappedTools(t); len(got) != 0 {
		t.Errorf("tools %v", got)
	}
	for _, want := range []string{
		`server=missing error="cannot start: \"no-such-upstream-command\" not found in PATH`,
		`server=early error="exited before it could initialize (exit status 7)" restart_in=1s`,
		`server=slowstart error="did not initialize within init_timeout (500ms)" restart_in=1s`,
		`msg="upstream stderr" component=upstream server=early line="fakeupstream exiting at start as asked"`,
	} {
		s.WaitLog(t, want, 1, eventTimeout)
	}
	// The second failure waits twice as long.
	s.WaitLog(t, `server=early error="exited before it could initialize (exit status 7)" restart_in=2s`, 1, eventTimeout)
}

// TestUpstreamShutdownStopsProcessGroups shows that stopping wraptool stops
// each upstream's whole process group, children included.
func TestUpstreamShutdownStopsProcessGroups(t *testing.T) {
	slow(t, "stopping upstream process groups")
	t.Parallel()
	dir := t.TempDir()
	marksFile := filepath.Join(dir, "work", "marks")
	s := startServerIn(t, dir, serversConfig(t, dir, `  fake:
    command: $UPSTREAM
    args: [-marks, $DIR/work/marks, -child]
    allow: [{tool: echo}]
`))
	m := waitMarks(t, marksFile, "child pid=", 1)
	procs := append(pids(m, "start"), pids(m, "child")...)
	if len(procs) != 2 {
		t.Fatalf("pids %v from:\n%s", procs, m)
	}
	s.Signal(t, syscall.SIGTERM)
	if err := s.Wait(t, eventTimeout); err != nil {
		t.Errorf("exit: %v", err)
	}
	for _, pid := range procs {
		waittest.Gone(t, eventTimeout, pid)
	}
}

// TestUpstreamServerEverything fronts the MCP reference server from npm
// (@modelcontextprotocol/server-everything) with only its echo allowed:
// echo works through wraptool, and every other tool it offers is neither
// listed nor callable. It needs node (see nodeSetup) and skips without it.
func TestUpstreamServerEverything(t *testing.T) {
	slow(t, "the npm reference server as an upstream")
	t.Parallel()
	argv := everythingCommand(t)
	dir := t.TempDir()
	s := startServerIn(t, dir, serversConfig(t, dir, everythingEntry(argv, "echo")))
	c := s.Connect(t, "/mcp")
	if got := c.WrappedTools(t); !slices.Equal(got, []string{"everything_echo"}) {
		t.Fatalf("exposed %v, want only everything_echo:\n%s", got, s.Log())
	}
	res := c.Call(t, "everything_echo", map[string]any{"message": "through wraptool"})
	if res.IsError || resultText(res) != "Echo: through wraptool" {
		t.Errorf("everything_echo: isError=%v %q", res.IsError, resultText(res))
	}

	// Every other tool the server offers is hidden and refused.
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil)
	direct, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(argv[0], argv[1:]...)}, nil)
	if err != nil {
		t.Fatalf("connect to server-everything directly: %v", err)
	}
	defer direct.Close()
	var others int
	for tool, err := range direct.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == "echo" {
			continue
		}
		others++
		unknownToolCall(t, c, "everything_"+tool.Name)
	}
	if others < 5 {
		t.Errorf("server-everything offered %d tools besides echo; the test expects its usual dozen", others)
	}
}

// TestUpstreamCannotReachTheClient shows that an upstream cannot use
// wraptool's client to reach the assistant or the operator: its requests for
// input (elicitation, sampling, roots; in a tool result since protocol
// 2026-07-28) are refused with a tool error, and the client behind wraptool,
// ready to answer all of them, is never asked.
func TestUpstreamCannotReachTheClient(t *testing.T) {
	slow(t, "an upstream reaching the client")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serversConfig(t, dir, `  fake:
    command: $UPSTREAM
    args: [-marks, $DIR/work/marks]
    allow: [{tool: reach}]
`))
	client, asked := eagerClient()
	c := s.connectWith(t, client, "/mcp")
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "fake_reach"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(resultText(res), `upstream server "fake" asked the client for input (elicitation, sampling or roots), which wraptool does not pass on`) {
		t.Errorf("got isError=%v %q", res.IsError, resultText(res))
	}
	if res.NeedsInput() || res.InputRequests != nil {
		t.Errorf("the upstream's input requests reached the client: %+v", res.InputRequests)
	}
	if m := marks(t, filepath.Join(dir, "work", "marks")); strings.Contains(m, "reach answered") {
		t.Errorf("the upstream got answers:\n%s", m)
	}
	if len(asked) > 0 {
		t.Errorf("the client behind wraptool was asked for %s", <-asked)
	}
}

// eagerClient answers every request a server may make of it, so a test can
// show none is made.
func eagerClient() (*mcp.Client, <-chan string) {
	asked := make(chan string, 8)
	fail := func(what string) { asked <- what }
	client := mcp.NewClient(&mcp.Implementation{Name: "eager", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			fail("sampling")
			return &mcp.CreateMessageResult{Content: &mcp.TextContent{Text: "sure"}, Model: "m", Role: "assistant"}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			fail("elicitation")
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///home/secret"})
	return client, asked
}

// TestUpstreamServerEverythingCannotReachTheClient is the same with an
// upstream on the 2025 protocol versions, which would ask its client
// directly (sampling/createMessage, elicitation/create, roots/list) while a
// call runs: wraptool's client advertises none of those capabilities, so
// server-everything does not even offer the tools that would ask, though
// the client behind wraptool supports them all.
func TestUpstreamServerEverythingCannotReachTheClient(t *testing.T) {
	slow(t, "a 2025-protocol upstream reaching the client")
	t.Parallel()
	argv := everythingCommand(t)
	dir := t.TempDir()
	asking := []string{"get-roots-list", "trigger-elicitation-request", "trigger-sampling-request"}
	s := startServerIn(t, dir, serversConfig(t, dir, everythingEntry(argv, append([]string{"echo"}, asking...)...)))
	client, asked := eagerClient()
	c := s.connectWith(t, client, "/mcp")
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	listed, err := c.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range listed.Tools {
		if !strings.HasPrefix(tool.Name, "wraptool_") {
			names = append(names, tool.Name)
		}
	}
	if !slices.Equal(names, []string{"everything_echo"}) {
		t.Errorf("exposed %v, want only everything_echo: server-everything offers tools that ask the client", names)
	}
	for _, tool := range asking {
		want := `msg="upstream tool not exposed" component=registry server=everything tool=` + tool + ` reason="it is allowed, but the upstream server does not offer it"`
		if !strings.Contains(s.Log(), want) {
			t.Errorf("the log lacks %s", want)
		}
	}
	if len(asked) > 0 {
		t.Errorf("the client behind wraptool was asked for %s", <-asked)
	}
}

// everythingEntry is an mcp_servers entry "everything" that starts argv
// (server-everything, see everythingCommand) and allows tools; node can be
// slow to start, hence the longer init_timeout.
func everythingEntry(argv []string, tools ...string) string {
	quoted := make([]string, len(argv)-1)
	for i, a := range argv[1:] {
		quoted[i] = strconv.Quote(a)
	}
	return fmt.Sprintf("  everything:\n    command: %s\n    args: [%s]\n    init_timeout: 30s\n    allow: [{tool: %s}]\n",
		strconv.Quote(argv[0]), strings.Join(quoted, ", "), strings.Join(tools, "}, {tool: "))
}
