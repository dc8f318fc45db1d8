package actors

import (
	"context"
	"net/http"
	"net/http/httptest"
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

// TestSessionsHoldsCreationsWhileARestoreTakesItsID shows the creation
// lock: while a restore's request has not yet been given its stored id, a
// request creating a new session waits, so it can neither take that id nor
// clear it; the restore gets the stored id and the newcomer a random one.
func TestSessionsHoldsCreationsWhileARestoreTakesItsID(t *testing.T) {
	t.Parallel()
	sw := NewSessions(SessionsOptions{})
	holding, proceed := make(chan struct{}), make(chan struct{})
	gotRestore, gotNew := make(chan string, 1), make(chan string, 1)
	handler := sw.observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, restoring := r.Context().Value(restoreIDKey{}).(string); restoring {
			close(holding)
			<-proceed
			gotRestore <- sw.NextID()
			return
		}
		gotNew <- sw.NextID()
	}))
	post := func(ctx context.Context) <-chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil).WithContext(ctx)
			handler.ServeHTTP(httptest.NewRecorder(), r)
		}()
		return done
	}
	restoreDone := post(context.WithValue(context.Background(), restoreIDKey{}, "STORED"))
	receive(t, holding, "the restore's request reaching the SDK")
	newDone := post(context.Background())
	select {
	case <-newDone:
		t.Error("a new session was created while a restore waited for its id")
	case <-time.After(50 * time.Millisecond): // waiting for the absence of an event
	}
	close(proceed)
	receive(t, restoreDone, "the restore's request")
	if id := receive(t, gotRestore, "the restore's id"); id != "STORED" {
		t.Errorf("the restore got id %q, want STORED", id)
	}
	receive(t, newDone, "the new session's request")
	if id := receive(t, gotNew, "the new session's id"); id == "STORED" || id == "" {
		t.Errorf("the new session got id %q, want a random one", id)
	}
}
