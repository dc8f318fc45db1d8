package actors

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/toolset/hook"
	"github.com/wraptool/wraptool/toolset/runner"
)

// HookTimeout bounds one run of the operator's hook: a notification that
// takes longer is stuck, and its process group is killed.
const HookTimeout = 10 * time.Second

// MaxHooks is how many hooks run at once. A burst of requests must not
// become a burst of processes; the rest queue in the RequestFiled channel.
const MaxHooks = 4

// Hooks runs the operator's hook (mcp.on_request) for every new capability
// request, so a request reaches the operator without anyone watching the
// log. It reads the hook from the snapshot in service as each request is
// taken, so a reload that adds, changes or removes the hook applies to the
// next one.
//
// A hook runs detached from the request tool, which never waits for it (the
// request-log writer drops what the channel has no room for): at most
// MaxHooks at once, each bounded by HookTimeout, without a shell, with the
// request's JSON line on stdin. Its failure is logged, never shown to the
// assistant. When Run's context ends it takes no more requests, kills the
// hooks still running and returns once each has been reaped.
type Hooks struct {
	in        <-chan messages.RequestFiled
	snapshots Snapshots
	getenv    func(string) string
	reaper    *runner.Reaper
	timeout   time.Duration
	log       *slog.Logger
}

// HooksOptions configure Hooks.
type HooksOptions struct {
	// Filed carries the new requests from the request-log writer.
	Filed <-chan messages.RequestFiled
	// Snapshots gives mcp.on_request and the config's folder, read for
	// every request.
	Snapshots Snapshots
	// Getenv reads the server's environment (PATH, HOME and the desktop
	// variables a hook is given); nil means os.Getenv.
	Getenv func(string) string
	// Reaper tracks each hook while it runs, so a sweep never takes it for
	// a stray, and sweeps what a hook left behind; nil means none.
	Reaper *runner.Reaper
	// Timeout bounds each run; zero means HookTimeout. Tests shorten it.
	Timeout time.Duration
	// Log receives each run's outcome; nil discards it.
	Log *slog.Logger
}

// NewHooks runs the hook for the requests o.Filed carries.
func NewHooks(o HooksOptions) *Hooks {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Timeout <= 0 {
		o.Timeout = HookTimeout
	}
	return &Hooks{in: o.Filed, snapshots: o.Snapshots, getenv: o.Getenv, reaper: o.Reaper, timeout: o.Timeout,
		log: logger(o.Log, "hooks")}
}

// Run starts a hook for each request until ctx is done, then kills the
// hooks still running and waits for them.
func (h *Hooks) Run(ctx context.Context) error {
	var running sync.WaitGroup
	defer running.Wait()
	// slots holds one unit per running hook: with none free the loop
	// waits, leaving the requests queued in h.in rather than in goroutines.
	// Acquire fails on an ended context even when a slot is free.
	slots := semaphore.NewWeighted(MaxHooks)
	for {
		var m messages.RequestFiled
		select {
		case <-ctx.Done():
			return nil
		case m = <-h.in:
		}
		if slots.Acquire(ctx, 1) != nil {
			return nil
		}
		// Read after the wait for a slot: a queued request gets the hook
		// in force when it starts, not the one of when it was filed.
		c, ok := h.command(m)
		if !ok {
			slots.Release(1)
			continue
		}
		running.Go(func() {
			defer slots.Release(1)
			h.run(ctx, c, m.Record.ID)
		})
	}
}

// command builds m's hook from the snapshot in service; false when the
// config names none.
func (h *Hooks) command(m messages.RequestFiled) (hook.Run, bool) {
	snap := h.snapshots.Current()
	c, ok := hook.New(snap.Config, m.Record, m.Line, h.getenv)
	if !ok || c.Err != nil {
		return c, ok
	}
	c.Timeout, c.Reaper, c.Sandbox = h.timeout, h.reaper, snap.Sandbox
	return c, true
}

// run runs one hook and logs how it ended.
func (h *Hooks) run(ctx context.Context, c hook.Run, id string) {
	cmdText := requests.Command(c.Configured)
	if c.Err != nil {
		h.log.Warn("on_request hook failed", "id", id, "command", cmdText, "error", c.Err.Error())
		return
	}
	defer h.reaper.Sweep() // whatever the hook left outside its group
	res := runner.Run(ctx, c.Command)
	failed := func(attrs ...any) {
		attrs = append([]any{"id", id, "command", cmdText}, attrs...)
		if res.Stderr != "" {
			attrs = append(attrs, "stderr", hook.StderrExcerpt(res.Stderr))
		}
		h.log.Warn("on_request hook failed", attrs...)
	}
	switch {
	case res.TimedOut:
		failed("error", fmt.Sprintf("killed after %s", h.timeout))
	case res.Err != nil && ctx.Err() != nil:
		h.log.Info("on_request hook stopped: the server is shutting down", "id", id, "command", cmdText)
	case res.Err != nil:
		failed("error", res.Err.Error())
	case res.ExitCode != 0:
		failed("exit_code", res.ExitCode)
	default:
		h.log.Debug("on_request hook ran", "id", id, "command", cmdText, "duration", res.Duration.Round(time.Millisecond))
	}
}
