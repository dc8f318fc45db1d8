package introspect

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"

	"github.com/wraptool/wraptool/introspect/helptext"
	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/toolset/runner"
)

// Defaults of Options and Tool.
const (
	// DefaultConcurrency is how many help runs may be going at once, across
	// every Learn of one Introspector: a config with many tools must not
	// fork them all at once.
	DefaultConcurrency = 4
	// DefaultTimeout bounds one help run, so a tool that hangs on --help
	// costs that much, once.
	DefaultTimeout = 5 * time.Second
	// DefaultOutputCap bounds each stream of one help run (256 KiB); help
	// texts are far shorter, a runaway tool is not.
	DefaultOutputCap = 256 << 10
	// DefaultCacheTTL is how long a fetched help is trusted (the config's
	// introspection.cache_ttl default).
	DefaultCacheTTL = 24 * time.Hour
)

// Options configure an Introspector. The zero value of every field means its
// default, and a nil *Options means all defaults.
type Options struct {
	// CacheDir is the folder holding the cache entries (the platform cache
	// dir + "wraptool/introspection", ~/.cache/wraptool/introspection on
	// Linux); created 0700 when first written. "" keeps no disk cache, only
	// the in-memory one.
	CacheDir string
	// CacheOnly answers from the caches alone and never runs a tool, for
	// callers that must not (config validate, check). It uses a cached
	// help however old: the binary is unchanged, so it is the best answer
	// there is. It writes nothing.
	CacheOnly bool
	// Concurrency is how many help runs may be going at once; zero means
	// DefaultConcurrency.
	Concurrency int
	// Timeout bounds each help run; zero means DefaultTimeout.
	Timeout time.Duration
	// OutputCap bounds each stream of a help run in bytes; zero means
	// DefaultOutputCap.
	OutputCap int
	// Now tells the time, for the cache's TTL; nil means time.Now.
	Now func() time.Time
	// Log receives a warning for each help that could not be learned (tool,
	// subcommand, why); nil means nowhere.
	Log *slog.Logger
	// Reaper tracks the help runs' children, as it tracks every child
	// when serve is a subreaper; nil tracks nothing.
	Reaper *runner.Reaper
}

// Tool is one wrapped tool, as much of its config as introspection needs.
type Tool struct {
	// Name is the tool's key in the config, the Catalog's key.
	Name string
	// Binary is the absolute path of the executable.
	Binary string
	// Env is the complete environment of its runs (runner.Environ): help
	// runs get the same isolated environment as calls.
	Env []string
	// CacheTTL is how long a fetched help is trusted; zero means
	// DefaultCacheTTL.
	CacheTTL time.Duration
	// Overrides correct what the help says; nil overrides nothing.
	Overrides *Overrides
	// Subcommands are the subcommand paths whose helps the policy needs:
	// every allow rule's subcommand and, for discovery, each multi-token
	// rule's parent. The root help is always learned; duplicates and paths
	// holding a token outside [A-Za-z0-9][A-Za-z0-9_-]* are skipped.
	Subcommands [][]string
	// Sandbox confines every help run, so a tool's --help can reach none of
	// wraptool's own files (this cache included); nil means none.
	Sandbox *runner.Sandbox

	// runs, when set, counts the help runs started for one subcommand, so
	// Explore can charge them to its budget; Learn leaves it nil.
	runs *int
}

// CacheOnly reports whether the introspector runs nothing (Options.CacheOnly).
func (in *Introspector) CacheOnly() bool { return in.o.CacheOnly }

