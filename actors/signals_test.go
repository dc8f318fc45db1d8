package actors

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oklog/run"

	"github.com/wraptool/wraptool/messages"
)

// newTestSignals builds a Signals fed by a fake signal channel. stopped
// reports whether Run released the signal handling.
func newTestSignals(t *testing.T) (s *Signals, sigs chan os.Signal, out chan messages.ReloadRequest, stopped *atomic.Bool, sink *logSink) {
	t.Helper()
	sigs = make(chan os.Signal, 4)
	out = make(chan messages.ReloadRequest)
	stopped = new(atomic.Bool)
	log, sink := newTestLogger()
	s = &Signals{sigs: sigs, stop: func() { stopped.Store(true) }, out: out, log: log}
	return s, sigs, out, stopped, sink
}

func TestSignalsForwardsSIGHUPAsAForcedReload(t *testing.T) {
	t.Parallel()
	s, sigs, out, _, _ := newTestSignals(t)
	stop := start(t, s)
	for i := range 2 {
		sigs <- syscall.SIGHUP
		got := receive(t, out, "ReloadRequest after SIGHUP")
		if want := (messages.ReloadRequest{Forced: true, Cause: "SIGHUP"}); got != want {
			t.Errorf("SIGHUP %d: got %+v, want %+v", i+1, got, want)
		}
	}
	if err := stop(); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
}

func TestSignalsStopTheGroupOnSIGINTAndSIGTERM(t *testing.T) {
	t.Parallel()
	for _, sig := range []os.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String()+" makes Run return a signal error", func(t *testing.T) {
			t.Parallel()
			s, sigs, out, stopped, sink := newTestSignals(t)
			done := make(chan error, 1)
			go func() { done <- s.Run(t.Context()) }()
			sigs <- sig
			var err error
			select {
			case err = <-done:
			case r := <-out:
				t.Fatalf("got %+v, want Run to return", r)
			case <-time.After(wait):
				t.Fatalf("Run did not return within %v of %v", wait, sig)
			}
			if !errors.Is(err, run.ErrSignal) {
				t.Errorf("errors.Is(%v, run.ErrSignal) = false, want true", err)
			}
			var se run.SignalError
			if !errors.As(err, &se) || se.Signal != sig {
				t.Errorf("Run returned %#v, want a run.SignalError for %v", err, sig)
			}
			if !stopped.Load() {
				t.Error("signal handling was not released when Run returned")
			}
			if got := sink.lines("stopping", "signal="+sig.String()); len(got) != 1 {
				t.Errorf("log lines for stopping on %v = %q, want 1; log:\n%s", sig, got, sink.String())
			}
		})
	}
}

func TestSignalsStopWhenCtxIsCancelled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		before func(sigs chan<- os.Signal)
	}{
		{"cancelling ctx while idle makes Run return nil", func(chan<- os.Signal) {}},
		{"cancelling ctx while a reload waits for the loader makes Run return nil", func(sigs chan<- os.Signal) {
			sigs <- syscall.SIGHUP // nobody reads out
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, sigs, _, stopped, _ := newTestSignals(t)
			stop := start(t, s)
			tt.before(sigs)
			if err := stop(); err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
			if !stopped.Load() {
				t.Error("signal handling was not released when Run returned")
			}
		})
	}
}

// TestNewSignalsInstallsHandling sends the test process a real SIGHUP while
// the constructor's handling is installed (before Run starts, as serve
// relies on), so the signal is neither lost nor fatal.
func TestNewSignalsInstallsHandling(t *testing.T) {
	out := make(chan messages.ReloadRequest)
	log, _ := newTestLogger()
	s := NewSignals(out, log)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	got := receive(t, out, "ReloadRequest after a real SIGHUP")
	if want := (messages.ReloadRequest{Forced: true, Cause: "SIGHUP"}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	cancel()
	if err := receive(t, done, "return from Run"); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
}
