package actors

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/toolset"
)

// PolicyHolder is the single writer of the current Snapshot. It swaps in
// each loaded configuration atomically (in-flight calls keep the snapshot
// they started with), then rings the registry and the watcher, which read
// the new snapshot when they answer.
type PolicyHolder struct {
	in             <-chan messages.ConfigLoaded
	grants         <-chan messages.GrantsChanged
	toolsetChanged messages.Doorbell
	watchChanged   messages.Doorbell
	upstreams      messages.Doorbell
	shared         Shared
	getenv         func(string) string
	setLevel       func(string)
	rejected       <-chan messages.ConfigRejected
	learns         <-chan messages.LearnHelps
	stopped        chan<- struct{}
	audit          *AuditSender
	log            *slog.Logger

	cur       *Published
	listening listeners
	// dormant are the dormant grants logged, with why, so each is logged
	// once per reason.
	dormant map[string]string
	// wanted are the requested subcommands a screen asked to learn,
	// oldest first, at most maxWanted. Every learning run learns them with
	// the grants' (a run's help replaces the last run's, so it must keep
	// what that one knew), and a reload learns them again, from the cache.
	wanted []config.GrantSpec
	// waiting are the LearnHelps not answered yet, at most maxWaiting.
	waiting []helpWait
}

// helpWait is one LearnHelps waiting for its specs' help.
type helpWait struct {
	specs []config.GrantSpec
	reply chan<- struct{}
}

// maxWanted bounds the requested subcommands the holder keeps learning (a
// request's subcommand is the assistant's choice; the review page shows at
// most this many pending at once anyway), and maxWaiting the asks it
// holds: past it, an ask is answered at once with what is known.
const (
	maxWanted  = 256
	maxWaiting = 1024
)

// PolicyHolderOptions configure a PolicyHolder.
type PolicyHolderOptions struct {
	// Initial is the snapshot in service at start.
	Initial *Snapshot
	// Publish is where the holder publishes each snapshot, and where every
	// reader loads it; nil publishes to a Published of its own (a test's).
	Publish *Published
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
	// Rejected brings the reloads whose config did not load, audited
	// against the policy that stays in service; nil means none.
	Rejected <-chan messages.ConfigRejected
	// Grants brings the grants in force from the grants actor; nil means
	// no grants.
	Grants <-chan messages.GrantsChanged
	// Learns brings the asks to learn the help of requested subcommands
	// (the review UI's, an elicitation's); nil means none.
	Learns <-chan messages.LearnHelps
	// Stopped is closed when Run returns, so no LearnHelps sender waits
	// on a holder that is gone; nil closes nothing.
	Stopped chan<- struct{}
	// ToolsetChanged, WatchSetChanged and UpstreamsChanged (nil for none)
	// are rung after each swap.
	ToolsetChanged, WatchSetChanged, UpstreamsChanged messages.Doorbell
	// Audit receives a policy line for every snapshot whose policy or
	// grants differ from the last, and for every rejected reload; nil
	// means Shared.Audit.
	Audit *AuditSender
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
	if o.Audit == nil {
		o.Audit = o.Shared.Audit
	}
	if o.Publish == nil {
		o.Publish = NewPublished()
	}
	h := &PolicyHolder{in: o.Loaded, rejected: o.Rejected, learns: o.Learns, stopped: o.Stopped, cur: o.Publish, audit: o.Audit, grants: o.Grants, dormant: map[string]string{}, toolsetChanged: o.ToolsetChanged, watchChanged: o.WatchSetChanged, upstreams: o.UpstreamsChanged,
		shared: o.Shared, getenv: o.Getenv, setLevel: o.SetLevel, log: logger(o.Log, "policy"),
		listening: listenersOf(o.Initial)}
	h.cur.cur.Store(o.Initial)
	h.logDormant(o.Initial)
	return h
}

