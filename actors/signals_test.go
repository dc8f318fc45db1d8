package actors

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oklog/run"

	"github.com/wraptool/wraptool/messages"
)

// fakeSignals stands in for signal.Notify and signal.Stop: it keeps the
// channel NewSignals installs, so a test delivers signals to its own
// Signals without signalling the test process.
type fakeSignals struct {
	mu      sync.Mutex
	c       chan<- os.Signal
	asked   []os.Signal
	stopped bool
}

func (f *fakeSignals) notify(c chan<- os.Signal, sig ...os.Signal) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.c, f.asked = c, append(f.asked, sig...)
}

func (f *fakeSignals) stop(c chan<- os.Signal) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c == f.c {
		f.stopped = true
	}
}

func (f *fakeSignals) isStopped() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stopped
}

// deliver hands sig to the Signals as the runtime would; the test fails if
// the Signals does not take it within wait.
func (f *fakeSignals) deliver(t *testing.T, sig os.Signal) {
	t.Helper()
	f.mu.Lock()
	c := f.c
	f.mu.Unlock()
	select {
	case c <- sig:
	case <-time.After(wait):
		t.Fatalf("%v was not taken within %v: the signals actor stopped reading signals", sig, wait)
	}
}

// newTestSignals builds a Signals on a fakeSignals; reloadNow is its
// ReloadNow doorbell, which nobody reads unless the test does.
func newTestSignals(t *testing.T) (s *Signals, fake *fakeSignals, reloadNow messages.Doorbell, sink *logSink) {
	t.Helper()
	fake = &fakeSignals{}
	reloadNow = make(messages.Doorbell, 1)
	log, sink := newTestLogger()
	s = NewSignals(SignalsOptions{ReloadNow: reloadNow, Notify: fake.notify, Stop: fake.stop, Log: log})
	return s, fake, reloadNow, sink
}

func TestNewSignalsAsksForSIGHUPSIGINTAndSIGTERM(t *testing.T) {
	t.Parallel()
	_, fake, _, _ := newTestSignals(t)
	want := []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM}
	if !slices.Equal(fake.asked, want) {
		t.Errorf("Notify asked for %v, want %v", fake.asked, want)
	}
	if fake.c == nil {
		t.Error("Notify was not given a channel")
	}
}

func TestSignalsRingReloadNowOnSIGHUP(t *testing.T) {
	t.Parallel()
	s, fake, reloadNow, _ := newTestSignals(t)
	stop := start(t, s)
	for i := range 2 {
		fake.deliver(t, syscall.SIGHUP)
		receive(t, reloadNow, "ReloadNow ring after SIGHUP")
		if i == 0 && fake.isStopped() {
			t.Fatal("signal handling was released while Run runs")
		}
	}
	if err := stop(); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
}

// TestSignalsNeverBlockOnSIGHUP is the old defect: the signals actor
// blocked sending SIGHUP's reload request while the loader was busy, and so
// never read the SIGTERM that followed. Nobody reads ReloadNow here.
func TestSignalsNeverBlockOnSIGHUP(t *testing.T) {
	t.Parallel()
	s, fake, reloadNow, _ := newTestSignals(t)
	done := make(chan error, 1)
	go func() { done <- s.Run(t.Context()) }()
	for range 6 { // more than the signal channel's buffer
		fake.deliver(t, syscall.SIGHUP)
	}
	fake.deliver(t, syscall.SIGTERM)
	select {
	case err := <-done:
		var se run.SignalError
		if !errors.As(err, &se) || se.Signal != syscall.SIGTERM {
			t.Errorf("Run returned %#v, want a run.SignalError for SIGTERM", err)
		}
	case <-time.After(prompt):
		t.Fatalf("Run did not return within %v of SIGTERM while SIGHUP's rings were unanswered", prompt)
	}
	if got := drain(reloadNow); got != 1 {
		t.Errorf("ReloadNow holds %d rings after six SIGHUPs, want them collapsed into 1", got)
	}
}

func TestSignalsStopTheGroupOnSIGINTAndSIGTERM(t *testing.T) {
	t.Parallel()
	for _, sig := range []os.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String()+" makes Run return a signal error", func(t *testing.T) {
			t.Parallel()
			s, fake, reloadNow, sink := newTestSignals(t)
			done := make(chan error, 1)
			go func() { done <- s.Run(t.Context()) }()
			fake.deliver(t, sig)
			err := receive(t, done, "return from Run after "+sig.String())
			if !errors.Is(err, run.ErrSignal) {
				t.Errorf("errors.Is(%v, run.ErrSignal) = false, want true", err)
			}
			var se run.SignalError
			if !errors.As(err, &se) || se.Signal != sig {
				t.Errorf("Run returned %#v, want a run.SignalError for %v", err, sig)
			}
			if rang(reloadNow) {
				t.Errorf("%v rang ReloadNow, want no reload", sig)
			}
			if !fake.isStopped() {
				t.Error("signal handling was not released when Run returned")
			}
			if got := sink.lines("stopping", "signal="+sig.String(), "component=signals"); len(got) != 1 {
				t.Errorf("log lines for stopping on %v = %q, want 1; log:\n%s", sig, got, sink.String())
			}
		})
	}
}

func TestSignalsStopWhenCtxIsCancelled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		before func(t *testing.T, fake *fakeSignals)
	}{
		{"cancelling ctx while idle makes Run return nil", func(*testing.T, *fakeSignals) {}},
		{"cancelling ctx with a reload ring nobody answered makes Run return nil", func(t *testing.T, fake *fakeSignals) {
			fake.deliver(t, syscall.SIGHUP)
			fake.deliver(t, syscall.SIGHUP)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, fake, _, _ := newTestSignals(t)
			stop := start(t, s)
			tt.before(t, fake)
			if err := stop(); err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
			if !fake.isStopped() {
				t.Error("signal handling was not released when Run returned")
			}
		})
	}
}

// TestNewSignalsInstallsHandling sends the test process a real SIGHUP while
// the constructor's handling (signal.Notify, the default) is installed and
// before Run starts, as serve relies on: the signal is neither lost nor
// fatal.
func TestNewSignalsInstallsHandling(t *testing.T) {
	reloadNow := make(messages.Doorbell, 1)
	log, _ := newTestLogger()
	s := NewSignals(SignalsOptions{ReloadNow: reloadNow, Log: log})
	defer s.Stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	receive(t, reloadNow, "ReloadNow ring after a real SIGHUP")
	cancel()
	if err := receive(t, done, "return from Run"); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
}
