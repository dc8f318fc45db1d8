package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/toolset"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// The load test's shape: 64 clients for 30 s against a config rewritten
// every 100 ms, the scale the project promises to hold; the timeouts are what a 2-core CI machine running -race needs with headroom.
const (
	// loadDuration is how long the clients call; WRAPTOOL_LOAD_DURATION
	// (a Go duration) shortens it for a quick run on a workstation.
	loadDuration = 30 * time.Second
	// 64 clients: both HTTP transports of one listener, and `wraptool
	// connect` processes bridging stdio to it.
	loadStreamable, loadSSE, loadConnect = 24, 24, 16
	// loadRewrite is the pace of config rewrites.
	loadRewrite = 100 * time.Millisecond
	// loadGrantFor is a timed grant's lifetime, short so that grants
	// start and expire many times in one run; loadGrantGap is the pause
	// after one ends, so that some stretches have no grant at all.
	loadGrantFor = 2 * time.Second
	loadGrantGap = 300 * time.Millisecond
	// loadCallTimeout bounds one call: above the tools' 30 s timeout, so
	// a slow call is the server's answer, not the client giving up.
	loadCallTimeout = 40 * time.Second
	// The leak check's tolerance over the baseline: a few goroutines and
	// files a long-lived server may legitimately open once (the request
	// log's lock, a timer) are not a leak per client.
	goroutineSlack, fdSlack = 10, 5
	// leakTimeout bounds the wait for the server to let go of the
	// clients' sessions and connections.
	leakTimeout = 20 * time.Second
)

// loadVersion is one config the test rewrites the file with. The same
// fields write the YAML and decide (in allows) what its policy permits, so
// the config and the test's model of it cannot drift apart.
type loadVersion struct {
	name string
	// pullDepth adds --depth (an integer 1..50) to pull; fetch, log and
	// tag add those rules. pull and status are in every version.
	pullDepth, fetch, log, tag bool
}

// The versions: A, B and C are cycled during the load (each pair differs
// in its tools or flags, so each reload changes what clients see), F is
// written last and has a tool no other version has.
var (
	loadA = loadVersion{name: "A", pullDepth: true, fetch: true}
	loadB = loadVersion{name: "B", log: true}
	loadC = loadVersion{name: "C", pullDepth: true, fetch: true, log: true}
	loadF = loadVersion{name: "F", tag: true}
)

// yaml is the version's tools: section.
func (v loadVersion) yaml() string {
	var b strings.Builder
	b.WriteString("tools:\n  fake:\n    binary: " + fakecli + "\n    allow:\n")
	if v.pullDepth {
		b.WriteString(`      - subcommand: [pull]
        flags: ["--verbose", "--depth"]
        flag_constraints:
          "--verbose": {type: boolean}
          "--depth": {type: integer, min: 1, max: 50}
        arg_constraints: {positional_max: 1, pattern: "[a-z]+"}
`)
	} else {
		b.WriteString(`      - subcommand: [pull]
        flags: ["--verbose"]
        flag_constraints:
          "--verbose": {type: boolean}
        arg_constraints: {positional_max: 1, pattern: "[a-z]+"}
`)
	}
	b.WriteString(`      - subcommand: [status]
        flags: ["--verbose"]
        flag_constraints:
          "--verbose": {type: boolean}
        arg_constraints: {positional_max: 0}
`)
	if v.fetch {
		b.WriteString("      - subcommand: [fetch]\n        arg_constraints: {positional_max: 0}\n")
	}
	if v.log {
		b.WriteString(`      - subcommand: [log]
        flags: ["--oneline"]
        flag_constraints:
          "--oneline": {type: boolean}
        arg_constraints: {positional_max: 0}
`)
	}
	if v.tag {
		b.WriteString("      - subcommand: [tag]\n        arg_constraints: {positional_max: 0}\n")
	}
	b.WriteString("    deny:\n      - subcommand: [secret]\n")
	return b.String()
}

// tools are the MCP tools the version exposes, sorted.
func (v loadVersion) tools() []string {
	names := []string{"fake_pull", "fake_status"}
	if v.fetch {
		names = append(names, "fake_fetch")
	}
	if v.log {
		names = append(names, "fake_log")
	}
	if v.tag {
		names = append(names, "fake_tag")
	}
	slices.Sort(names)
	return names
}

// flags are tool's flags as the rule lists them (the seeded help flags,
// the same in every version, left out).
func (v loadVersion) flags(tool string) []string {
	switch tool {
	case "fake_pull":
		if v.pullDepth {
			return []string{"--depth", "--verbose"}
		}
		return []string{"--verbose"}
	case "fake_status":
		return []string{"--verbose"}
	case "fake_log":
		return []string{"--oneline"}
	}
	return nil
}

// lowerWord is pull's positional pattern, applied whole.
var lowerWord = regexp.MustCompile(`^[a-z]+$`)

// allows reports whether the version permits argv (the binary, the
// subcommand, flags, then positionals, as the audit log records a run);
// granted adds what the test's grants add: --depth on status. It models
// only what the test's clients send, so anything else is refused.
func (v loadVersion) allows(argv []string, granted bool) bool {
	if len(argv) < 2 || argv[0] != fakecli {
		return false
	}
	sub, rest := argv[1], argv[2:]
	positionalMax := 0
	flagOK := func(string) bool { return false }
	switch {
	case sub == "pull":
		positionalMax = 1
		flagOK = func(f string) bool { return f == "--verbose" || v.pullDepth && depthOK(f) }
	case sub == "status":
		flagOK = func(f string) bool { return f == "--verbose" || granted && depthOK(f) }
	case sub == "fetch" && v.fetch, sub == "tag" && v.tag:
	case sub == "log" && v.log:
		flagOK = func(f string) bool { return f == "--oneline" }
	default:
		return false
	}
	seen := map[string]bool{}
	i := 0
	for ; i < len(rest) && strings.HasPrefix(rest[i], "-"); i++ {
		name, _, _ := strings.Cut(rest[i], "=")
		if seen[name] || !flagOK(rest[i]) {
			return false
		}
		seen[name] = true
	}
	positionals := rest[i:]
	if len(positionals) > positionalMax {
		return false
	}
	for _, p := range positionals {
		if !lowerWord.MatchString(p) {
			return false
		}
	}
	return true
}