// Run swaps in each loaded configuration until ctx is done. It first
// audits the policy it starts with (cause "start"), so the audit log says
// what was in force before the first call.
//
// A grant whose subcommand's help the snapshot does not know is learned off
// the loop (introspection's bounds: 5 s per run, at most 4 at once) while
// the snapshot in service leaves it out; once learned, a new snapshot puts
// it in force with that help. The subcommands of requests a person is about
// to decide (LearnHelps) are learned in the same runs, and each ask is
// answered once the snapshot in service knows its help or it was tried.
// Run waits for a learning run to end (it ends with ctx) before it returns.
func (h *PolicyHolder) Run(ctx context.Context) error {
	if h.stopped != nil {
		defer close(h.stopped)
	}
	start := h.cur.Current()
	h.auditChange(ctx, "start", &Snapshot{State: toolset.State{Policy: emptyPolicy}}, start)
	// learned brings a learning run's outcome back to the loop; one run at
	// a time, so one slot never blocks its sender.
	learned := make(chan learnedHelps, 1)
	var runs sync.WaitGroup
	defer runs.Wait()
	running := false
	learn := func() {
		if running {
			return
		}
		snap := h.cur.Current()
		need, all := h.toLearn(snap)
		if len(need) == 0 {
			return
		}
		running = true
		keys := make([]string, len(need))
		for i, g := range need {
			keys[i] = config.HelpKey(g.Tool, g.Subcommand)
		}
		runs.Add(1)
		go func() {
			defer runs.Done()
			helps, err := snap.Loaded.LearnGrants(ctx, all)
			learned <- learnedHelps{load: snap.Loaded, helps: helps, keys: keys, err: err}
		}()
	}
	learn()
	for {
		select {
		case <-ctx.Done():
			return nil
		case r := <-learned:
			running = false
			old := h.cur.Current()
			if r.load == old.Loaded {
				if r.err != nil {
					h.log.Warn("help not learned; a grant is in force on the rules' types and the heuristic, a request is shown as HELP UNKNOWN", "error", r.err)
				}
				lh := toolset.GrantHelps{Helps: old.Learned.Helps, Tried: map[string]bool{}}
				for k := range old.Learned.Tried {
					lh.Tried[k] = true
				}
				for _, k := range r.keys {
					lh.Tried[k] = true
				}
				if r.err == nil && r.helps != nil {
					lh.Helps = r.helps
				}
				snap := NewSnapshotWith(old.Loaded, old.Grants, lh, h.shared, h.getenv)
				h.cur.cur.Store(snap)
				h.auditChange(ctx, "grant", old, snap)
				h.logDormant(snap)
				h.log.Debug("help learned", "exposed", len(snap.Policy.Rules()))
				ring(h.toolsetChanged)
			}
			learn()
			h.answer()
		case m := <-h.learns:
			snap := h.cur.Current()
			for _, spec := range m.Specs {
				if config.HelpWanted(snap.Loaded.Policy, snap.Helps, spec.Tool, spec.Subcommand) {
					h.want(spec)
				}
			}
			if len(h.waiting) >= maxWaiting {
				m.Reply <- struct{}{}
				break
			}
			h.waiting = append(h.waiting, helpWait{specs: m.Specs, reply: m.Reply})
			learn()
			h.answer()
		case m := <-h.rejected:
			h.auditRejected(ctx, m.Cause, m.Err)
		case m := <-h.grants:
			// Only the grants changed: the same load, a new overlay. No
			// "config reloaded" line; the registry sends a list_changed
			// only if the tools did change.
			old := h.cur.Current()
			snap := NewSnapshotWith(old.Loaded, m.Grants, old.Learned, h.shared, h.getenv)
			h.cur.cur.Store(snap)
			h.auditChange(ctx, m.Cause, old, snap)
			h.logDormant(snap)
			h.log.Debug("grants changed", "cause", m.Cause, "in_force", len(m.Grants), "exposed", len(snap.Policy.Rules()))
			ring(h.toolsetChanged)
			learn()
			h.answer()
		case m := <-h.in:
			old := h.cur.Current()
			snap := NewSnapshot(m.Loaded, old.Grants, h.shared, h.getenv)
			if now := listenersOf(snap); now != h.listening {
				h.log.Warn("listener settings changed; they take effect after a restart",
					"mcp.transport", now.transport, "mcp.listen", now.listen, "admin.listen", now.admin,
					"running.mcp.transport", h.listening.transport, "running.mcp.listen", h.listening.listen,
					"running.admin.listen", h.listening.admin)
			}
			h.cur.cur.Store(snap)
			h.auditChange(ctx, strings.ToLower(m.Cause), old, snap)
			h.logDormant(snap)
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
			learn()
			h.answer()
		}
	}
}

// toLearn lists what snap's help lacks and a run must learn (need): the
// grants' subcommands (toolset.Unlearned), then the requested ones a
// screen asked for that the config lets it run and that were not tried
// under this load; and what the run learns in all (the grants first, so no
// requested subcommand can change how a grant merges): every spec whose
// help is known or needed, since the run's help replaces the last one's.
// A spec tried and not learned is not run again for this load.
func (h *PolicyHolder) toLearn(snap *Snapshot) (need, all []config.GrantSpec) {
	l := snap.Loaded
	if !l.Introspects() {
		return nil, nil
	}
	grantNeed, grantAll := toolset.Unlearned(l, snap.Grants, snap.Learned)
	helps := snap.Learned.For(l)
	needed := map[string]bool{}
	need = grantNeed
	for _, g := range grantNeed {
		needed[config.HelpKey(g.Tool, g.Subcommand)] = true
	}
	for _, w := range h.wanted {
		k := config.HelpKey(w.Tool, w.Subcommand)
		if !needed[k] && !snap.Learned.Tried[k] && config.HelpWanted(l.Policy, helps, w.Tool, w.Subcommand) {
			need = append(need, w)
			needed[k] = true
		}
	}
	if len(need) == 0 {
		return nil, nil
	}
	for _, spec := range append(grantAll, h.wanted...) {
		if needed[config.HelpKey(spec.Tool, spec.Subcommand)] || config.HelpKnown(helps, spec.Tool, spec.Subcommand) {
			all = append(all, spec)
		}
	}
	return need, all
}

