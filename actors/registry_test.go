package actors

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy"
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
}

// policySnapshot is a snapshot holding only p.
func policySnapshot(p *policy.Policy) *Snapshot {
	return &Snapshot{State: toolset.State{Policy: p}}
}

// newRegistry primes a registry with first and connects a client; it does
// not run the registry (see run).
func newRegistry(t *testing.T, first *policy.Policy) *registryHarness {
	t.Helper()
	h := &registryHarness{
		snaps:   newTestSnapshots(policySnapshot(first)),
		changed: make(messages.Doorbell, 1),
		notes:   make(chan struct{}, 16),
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
	h.reg = NewRegistry(RegistryOptions{Server: h.server, Snapshots: h.snaps, Calls: t.Context(), ToolsetChanged: h.changed, Log: log})
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
	h.snaps.Store(policySnapshot(p))
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
