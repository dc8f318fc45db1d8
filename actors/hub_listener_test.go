package actors

import (
	"errors"
	"net"
	"testing"
)

// Close ends an Accept waiting for a slot, and an Accept after Close fails
// even though a slot is free: a closed listener takes no more connections.
func TestConnLimitCloseEndsAccept(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		limit int
		// held is how many connections are accepted, and kept open,
		// before Close.
		held int
	}{
		{"an Accept waiting for the only slot returns once the listener closes", 1, 1},
		{"an Accept with a free slot after Close returns at once", 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			inner, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ln := limitConns(inner, tt.limit)
			for range tt.held {
				c, err := net.DialTimeout("tcp", inner.Addr().String(), wait)
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				defer c.Close()
				a, err := ln.Accept()
				if err != nil {
					t.Fatalf("Accept: %v", err)
				}
				defer a.Close()
			}
			errc := make(chan error, 1)
			if tt.held > 0 {
				// The Accept waits for a slot while the listener is open.
				go func() { _, err := ln.Accept(); errc <- err }()
				ln.Close()
			} else {
				ln.Close()
				go func() { _, err := ln.Accept(); errc <- err }()
			}
			if err := receive(t, errc, "Accept's return after Close"); !errors.Is(err, net.ErrClosed) {
				t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
			}
		})
	}
}
