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
	in      <-chan messages.ToolsetChanged
	server  *mcp.Server
	current func() *toolset.State
	stop    context.Context
	log     *slog.Logger
	callLog *slog.Logger // for the tool handlers it registers

	exposed map[string][]byte // name → the definition's JSON
}

// NewRegistry manages server's wrapped tools. Their handlers evaluate the
// state current returns; stop is done when in-flight runs must be killed.
func NewRegistry(server *mcp.Server, current func() *toolset.State, stop context.Context,
	in <-chan messages.ToolsetChanged, log *slog.Logger) *Registry {
	return &Registry{in: in, server: server, current: current, stop: stop,
		log: log.With("component", "registry"), callLog: log.With("component", "calls"), exposed: map[string][]byte{}}
}

// Prime registers the first policy's tools. Call it once, before Run and
// before the server accepts connections.
func (r *Registry) Prime(p *policy.Policy) {
	r.apply(p)
}

// Run applies each changed policy until ctx is done.
func (r *Registry) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-r.in:
			r.apply(m.Policy)
		}
	}
}

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
		r.server.AddTool(c.def, toolset.NewHandler(c.rule.Tool(), c.rule.Subcommand(), r.current, r.stop, r.callLog))
	}
	for _, name := range removed {
		delete(r.exposed, name)
	}
	for name, c := range next {
		r.exposed[name] = c.json
	}
	r.log.Debug("tools updated", "removed", removed, "added_or_changed", len(changed), "exposed", len(r.exposed))
}
