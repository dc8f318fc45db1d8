package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/toolset"
)

// rule is an allow rule for subcommand sub with flags.
func rule(sub string, flags ...string) *policy.AllowRule {
	return &policy.AllowRule{Subcommand: []string{sub}, Flags: flags}
}

// newPolicy compiles one tool, "fake", with allow rules and denied
// subcommands.
func newPolicy(t *testing.T, allow []*policy.AllowRule, deny ...string) *policy.Policy {
	t.Helper()
	var tools []policy.Tool
	if allow != nil || deny != nil {
		tool := policy.Tool{Name: "fake", Binary: "/bin/true", Allow: allow}
		for _, d := range deny {
			tool.Deny = append(tool.Deny, &policy.DenyRule{Subcommand: []string{d}})
		}
		tools = append(tools, tool)
	}
	p, err := policy.New(tools, nil)
	if err != nil {
		t.Fatalf("policy.New: %v", err)
	}
	return p
}

// baseRules are what the registry is primed with.
func baseRules() []*policy.AllowRule {
	return []*policy.AllowRule{rule("status", "--short"), rule("log", "--oneline")}
}

// registryHarness is a Registry on a real MCP server with one built-in
// tool, and an in-memory client that counts tools/list_changed.
type registryHarness struct {
	server  *mcp.Server
	reg     *Registry
	snaps   *testSnapshots
	changed messages.Doorbell
	client  *mcp.ClientSession
	notes   chan struct{}
	sink    *logSink
	// offers reaches the registry as the upstream clients' offers do.
	offers chan messages.UpstreamTools
	// progress receives the progress notes the client gets.
	progress chan *mcp.ProgressNotificationParams
}

// policySnapshot is a snapshot holding only p.
func policySnapshot(p *policy.Policy) *Snapshot {
	return &Snapshot{State: toolset.State{Policy: p}, Config: &config.Config{}}
}

// newRegistry primes a registry with first and connects a client; it does
// not run the registry (see run).
func newRegistry(t *testing.T, first *policy.Policy) *registryHarness {
	t.Helper()
	h := &registryHarness{
		snaps:    newTestSnapshots(policySnapshot(first)),
		changed:  make(messages.Doorbell, 1),
		offers:   make(chan messages.UpstreamTools),
		notes:    make(chan struct{}, 16),
		progress: make(chan *mcp.ProgressNotificationParams, 16),
	}
	log, sink := newTestLogger()
	h.sink = sink
	h.server = mcp.NewServer(&mcp.Implementation{Name: "wraptool-test", Version: "v0"}, &mcp.ServerOptions{
		Logger:       log,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	h.server.AddTool(toolset.RequestDefinition(), func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	h.reg = NewRegistry(RegistryOptions{Server: h.server, Snapshots: h.snaps, ToolsetChanged: h.changed,
		Offers: h.offers, Log: log})
	// As serve does: prime before any client connects.
	h.reg.Prime()

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := h.server.Connect(ctx, serverT, nil)
	if err != nil {
		t.Fatalf("server.Connect: %v", err)
	}
	t.Cleanup(func() { ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case h.notes <- struct{}{}:
			default:
			}
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			select {
			case h.progress <- req.Params:
			default:
			}
		},
	})
	// Connect returns once the client has asked for list_changed, not once
	// the server has registered that; a change before then is not sent.
	// The server acknowledges the subscription, so wait for that.
	acked := make(chan struct{}, 1)
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				select {
				case acked <- struct{}{}:
				default:
				}
			}
			return next(ctx, method, req)
		}
	})
	h.client, err = client.Connect(ctx, clientT, nil)
	if err != nil {
		t.Fatalf("client.Connect: %v", err)
	}
	receive(t, acked, "acknowledgement of the list_changed subscription")
	t.Cleanup(func() { h.client.Close() })
	return h
}

// run runs the registry until the test ends.
func (h *registryHarness) run(t *testing.T) *registryHarness {
	t.Helper()
	start(t, h.reg)
	return h
}