// Introspector learns helps and keeps what it learned between calls: the
// successes (also on disk) and the failures (in memory only), so that a
// reload runs nothing that already worked or already failed for the same
// binary. One Introspector serves a process; its Learn may be called
// concurrently, and every run of every Learn shares one concurrency limit.
type Introspector struct {
	o   Options
	log *slog.Logger
	// sem holds a unit per running help run, Options.Concurrency in all,
	// taken with the run's context.
	sem *semaphore.Weighted
	// flights joins the loads that ask for one help at the same time onto
	// one fetch, keyed by flightKey.
	flights singleflight.Group
	// joined, when set (by tests), is called each time a load has joined
	// or started a fetch in flights.
	joined func()

	mu sync.Mutex
	// mem is the in-memory cache, one entry per (binary path, subcommand):
	// a new build of a binary replaces its entries, so it never grows
	// beyond the paths configured over the process's life.
	mem map[memKey]memEntry

	// work is the folder holding each help run's own empty folder, made at
	// the first run; guarded by mu. One folder for all runs keeps the
	// system's temporary folder unchanged from run to run: where it lies
	// above one of wraptool's files, a change there means the confinement
	// rules are built anew, and a cold start runs thousands of helps.
	work string
}

// memKey is the in-memory cache's key; the binary's size and time live in
// the entry, so a new build replaces the entry of the old one.
type memKey struct {
	path string
	sub  string
}

// memEntry is what is remembered of one help: the help (have), when it was
// fetched, and the last failure to fetch it ("" when the last fetch worked).
type memEntry struct {
	bin     binKey
	help    helptext.Help
	have    bool
	fetched time.Time
	failure string
}

// New returns an Introspector; it starts nothing.
func New(o *Options) *Introspector {
	in := &Introspector{mem: map[memKey]memEntry{}}
	if o != nil {
		in.o = *o
	}
	if in.o.Concurrency <= 0 {
		in.o.Concurrency = DefaultConcurrency
	}
	if in.o.Timeout <= 0 {
		in.o.Timeout = DefaultTimeout
	}
	if in.o.OutputCap <= 0 {
		in.o.OutputCap = DefaultOutputCap
	}
	if in.o.Now == nil {
		in.o.Now = time.Now
	}
	in.log = in.o.Log
	if in.log == nil {
		in.log = slog.New(slog.DiscardHandler)
	}
	in.log = in.log.With("component", "introspect")
	in.sem = semaphore.NewWeighted(int64(in.o.Concurrency))
	return in
}

// Learn learns every tool's root help and the helps of its Subcommands,
// from the caches or by running the tool, all tools at once within the
// concurrency limit, and returns what it knows with each tool's overrides on
// top. A help that cannot be learned is logged as a warning and left out:
// introspection is never fatal, the policy then falls back to the rules'
// types and the name heuristic. When ctx ends, every run is killed and Learn
// returns promptly with what it has.
//
// force retries helps that failed before for the same binary (SIGHUP: the
// operator fixed something wraptool cannot see); without it a remembered
// failure is not run again. A cached success is used either way until its
// TTL runs out.
func (in *Introspector) Learn(ctx context.Context, tools []Tool, force bool) *Catalog {
	cache, err := openCache(in.o.CacheDir, !in.o.CacheOnly)
	if err != nil {
		in.log.Warn("introspection cache not used", "error", err)
	}
	c := &Catalog{tools: make(map[string]*toolHelps, len(tools))}
	// A goroutine per tool (and per subcommand, in learnTool), unbounded:
	// the limit is on help runs across every load (sem), and a bound on
	// goroutines here (errgroup's SetLimit) would make a cached help wait
	// behind runs that wait for a slot.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, t := range tools {
		wg.Go(func() {
			th := in.learnTool(ctx, cache, t, force)
			mu.Lock()
			c.tools[t.Name] = th
			mu.Unlock()
		})
	}
	wg.Wait()
	return c
}