// depthOK is --depth=N within the constraint pull's rule gives it.
func depthOK(flag string) bool {
	v, ok := strings.CutPrefix(flag, "--depth=")
	n, err := strconv.Atoi(v)
	return ok && err == nil && n >= 1 && n <= 50
}

// loadKind is one kind of call the clients make.
type loadKind struct {
	name string
	tool string
	args map[string]any
	// argv is what a run executes after the binary; nil for a call no
	// version allows.
	argv []string
	// shown and reason are the command and the Policy: reason of its denial.
	shown, reason string
	// mustRun: every version allows it, so any other answer is a failure.
	// Otherwise it may run or be denied, whichever its snapshot says
	// (argv set), or must be denied (argv nil).
	mustRun bool
	// mayVanish: the tool itself comes and goes with the config, so a
	// call that races a reload may find no such tool.
	mayVanish bool
}

// loadMix is what each client cycles through: allowed calls most of the
// time, then calls that depend on the snapshot, on a grant, and calls no
// version allows.
var loadMix = func() []loadKind {
	pull := loadKind{name: "allowed pull", tool: "fake_pull", args: map[string]any{"verbose": true, "args": []any{"origin"}},
		argv: []string{"pull", "--verbose", "origin"}, mustRun: true}
	status := loadKind{name: "allowed status", tool: "fake_status", args: map[string]any{"verbose": true},
		argv: []string{"status", "--verbose"}, mustRun: true}
	depth := loadKind{name: "churned pull --depth", tool: "fake_pull", args: map[string]any{"verbose": true, "depth": 3, "args": []any{"origin"}},
		argv: []string{"pull", "--verbose", "--depth=3", "origin"}, shown: "fake pull --verbose --depth=3 origin",
		reason: "flag '--depth' is not in the allowlist for 'fake pull'"}
	fetch := loadKind{name: "churned fetch", tool: "fake_fetch", args: map[string]any{}, argv: []string{"fetch"},
		shown: "fake fetch", reason: "'fake fetch' is not in the allowlist", mayVanish: true}
	log := loadKind{name: "churned log", tool: "fake_log", args: map[string]any{"oneline": true}, argv: []string{"log", "--oneline"},
		shown: "fake log --oneline", reason: "'fake log' is not in the allowlist", mayVanish: true}
	granted := loadKind{name: "granted status --depth", tool: "fake_status", args: map[string]any{"depth": "2"},
		argv: []string{"status", "--depth=2"}, shown: "fake status --depth=2",
		reason: "flag '--depth' is not in the allowlist for 'fake status'"}
	force := loadKind{name: "denied --force", tool: "fake_pull", args: map[string]any{"force": true},
		shown: "fake pull --force", reason: "flag '--force' is not in the allowlist for 'fake pull'"}
	dash := loadKind{name: "denied -rf", tool: "fake_pull", args: map[string]any{"args": []any{"-rf"}},
		shown: "fake pull -rf", reason: "positional argument '-rf' looks like a flag; pass flags as named parameters"}
	upper := loadKind{name: "denied UPPER", tool: "fake_pull", args: map[string]any{"args": []any{"UPPER"}},
		shown: "fake pull UPPER", reason: "positional argument 'UPPER' does not match pattern '[a-z]+'"}
	return []loadKind{pull, status, depth, granted, pull, fetch, force, status, granted, log, pull, dash, depth, status, upper, granted}
}()

// loadClient is one of the load's MCP clients, with what it saw. Only its
// own goroutine writes the stats while the load runs.
type loadClient struct {
	*mcpClient
	transport string // "/mcp", "/sse" or "connect"
	// implementation is the name the client gives in its initialize,
	// unique to it: the audit log's "client" field says which client
	// made each call, whatever the transport.
	implementation string
	session        string // the Mcp-Session-Id ("" where the client cannot know it)
	// end closes the session and whatever it holds: the HTTP
	// transport's idle connections, the SSE stream's context, the
	// connect process (whose exit end waits for).
	end    func() error
	cmd    *exec.Cmd  // connect only
	stderr *logBuffer // connect only

	calls     map[string]int // by kind name
	ran       map[string]int // by tool
	denied    map[string]int // by tool
	vanished  map[string]int // by tool: "unknown tool"
	relists   int
	latencies []time.Duration
	problems  []string // the first few
	more      int      // problems beyond those
}

// dialLoad opens client i on endpoint, over an HTTP transport of its own,
// so that closing it really closes its connections (a shared transport
// keeps idle ones open, which would read as a leak on the server).
func dialLoad(s *server, endpoint string, i int) (*loadClient, error) {
	c := newLoadClient(fmt.Sprintf("%s client %d", endpoint, i), endpoint)
	base := http.DefaultTransport.(*http.Transport).Clone()
	httpClient := &http.Client{Transport: toolsettest.Bearer{Token: s.Token, Base: base}}
	var transport mcp.Transport = &mcp.StreamableClientTransport{Endpoint: s.URL + endpoint, HTTPClient: httpClient}
	if endpoint == "/sse" {
		transport = &mcp.SSEClientTransport{Endpoint: s.URL + endpoint, HTTPClient: httpClient}
	}
	// The SSE transport keeps Connect's context for its stream: it
	// lives until end, and a timer bounds the connect.
	ctx, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(eventTimeout, cancel)
	session, err := c.client().Connect(ctx, transport, nil)
	if !timer.Stop() && err == nil {
		err = fmt.Errorf("not connected within %v", eventTimeout)
	}
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%s: connect: %w", c.name, err)
	}
	c.ClientSession, c.session = session, session.ID()
	c.end = func() error {
		err := session.Close()
		cancel()
		base.CloseIdleConnections()
		return err
	}
	return c, nil
}