// startRegistry primes and runs a registry with first.
func startRegistry(t *testing.T, first *policy.Policy) *registryHarness {
	t.Helper()
	return newRegistry(t, first).run(t)
}

// taken waits until the registry has taken the pending ring.
func (h *registryHarness) taken(t *testing.T) {
	t.Helper()
	waitUntil(t, "the registry takes its ToolsetChanged ring", func() bool { return len(h.changed) == 0 })
}

// apply puts p in service, rings the registry and returns how many
// list_changed the client got for it. It rings twice: the registry takes
// the second ring only after applying the first (the second changes
// nothing).
func (h *registryHarness) apply(t *testing.T, p *policy.Policy) int {
	t.Helper()
	return h.applySnapshot(t, policySnapshot(p))
}

// applySnapshot is apply for a whole snapshot.
func (h *registryHarness) applySnapshot(t *testing.T, s *Snapshot) int {
	t.Helper()
	h.snaps.Store(s)
	for range 2 {
		ring(h.changed)
		h.taken(t)
	}
	return h.countNotes()
}

// countNotes counts list_changed notifications. The SDK sends one 10 ms
// after the last change; nothing says when none is coming, so it watches
// for a while.
func (h *registryHarness) countNotes() int {
	n := 0
	timeout := time.After(quiet)
	for {
		select {
		case <-h.notes:
			n++
		case <-timeout:
			return n
		}
	}
}

// tools lists the tools the client sees, by name.
func (h *registryHarness) tools(t *testing.T) map[string]*mcp.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := h.client.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		byName[tool.Name] = tool
	}
	return byName
}

func names(tools map[string]*mcp.Tool) []string {
	var out []string
	for name := range tools {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// properties returns the input schema's property names.
func properties(t *testing.T, tool *mcp.Tool) []string {
	t.Helper()
	schema, ok := tool.InputSchema.(map[string]any)
	if !ok {
		t.Fatalf("%s input schema is a %T, want a JSON object", tool.Name, tool.InputSchema)
	}
	props, _ := schema["properties"].(map[string]any)
	var out []string
	for p := range props {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func TestRegistryPrimeExposesTheFirstPolicy(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, newPolicy(t, baseRules()))
	want := []string{"fake_log", "fake_status", policy.RequestTool}
	if got := names(h.tools(t)); !slices.Equal(got, want) {
		t.Errorf("tools = %q, want %q", got, want)
	}
}

func TestRegistryAppliesChanges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		next      func(t *testing.T) *policy.Policy
		wantNotes int
		wantTools []string
		// check inspects the tools the client sees afterwards.
		check func(t *testing.T, tools map[string]*mcp.Tool)
	}{
		{
			name: "a policy that adds a rule sends one list_changed and lists the new tool",
			next: func(t *testing.T) *policy.Policy {
				return newPolicy(t, append(baseRules(), rule("push", "--force-with-lease")))
			},
			wantNotes: 1,
			wantTools: []string{"fake_log", "fake_push", "fake_status", policy.RequestTool},
		},
		{
			name:      "a policy that removes a rule sends one list_changed",
			next:      func(t *testing.T) *policy.Policy { return newPolicy(t, baseRules()[:1]) },
			wantNotes: 1,
			wantTools: []string{"fake_status", policy.RequestTool},
		},
		{
			name:      "a deny rule that hides a tool sends one list_changed",
			next:      func(t *testing.T) *policy.Policy { return newPolicy(t, baseRules(), "log") },
			wantNotes: 1,
			wantTools: []string{"fake_status", policy.RequestTool},
		},
		{
			name: "a policy that changes only a schema sends one list_changed",
			next: func(t *testing.T) *policy.Policy {
				return newPolicy(t, []*policy.AllowRule{rule("status", "--short", "--branch"), rule("log", "--oneline")})
			},
			wantNotes: 1,
			wantTools: []string{"fake_log", "fake_status", policy.RequestTool},
			check: func(t *testing.T, tools map[string]*mcp.Tool) {
				if got := properties(t, tools["fake_status"]); !slices.Contains(got, "branch") {
					t.Errorf("fake_status properties = %q, want branch among them", got)
				}
			},
		},
		{
			name: "adding, removing and changing at once sends one list_changed",
			next: func(t *testing.T) *policy.Policy {
				return newPolicy(t, []*policy.AllowRule{rule("status", "--short", "--branch"), rule("push")})
			},
			wantNotes: 1,
			wantTools: []string{"fake_push", "fake_status", policy.RequestTool},
		},
		{
			name:      "an identical policy sends none",
			next:      func(t *testing.T) *policy.Policy { return newPolicy(t, baseRules()) },
			wantNotes: 0,
			wantTools: []string{"fake_log", "fake_status", policy.RequestTool},
		},
		{
			name:      "a policy with no rules removes every wrapped tool but never the built-in ones",
			next:      func(t *testing.T) *policy.Policy { return newPolicy(t, nil) },
			wantNotes: 1,
			wantTools: []string{policy.RequestTool},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := startRegistry(t, newPolicy(t, baseRules()))
			if got := h.apply(t, tt.next(t)); got != tt.wantNotes {
				t.Errorf("list_changed notifications = %d, want %d", got, tt.wantNotes)
			}
			tools := h.tools(t)
			if got := names(tools); !slices.Equal(got, tt.wantTools) {
				t.Errorf("tools = %q, want %q", got, tt.wantTools)
			}
			if tt.check != nil {
				tt.check(t, tools)
			}
		})
	}
}

