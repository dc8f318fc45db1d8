package actors

import (
	"path/filepath"

	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/requests"
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
	// Loaded is the load the snapshot serves; a change of grants builds a
	// new snapshot from it.
	Loaded *config.Loaded
	// Sandbox confines every process started for this snapshot (calls,
	// hooks, upstream servers); nil when confinement is off.
	Sandbox *runner.Sandbox
	// Grants are the grants in force the grants actor last gave (for every
	// config); Dormant says why those for this config that are not in
	// force are not (their tool is gone, a deny rule covers them, the
	// policy an exact grant was approved under changed).
	Grants  []*requests.Record
	Dormant map[string]error
	// Learned is what the policy holder learned of the grants'
	// subcommands' help for Loaded; a grant whose help is still to be
	// learned is dormant (toolset.ErrLearningHelp) until it is.
	Learned toolset.GrantHelps
}

// Shared is what outlives snapshots: one set of concurrency slots and one
// reaper for the server's life, carried by every snapshot's State.
type Shared struct {
	// Slots bound the wrapped-tool children running at once; nil means
	// unlimited. A new snapshot sets its limit.
	Slots *toolset.Slots
	// Reaper tracks every child a call starts; nil means none.
	Reaper *runner.Reaper
	// Denials remembers refused calls for exact-call requests; nil issues
	// no call_ids.
	Denials *toolset.Denials
	// UseGrant consumes once-grants through the request-log writer
	// (messages.RequestLogLinks.UseGrant); nil when none can be.
	UseGrant toolset.GrantUser
	// Used remembers the once-grants used, for the denials that follow;
	// nil remembers none.
	Used *toolset.UsedGrants
	// Audit reaches the audit-log writer; nil means no audit log whatever
	// the config says.
	Audit *AuditSender
	// Confiner gives each snapshot the sandbox for its config's protected
	// set, unless the config turns confinement off; nil confines nothing.
	Confiner *runner.Confiner
	// Self is wraptool's own executable, write-protected from every
	// process it starts; "" when unknown.
	Self string
	// Paths locate wraptool's default folders (nil: the real environment).
	Paths *config.Options
}

// NewSnapshot builds the snapshot for a load and the temporary grants in
// force: the grants approved under this config are merged into the policy
// clients see, as ApplyRequest would merge them into the file.
// getenv reads the server's environment, for the children's PATH and HOME.
// A grant whose subcommand's help the load does not know is not in force
// (see NewSnapshotWith).
func NewSnapshot(l *config.Loaded, grants []*requests.Record, shared Shared, getenv func(string) string) *Snapshot {
	return NewSnapshotWith(l, grants, toolset.GrantHelps{}, shared, getenv)
}

// NewSnapshotWith is NewSnapshot with what was learned of the grants'
// help: their merged rules are compiled with it, and the snapshot's Helps
// (previews, discovery, schemas) include it.
func NewSnapshotWith(l *config.Loaded, grants []*requests.Record, learned toolset.GrantHelps, shared Shared, getenv func(string) string) *Snapshot {
	c := l.Config
	// One set for all the snapshot's tools: the files are the server's.
	protected := toolset.NewProtectedFiles(append([]string{absPath(c.File)}, c.OwnFiles()...))
	sandbox := SandboxFor(c, shared.Confiner, shared.Self, shared.Paths)
	rt := make(map[string]toolset.Runtime, len(c.Tools))
	for name, t := range c.Tools {
		rt[name] = toolset.Runtime{
			WorkingDir: t.WorkingDir,
			Env:        runner.Environ(t.Binary, getenv, t.FileEnv, t.Env),
			Timeout:    t.Timeout,
			Roots:      c.MCP.AllowedCwdRoots,
			Protected:  protected,
			Home:       getenv("HOME"),
			Sandbox:    sandbox,
		}
	}
	if shared.Slots != nil {
		shared.Slots.SetLimit(c.MCP.MaxConcurrentCalls)
	}
	snap := &Snapshot{
		State: toolset.State{Policy: l.Policy, Helps: learned.For(l), Preview: l.PreviewRule, RequestLog: c.MCP.RequestLog, Runtimes: rt,
			Slots: shared.Slots, Reaper: shared.Reaper, Base: l.Policy, PolicyHash: l.PolicyHash(),
			Denials: shared.Denials, UseGrant: shared.UseGrant, Used: shared.Used,
			ElicitTokens: l.ElicitTokens, ConfigPath: config.CanonicalPath(c.File)},
		Config:     c,
		MCPToken:   l.MCPToken,
		AdminToken: l.AdminToken,
		Hash:       l.Hash,
		Loaded:     l,
		Sandbox:    sandbox,
		Grants:     grants,
		Learned:    learned,
	}
	// The grants approved under this config are merged into the policy
	// clients see; a call the config alone refuses may run under one.
	ov := toolset.OverlayGrants(l, grants, snap.PolicyHash, learned)
	snap.Policy, snap.State.Grants, snap.Dormant = ov.Policy, ov.Grants, ov.Dormant
	snap.AuditPolicy = toolset.AuditPolicy(snap.PolicyHash, snap.State.Grants.GrantIDs())
	if shared.Audit != nil && c.AuditEnabled() {
		snap.State.Audit = shared.Audit.For(c.MCP.AuditLog)
	}
	return snap
}

// SandboxFor is the sandbox every process started under c runs in: the
// one confiner gives for c's protected set, or nil when c turns
// confinement off (or there is no confiner).
func SandboxFor(c *config.Config, confiner *runner.Confiner, self string, paths *config.Options) *runner.Sandbox {
	if confiner == nil || c.MCP.Confinement == config.ConfinementOff {
		return nil
	}
	return confiner.ForKey(c, func() runner.Protected {
		p := c.Protected(self, paths)
		return runner.Protected{Hidden: p.Hidden, ReadOnly: p.ReadOnly}
	})
}

// Confinement names what confines the processes started for the snapshot,
// as /healthz and /metrics say it: "landlock (ABI 7)", or "off".
func (s *Snapshot) Confinement() string {
	if s.Sandbox == nil {
		return "off"
	}
	return s.Sandbox.Support().String()
}

// AuditPath is the audit log the snapshot's calls and changes are written
// to; "" when it is off.
func (s *Snapshot) AuditPath() string {
	if !s.Config.AuditEnabled() {
		return ""
	}
	return s.Config.MCP.AuditLog
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