// dialConnect opens client i through its own `wraptool connect` process.
func dialConnect(cmd *exec.Cmd, i int) (*loadClient, error) {
	c := newLoadClient(fmt.Sprintf("connect client %d", i), "connect")
	c.cmd, c.stderr = cmd, &logBuffer{}
	cmd.Stderr = c.stderr
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	session, err := c.client().Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		if cmd.Process != nil {
			cmd.Process.Kill()
			go cmd.Wait() // reap it; the SDK may have begun waiting already
		}
		return nil, fmt.Errorf("%s: %w\n--- its log:\n%s", c.name, err, c.stderr.String())
	}
	c.ClientSession = session
	c.end = session.Close
	return c, nil
}

func newLoadClient(name, transport string) *loadClient {
	return &loadClient{mcpClient: &mcpClient{ListChanged: make(chan struct{}, 1), name: name}, transport: transport,
		implementation: "wraptool-load " + name,
		calls:          map[string]int{}, ran: map[string]int{}, denied: map[string]int{}, vanished: map[string]int{}}
}

// client is the go-sdk client: its list_changed handler rings a
// one-slot doorbell, which the loop answers by listing the tools again,
// as a real client does.
func (c *loadClient) client() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: c.implementation, Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case c.ListChanged <- struct{}{}:
			default: // already rung: one re-list covers both
			}
		},
	})
}

// problem records a failure to report from the test's goroutine; a flood
// of the same failure keeps the first few.
func (c *loadClient) problem(format string, args ...any) {
	if len(c.problems) < 5 {
		c.problems = append(c.problems, c.name+": "+fmt.Sprintf(format, args...))
	} else {
		c.more++
	}
}

// run makes calls from the mix, starting at offset, until stop is done.
// A call is never cut short by stop: it completes (bounded by
// loadCallTimeout), so each call the client counts is one the server
// finished and audited.
func (c *loadClient) run(stop context.Context, offset int) {
	for n := offset; stop.Err() == nil; n++ {
		select {
		case <-c.ListChanged:
			c.relists++
			ctx, cancel := context.WithTimeout(context.Background(), loadCallTimeout)
			_, err := c.ListTools(ctx, nil)
			cancel()
			if err != nil {
				c.problem("tools/list: %v", err)
			}
		default:
		}
		k := loadMix[n%len(loadMix)]
		ctx, cancel := context.WithTimeout(context.Background(), loadCallTimeout)
		start := time.Now()
		res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: k.tool, Arguments: k.args})
		c.latencies = append(c.latencies, time.Since(start))
		cancel()
		c.calls[k.name]++
		c.check(k, res, err)
	}
}

// check judges one call's answer by its kind.
func (c *loadClient) check(k loadKind, res *mcp.CallToolResult, err error) {
	if err != nil {
		if k.mayVanish && strings.Contains(err.Error(), fmt.Sprintf("unknown tool %q", k.tool)) {
			c.vanished[k.tool]++
			return
		}
		c.problem("%s: %v", k.name, err)
		return
	}
	text := ""
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	if k.mayVanish && res.IsError && strings.HasPrefix(text, "UNKNOWN TOOL: '"+k.tool+"' ") {
		c.vanished[k.tool]++
		return
	}
	if strings.HasPrefix(text, "DENIED: ") {
		c.denied[k.tool]++
		prefix := "DENIED: '" + k.shown + "' is not permitted.\n\nPolicy: " + k.reason + ".\n"
		const suffix = "\nTo request this capability, call the 'wraptool_request_capability' tool."
		switch {
		case k.mustRun:
			c.problem("%s was denied; every version allows it:\n%s", k.name, text)
		case !res.IsError || !strings.HasPrefix(text, prefix) || !strings.HasSuffix(text, suffix):
			c.problem("%s: denial (isError %v)\n%s\nwant it to start with\n%s", k.name, res.IsError, text, prefix)
		}
		return
	}
	if k.argv == nil {
		c.problem("%s ran; no version allows it (isError %v): %s", k.name, res.IsError, text)
		return
	}
	var out runOutput
	var report fakeReport
	data, _ := json.Marshal(res.StructuredContent)
	want := append([]string{fakecli}, k.argv...)
	if res.IsError || json.Unmarshal(data, &out) != nil || out.ExitCode == nil || *out.ExitCode != 0 ||
		json.Unmarshal([]byte(out.Stdout), &report) != nil || !slices.Equal(report.Argv, want) || text != out.Stdout {
		c.problem("%s failed (isError %v): want a run of %q, got text %q, structuredContent %s", k.name, res.IsError, want, text, data)
		return
	}
	c.ran[k.tool]++
}

// loadGrant is a grant the operator approved during the load.
type loadGrant struct {
	id    string
	once  bool
	until time.Time
	// approved is when the CLI had written the approval: how long the
	// grant took to allow its first call is measured from it.
	approved time.Time
}

// loadState is what decided a call: a config version and the grants in
// force.
type loadState struct {
	version loadVersion
	grants  []string // sorted
}