// learnTool learns one tool: its root help first, because that decides
// which forms a subcommand's help may be fetched with, then its
// subcommands' helps, all at once.
func (in *Introspector) learnTool(ctx context.Context, cache *diskCache, t Tool, force bool) *toolHelps {
	th := &toolHelps{helps: map[string]helptext.Help{}, overrides: t.Overrides}
	bin, err := statBinary(t.Binary)
	if err != nil {
		in.log.Warn("cannot introspect tool", "tool", t.Name, "binary", t.Binary, "error", err)
		return th
	}
	var root *helptext.Help
	if h, ok := in.help(ctx, cache, t, bin, nil, nil, force); ok {
		th.helps[""] = h
		root = &h
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	seen := map[string]bool{"": true}
	for _, sub := range t.Subcommands {
		key := subKey(sub)
		if seen[key] {
			continue
		}
		seen[key] = true
		if !slices.ContainsFunc(sub, func(s string) bool { return !policy.ValidToken(s) }) {
			sub := slices.Clone(sub)
			wg.Go(func() {
				if h, ok := in.help(ctx, cache, t, bin, sub, root, force); ok {
					mu.Lock()
					th.helps[key] = h
					mu.Unlock()
				}
			})
			continue
		}
		in.log.Warn("subcommand not introspected: a token is not [A-Za-z0-9][A-Za-z0-9_-]*", "tool", t.Name, "subcommand", fmt.Sprintf("%q", sub))
	}
	wg.Wait()
	return th
}

// help returns sub's help: from memory, else from disk, else by running the
// tool (unless cache-only). ok is false when it is not known.
func (in *Introspector) help(ctx context.Context, cache *diskCache, t Tool, bin binKey, sub []string, root *helptext.Help, force bool) (helptext.Help, bool) {
	ttl := t.CacheTTL
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	mk := memKey{path: bin.path, sub: subKey(sub)}
	in.mu.Lock()
	m, found := in.mem[mk]
	in.mu.Unlock()
	if found && m.bin != bin {
		found, m = false, memEntry{} // a new build: forget the old one
	}
	if found && m.have && (in.o.CacheOnly || fresh(m.fetched, in.o.Now(), ttl)) {
		return m.help, true
	}
	if found && m.failure != "" && !force {
		in.log.Debug("help failed before for this binary; not run again until it changes or SIGHUP", "tool", t.Name, "subcommand", subKey(sub), "reason", m.failure)
		return m.help, m.have
	}

	k := newEntryKey(bin, sub)
	switch e, err := cache.read(k); {
	case err == nil:
		if in.o.CacheOnly || fresh(e.FetchedAt, in.o.Now(), ttl) {
			in.remember(mk, memEntry{bin: bin, help: e.Help, have: true, fetched: e.FetchedAt})
			return e.Help, true
		}
		if !m.have || e.FetchedAt.After(m.fetched) {
			m = memEntry{bin: bin, help: e.Help, have: true, fetched: e.FetchedAt} // stale, kept for a failed refresh
		}
	case !errors.Is(err, fs.ErrNotExist):
		// wraptool writes whole entries only, so this one was damaged
		// or written by something else: the help counts as missing.
		in.log.Warn("introspection cache entry unusable; the help counts as missing", "tool", t.Name, "subcommand", subKey(sub),
			"entry", cache.path(k), "error", err)
	}
	if in.o.CacheOnly {
		return m.help, m.have
	}

	h, err := in.fetchOnce(ctx, t, bin, sub, root, func(ctx context.Context, h helptext.Help, err error) {
		in.record(ctx, cache, t, bin, sub, m, h, err)
	})
	if err != nil {
		return m.help, m.have
	}
	return h, true
}

// record keeps what fetching sub's help gave (h, or err) in memory and on
// disk; m is what was known before, kept beside a failure. A failure that is
// not the tool's (ctx ended, errTransient) is not remembered, so the next
// load tries again.
func (in *Introspector) record(ctx context.Context, cache *diskCache, t Tool, bin binKey, sub []string, m memEntry, h helptext.Help, err error) {
	mk := memKey{path: bin.path, sub: subKey(sub)}
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, errTransient) {
			if errors.Is(err, runner.ErrNoConfinement) {
				in.log.Warn("introspection failed", "tool", t.Name, "subcommand", subKey(sub), "reason", err.Error())
			}
			return // not the tool's fault: try again next time
		}
		in.log.Warn("introspection failed", "tool", t.Name, "subcommand", subKey(sub), "reason", err.Error())
		in.remember(mk, memEntry{bin: bin, help: m.help, have: m.have, fetched: m.fetched, failure: err.Error()})
		return
	}
	now := in.o.Now()
	in.remember(mk, memEntry{bin: bin, help: h, have: true, fetched: now})
	if err := cache.write(cacheEntry{entryKey: newEntryKey(bin, sub), FetchedAt: now, Help: h}); err != nil {
		in.log.Warn("introspection cache not written", "tool", t.Name, "subcommand", subKey(sub), "error", err)
	}
}