func TestRegistryFollowsASequenceOfReloads(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, newPolicy(t, baseRules()))
	steps := []struct {
		name      string
		allow     []*policy.AllowRule
		wantNotes int
		wantTools []string
	}{
		{"everything removed", nil, 1, []string{policy.RequestTool}},
		{"still nothing", nil, 0, []string{policy.RequestTool}},
		{"one rule back", []*policy.AllowRule{rule("status")}, 1, []string{"fake_status", policy.RequestTool}},
		{"the same rule again", []*policy.AllowRule{rule("status")}, 0, []string{"fake_status", policy.RequestTool}},
		{"the base rules", baseRules(), 1, []string{"fake_log", "fake_status", policy.RequestTool}},
	}
	for _, s := range steps {
		if got := h.apply(t, newPolicy(t, s.allow)); got != s.wantNotes {
			t.Errorf("%s: list_changed notifications = %d, want %d", s.name, got, s.wantNotes)
		}
		if got := names(h.tools(t)); !slices.Equal(got, s.wantTools) {
			t.Errorf("%s: tools = %q, want %q", s.name, got, s.wantTools)
		}
	}
}

// A burst of rings while the registry is busy is one diff, against the
// snapshot in service when it answers: intermediate policies are never
// exposed.
func TestRegistryAppliesOnlyTheLatestOfABurst(t *testing.T) {
	t.Parallel()
	h := newRegistry(t, newPolicy(t, baseRules()))
	primed := len(h.sink.lines("tools updated"))
	// The registry is not running yet: as busy as it can be.
	for _, allow := range [][]*policy.AllowRule{
		{rule("push")},
		{rule("fetch"), rule("status")},
		{rule("pull", "--rebase"), rule("status", "--short")},
	} {
		h.snaps.Store(policySnapshot(newPolicy(t, allow)))
		ring(h.changed)
	}
	h.run(t)
	h.taken(t)
	ring(h.changed) // taken only once the burst is applied
	h.taken(t)
	if got := h.countNotes(); got != 1 {
		t.Errorf("list_changed notifications = %d, want 1", got)
	}
	if got, want := names(h.tools(t)), []string{"fake_pull", "fake_status", policy.RequestTool}; !slices.Equal(got, want) {
		t.Errorf("tools = %q, want the latest snapshot's %q", got, want)
	}
	if got := h.sink.lines("tools updated", "component=registry"); len(got) != primed+1 {
		t.Errorf("tools updated lines = %q, want Prime's %d and 1 more: one diff for the burst", got, primed)
	}
}

