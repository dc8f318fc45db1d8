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
// they started with), then rings the registry and the watcher, which read
// the new snapshot when they answer.
type PolicyHolder struct {
	in             <-chan messages.ConfigLoaded
	toolsetChanged messages.Doorbell
	watchChanged   messages.Doorbell
	upstreams      messages.Doorbell
	shared         Shared
	getenv         func(string) string
	setLevel       func(string)
	log            *slog.Logger

	cur       atomic.Pointer[Snapshot]
	listening listeners
}

// PolicyHolderOptions configure a PolicyHolder.
type PolicyHolderOptions struct {
	// Initial is the snapshot in service at start.
	Initial *Snapshot
	// Shared are the slots and reaper every snapshot carries.
	Shared Shared
	// Getenv reads the server's environment (children's PATH and HOME);
	// nil means none.
	Getenv func(string) string
	// SetLevel applies mcp.log_level after a reload; nil when the level
	// was pinned by a flag or the environment.
	SetLevel func(string)
	// Loaded is the loader's output.
	Loaded <-chan messages.ConfigLoaded
	// ToolsetChanged, WatchSetChanged and UpstreamsChanged (nil for none)
	// are rung after each swap.
	ToolsetChanged, WatchSetChanged, UpstreamsChanged messages.Doorbell
	// Log receives "config reloaded"; nil discards it.
	Log *slog.Logger
}

// listeners are the settings only a restart can change.
type listeners struct{ transport, listen, admin string }

func listenersOf(s *Snapshot) listeners {
	return listeners{s.Config.MCP.Transport, s.Config.MCP.Listen, s.Config.Admin.Listen}
}

// NewPolicyHolder starts from o.Initial.
func NewPolicyHolder(o PolicyHolderOptions) *PolicyHolder {
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	h := &PolicyHolder{in: o.Loaded, toolsetChanged: o.ToolsetChanged, watchChanged: o.WatchSetChanged, upstreams: o.UpstreamsChanged,
		shared: o.Shared, getenv: o.Getenv, setLevel: o.SetLevel, log: logger(o.Log, "policy"),
		listening: listenersOf(o.Initial)}
	h.cur.Store(o.Initial)
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
			snap := NewSnapshot(m.Loaded, h.shared, h.getenv)
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
			ring(h.toolsetChanged)
			ring(h.watchChanged)
			if h.upstreams != nil {
				ring(h.upstreams)
			}
		}
	}
}
