package actors

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/toolset"
	"github.com/wraptool/wraptool/toolset/upstream"
)

// Registry keeps the MCP server's tools in step with the policy and the
// upstream servers' offers. It computes the whole diff first (every
// definition built and checked), then applies it in one burst, so the SDK's
// short debounce sends clients one tools/list_changed per change (its gate
// holds back what the SDK sends part way through a burst the scheduler
// interrupted), and none for a reload or an offer that changes nothing. It never touches
// tools it did not add (the built-in ones).
//
// Wrapped CLI tools come first; an upstream tool whose exposed name is
// already taken is not exposed (a clash the config check catches at load,
// so this happens only while a reload moves a name from one owner to
// another, or for a name no load could foresee), and the refusal is logged.
type Registry struct {
	changed   messages.Doorbell
	offers    <-chan messages.UpstreamTools
	server    *mcp.Server
	snapshots Snapshots
	calls     context.Context
	log       *slog.Logger
	callLog   *slog.Logger // for the tool handlers it registers

	exposed  map[string][]byte                 // name → the definition's JSON and binding
	upstream map[string]messages.UpstreamTools // server → its latest offer
	states   <-chan messages.UpstreamStates
	stopped  chan<- struct{}
	notices  map[string]bool // the upstream refusals logged and still true
	gate     *listGate       // keeps a burst of changes to one list_changed
}

// RegistryOptions configure a Registry.
type RegistryOptions struct {
	// Server is the MCP server whose tools the registry manages.
	Server *mcp.Server
	// Snapshots gives the policy to expose and, to each call, the state it
	// runs with.
	Snapshots Snapshots
	// KillCalls is closed when in-flight runs must be killed (by the hub,
	// at the end of the shutdown grace): every run the registry's handlers
	// started ends at that moment, whatever the registry is doing; nil
	// means never.
	KillCalls <-chan struct{}
	// States carries the metrics scrape's questions about the upstream
	// servers' state.
	States <-chan messages.UpstreamStates
	// Stopped is closed when Run returns, so a scrape never waits on a
	// registry that no longer reads States.
	Stopped chan<- struct{}
	// ToolsetChanged is rung by the policy holder after each swap.
	ToolsetChanged messages.Doorbell
	// Offers brings the upstream clients' tool offers and withdrawals; nil means
	// no upstream servers.
	Offers <-chan messages.UpstreamTools
	// Log receives the registry's and the calls' lines; nil discards them.
	Log *slog.Logger
}

// NewRegistry manages o.Server's wrapped tools.
func NewRegistry(o RegistryOptions) *Registry {
	calls := context.Background()
	if o.KillCalls != nil {
		calls = killContext{Context: calls, kill: o.KillCalls}
	}
	r := &Registry{changed: o.ToolsetChanged, offers: o.Offers, server: o.Server, snapshots: o.Snapshots, calls: calls,
		log: logger(o.Log, "registry"), callLog: logger(o.Log, "calls"),
		exposed: map[string][]byte{}, upstream: map[string]messages.UpstreamTools{}, notices: map[string]bool{},
		states: o.States, stopped: o.Stopped}
	r.gate = &listGate{log: r.log}
	if o.Server != nil { // a registry only asked to make handlers
		o.Server.AddSendingMiddleware(r.gate.middleware)
	}
	return r
}

// Prime registers the current snapshot's tools. Call it once, before Run and
// before the server accepts connections.
func (r *Registry) Prime() {
	r.apply()
}

// Run applies the policy in service each time it changes, and each offer as
// it comes, until ctx is done. A burst of rings is one diff, against the
// latest snapshot.
//
// Each upstream server's state ("running" while it offers tools, "down"
// once its upstream client withdrew them) is answered on the question's
// reply.
func (r *Registry) Run(ctx context.Context) error {
	if r.stopped != nil {
		defer close(r.stopped)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.changed:
			r.apply()
		case q := <-r.states:
			out := map[string]string{}
			for name, offer := range r.upstream {
				out[name] = "down"
				if offer.Tools != nil {
					out[name] = "running"
				}
			}
			q.Reply <- out // buffered (size 1): never blocks
		case m := <-r.offers:
			// An offer older than the one held comes from an upstream client the
			// supervisor has replaced: it must not bring back its tools.
			if cur, ok := r.upstream[m.Server]; !ok || m.Generation >= cur.Generation {
				r.upstream[m.Server] = m
				r.apply()
			}
			if m.Applied != nil {
				m.Applied <- struct{}{}
			}
		}
	}
}

// state is what a call runs with: the snapshot in service when it starts.
func (r *Registry) state() *toolset.State { return &r.snapshots.Current().State }

type toolChange struct {
	def     *mcp.Tool
	handler func() mcp.ToolHandler
	key     []byte
}