// TestLoad is the load test: 64 MCP clients (Streamable HTTP,
// legacy SSE and `wraptool connect`) call allowed, denied, snapshot-
// dependent and granted tools for loadDuration, while the config is
// rewritten every 100 ms and the operator approves grants that start,
// get used and expire. Then it asserts what must hold under load: no allowed
// call failed; the audit log shows no argv run that the snapshot which
// decided it did not allow (each line's policy hash names the config
// version and grants it was decided by), and exactly the runs the clients
// saw; every client ends with the final tool list; and once the clients
// are gone the server holds no more goroutines, files or children than
// before they came.
//
// It is not parallel: 64 clients saturate a 2-core machine, and the
// figures (and the bounds that keep it from flaking) assume the load is
// the only one.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("the load test takes over 30 s; it runs without -short (.ci/run does)")
	}
	duration := loadDuration
	if v := os.Getenv("WRAPTOOL_LOAD_DURATION"); v != "" {
		// Below 5 s no grant fits inside the load (see operate).
		d, err := time.ParseDuration(v)
		if err != nil || d < 5*time.Second {
			t.Fatalf("WRAPTOOL_LOAD_DURATION=%q: want a Go duration of at least 5s (%v)", v, err)
		}
		duration = d
	}
	began := time.Now()
	dir := t.TempDir()
	adminAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	head := serverConfig(t, dir, "") + fmt.Sprintf("admin:\n  listen: %s\n  auth_token_file: %s\n", adminAddr, filepath.Join(dir, "admin-token"))
	configOf := func(v loadVersion) string { return head + v.yaml() }
	s := startServerIn(t, dir, configOf(loadA))
	adminToken := strings.TrimSpace(string(configtest.ReadFile(t, filepath.Join(dir, "admin-token"))))
	auditPath := filepath.Join(dir, "audit.jsonl")

	// Warm-up: learn each version's policy hash (no grant is in force
	// yet, so the audit's hash is the files' alone), ending on A.
	hashes := map[string]string{}
	start := waitAudit(t, s, "the start", func(l auditLine) bool { return l.Event == "policy" && l.Cause == "start" })
	hashes[loadA.name] = start.New
	for _, v := range []loadVersion{loadB, loadC, loadF, loadA} {
		prev := len(readAudit(t, auditPath))
		if err := configtest.WriteAndRename(s.ConfigPath, configOf(v)); err != nil {
			t.Fatal(err)
		}
		l := nextAudit(t, auditPath, prev, "the reload to version "+v.name, func(l auditLine) bool {
			return l.Event == "policy" && l.Cause == "file"
		})
		if l.Outcome != "applied" {
			t.Fatalf("the reload to version %s: %+v", v.name, l)
		}
		if known, ok := hashes[v.name]; ok && known != l.New {
			t.Fatalf("version %s hashed %s, then %s: the same bytes must give the same policy hash", v.name, known, l.New)
		}
		hashes[v.name] = l.New
	}
	if len(slices.Compact(slices.Sorted(maps.Values(hashes)))) != 4 {
		t.Fatalf("the four versions do not have four policy hashes: %v", hashes)
	}
	goroutinesBefore, fdsBefore := serverGauges(t, adminAddr, adminToken)

	// Connect the clients, all at once.
	clients := make([]*loadClient, 0, loadStreamable+loadSSE+loadConnect)
	var (
		dialMu   sync.Mutex
		dialErrs []error
		dialWG   sync.WaitGroup
	)
	dial := func(f func() (*loadClient, error)) {
		dialWG.Add(1)
		go func() {
			defer dialWG.Done()
			c, err := f()
			dialMu.Lock()
			defer dialMu.Unlock()
			if err != nil {
				dialErrs = append(dialErrs, err)
				return
			}
			clients = append(clients, c)
		}()
	}
	for i := range loadStreamable {
		dial(func() (*loadClient, error) { return dialLoad(s, "/mcp", i) })
	}
	for i := range loadSSE {
		dial(func() (*loadClient, error) { return dialLoad(s, "/sse", i) })
	}
	for i := range loadConnect {
		cmd := connectCommand(t, s.ConfigPath)
		dial(func() (*loadClient, error) { return dialConnect(cmd, i) })
	}
	dialWG.Wait()
	ended := false
	endAll := func() {
		if ended {
			return
		}
		ended = true
		var wg sync.WaitGroup
		for _, c := range clients {
			wg.Add(1)
			go func() { defer wg.Done(); c.end() }()
		}
		wg.Wait()
	}
	t.Cleanup(endAll)
	if len(dialErrs) > 0 {
		t.Fatalf("%d of %d clients did not connect; the first: %v\n%s", len(dialErrs), cap(clients), dialErrs[0], tail(s.Log(), 40))
	}
	slices.SortFunc(clients, func(a, b *loadClient) int { return strings.Compare(a.name, b.name) })
	var requester *mcpClient
	for _, c := range clients {
		if c.transport == "/mcp" {
			requester = c.mcpClient
			break
		}
	}

	// The load: clients call, the config is rewritten, grants come and go.
	reloadsBefore := strings.Count(s.Log(), `msg="config reloaded"`)
	loadStart := time.Now()
	stop, stopClients := context.WithDeadline(context.Background(), loadStart.Add(duration))
	defer stopClients()
	var clientsWG sync.WaitGroup
	for i, c := range clients {
		clientsWG.Add(1)
		go func() { defer clientsWG.Done(); c.run(stop, i) }()
	}
	var writes atomic.Int64
	rewriterDone := make(chan error, 1)
	endRewrites, stopRewriter := context.WithCancel(context.Background())
	defer stopRewriter()
	go func() {
		rewriterDone <- rewrite(endRewrites, s.ConfigPath, []string{configOf(loadB), configOf(loadC), configOf(loadA)}, &writes)
	}()

	grants := operate(t, s, requester, loadStart.Add(duration))

	var loadTook time.Duration // until the last client's last call ended
	clientsEnded := make(chan struct{})
	go func() { clientsWG.Wait(); loadTook = time.Since(loadStart); close(clientsEnded) }()
	select {
	case <-clientsEnded:
	case <-time.After(time.Until(loadStart.Add(duration)) + loadCallTimeout + 5*time.Second):
		t.Fatalf("clients still calling %v after the load ended\n%s", loadCallTimeout+5*time.Second, tail(s.Log(), 40))
	}
	stopRewriter()
	if err := <-rewriterDone; err != nil {
		t.Errorf("rewriting the config: %v", err)
	}
	reloads := strings.Count(s.Log(), `msg="config reloaded"`) - reloadsBefore

	// The final config. Each client, told by a list_changed after the
	// write, must come to list its tools, with no grant's flag (every
	// grant has ended: the operator waited for each), exactly as a new
	// session sees them.
	for _, c := range clients {
		select {
		case <-c.ListChanged:
		default:
		}
	}
	if err := configtest.WriteAndRename(s.ConfigPath, configOf(loadF)); err != nil {
		t.Fatal(err)
	}
	finalDeadline := time.Now().Add(eventTimeout)
	views := make([]map[string]string, len(clients))
	for i, c := range clients {
		var problem string
		if views[i], problem = awaitFinalTools(c, finalDeadline); problem != "" {
			t.Errorf("%s does not end with the final tool list: %s", c.name, problem)
		}
	}
	if fresh, err := dialLoad(s, "/mcp", len(clients)); err != nil {
		t.Errorf("a session after the load: %v", err)
	} else {
		want, problem := listFinal(fresh)
		fresh.end()
		for i, c := range clients {
			if problem == "" && views[i] != nil && !maps.Equal(views[i], want) {
				t.Errorf("%s ends with tools\n%v\nwhere a new session lists\n%v", c.name, views[i], want)
			}
		}
		if problem != "" {
			t.Errorf("a session after the load: %s", problem)
		}
	}

	// Report what the clients saw.
	var problems []string
	dropped := 0
	for _, c := range clients {
		problems = append(problems, c.problems...)
		dropped += c.more
	}
	if len(problems) > 20 {
		problems, dropped = problems[:20], dropped+len(problems)-20
	}
	for _, p := range problems {
		t.Errorf("%s", p)
	}
	if dropped > 0 {
		t.Errorf("… and %d more problems like those", dropped)
	}

	// Disconnect, and the server must let go of everything the clients
	// held.
	endAll()
	for _, c := range clients {
		if c.cmd == nil {
			continue
		}
		if st := c.cmd.ProcessState; st == nil || !st.Success() {
			t.Errorf("%s: `wraptool connect` did not exit with status 0 once its stdin closed (%v)\n%s", c.name, st, tail(c.stderr.String(), 20))
		}
	}
	goroutinesAfter, fdsAfter := awaitNoLeak(t, adminAddr, adminToken, goroutinesBefore+goroutineSlack, fdsBefore+fdSlack)
	if g, f := goroutinesAfter-goroutinesBefore, fdsAfter-fdsBefore; g > goroutineSlack || f > fdSlack {
		t.Errorf("after the clients disconnected the server holds %d goroutines and %d open files; before they came, %d and %d (tolerance +%d, +%d)",
			goroutinesAfter, fdsAfter, goroutinesBefore, fdsBefore, goroutineSlack, fdSlack)
	}
	if kids := childrenOf(s.PID()); len(kids) > 0 {
		t.Errorf("the server still has child processes after the load: %s", strings.Join(kids, "; "))
	}
	if code, body := get(t, s.URL+"/healthz", ""); code != 200 || !healthzOK(body) {
		t.Errorf("/healthz after the load: %d %q", code, body)
	}
	stopPromptly(t, s, stopBound)

	// The audit log, complete now that the server has stopped.
	audit := checkLoadAudit(t, readAudit(t, auditPath), hashes, grants, clients, loadStart)

	// The figures.
	var all []time.Duration
	byTransport := map[string][]time.Duration{}
	kinds := map[string]map[string]int{}
	var ran, denied, vanished, relists int
	for _, c := range clients {
		all = append(all, c.latencies...)
		byTransport[c.transport] = append(byTransport[c.transport], c.latencies...)
		for k, n := range c.calls {
			if kinds[k] == nil {
				kinds[k] = map[string]int{}
			}
			kinds[k][c.transport] += n
		}
		ran += sum(c.ran)
		denied += sum(c.denied)
		vanished += sum(c.vanished)
		relists += c.relists
	}
	var b strings.Builder
	fmt.Fprintf(&b, "load: %d clients (%d /mcp, %d /sse, %d connect) for %v (%v until the last call ended); whole test %v\n",
		len(clients), loadStreamable, loadSSE, loadConnect, duration, loadTook.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	fmt.Fprintf(&b, "calls: %d (%.0f/s): %d ran, %d denied, %d found no such tool; %d problems; %d tools/list after list_changed\n",
		len(all), float64(len(all))/loadTook.Seconds(), ran, denied, vanished, len(problems)+dropped, relists)
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		fmt.Fprintf(&b, "  %-24s /mcp %6d  /sse %6d  connect %6d\n", k, kinds[k]["/mcp"], kinds[k]["/sse"], kinds[k]["connect"])
	}
	for _, tr := range []string{"/mcp", "/sse", "connect"} {
		p50, p99 := percentiles(byTransport[tr])
		fmt.Fprintf(&b, "latency %-8s p50 %v  p99 %v\n", tr, p50, p99)
	}
	p50, p99 := percentiles(all)
	fmt.Fprintf(&b, "latency all      p50 %v  p99 %v\n", p50, p99)
	once := 0
	for _, g := range grants {
		if g.once {
			once++
		}
	}
	fmt.Fprintf(&b, "config: %d writes, %d reloads logged during the load; %d policy changes by file in the audit from the load's start, the final one included\n", writes.Load(), reloads, audit.fileChanges)
	fmt.Fprintf(&b, "grants: %d approved (%d for %v, %d once; %d of those for %v allowed no call), %d expired, %d used, %d calls allowed by a grant; the slowest first use came %v after its approval\n",
		len(grants), len(grants)-once, loadGrantFor, once, audit.unusedTimed, loadGrantFor, audit.expired, audit.used, audit.granted, audit.slowestStart.Round(time.Millisecond))
	fmt.Fprintf(&b, "server: goroutines %d before, %d after; open files %d before, %d after\n", goroutinesBefore, goroutinesAfter, fdsBefore, fdsAfter)
	t.Log("\n" + b.String())
	if t.Failed() {
		t.Logf("the server's log, last lines:\n%s", tail(s.Log(), 60))
	}

	// A load of this length must have made the server reload several
	// times; with no maximum wait, a rewrite every 100 ms would starve the
	// 200 ms debounce and the file would never be read.
	if want := max(2, int(duration/(3*time.Second))); reloads < want {
		t.Errorf("the server reloaded %d times during a %v load with a rewrite every %v, want at least %d", reloads, duration, loadRewrite, want)
	}
	if ran == 0 || denied == 0 || audit.granted == 0 {
		t.Errorf("the load did not exercise every outcome: %d ran, %d denied, %d allowed by a grant", ran, denied, audit.granted)
	}
}