// Rings with the same snapshot in service change nothing and send no
// list_changed.
func TestRegistryRingWithoutChangeKeepsTheTools(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, newPolicy(t, baseRules()))
	before := h.tools(t)
	for range 3 {
		ring(h.changed)
		h.taken(t)
	}
	if got := h.countNotes(); got != 0 {
		t.Errorf("list_changed notifications for rings with the same snapshot = %d, want 0", got)
	}
	if got, want := names(h.tools(t)), names(before); !slices.Equal(got, want) {
		t.Errorf("tools = %q, want %q", got, want)
	}
}

// upstreamEntry is an mcp_servers entry exposing allow, minus deny, under
// prefix. The registry reads only these fields and Timeout.
func upstreamEntry(prefix string, allow []string, deny ...string) *config.MCPServer {
	s := &config.MCPServer{Command: "/bin/false", NamePrefix: prefix, Timeout: wait}
	for _, a := range allow {
		s.Allow = append(s.Allow, &config.ToolRef{Tool: a})
	}
	for _, d := range deny {
		s.Deny = append(s.Deny, &config.ToolRef{Tool: d})
	}
	return s
}

// upstreamSnapshot holds the base policy and servers.
func upstreamSnapshot(t *testing.T, servers map[string]*config.MCPServer) *Snapshot {
	t.Helper()
	return &Snapshot{State: toolset.State{Policy: newPolicy(t, baseRules())}, Config: &config.Config{MCPServers: servers}}
}

// upTool is an upstream tool definition.
func upTool(name string) *mcp.Tool {
	return &mcp.Tool{Name: name, Description: "upstream " + name, InputSchema: map[string]any{"type": "object"}}
}

// fakeUpstreamClient stands for one upstream client: its Calls and Gone, and a goroutine
// that answers each call with "gen N tool arguments", except a call to
// "hang", which it holds until its Done closes. A call to "progress" first
// sends two progress notes, when the caller asked for them.
type fakeUpstreamClient struct {
	gen   uint64
	calls chan messages.UpstreamCall
	gone  chan struct{}
}

func newFakeUpstreamClient(t *testing.T, gen uint64) *fakeUpstreamClient {
	t.Helper()
	b := &fakeUpstreamClient{gen: gen, calls: make(chan messages.UpstreamCall), gone: make(chan struct{})}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case c := <-b.calls:
				if c.Tool == "hang" {
					select {
					case <-c.Done:
					case <-stop:
					}
					continue
				}
				if c.Tool == "progress" {
					if c.Progress == nil {
						c.Reply <- messages.UpstreamResult{Result: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no progress asked"}}}}
						continue
					}
					for i := 1; i <= 2; i++ {
						c.Progress <- messages.UpstreamProgress{Progress: float64(i), Total: 2, Message: fmt.Sprintf("step %d", i)}
					}
				}
				text := fmt.Sprintf("gen %d %s %s", gen, c.Tool, c.Arguments)
				c.Reply <- messages.UpstreamResult{Result: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}}
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
	})
	return b
}

// offer is the upstream client's offer of tools from server.
func (b *fakeUpstreamClient) offer(server string, tools ...*mcp.Tool) messages.UpstreamTools {
	if tools == nil {
		tools = []*mcp.Tool{}
	}
	return messages.UpstreamTools{Server: server, Generation: b.gen, Tools: tools, Calls: b.calls, Gone: b.gone}
}

// withdraw is the upstream client's withdrawal of server's tools.
func (b *fakeUpstreamClient) withdraw(server string) messages.UpstreamTools {
	return messages.UpstreamTools{Server: server, Generation: b.gen, Calls: b.calls, Gone: b.gone}
}

// offer hands m to the registry, waits until it is applied, and returns
// how many list_changed the client got for it.
func (h *registryHarness) offer(t *testing.T, m messages.UpstreamTools) int {
	t.Helper()
	applied := make(chan struct{}, 1)
	m.Applied = applied
	select {
	case h.offers <- m:
	case <-time.After(wait):
		t.Fatalf("the registry did not take an offer within %v", wait)
	}
	receive(t, applied, "the offer applied")
	return h.countNotes()
}