// errAbandoned marks a shared fetch that ended because the load that
// started it gave up: for a load still waiting it says nothing about the
// tool, and that load starts the fetch anew.
var errAbandoned = errors.New("the load that started this help run gave up")

// fetchOnce fetches sub's help and records the outcome (record), once for
// all the loads asking for the same help at the same time, which then run
// it once and warn once. The fetch runs under the context of the load that started it. A
// load that gives up stops waiting at once; when the one that started the
// fetch gives up, the run is killed and each load still waiting starts it
// anew, so one caller's cancellation never counts as the tool's failure for
// another.
func (in *Introspector) fetchOnce(ctx context.Context, t Tool, bin binKey, sub []string, root *helptext.Help,
	record func(context.Context, helptext.Help, error)) (helptext.Help, error) {
	key := flightKey(t, bin, sub, root)
	for {
		// started is set once this load's own fetch begins: only the
		// load that starts a flight has its function run.
		var started atomic.Bool
		ch := in.flights.DoChan(key, func() (any, error) {
			started.Store(true)
			h, err := in.fetch(ctx, t, sub, root)
			record(ctx, h, err)
			if err != nil && ctx.Err() != nil {
				err = fmt.Errorf("%w: %w", errAbandoned, err)
			}
			return h, err
		})
		if in.joined != nil {
			in.joined()
		}
		select {
		case r := <-ch:
			if errors.Is(r.Err, errAbandoned) && ctx.Err() == nil {
				continue // another load's run, killed as it gave up
			}
			if r.Err != nil {
				return helptext.Help{}, r.Err
			}
			return r.Val.(helptext.Help), nil
		case <-ctx.Done():
			if started.Load() {
				// This load's own run: it ends with ctx, and a Learn
				// returns only once its runs are reaped. A fetch that
				// has not begun by now starts nothing: run checks ctx
				// before it starts a process.
				<-ch
			}
			return helptext.Help{}, ctx.Err()
		}
	}
}

// flightKey names one help fetch: everything that decides what runs (the
// binary as configured and as built, the forms tried, the environment, the
// sandbox), quoted so that no two differ only in where one field ends.
// Loads under different sandboxes never share a run; the confiner hands out
// one Sandbox per protected set, so loads of one config do.
func flightKey(t Tool, bin binKey, sub []string, root *helptext.Help) string {
	return fmt.Sprintf("%q %q %d %d %q %q %p", t.Binary, bin.path, bin.size, bin.mtime, forms(sub, root), t.Env, t.Sandbox)
}

func (in *Introspector) remember(k memKey, e memEntry) {
	in.mu.Lock()
	in.mem[k] = e
	in.mu.Unlock()
}

// Why a help could not be fetched, for the warning.
var (
	errTimedOut      = errors.New("timed out")
	errNothingParsed = errors.New("nothing parseable")
	errStart         = errors.New("failed to start")
	// errTransient is a failure of wraptool's side (no temporary folder),
	// not the tool's, so it is not remembered.
	errTransient = errors.New("transient failure")
)

