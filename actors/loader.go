package actors

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/config"
)

// LoadFunc loads the config at path as config.LoadFile does; tests of the
// loader (and of serve) hand in one that is slow or fails on cue.
type LoadFunc func(ctx context.Context, path string, o *config.LoadOptions) (*config.Loaded, error)

// LoadCounters count what the loader does, for the metrics: counters
// that are safe for concurrent use and hold no actor's state (Prometheus
// counters), so the loader bumps them directly.
type LoadCounters interface {
	// Loaded counts a load handed to the policy holder at t; reload says
	// it was not the first.
	Loaded(t time.Time, reload bool)
	// Rejected counts a reload whose config did not load.
	Rejected()
}

// ReleaseLoadGarbage returns to the system the memory a load used and no
// longer needs: a load allocates several times what its policy keeps (a
// 2.5 MB config of 5,000 rules: ~140 MB for ~45 MB kept, most of it
// yaml.v3's node tree), and the Go runtime would otherwise hold those pages
// for minutes, so an idle server would show twice its size. Loads are rare
// (at most about one a second, by the debounce's maximum wait), and so is
// the forced collection this costs. The loader calls it after each load it
// hands on; serve after the first.
func ReleaseLoadGarbage() { debug.FreeOSMemory() }

// Loader turns a reload trigger into a fully built configuration, or a
// logged rejection that leaves the running one in place. It does no domain
// work of its own: building is config.LoadFile's (the one load path).
type Loader struct {
	fileChanged, reloadNow messages.Doorbell
	out                    chan<- messages.ConfigLoaded
	path                   string
	opts                   config.LoadOptions
	load                   LoadFunc
	needToken              string
	rejected               chan<- messages.ConfigRejected
	counters               LoadCounters
	log                    *slog.Logger

	running string // hash of what the holder runs
	// rejected is true after a rejected reload, until a load succeeds:
	// the fix is then logged as "config accepted", so an ERROR is not
	// the log's last word about a file that is fine again.
	rejectedLast bool
}

// LoaderOptions configure a Loader.
type LoaderOptions struct {
	// Path is the config file, absolute.
	Path string
	// Paths resolve "~" and the platform folders; nil means the process's.
	Paths *config.Options
	// Introspect is the load's introspect step; nil skips it.
	Introspect config.Introspect
	// Load builds a config; nil means config.LoadFile.
	Load LoadFunc
	// Running is the hash of the config already in service, so an event
	// on unchanged files is skipped from the first.
	Running string
	// NeedToken, when not empty, names the running listener, which other
	// hosts can reach: a reload may then not remove the MCP token, because
	// the listener itself only changes with a restart.
	NeedToken string
	// FileChanged and ReloadNow are the triggers: a debounced file change,
	// and SIGHUP, which wins when both are rung.
	FileChanged, ReloadNow messages.Doorbell
	// Loaded receives each built config (the policy holder's input).
	Loaded chan<- messages.ConfigLoaded
	// Rejected, when set, hears of every rejected reload, for the audit
	// log (the policy holder writes its line).
	Rejected chan<- messages.ConfigRejected
	// Counters, when set, count the loads and rejections (the metrics).
	Counters LoadCounters
	// Log receives "config rejected", "config accepted" (the first good
	// load after a rejection), warnings and "reload skipped" (debug); nil
	// discards them.
	Log *slog.Logger
}

// NewLoader loads o.Path on each trigger.
func NewLoader(o LoaderOptions) *Loader {
	if o.Load == nil {
		o.Load = config.LoadFile
	}
	return &Loader{fileChanged: o.FileChanged, reloadNow: o.ReloadNow, out: o.Loaded, path: o.Path,
		opts: config.LoadOptions{Paths: o.Paths, Introspect: o.Introspect, Tokens: config.TokensReload}, load: o.Load, needToken: o.NeedToken,
		rejected: o.Rejected, counters: o.Counters, log: logger(o.Log, "loader"), running: o.Running}
}

// Run handles reload triggers until ctx is done. A load takes ctx, so a
// stop ends a load in progress instead of waiting for it.
func (l *Loader) Run(ctx context.Context) error {
	for {
		var forced bool
		select {
		case <-ctx.Done():
			return nil
		case <-l.reloadNow:
			forced = true
		case <-l.fileChanged:
			// A SIGHUP rung meanwhile wins: it reloads in full anyway.
			select {
			case <-l.reloadNow:
				forced = true
			default:
			}
		}
		if forced {
			// One reload answers a file change pending with it too.
			select {
			case <-l.fileChanged:
			default:
			}
		}
		m, ok := l.reload(ctx, forced)
		if !ok {
			continue
		}
		select {
		case l.out <- m:
			l.running = m.Loaded.Hash
			if l.counters != nil {
				l.counters.Loaded(time.Now(), true)
			}
			ReleaseLoadGarbage()
		case <-ctx.Done():
			return nil
		}
	}
}

// reload builds the new configuration. A watch-triggered reload of files
// that hash the same as the running ones (our own atomic writes, an editor
// touching a file) is skipped, with only a debug line that tests can wait
// for; SIGHUP always reloads and logs.
func (l *Loader) reload(ctx context.Context, forced bool) (messages.ConfigLoaded, bool) {
	cause := "file"
	if forced {
		cause = "SIGHUP"
	}
	opts := l.opts
	opts.Forced = forced // SIGHUP retries helps that failed before
	loaded, err := l.load(ctx, l.path, &opts)
	if ctx.Err() != nil {
		return messages.ConfigLoaded{}, false // stopping: not a rejection
	}
	if err == nil && l.needToken != "" && loaded.MCPToken == "" {
		err = fmt.Errorf("%s: mcp.auth_token_file: the running listener %s is reachable from other hosts, "+
			"so a reload cannot remove its token (listener changes need a restart)", l.path, l.needToken)
	}
	if err != nil {
		l.rejectedLast = true
		l.log.Error("config rejected", "cause", cause, "error", err.Error())
		if l.counters != nil {
			l.counters.Rejected()
		}
		if l.rejected != nil {
			select {
			case l.rejected <- messages.ConfigRejected{Cause: cause, Err: err}:
			case <-ctx.Done():
			}
		}
		return messages.ConfigLoaded{}, false
	}
	if l.rejectedLast {
		l.rejectedLast = false
		note := "the files load again and replace the config in service"
		if !forced && loaded.Hash == l.running {
			note = "the files are back to the config in service, which stays"
		}
		l.log.Info("config accepted", "cause", cause, "after", "a rejected reload", "note", note)
	}
	if !forced && loaded.Hash == l.running {
		l.log.Debug("reload skipped", "cause", cause, "reason", "the files are unchanged")
		return messages.ConfigLoaded{}, false
	}
	for _, w := range loaded.Warnings {
		l.log.Warn("config warning", "where", w.String())
	}
	for _, f := range loaded.Created {
		l.log.Info("created token file", "path", f)
	}
	if loaded.Config.MCP.Confinement == config.ConfinementOff {
		l.log.Warn(config.ConfinementOffWarning, "config", l.path)
	}
	return messages.ConfigLoaded{Loaded: loaded, Cause: cause}, true
}
