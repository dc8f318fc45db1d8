package actors

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/toolset"
)

// Registry keeps the MCP server's wrapped tools in step with the policy. It
// computes the whole diff first (every definition built and checked), then
// applies it in one burst, so the SDK's short debounce sends clients exactly
// one tools/list_changed per reload that changes something, and none for a
// reload that changes nothing. It never touches tools it did not add (the
// built-in ones).
type Registry struct {
	changed   messages.Doorbell
	server    *mcp.Server
	snapshots Snapshots
	calls     context.Context
	log       *slog.Logger
	callLog   *slog.Logger // for the tool handlers it registers

	exposed map[string][]byte // name → the definition's JSON
}

// RegistryOptions configure a Registry.
type RegistryOptions struct {
	// Server is the MCP server whose tools the registry manages.
	Server *mcp.Server
	// Snapshots gives the policy to expose and, to each call, the state it
	// runs with.
	Snapshots Snapshots
	// Calls is done when in-flight runs must be killed (the hub's, at the
	// end of the shutdown grace); nil means never.
	Calls context.Context
	// ToolsetChanged is rung by the policy holder after each swap.
	ToolsetChanged messages.Doorbell
	// Log receives the registry's and the calls' lines; nil discards them.
	Log *slog.Logger
}

// NewRegistry manages o.Server's wrapped tools.
func NewRegistry(o RegistryOptions) *Registry {
	if o.Calls == nil {
		o.Calls = context.Background()
	}
	return &Registry{changed: o.ToolsetChanged, server: o.Server, snapshots: o.Snapshots, calls: o.Calls,
		log: logger(o.Log, "registry"), callLog: logger(o.Log, "calls"), exposed: map[string][]byte{}}
}

// Prime registers the current snapshot's tools. Call it once, before Run and
// before the server accepts connections.
func (r *Registry) Prime() {
	r.apply(r.snapshots.Current().Policy)
}

// Run applies the policy in service each time it changes, until ctx is
// done. A burst of rings is one diff, against the latest snapshot.
func (r *Registry) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.changed:
			r.apply(r.snapshots.Current().Policy)
		}
	}
}

// state is what a call runs with: the snapshot in service when it starts.
func (r *Registry) state() *toolset.State { return &r.snapshots.Current().State }

type toolChange struct {
	def  *mcp.Tool
	rule *policy.Rule
	json []byte
}

func (r *Registry) apply(p *policy.Policy) {
	next := map[string]toolChange{}
	for _, rule := range p.Rules() {
		def := toolset.Definition(rule)
		data, err := json.Marshal(def)
		if err != nil {
			r.log.Error("tool definition does not encode; not exposed", "tool", rule.Name(), "error", err)
			continue
		}
		next[rule.Name()] = toolChange{def, rule, data}
	}
	var removed []string
	for name := range r.exposed {
		if _, ok := next[name]; !ok {
			removed = append(removed, name)
		}
	}
	var changed []toolChange
	for name, c := range next {
		if old, ok := r.exposed[name]; !ok || !bytes.Equal(old, c.json) {
			changed = append(changed, c)
		}
	}
	if len(removed) == 0 && len(changed) == 0 {
		return
	}
	if len(removed) > 0 {
		r.server.RemoveTools(removed...)
	}
	for _, c := range changed {
		r.server.AddTool(c.def, toolset.NewHandler(c.rule.Tool(), c.rule.Subcommand(), r.state, r.calls, r.callLog))
	}
	for _, name := range removed {
		delete(r.exposed, name)
	}
	for name, c := range next {
		r.exposed[name] = c.json
	}
	r.log.Debug("tools updated", "removed", removed, "added_or_changed", len(changed), "exposed", len(r.exposed))
}