func (r *Registry) apply() {
	snap := r.snapshots.Current()
	next := map[string]toolChange{}
	definer := toolset.NewDefiner()
	for _, rule := range snap.Policy.Rules() {
		def := definer.Definition(rule)
		data, err := json.Marshal(def)
		if err != nil {
			r.log.Error("tool definition does not encode; not exposed", "tool", rule.Name(), "error", err)
			continue
		}
		next[rule.Name()] = toolChange{def, func() mcp.ToolHandler {
			return toolset.NewHandler(rule.Tool(), rule.Subcommand(), r.state, r.calls, r.callLog)
		}, changeKey(data)}
	}
	notices := map[string]bool{}
	notice := func(server, tool, reason string) {
		key := server + "\x00" + tool + "\x00" + reason
		notices[key] = true
		if !r.notices[key] {
			r.log.Warn("upstream tool not exposed", "server", server, "tool", tool, "reason", reason)
		}
	}
	for _, server := range sortedNames(snap.Config.MCPServers) {
		offer, ok := r.upstream[server]
		if !ok || offer.Tools == nil {
			continue
		}
		s := snap.Config.MCPServers[server]
		exposed, skipped, missing := upstream.Expose(upstream.FilterOf(s), offer.Tools)
		for _, sk := range skipped {
			notice(server, sk.Tool, sk.Reason)
		}
		for _, name := range missing {
			notice(server, name, "it is allowed, but the upstream server does not offer it")
		}
		for _, t := range exposed {
			if _, taken := next[t.Def.Name]; taken {
				notice(server, t.Upstream, fmt.Sprintf("its exposed name %q is already another tool's", t.Def.Name))
				continue
			}
			data, err := json.Marshal(t.Def)
			if err != nil {
				notice(server, t.Upstream, "its definition does not encode: "+err.Error())
				continue
			}
			// The binding is part of the key: a new upstream client's tools need
			// new handlers even when their definitions are the same.
			key := changeKey(strconv.AppendUint(append(data, '#'), offer.Generation, 10))
			next[t.Def.Name] = toolChange{t.Def, func() mcp.ToolHandler {
				return upstream.Audited(server, r.state, r.calls, upstream.Handler(server, t.Upstream, offer, r.upstreamTimeout(server), r.calls))
			}, key}
		}
	}
	r.notices = notices

	var removed []string
	for name := range r.exposed {
		if _, ok := next[name]; !ok {
			removed = append(removed, name)
		}
	}
	var changed []toolChange
	for name, c := range next {
		if old, ok := r.exposed[name]; !ok || !bytes.Equal(old, c.key) {
			changed = append(changed, c)
		}
	}
	if len(removed) == 0 && len(changed) == 0 {
		return
	}
	calls := len(changed)
	if len(removed) > 0 {
		calls++
	}
	handlers := make([]mcp.ToolHandler, len(changed))
	for i, c := range changed {
		handlers[i] = c.handler()
	}
	r.gate.open(calls)
	if len(removed) > 0 {
		r.gate.call(func() { r.server.RemoveTools(removed...) })
	}
	for i, c := range changed {
		refused := false
		r.gate.call(func() {
			if refused {
				return
			}
			if err := addTool(r.server, c.def, handlers[i]); err != nil {
				refused = true
				r.log.Error("the MCP SDK refused a tool definition; not exposed", "tool", c.def.Name, "error", err)
				r.server.RemoveTools(c.def.Name) // nor the definition it was to replace
			}
		})
	}
	r.gate.close()
	for _, name := range removed {
		delete(r.exposed, name)
	}
	for name, c := range next {
		r.exposed[name] = c.key
	}
	r.log.Debug("tools updated", "removed", removed, "added_or_changed", len(changed), "exposed", len(r.exposed))
}

// changeKey is what the registry keeps of a definition to tell whether it
// changed: a SHA-256 of its encoding rather than the encoding itself, which
// was a tenth of a 5,000-rule server's memory.
func changeKey(encoded []byte) []byte {
	sum := sha256.Sum256(encoded)
	return sum[:]
}

// addTool registers a tool, turning the SDK's panic on a definition it
// refuses (an upstream's odd schema) into an error: an upstream must not
// be able to crash wraptool.
func addTool(s *mcp.Server, def *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	s.AddTool(def, h)
	return nil
}

// upstreamTimeout reads a server's call timeout from the snapshot in
// service, so a changed timeout applies to the next call without a restart.
func (r *Registry) upstreamTimeout(server string) func() time.Duration {
	return func() time.Duration {
		if s, ok := r.snapshots.Current().Config.MCPServers[server]; ok && s.Timeout > 0 {
			return s.Timeout
		}
		return config.DefaultTimeout
	}
}

// killContext is the context the registry's handlers derive every run
// from: done the moment the hub closes KillCalls, with no hop through the
// registry's loop (which may be busy applying a reload), so a run killed
// at the end of the grace and the call's own end are one moment, as
// before the link was a channel. It carries no deadline and no values.
type killContext struct {
	context.Context
	kill <-chan struct{}
}

// Done is closed with KillCalls.
func (k killContext) Done() <-chan struct{} { return k.kill }

// Err is context.Canceled once KillCalls is closed.
func (k killContext) Err() error {
	select {
	case <-k.kill:
		return context.Canceled
	default:
		return nil
	}
}