// call calls an exposed tool as the client and returns its text and
// whether it is a tool error.
func (h *registryHarness) call(t *testing.T, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := h.client.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool %s: %v", name, err)
	}
	return resultText(t, res)
}

// wantTools checks the tools the client sees.
func (h *registryHarness) wantTools(t *testing.T, step string, want ...string) {
	t.Helper()
	want = append(want, "fake_log", "fake_status", policy.RequestTool)
	slices.Sort(want)
	if got := names(h.tools(t)); !slices.Equal(got, want) {
		t.Errorf("%s: tools = %q, want %q", step, got, want)
	}
}

func TestRegistryExposesUpstreamOffers(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, newPolicy(t, baseRules()))
	servers := map[string]*config.MCPServer{"up": upstreamEntry("up", []string{"echo", "add", "secret", "missing"}, "secret")}
	if got := h.applySnapshot(t, upstreamSnapshot(t, servers)); got != 0 {
		t.Errorf("list_changed for a server that offered nothing yet = %d, want 0", got)
	}
	first, second := newFakeUpstreamClient(t, 1), newFakeUpstreamClient(t, 2)
	offered := []*mcp.Tool{upTool("echo"), upTool("add"), upTool("secret"), upTool("hidden")}

	steps := []struct {
		name      string
		offer     messages.UpstreamTools
		wantNotes int
		wantTools []string
		// wantGen, when set, is the upstream client up_echo's calls must reach.
		wantGen uint64
	}{
		{"an offer exposes the allowed, non-denied tools under the prefix", first.offer("up", offered...), 1, []string{"up_add", "up_echo"}, 1},
		{"the same offer again changes nothing", first.offer("up", offered...), 0, []string{"up_add", "up_echo"}, 1},
		{"a new upstream client's offer of the same tools rebinds them", second.offer("up", offered...), 1, []string{"up_add", "up_echo"}, 2},
		{"an older generation's offer is ignored", first.offer("up", upTool("echo")), 0, []string{"up_add", "up_echo"}, 2},
		{"an older generation's withdrawal is ignored", first.withdraw("up"), 0, []string{"up_add", "up_echo"}, 2},
		{"a new list from the same upstream client is a diff", second.offer("up", upTool("echo"), upTool("hidden")), 1, []string{"up_echo"}, 2},
		{"a withdrawal removes the tools", second.withdraw("up"), 1, nil, 0},
		{"a second withdrawal changes nothing", second.withdraw("up"), 0, nil, 0},
		{"an offer from a server not in the config is not exposed", newFakeUpstreamClient(t, 3).offer("other", upTool("echo")), 0, nil, 0},
	}
	for _, s := range steps {
		if got := h.offer(t, s.offer); got != s.wantNotes {
			t.Errorf("%s: list_changed notifications = %d, want %d", s.name, got, s.wantNotes)
		}
		h.wantTools(t, s.name, s.wantTools...)
		if s.wantGen != 0 {
			text, isError := h.call(t, "up_echo", map[string]any{"text": "hi"})
			if want := fmt.Sprintf(`gen %d echo {"text":"hi"}`, s.wantGen); isError || text != want {
				t.Errorf("%s: up_echo answered %q (IsError %v), want %q", s.name, text, isError, want)
			}
		}
	}
	// The tool the config allows but the upstream does not offer is named
	// once, however many offers lacked it.
	if got := h.sink.lines("upstream tool not exposed", "server=up", "tool=missing"); len(got) != 1 {
		t.Errorf("notices for the missing tool = %q, want one", got)
	}
	for _, hidden := range []string{"tool=secret", "tool=hidden"} {
		if got := h.sink.lines("upstream tool not exposed", hidden); got != nil {
			t.Errorf("notices = %q, want none: denied and unlisted tools are hidden silently", got)
		}
	}
}

