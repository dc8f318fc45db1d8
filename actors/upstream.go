package actors

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/toolset/runner"
)

// Upstreams supervises one upstream client per mcp_servers entry. On every swap it
// compares the entries in service with the upstream clients running: it stops the
// upstream clients whose entry vanished or whose start (command, args, working_dir,
// environment, init_timeout) changed, then starts the new ones, and leaves
// every other upstream client (and its upstream's session) untouched. Changes of
// allow, deny, name_prefix or timeout need no restart: the registry applies
// them from the snapshot.
//
// Its first round gates serving: UpstreamsOptions.Ready is closed once every upstream in the
// first config has either offered its tools (and the registry applied them)
// or failed its first start, so a client's first tools/list already holds
// every upstream tool that could be had. Each first start is bounded by its
// init_timeout.
type Upstreams struct {
	changed   messages.Doorbell
	snapshots Snapshots
	publish   chan<- messages.UpstreamTools
	getenv    func(string) string
	reaper    *runner.Reaper
	timing    UpstreamTiming
	version   string
	log       *slog.Logger

	ready     chan<- struct{}
	readyOnce sync.Once
	// first carries each upstream client's "first start over" report. Unbuffered;
	// upstream clients send with their context, Run receives.
	first   chan string
	running map[string]*runningBridge
	gen     uint64
}

type runningBridge struct {
	b    *upstreamClient
	spec upstreamSpec
	// sandbox is the one in force when the upstream client started; another in a
	// later snapshot restarts the server in it.
	sandbox *runner.Sandbox
	cancel  context.CancelFunc
	done    chan struct{}
}

// UpstreamsOptions configure Upstreams.
type UpstreamsOptions struct {
	// Snapshots give the mcp_servers entries in service.
	Snapshots Snapshots
	// UpstreamsChanged is rung by the policy holder after each swap.
	UpstreamsChanged messages.Doorbell
	// Offers reaches the registry.
	Offers chan<- messages.UpstreamTools
	// Getenv reads the server's environment (the upstreams' PATH and
	// HOME); nil means none.
	Getenv func(string) string
	// Reaper tracks the upstream processes; nil means none.
	Reaper *runner.Reaper
	// Timing sets the upstream clients' clocks; zero fields are the defaults.
	Timing UpstreamTiming
	// Version is wraptool's, sent to each upstream at initialization.
	Version string
	// Log receives the upstream clients' lines, each with its server's name.
	Log *slog.Logger
	// Ready, when not nil, is closed once the first round of starts is
	// over (see Upstreams): the hub serves only then.
	Ready chan<- struct{}
}

// NewUpstreams supervises the snapshot's mcp_servers once Run starts.
func NewUpstreams(o UpstreamsOptions) *Upstreams {
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	return &Upstreams{changed: o.UpstreamsChanged, snapshots: o.Snapshots, publish: o.Offers, getenv: o.Getenv,
		reaper: o.Reaper, timing: o.Timing.withDefaults(), version: o.Version, log: logger(o.Log, "upstream"),
		ready: o.Ready, first: make(chan string), running: map[string]*runningBridge{}}
}

// Run supervises until ctx is done, then stops every upstream (SIGTERM,
// then SIGKILL after the grace, to each process group) and returns nil.
func (u *Upstreams) Run(ctx context.Context) error {
	defer u.stopAll()
	pending := map[string]bool{}
	for _, name := range u.reconcile(ctx) {
		pending[name] = true
	}
	u.readyWhenEmpty(pending)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-u.changed:
			u.reconcile(ctx)
			// A first start still pending whose server was removed will
			// never report; one whose server was restarted reports from
			// its new upstream client.
			for name := range pending {
				if _, still := u.running[name]; !still {
					delete(pending, name)
				}
			}
			u.readyWhenEmpty(pending)
		case name := <-u.first:
			delete(pending, name)
			u.readyWhenEmpty(pending)
		}
	}
}

func (u *Upstreams) readyWhenEmpty(pending map[string]bool) {
	if len(pending) == 0 {
		u.readyOnce.Do(func() {
			if u.ready != nil {
				close(u.ready)
			}
		})
	}
}

// reconcile makes the running upstream clients match the snapshot's mcp_servers:
// stops first (so a restarted upstream never runs twice, and a withdrawal
// always precedes the new upstream client's offer), then starts. It returns the
// names it started.
func (u *Upstreams) reconcile(ctx context.Context) []string {
	snap := u.snapshots.Current()
	want := snap.Config.MCPServers
	var stopping []string
	for name, r := range u.running {
		s, ok := want[name]
		// A server runs in the sandbox of the snapshot that started it:
		// a new protected set, or confinement turned on, restarts it.
		if ok && r.spec.equal(specOf(s)) && r.sandbox == snap.Sandbox {
			continue
		}
		why := "removed from the config"
		switch {
		case ok && !r.spec.equal(specOf(s)):
			why = "its entry changed"
		case ok:
			why = "its confinement changed"
		}
		u.log.Info("stopping upstream server", "server", name, "because", why)
		r.cancel()
		stopping = append(stopping, name)
	}
	for _, name := range stopping {
		r := u.running[name]
		<-r.done
		delete(u.running, name)
		select {
		case u.publish <- messages.UpstreamTools{Server: name, Generation: r.b.gen}:
		case <-ctx.Done():
			return nil
		}
	}
	var started []string
	for _, name := range sortedNames(want) {
		if _, ok := u.running[name]; ok {
			continue
		}
		u.start(ctx, name, specOf(want[name]))
		started = append(started, name)
	}
	return started
}

func (u *Upstreams) start(ctx context.Context, name string, spec upstreamSpec) {
	u.gen++
	b := &upstreamClient{name: name, gen: u.gen, spec: spec, getenv: u.getenv, reaper: u.reaper, snapshots: u.snapshots, timing: u.timing,
		version: u.version, log: u.log.With("server", name), publish: u.publish, first: u.first,
		calls: make(chan messages.UpstreamCall), gone: make(chan struct{}),
		progress: map[string]chan<- messages.UpstreamProgress{}}
	bctx, cancel := context.WithCancel(ctx)
	r := &runningBridge{b: b, spec: spec, sandbox: u.snapshots.Current().Sandbox, cancel: cancel, done: make(chan struct{})}
	u.running[name] = r
	u.log.Info("starting upstream server", "server", name, "command", spec.command, "args", spec.args)
	go func() {
		defer close(r.done)
		b.run(bctx)
	}()
}

// stopAll stops every upstream client at once and waits for each.
func (u *Upstreams) stopAll() {
	for _, r := range u.running {
		r.cancel()
	}
	for name, r := range u.running {
		<-r.done
		delete(u.running, name)
	}
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
