package actors

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/toolset"
)

// PolicyHolder is the single writer of the current Snapshot. It swaps in
// each loaded configuration atomically (in-flight calls keep the snapshot
// they started with), then tells the registry what to expose.
type PolicyHolder struct {
	in     <-chan messages.ConfigLoaded
	out    chan<- messages.ToolsetChanged
	getenv func(string) string
	// setLevel applies mcp.log_level after a reload; nil when the level
	// was pinned by a flag or the environment.
	setLevel func(string)
	log      *slog.Logger

	cur       atomic.Pointer[Snapshot]
	listening listeners
}

// listeners are the settings only a restart can change.
type listeners struct{ transport, listen, admin string }

func listenersOf(s *Snapshot) listeners {
	return listeners{s.Config.MCP.Transport, s.Config.MCP.Listen, s.Config.Admin.Listen}
}

// NewPolicyHolder starts from the snapshot already in service.
func NewPolicyHolder(initial *Snapshot, getenv func(string) string, setLevel func(string),
	in <-chan messages.ConfigLoaded, out chan<- messages.ToolsetChanged, log *slog.Logger) *PolicyHolder {
	h := &PolicyHolder{in: in, out: out, getenv: getenv, setLevel: setLevel, log: log.With("component", "policy"),
		listening: listenersOf(initial)}
	h.cur.Store(initial)
	return h
}

// Current returns the snapshot in service. Safe for concurrent use.
func (h *PolicyHolder) Current() *Snapshot { return h.cur.Load() }

// State returns the tool-call state of the snapshot in service.
func (h *PolicyHolder) State() *toolset.State { return &h.cur.Load().State }

// Run swaps in each loaded configuration until ctx is done.
func (h *PolicyHolder) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-h.in:
			prev := h.cur.Load()
			snap := NewSnapshot(m, prev.ConfigPath, h.getenv)
			// The server-wide limits outlive snapshots; a reload only
			// changes how many calls may run at once.
			snap.Slots, snap.Reaper = prev.Slots, prev.Reaper
			if snap.Slots != nil {
				snap.Slots.SetLimit(snap.Config.MCP.MaxConcurrentCalls)
			}
			if now := listenersOf(snap); now != h.listening {
				h.log.Warn("listener settings changed; they take effect after a restart",
					"mcp.transport", now.transport, "mcp.listen", now.listen, "admin.listen", now.admin,
					"running.mcp.transport", h.listening.transport, "running.mcp.listen", h.listening.listen,
					"running.admin.listen", h.listening.admin)
			}
			h.cur.Store(snap)
			if h.setLevel != nil {
				h.setLevel(snap.Config.MCP.LogLevel)
			}
			h.log.Info("config reloaded", "cause", m.Cause, "tools", len(snap.Config.Tools),
				"allow_rules", snap.Config.AllowRulesWritten, "exposed", len(snap.Policy.Rules()),
				"mcp_servers", len(snap.Config.MCPServers))
			select {
			case h.out <- messages.ToolsetChanged{Policy: snap.Policy}:
			case <-ctx.Done():
				return nil
			}
		}
	}
}