// want adds spec to the requested subcommands to learn, once per
// subcommand, dropping the oldest past maxWanted.
func (h *PolicyHolder) want(spec config.GrantSpec) {
	k := config.HelpKey(spec.Tool, spec.Subcommand)
	for _, w := range h.wanted {
		if config.HelpKey(w.Tool, w.Subcommand) == k {
			return
		}
	}
	h.wanted = append(h.wanted, spec)
	if len(h.wanted) > maxWanted {
		h.wanted = h.wanted[len(h.wanted)-maxWanted:]
	}
}

// answer replies to every LearnHelps whose specs are settled under the
// snapshot in service: each help known, tried and not learned, or not
// to be learned at all (the config has no such tool, a deny rule covers
// the subcommand, the load does not introspect, or the spec fell out of
// the wanted list).
func (h *PolicyHolder) answer() {
	snap := h.cur.Current()
	kept := h.waiting[:0]
	for _, w := range h.waiting {
		if h.settled(snap, w.specs) {
			w.reply <- struct{}{}
			continue
		}
		kept = append(kept, w)
	}
	clear(h.waiting[len(kept):])
	h.waiting = kept
}

func (h *PolicyHolder) settled(snap *Snapshot, specs []config.GrantSpec) bool {
	if !snap.Loaded.Introspects() {
		return true
	}
	for _, spec := range specs {
		k := config.HelpKey(spec.Tool, spec.Subcommand)
		if snap.Learned.Tried[k] || !config.HelpWanted(snap.Loaded.Policy, snap.Helps, spec.Tool, spec.Subcommand) {
			continue
		}
		if slices.ContainsFunc(h.wanted, func(w config.GrantSpec) bool { return config.HelpKey(w.Tool, w.Subcommand) == k }) {
			return false
		}
	}
	return true
}

// learnedHelps is one learning run's outcome: what the subcommands of
// load's grants and of the requests asked about are (helps), which
// subcommands it tried (keys), or why it failed.
type learnedHelps struct {
	load  *config.Loaded
	helps policy.Helps
	keys  []string
	err   error
}

// emptyPolicy stands for "nothing" before the first policy.
var emptyPolicy, _ = policy.New(nil, nil)

// auditChange writes the policy line for a swap from old to cur, when the
// policy or the grants in force changed (the audit policy hash covers
// both): a reload of unchanged files writes none.
func (h *PolicyHolder) auditChange(ctx context.Context, cause string, old, cur *Snapshot) {
	if h.audit == nil || cur.AuditPath() == "" || old.AuditPolicy == cur.AuditPolicy {
		return
	}
	p := PolicyAudit{Cause: cause, Outcome: "applied", Old: old.AuditPolicy, New: cur.AuditPolicy}
	ch := policy.Diff(old.Policy, cur.Policy)
	p.ToolsAdded, p.ToolsRemoved, p.FlagsAdded, p.FlagsRemoved = ch.ToolsAdded, ch.ToolsRemoved, ch.FlagsAdded, ch.FlagsRemoved
	h.audit.Policy(ctx, cur.AuditPath(), p)
}

// auditRejected writes the policy line of a reload whose config did not
// load (the loader's ConfigRejected): the policy in service stays, and the
// line says why. cause is the loader's ("file" or "SIGHUP").
func (h *PolicyHolder) auditRejected(ctx context.Context, cause string, err error) {
	cur := h.cur.Current()
	if h.audit == nil || cur.AuditPath() == "" {
		return
	}
	h.audit.Policy(ctx, cur.AuditPath(), PolicyAudit{Cause: strings.ToLower(cause), Outcome: "rejected", Error: err.Error(),
		Old: cur.AuditPolicy, ToolsAdded: []string{}, ToolsRemoved: []string{},
		FlagsAdded: map[string][]string{}, FlagsRemoved: map[string][]string{}})
}

// logDormant logs each grant of the snapshot that is not in force, once
// per reason: a grant whose tool vanished from the config waits, dormant,
// until it expires.
func (h *PolicyHolder) logDormant(s *Snapshot) {
	for id, err := range s.Dormant {
		if errors.Is(err, toolset.ErrLearningHelp) {
			continue // not dormant: in force in a moment
		}
		if why := err.Error(); h.dormant[id] != why {
			h.dormant[id] = why
			h.log.Warn("grant dormant: not in force with this config", "id", id, "why", why)
		}
	}
	for id := range h.dormant {
		if _, still := s.Dormant[id]; !still {
			delete(h.dormant, id)
		}
	}
}
