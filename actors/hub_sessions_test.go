package actors

import (
	"context"
	"testing"
	"time"
)

// TestSessionsIsAnActor shows the session table's options (zero means the
// defaults) and its life as an actor: Run sweeps until its context ends,
// then returns nil.
func TestSessionsIsAnActor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		o           SessionsOptions
		wantTimeout time.Duration
		wantMax     int
	}{
		{"zero options mean the defaults", SessionsOptions{}, StreamlessTimeout, MaxSessions},
		{"set options are kept", SessionsOptions{StreamlessTimeout: time.Minute, MaxSessions: 3}, time.Minute, 3},
		{"negative options mean the defaults", SessionsOptions{StreamlessTimeout: -1, MaxSessions: -1}, StreamlessTimeout, MaxSessions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sw := NewSessions(tt.o)
			if sw.timeout != tt.wantTimeout || sw.max != tt.wantMax {
				t.Errorf("timeout, max = %v, %d; want %v, %d", sw.timeout, sw.max, tt.wantTimeout, tt.wantMax)
			}
			if got := sw.live(); len(got) != 0 {
				t.Errorf("sessions of no server = %v, want none", got)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- sw.Run(ctx) }()
			cancel()
			if err := receive(t, done, "Run's return"); err != nil {
				t.Errorf("Run = %v, want nil once its context ends", err)
			}
		})
	}
}