// rewrite writes versions in turn, one every loadRewrite, until ctx ends.
func rewrite(ctx context.Context, path string, versions []string, writes *atomic.Int64) error {
	tick := time.NewTicker(loadRewrite)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if err := configtest.WriteAndRename(path, versions[i%len(versions)]); err != nil {
			return err
		}
		writes.Add(1)
	}
}

// operate is the operator: until end, a client files a request for
// status --depth, the CLI approves it for loadGrantFor or once, and the
// operator waits for the grant to end (its time up, or its one use seen
// in the request log) before the next. It returns the grants approved.
func operate(t *testing.T, s *server, requester *mcpClient, end time.Time) []loadGrant {
	t.Helper()
	cli := operatorCLI(t, s)
	var grants []loadGrant
	// Each grant lives inside the load, so each must allow calls.
	for n := 1; time.Until(end) > loadGrantFor; n++ {
		id := request(t, requester, askFor("fake", []string{"status"}, []string{"--depth"}, fmt.Sprintf("load test grant %d", n), ""))
		// A once-grant needs calls after it to use it: none in the last
		// seconds of the load.
		once := n%3 == 2 && time.Until(end) > 3*time.Second
		how := []string{"--for", loadGrantFor.String()}
		if once {
			how = []string{"--once"}
		}
		if out, stderr, code := cli(append([]string{"requests", "approve", id}, how...)...); code != 0 {
			t.Fatalf("requests approve %s %q: exit %d\n%s\n%s", id, how, code, out, stderr)
		}
		approved := time.Now()
		got := listJSON(t, cli, id)
		if got.Grant == nil || got.Grant.Once != once {
			t.Fatalf("request %s after approve %q: %+v", id, how, got)
		}
		grants = append(grants, loadGrant{id: id, once: once, until: got.Grant.Until, approved: approved})
		if !once {
			// The grant's lifetime is the load's pace: wait out the clock.
			time.Sleep(time.Until(got.Grant.Until) + loadGrantGap)
			continue
		}
		// Each check runs the CLI: a steady pace spares the loaded server.
		waittest.Poll{Every: 100 * time.Millisecond}.Until(t, eventTimeout, func() error {
			if listJSON(t, cli, id).Grant.UsedAt == nil {
				return fmt.Errorf("once-grant %s not used while clients call fake_status --depth\n%s", id, tail(s.Log(), 40))
			}
			return nil
		})
		time.Sleep(loadGrantGap)
	}
	return grants
}

