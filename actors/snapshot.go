package actors

import (
	"path/filepath"

	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/toolset"
	"github.com/wraptool/wraptool/toolset/runner"
)

// Snapshot is the server's state after one successful load. It is immutable
// and shared by pointer: a tool call keeps the snapshot it started with, and
// every reader (tool handlers, the hub's auth check, the watcher, the
// request-log writer) sees one whole load, never half of two.
type Snapshot struct {
	toolset.State
	// Config is the loaded config; its File is the config's absolute path.
	Config *config.Config
	// MCPToken is the bearer token MCP clients must send; "" for none.
	MCPToken string
	// AdminToken is the review UI's token; "" when the config names none.
	AdminToken string
	// Hash identifies every byte the load read (see config.Loaded).
	Hash string
}

// Shared is what outlives snapshots: one set of concurrency slots and one
// reaper for the server's life, carried by every snapshot's State.
type Shared struct {
	// Slots bound the wrapped-tool children running at once; nil means
	// unlimited. A new snapshot sets its limit.
	Slots *toolset.Slots
	// Reaper tracks every child a call starts; nil means none.
	Reaper *runner.Reaper
}

// NewSnapshot builds the snapshot for a load. getenv reads the server's
// environment, for the children's PATH and HOME.
func NewSnapshot(l *config.Loaded, shared Shared, getenv func(string) string) *Snapshot {
	c := l.Config
	protected := append([]string{absPath(c.File)}, c.OwnFiles()...)
	rt := make(map[string]toolset.Runtime, len(c.Tools))
	for name, t := range c.Tools {
		rt[name] = toolset.Runtime{
			WorkingDir: t.WorkingDir,
			Env:        runner.Environ(t.Binary, getenv, t.FileEnv, t.Env),
			Timeout:    t.Timeout,
			Roots:      c.MCP.AllowedCwdRoots,
			Protected:  protected,
			Home:       getenv("HOME"),
		}
	}
	if shared.Slots != nil {
		shared.Slots.SetLimit(c.MCP.MaxConcurrentCalls)
	}
	return &Snapshot{
		State: toolset.State{Policy: l.Policy, Helps: l.Helps, RequestLog: c.MCP.RequestLog, Runtimes: rt,
			Slots: shared.Slots, Reaper: shared.Reaper},
		Config:     c,
		MCPToken:   l.MCPToken,
		AdminToken: l.AdminToken,
		Hash:       l.Hash,
	}
}

// WatchPaths are the files whose changes trigger a reload: the config and
// the token, env and overrides files it names.
func (s *Snapshot) WatchPaths() []string { return s.Config.WatchFiles() }

// absPath makes path absolute for comparisons with watcher events.
func absPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return filepath.Clean(path)
}
