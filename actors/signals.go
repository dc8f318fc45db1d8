package actors

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/oklog/run"

	"github.com/wraptool/wraptool/messages"
)

// Signals turns SIGHUP into a forced reload and SIGINT or SIGTERM into the
// end of the run group. It reads signals whatever else is busy: a reload
// request is a doorbell ring, which never blocks.
type Signals struct {
	sigs      chan os.Signal
	stop      func(chan<- os.Signal)
	reloadNow messages.Doorbell
	log       *slog.Logger
}

// SignalsOptions configure Signals.
type SignalsOptions struct {
	// ReloadNow is rung on SIGHUP (see messages).
	ReloadNow messages.Doorbell
	// Notify and Stop install and remove the handling; nil means
	// signal.Notify and signal.Stop. Tests that run serve in-process hand
	// in their own, so their signals reach only their server.
	Notify func(c chan<- os.Signal, sig ...os.Signal)
	Stop   func(c chan<- os.Signal)
	// Log receives the stop reason; nil discards it.
	Log *slog.Logger
}

// NewSignals installs handling for SIGHUP, SIGINT and SIGTERM at once, so
// it is in place before the server first answers.
func NewSignals(o SignalsOptions) *Signals {
	if o.Notify == nil {
		o.Notify = signal.Notify
	}
	if o.Stop == nil {
		o.Stop = signal.Stop
	}
	s := &Signals{sigs: make(chan os.Signal, 4), stop: o.Stop, reloadNow: o.ReloadNow, log: logger(o.Log, "signals")}
	o.Notify(s.sigs, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM)
	return s
}

// Stop uninstalls the handling; Run does it on return, and serve defers it
// for start-up failures before Run. Calling it twice is harmless.
func (s *Signals) Stop() { s.stop(s.sigs) }

// Run rings ReloadNow on SIGHUP and returns a run.SignalError on SIGINT or
// SIGTERM, which stops the group.
func (s *Signals) Run(ctx context.Context) error {
	defer s.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case sig := <-s.sigs:
			if sig == syscall.SIGHUP {
				ring(s.reloadNow)
				continue
			}
			s.log.Info("stopping", "signal", sig.String())
			return run.SignalError{Signal: sig}
		}
	}
}

// logger names an actor's component on log, or discards when log is nil.
func logger(log *slog.Logger, component string) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log.With("component", component)
}
