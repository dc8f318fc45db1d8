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
// end of the run group. Handling is installed by the constructor, so it is in
// place before the server first answers.
type Signals struct {
	sigs <-chan os.Signal
	stop func()
	out  chan<- messages.ReloadRequest
	log  *slog.Logger
}

// NewSignals installs handling for SIGHUP, SIGINT and SIGTERM.
func NewSignals(out chan<- messages.ReloadRequest, log *slog.Logger) *Signals {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM)
	return &Signals{sigs: ch, stop: func() { signal.Stop(ch) }, out: out, log: log}
}

// Stop uninstalls the handling; Run does it on return, and serve defers it
// for start-up failures before Run. Calling it twice is harmless.
func (s *Signals) Stop() { s.stop() }

// Run forwards SIGHUP as a ReloadRequest and returns a run.SignalError on
// SIGINT or SIGTERM, which stops the group.
func (s *Signals) Run(ctx context.Context) error {
	defer s.stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case sig := <-s.sigs:
			if sig != syscall.SIGHUP {
				s.log.Info("stopping", "signal", sig.String())
				return run.SignalError{Signal: sig}
			}
			select {
			case s.out <- messages.ReloadRequest{Forced: true, Cause: "SIGHUP"}:
			case <-ctx.Done():
				return nil
			}
		}
	}
}