// awaitFinalTools waits (until deadline) for a list_changed on c, lists
// its tools, and does so again until they are the final version's; it
// returns them (name to JSON definition) and what is wrong, "" when
// nothing is. A client the server never tells of the final change fails,
// however current a tools/list would be.
func awaitFinalTools(c *loadClient, deadline time.Time) (tools map[string]string, problem string) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		select {
		case <-c.ListChanged:
		case <-timer.C:
			if problem == "" {
				problem = "no tools/list_changed since the final config was written"
			}
			return tools, problem
		}
		if tools, problem = listFinal(c); problem == "" {
			return tools, ""
		}
	}
}

// listFinal lists c's wrapped tools and checks them against the final
// version: its tools, and no --depth on pull or status.
func listFinal(c *loadClient) (tools map[string]string, problem string) {
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	res, err := c.ListTools(ctx, nil)
	if err != nil {
		return nil, fmt.Sprintf("tools/list: %v", err)
	}
	tools = map[string]string{}
	for _, tool := range res.Tools {
		if strings.HasPrefix(tool.Name, "wraptool_") {
			continue
		}
		data, _ := json.Marshal(tool)
		tools[tool.Name] = string(data)
		schema, _ := tool.InputSchema.(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		if _, ok := props["depth"]; ok {
			problem = fmt.Sprintf("%s still takes depth", tool.Name)
		}
	}
	if names, want := slices.Sorted(maps.Keys(tools)), loadF.tools(); !slices.Equal(names, want) {
		problem = fmt.Sprintf("tools %q, want %q", names, want)
	}
	return tools, problem
}

// serverGauges scrapes the server's goroutines and open files from the
// admin listener's /metrics (client_golang's default collectors).
func serverGauges(t *testing.T, addr, token string) (goroutines, fds int) {
	t.Helper()
	return int(scrapeSample(t, addr, token, "go_goroutines")), int(scrapeSample(t, addr, token, "process_open_fds"))
}

// scrapeSample reads one unlabelled sample from the admin listener's
// /metrics.
func scrapeSample(t *testing.T, addr, token, name string) float64 {
	t.Helper()
	code, body := get(t, "http://"+addr+"/metrics", token)
	if code != 200 {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("/metrics line %q: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("/metrics has no %s:\n%s", name, body)
	return 0
}

// awaitNoLeak scrapes (bounded) until the server's goroutines and open
// files are at most the limits, and returns the last figures: sessions
// end and connections close asynchronously, and there is no event for it.
func awaitNoLeak(t *testing.T, addr, token string, maxGoroutines, maxFDs int) (goroutines, fds int) {
	t.Helper()
	// Each scrape opens a connection, which the gauges count: a slow pace
	// keeps the measuring from being what is measured.
	waittest.Poll{Every: 200 * time.Millisecond}.Within(leakTimeout, func() error {
		if goroutines, fds = serverGauges(t, addr, token); goroutines > maxGoroutines || fds > maxFDs {
			return errors.New("above the limits")
		}
		return nil
	})
	return goroutines, fds
}

// get fetches url with a fresh connection (kept-alive ones would count on
// the server), sending token as the bearer token when it is not empty.
func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: eventTimeout, Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// childrenOf lists pid's child processes (pid, state, command line), a
// zombie included.
func childrenOf(pid int) []string {
	var kids []string
	for _, child := range waittest.Children(pid) {
		_, state := waittest.State(child)
		cmdline := waittest.Cmdline(child)
		kids = append(kids, fmt.Sprintf("%d (%s) %q", child, state, strings.Split(strings.TrimRight(cmdline, "\x00"), "\x00")))
	}
	return kids
}

// loadAudit are the figures the audit check reports.
type loadAudit struct {
	fileChanges, expired, used, granted int
	// slowestStart is the longest a grant took from its approval to the
	// first call it allowed.
	slowestStart time.Duration
	// unusedTimed counts the timed grants that allowed no call.
	unusedTimed int
}

// checkLoadAudit checks the audit log against the versions (hashes maps
// each version's name to its policy hash without grants), the grants the
// operator approved, and the clients' counts.
func checkLoadAudit(t *testing.T, lines []auditLine, hashes map[string]string, grants []loadGrant, clients []*loadClient, loadStart time.Time) loadAudit {
	t.Helper()
	var figures loadAudit
	errorf := limitErrors(t, 20)

	// Every hash a call can carry: a version with at most two grants in
	// force (the operator waits for one to end before the next, so two
	// overlap only while an end is being noticed).
	states := map[string]loadState{}
	byID := map[string]loadGrant{}
	for _, g := range grants {
		byID[g.id] = g
	}
	for _, v := range []loadVersion{loadA, loadB, loadC, loadF} {
		h := hashes[v.name]
		states[h] = loadState{version: v}
		for i, g := range grants {
			states[toolset.AuditPolicy(h, []string{g.id})] = loadState{version: v, grants: []string{g.id}}
			for _, g2 := range grants[i+1:] {
				ids := []string{g.id, g2.id}
				slices.Sort(ids)
				states[toolset.AuditPolicy(h, ids)] = loadState{version: v, grants: ids}
			}
		}
	}

	// The policy lines: a chain from the start, each change what its cause
	// says.
	announced := map[string]bool{}
	prev := ""
	for _, l := range lines {
		if l.Event != "policy" {
			continue
		}
		if l.Outcome != "applied" {
			errorf("policy line not applied: %+v", l)
			continue
		}
		if l.Cause != "start" && l.Old != prev {
			errorf("policy line %s→%s (%s) does not follow the previous one's %s: a change went unrecorded", l.Old, l.New, l.Cause, prev)
		}
		prev = l.New
		announced[l.New] = true
		if l.Cause == "start" {
			continue
		}
		from, okFrom := states[l.Old]
		to, okTo := states[l.New]
		if !okFrom || !okTo {
			errorf("policy line (%s) between hashes no version and grants give: %+v", l.Cause, l)
			continue
		}
		switch l.Cause {
		case "file":
			if l.Time.After(loadStart) {
				figures.fileChanges++
			}
			addedT, removedT := minus(to.version.tools(), from.version.tools()), minus(from.version.tools(), to.version.tools())
			if to.version == from.version || !slices.Equal(to.grants, from.grants) ||
				!slices.Equal(nonNil(l.ToolsAdded), addedT) || !slices.Equal(nonNil(l.ToolsRemoved), removedT) {
				errorf("reload from %s%v to %s%v: tools +%q -%q, want a version change with the grants kept, tools +%q -%q",
					from.version.name, from.grants, to.version.name, to.grants, l.ToolsAdded, l.ToolsRemoved, addedT, removedT)
			}
			for _, tool := range []string{"fake_pull", "fake_log"} {
				if !slices.Contains(from.version.tools(), tool) || !slices.Contains(to.version.tools(), tool) {
					continue
				}
				was, now := from.version.flags(tool), to.version.flags(tool)
				if got, want := nonNil(l.FlagsAdded[tool]), minus(now, was); !slices.Equal(got, want) {
					errorf("reload from %s to %s: %s flags added %q, want %q", from.version.name, to.version.name, tool, got, want)
				}
				if got, want := nonNil(l.FlagsRemoved[tool]), minus(was, now); !slices.Equal(got, want) {
					errorf("reload from %s to %s: %s flags removed %q, want %q", from.version.name, to.version.name, tool, got, want)
				}
			}
		// A start and an end the grants actor notices in one read may
		// share a line, named by either: each cause need only be among
		// the changes.
		case "grant":
			if to.version != from.version || len(minus(to.grants, from.grants)) == 0 {
				errorf("a grant's start changed %s%v to %s%v", from.version.name, from.grants, to.version.name, to.grants)
			}
		case "grant_expired", "grant_used":
			gone := minus(from.grants, to.grants)
			if to.version != from.version || len(gone) == 0 {
				errorf("a grant's end (%s) changed %s%v to %s%v", l.Cause, from.version.name, from.grants, to.version.name, to.grants)
			}
			for _, id := range gone {
				if byID[id].once != (l.Cause == "grant_used") {
					errorf("grant %s (once %v) ended by %s", id, byID[id].once, l.Cause)
				}
			}
			if l.Cause == "grant_expired" {
				figures.expired++
			} else {
				figures.used++
			}
		default:
			errorf("policy line with cause %q during the load: %+v", l.Cause, l)
		}
	}

	// The call lines: each decided by a snapshot the policy lines
	// announced, and each run allowed by that snapshot.
	byName := map[string]*loadClient{}
	for _, c := range clients {
		byName[c.implementation+"/1"] = c
	}
	type counts struct{ ran, denied int }
	audited := map[*loadClient]*counts{}
	unnamed := map[string]int{} // by transport: lines without a session id
	grantUses := map[string]int{}
	firstUse := map[string]time.Time{}
	for _, l := range lines {
		if l.Event != "call" || !strings.HasPrefix(l.Tool, "fake_") {
			continue
		}
		c := byName[l.Client]
		if c == nil {
			errorf("a call by client %q, which is none of the load's: %+v", l.Client, l)
			continue
		}
		if audited[c] == nil {
			audited[c] = &counts{}
		}
		switch {
		case l.Session == "":
			unnamed[c.transport]++
		case c.session != "" && l.Session != c.session:
			errorf("a call by %s recorded under session %s, not its own %s", c.name, l.Session, c.session)
		}
		st, ok := states[l.Policy]
		if !ok || !announced[l.Policy] {
			errorf("call line decided by policy %s, which no version and grants give or no policy line announced (known %v, announced %v): %+v", l.Policy, ok, announced[l.Policy], l)
			continue
		}
		argv := l.Argv
		switch l.Decision {
		case "allowed":
			audited[c].ran++
			if l.ExitCode == nil || *l.ExitCode != 0 {
				errorf("allowed call did not exit 0: %+v", l)
			}
			if l.Grant == "" {
				if !st.version.allows(argv, false) {
					errorf("ran %q, which version %s (grants %v) does not allow: %+v", argv, st.version.name, st.grants, l)
				}
				continue
			}
			figures.granted++
			grantUses[l.Grant]++
			if first, ok := firstUse[l.Grant]; !ok || l.Time.Before(first) {
				firstUse[l.Grant] = l.Time
			}
			g, known := byID[l.Grant]
			switch {
			case !known || !slices.Contains(st.grants, l.Grant):
				errorf("ran %q by grant %s, not in force in the snapshot that decided it (%s%v)", argv, l.Grant, st.version.name, st.grants)
			case st.version.allows(argv, false):
				errorf("ran %q by grant %s, though the config alone (version %s) allows it: a grant was consumed needlessly", argv, l.Grant, st.version.name)
			case !st.version.allows(argv, true):
				errorf("ran %q by grant %s, which version %s with the grant does not allow", argv, l.Grant, st.version.name)
			case l.GrantOnce != g.once:
				errorf("ran %q by grant %s recorded as once=%v, approved as once=%v", argv, l.Grant, l.GrantOnce, g.once)
			case !g.once && l.Time.After(g.until):
				errorf("ran %q by grant %s at %s, after its until %s", argv, l.Grant, l.Time.Format(time.RFC3339Nano), g.until.Format(time.RFC3339Nano))
			}
		case "denied":
			audited[c].denied++
			if len(argv) > 0 && argv[0] == "fake" {
				run := append([]string{fakecli}, argv[1:]...)
				if st.version.allows(run, false) {
					errorf("denied %q, which version %s (the snapshot that decided it) allows: %+v", argv, st.version.name, l)
				}
			} else {
				errorf("denied call's argv does not start with the tool key: %+v", l)
			}
		default:
			errorf("call line with decision %q: %+v", l.Decision, l)
		}
	}
	timed, unused := 0, []string{}
	for _, g := range grants {
		if first, ok := firstUse[g.id]; ok {
			figures.slowestStart = max(figures.slowestStart, first.Sub(g.approved))
		}
		n := grantUses[g.id]
		switch {
		case g.once && n != 1:
			errorf("once-grant %s allowed %d calls, want exactly 1", g.id, n)
		case !g.once:
			timed++
			if n == 0 {
				unused = append(unused, g.id)
			}
		}
	}
	// A timed grant is in force from the reload its line causes to its
	// until: on a machine loaded past the debounce and the grant's
	// introspection for its whole short life, one can pass with no call
	// (the reload bound is not a deadline). That every one does is a bug.
	figures.unusedTimed = len(unused)
	if timed > 0 && len(unused) == timed {
		errorf("no grant for %v allowed a call (%v), though clients called fake_status --depth throughout", loadGrantFor, unused)
	}

	// Nothing ran that a client did not see run, and nothing a client saw
	// run went unrecorded: client by client.
	for _, c := range clients {
		got, want := audited[c], counts{ran: sum(c.ran), denied: sum(c.denied)}
		if got == nil {
			got = &counts{}
		}
		if *got != want {
			errorf("%s: the audit log has %d runs and %d denials, the client saw %d and %d", c.name, got.ran, got.denied, want.ran, want.denied)
		}
	}
	// In the audit log, session is the Mcp-Session-Id, or the legacy SSE
	// session id; one figure per transport rather than a line per call.
	for _, tr := range slices.Sorted(maps.Keys(unnamed)) {
		errorf("%d call lines of %s clients have no session id", unnamed[tr], tr)
	}
	return figures
}

// limitErrors reports the first n failures with t.Errorf and counts the
// rest, so a systematic failure does not bury the summary.
func limitErrors(t *testing.T, n int) func(format string, args ...any) {
	t.Helper()
	count := 0
	t.Cleanup(func() {
		if count > n {
			t.Errorf("… and %d more audit failures", count-n)
		}
	})
	return func(format string, args ...any) {
		t.Helper()
		count++
		if count <= n {
			t.Errorf(format, args...)
		}
	}
}

// minus is a's elements that b lacks, sorted, never nil.
func minus(a, b []string) []string {
	out := []string{}
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

// nonNil sorts a copy of s, an empty slice for nil, for comparisons.
func nonNil(s []string) []string {
	out := append([]string{}, s...)
	slices.Sort(out)
	return out
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// percentiles are the 50th and 99th percentiles of ds.
func percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	sorted := slices.Sorted(slices.Values(ds))
	at := func(p float64) time.Duration {
		return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))].Round(10 * time.Microsecond)
	}
	return at(0.50), at(0.99)
}

// tail is the last n lines of log: a failure under load must not print
// megabytes of debug log.
func tail(log string, n int) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("… (%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