// A change of an entry's allow, deny, name_prefix or timeout applies from
// the snapshot, with no new offer.
func TestRegistryRefiltersUpstreamToolsOnAConfigChange(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, newPolicy(t, baseRules()))
	h.applySnapshot(t, upstreamSnapshot(t, map[string]*config.MCPServer{"up": upstreamEntry("up", []string{"echo"})}))
	b := newFakeUpstreamClient(t, 1)
	if got := h.offer(t, b.offer("up", upTool("echo"), upTool("add"), upTool("hang"))); got != 1 {
		t.Errorf("list_changed for the offer = %d, want 1", got)
	}
	steps := []struct {
		name      string
		entry     *config.MCPServer
		wantNotes int
		wantTools []string
	}{
		{"allowing one more tool exposes it", upstreamEntry("up", []string{"echo", "add", "hang"}), 1, []string{"up_add", "up_echo", "up_hang"}},
		{"the same filter again changes nothing", upstreamEntry("up", []string{"echo", "add", "hang"}), 0, []string{"up_add", "up_echo", "up_hang"}},
		{"denying a tool hides it", upstreamEntry("up", []string{"echo", "add", "hang"}, "echo"), 1, []string{"up_add", "up_hang"}},
		{"a new prefix renames the tools", upstreamEntry("renamed", []string{"echo", "add", "hang"}, "echo"), 1, []string{"renamed_add", "renamed_hang"}},
	}
	for _, s := range steps {
		if got := h.applySnapshot(t, upstreamSnapshot(t, map[string]*config.MCPServer{"up": s.entry})); got != s.wantNotes {
			t.Errorf("%s: list_changed notifications = %d, want %d", s.name, got, s.wantNotes)
		}
		h.wantTools(t, s.name, s.wantTools...)
	}
	// A new timeout changes no definition, so no list_changed, and the
	// next call runs under it.
	short := upstreamEntry("renamed", []string{"echo", "add", "hang"}, "echo")
	short.Timeout = 100 * time.Millisecond
	if got := h.applySnapshot(t, upstreamSnapshot(t, map[string]*config.MCPServer{"up": short})); got != 0 {
		t.Errorf("list_changed for a timeout change = %d, want 0", got)
	}
	text, isError := h.call(t, "renamed_hang", nil)
	if want := `upstream server "up" did not answer hang within its timeout (100ms)`; !isError || !strings.Contains(text, want) {
		t.Errorf("renamed_hang answered %q (IsError %v), want a tool error holding %q", text, isError, want)
	}
}

// A server gone from the config in service has its tools hidden at once,
// before its upstream client's withdrawal arrives.
func TestRegistryHidesARemovedServerBeforeItsWithdrawal(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, newPolicy(t, baseRules()))
	servers := map[string]*config.MCPServer{"up": upstreamEntry("up", []string{"echo"}), "other": upstreamEntry("other", []string{"echo"})}
	h.applySnapshot(t, upstreamSnapshot(t, servers))
	up, other := newFakeUpstreamClient(t, 1), newFakeUpstreamClient(t, 2)
	h.offer(t, up.offer("up", upTool("echo")))
	h.offer(t, other.offer("other", upTool("echo")))
	h.wantTools(t, "both offered", "other_echo", "up_echo")

	delete(servers, "up")
	if got := h.applySnapshot(t, upstreamSnapshot(t, servers)); got != 1 {
		t.Errorf("list_changed for the removal = %d, want 1", got)
	}
	h.wantTools(t, "up removed from the config", "other_echo")
	if got := h.offer(t, up.withdraw("up")); got != 0 {
		t.Errorf("list_changed for the late withdrawal = %d, want 0", got)
	}
	h.wantTools(t, "up withdrawn", "other_echo")
}

