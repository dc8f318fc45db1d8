package actors

import (
	"context"
	"net/http"
	"os"
	"sync"
	"time"
)

// responseSettle is how long shutdown waits, once no handler runs, before
// closing sessions. The SDK writes a response just after its handler
// returns and offers no event for it; a session closed before that write
// drops the response, so the writes get this moment to happen.
const responseSettle = 100 * time.Millisecond

// closeBound bounds each remaining step of shutdown once the grace period
// is over (killed calls returning, sessions closing).
const closeBound = 5 * time.Second

// shutdown stops accepting connections, lets the requests being handled
// finish within the grace period (killing tool runs that outlast it), then
// closes every session and connection.
func (h *Hub) shutdown(srv *http.Server) {
	graceCtx, cancel := context.WithTimeout(context.Background(), h.grace)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(graceCtx) }()

	select {
	case <-h.idleCh():
	case <-graceCtx.Done():
		h.log.Warn("grace period over; killing tool calls still running", "grace", h.grace)
		h.abortCalls()
		select {
		case <-h.idleCh():
		case <-time.After(closeBound):
		}
	}
	time.Sleep(responseSettle) // see responseSettle: the SDK gives no event

	// Closing the sessions ends their streams, so the HTTP server goes idle.
	var wg sync.WaitGroup
	for ss := range h.server.Sessions() {
		wg.Go(func() { ss.Close() })
	}
	closed := make(chan struct{})
	go func() { wg.Wait(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(closeBound):
		h.log.Warn("sessions did not close in time; dropping connections")
	}
	if err := <-shut; err != nil {
		srv.Close()
	}
}

func (h *Hub) removeSocket() {
	if h.socketPath != "" {
		os.Remove(h.socketPath)
	}
}