// forms lists the argument lists (after the binary) that may fetch sub's
// help, in order. The root help takes --help then -h. A subcommand takes
// --help; then -h unless the root help lists -h as anything but help
// (psql's -h HOST would take the next word, and a switch such as
// --human-readable would run the subcommand for real); then "help sub…"
// only when the root help lists a help command (or points to one). Without
// a known root help only --help is safe. Never "sub… help".
func forms(sub []string, root *helptext.Help) [][]string {
	with := func(tail ...string) []string {
		return append(slices.Clone(sub), tail...)
	}
	if len(sub) == 0 {
		return [][]string{{"--help"}, {"-h"}}
	}
	out := [][]string{with("--help")}
	if root == nil {
		return out
	}
	if !root.ShortHelpReused() {
		out = append(out, with("-h"))
	}
	if root.HasSubcommand("help") {
		out = append(out, append([]string{"help"}, sub...))
	}
	return out
}

// fetch runs sub's help forms in order until one prints a parseable help,
// on stdout or else on stderr, whatever the exit status. A run that times
// out, or a binary that cannot start, ends it.
func (in *Introspector) fetch(ctx context.Context, t Tool, sub []string, root *helptext.Help) (helptext.Help, error) {
	for _, args := range forms(sub, root) {
		argv := append([]string{t.Binary}, args...)
		res, err := in.run(ctx, t, argv)
		if err != nil {
			return helptext.Help{}, err
		}
		switch {
		case res.TimedOut:
			return helptext.Help{}, fmt.Errorf("%w after %s: %s", errTimedOut, in.o.Timeout, strings.Join(args, " "))
		case ctx.Err() != nil:
			return helptext.Help{}, ctx.Err()
		case errors.Is(res.Err, runner.ErrNoConfinement):
			// wraptool's side, not the tool's: said as it is, and tried
			// again at the next reload.
			return helptext.Help{}, fmt.Errorf("%w: %w", errTransient, res.Err)
		case res.Err != nil && strings.HasPrefix(res.Err.Error(), "failed to start"):
			// Another form would not start either.
			return helptext.Help{}, fmt.Errorf("%w%s", errStart, strings.TrimPrefix(res.Err.Error(), "failed to start"))
		}
		if h, ok := helptext.Parse(res.Stdout); ok {
			return h, nil
		}
		if h, ok := helptext.Parse(res.Stderr); ok {
			return h, nil
		}
	}
	return helptext.Help{}, errNothingParsed
}

// run runs one help form when a slot is free, in an empty temporary folder
// of its own that is removed afterwards.
func (in *Introspector) run(ctx context.Context, t Tool, argv []string) (runner.Result, error) {
	if err := ctx.Err(); err != nil {
		return runner.Result{}, err // a free slot must not win over an ended context
	}
	if err := in.sem.Acquire(ctx, 1); err != nil {
		return runner.Result{}, err
	}
	defer in.sem.Release(1)
	dir, err := in.runDir()
	if err != nil {
		return runner.Result{}, fmt.Errorf("%w: %v", errTransient, err)
	}
	defer os.RemoveAll(dir)
	if t.runs != nil {
		*t.runs++ // one goroutine fetches one subcommand's forms in turn
	}
	return runner.Run(ctx, runner.Command{
		Argv:      argv,
		Dir:       dir,
		Env:       t.Env,
		Timeout:   in.o.Timeout,
		OutputCap: in.o.OutputCap,
		Reaper:    in.o.Reaper,
		Sandbox:   t.Sandbox,
	}), nil
}

// runDir makes an empty folder for one help run inside the introspector's
// work folder, making that (again, if something removed it) as needed.
func (in *Introspector) runDir() (string, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for range 2 {
		if in.work == "" {
			work, err := os.MkdirTemp("", "wraptool-help-")
			if err != nil {
				return "", err
			}
			in.work = work
		}
		dir, err := os.MkdirTemp(in.work, "run-")
		if err == nil {
			return dir, nil
		}
		in.work = "" // removed under us: make another
	}
	return "", errors.New("cannot make a folder for the help run")
}

// Close removes the folder the help runs ran in. Runs after it make a new
// one.
func (in *Introspector) Close() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.work == "" {
		return nil
	}
	err := os.RemoveAll(in.work)
	in.work = ""
	return err
}