// Wrapped tools come first: an upstream tool whose exposed name is a
// wrapped tool's is not exposed, and the refusal is logged once while it
// lasts. Once the wrapped tool is gone, the upstream's takes the name.
func TestRegistryUpstreamNameClash(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, newPolicy(t, baseRules()))
	servers := map[string]*config.MCPServer{"up": upstreamEntry("fake", []string{"status", "other"})}
	h.applySnapshot(t, upstreamSnapshot(t, servers))
	b := newFakeUpstreamClient(t, 1)
	if got := h.offer(t, b.offer("up", upTool("status"), upTool("other"))); got != 1 {
		t.Errorf("list_changed = %d, want 1 (for fake_other)", got)
	}
	h.wantTools(t, "offered", "fake_other")
	if got := h.tools(t)["fake_status"].Description; got == "upstream status" {
		t.Errorf("fake_status is the upstream's; want the wrapped tool kept")
	}
	notice := []string{"upstream tool not exposed", "server=up", "tool=status", "already another tool's"}
	h.sink.waitFor(t, notice...)

	// Applying again, by a ring or an offer, does not log it again.
	if got := h.applySnapshot(t, upstreamSnapshot(t, servers)); got != 0 {
		t.Errorf("list_changed for an unchanged snapshot = %d, want 0", got)
	}
	h.offer(t, b.offer("up", upTool("status"), upTool("other")))
	if got := h.sink.lines(notice...); len(got) != 1 {
		t.Errorf("clash notices = %q, want exactly one", got)
	}

	// The wrapped rule goes: the upstream's tool takes the name.
	snap := upstreamSnapshot(t, servers)
	snap.Policy = newPolicy(t, baseRules()[1:])
	if got := h.applySnapshot(t, snap); got != 1 {
		t.Errorf("list_changed when the name changes owner = %d, want 1", got)
	}
	tools := h.tools(t)
	if got, want := names(tools), []string{"fake_log", "fake_other", "fake_status", policy.RequestTool}; !slices.Equal(got, want) {
		t.Errorf("tools = %q, want %q", got, want)
	}
	if got := tools["fake_status"].Description; got != "upstream status" {
		t.Errorf("fake_status description = %q, want the upstream's", got)
	}
}

// A definition the SDK would panic on is refused and logged: an upstream
// cannot crash wraptool, and its other tools are exposed.
func TestRegistryRefusesADefinitionTheSDKPanicsOn(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, newPolicy(t, baseRules()))
	servers := map[string]*config.MCPServer{"up": upstreamEntry("up", []string{"echo", "header", "nonprimitive"})}
	h.applySnapshot(t, upstreamSnapshot(t, servers))
	header := upTool("header")
	header.InputSchema = map[string]any{"type": "object", "properties": map[string]any{
		"p": map[string]any{"type": "string", "x-mcp-header": "not a header name"}}}
	nonPrimitive := upTool("nonprimitive")
	nonPrimitive.InputSchema = map[string]any{"type": "object", "properties": map[string]any{
		"p": map[string]any{"type": "object", "x-mcp-header": "X-P"}}}
	b := newFakeUpstreamClient(t, 1)
	if got := h.offer(t, b.offer("up", upTool("echo"), header, nonPrimitive)); got != 1 {
		t.Errorf("list_changed = %d, want 1 (for up_echo)", got)
	}
	h.wantTools(t, "offered", "up_echo")
	for _, name := range []string{"up_header", "up_nonprimitive"} {
		if got := h.sink.lines("the MCP SDK refused a tool definition", "tool="+name, "x-mcp-header"); len(got) != 1 {
			t.Errorf("refusals of %s = %q, want one, naming x-mcp-header", name, got)
		}
	}
	// The registry is still running: the next offer is applied.
	if got := h.offer(t, b.withdraw("up")); got != 1 {
		t.Errorf("list_changed for the withdrawal = %d, want 1", got)
	}
	h.wantTools(t, "withdrawn")
}

// A definition the SDK refuses in place of one it holds does not leave the
// old one exposed: the client sees neither.
func TestRegistryRefusedReplacementRemovesTheOldDefinition(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, newPolicy(t, baseRules()))
	h.applySnapshot(t, upstreamSnapshot(t, map[string]*config.MCPServer{"up": upstreamEntry("up", []string{"echo"})}))
	b := newFakeUpstreamClient(t, 1)
	h.offer(t, b.offer("up", upTool("echo")))
	h.wantTools(t, "offered", "up_echo")
	bad := upTool("echo")
	bad.InputSchema = map[string]any{"type": "object", "properties": map[string]any{
		"p": map[string]any{"type": "object", "x-mcp-header": "X-P"}}}
	if got := h.offer(t, b.offer("up", bad)); got != 1 {
		t.Errorf("list_changed for the refused replacement = %d, want 1", got)
	}
	h.wantTools(t, "replaced by a refused definition")
	// The same refused definition again is neither retried nor logged.
	if got := h.offer(t, b.offer("up", bad)); got != 0 {
		t.Errorf("list_changed for the same refused definition = %d, want 0", got)
	}
	if got := h.sink.lines("the MCP SDK refused a tool definition", "tool=up_echo"); len(got) != 1 {
		t.Errorf("refusals = %q, want one", got)
	}
	// A good definition again is exposed.
	if got := h.offer(t, b.offer("up", upTool("echo"))); got != 1 {
		t.Errorf("list_changed for the good definition = %d, want 1", got)
	}
	h.wantTools(t, "good again", "up_echo")
}

// Progress notes from the upstream reach the client under its own token,
// and only when it asked for progress.
func TestRegistryUpstreamProgress(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, newPolicy(t, baseRules()))
	h.applySnapshot(t, upstreamSnapshot(t, map[string]*config.MCPServer{"up": upstreamEntry("up", []string{"progress"})}))
	h.offer(t, newFakeUpstreamClient(t, 1).offer("up", upTool("progress")))

	if text, _ := h.call(t, "up_progress", nil); text != "no progress asked" {
		t.Errorf("without a progress token the upstream client saw %q, want no progress channel", text)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	p := &mcp.CallToolParams{Name: "up_progress"}
	p.SetProgressToken("client-token")
	res, err := h.client.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if text, isError := resultText(t, res); isError || !strings.HasPrefix(text, "gen 1 progress") {
		t.Errorf("result = %q (IsError %v), want the upstream client's answer", text, isError)
	}
	for i := 1; i <= 2; i++ {
		n := receive(t, h.progress, "a progress note")
		if n.ProgressToken != "client-token" || n.Progress != float64(i) || n.Total != 2 || n.Message != fmt.Sprintf("step %d", i) {
			t.Errorf("note %d = %+v, want step %d of 2 under client-token", i, n, i)
		}
	}
}

// Closing KillCalls ends every run the registry's handlers derive from its
// calls' context at that moment, whatever the registry's loop is doing (here
// it is not even running), and not before.
func TestKillCallsEndsEveryRunAtOnce(t *testing.T) {
	t.Parallel()
	kill := make(chan struct{})
	r := NewRegistry(RegistryOptions{KillCalls: kill})
	run, cancel := context.WithCancel(r.calls)
	defer cancel()
	timed, cancelTimed := context.WithTimeout(r.calls, time.Hour)
	defer cancelTimed()
	if run.Err() != nil || timed.Err() != nil || r.calls.Err() != nil {
		t.Fatalf("a run ended before KillCalls closed: %v, %v, %v", run.Err(), timed.Err(), r.calls.Err())
	}
	if _, has := r.calls.Deadline(); has {
		t.Error("the calls' context has a deadline")
	}
	close(kill)
	for name, ctx := range map[string]context.Context{"a run": run, "a run with its own timeout": timed} {
		select {
		case <-ctx.Done():
		case <-time.After(wait):
			t.Fatalf("%s did not end within %v of KillCalls closing", name, wait)
		}
		if !errors.Is(ctx.Err(), context.Canceled) {
			t.Errorf("%s ended with %v, want context.Canceled", name, ctx.Err())
		}
	}
	if !errors.Is(r.calls.Err(), context.Canceled) {
		t.Errorf("the calls' context: Err = %v after KillCalls closed", r.calls.Err())
	}
}
