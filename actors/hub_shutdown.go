package actors

import (
	"context"
	"net/http"
	"os"
	"sync"
	"time"
)

// readMargin is how long after the last answer was written shutdown waits
// before closing sessions. The server's write is an event (track counts a
// request until it), but the client's read of the answer is not, and the
// MCP SDK's clients drop an answer they have received but not yet read when
// their session ends (a legacy SSE stream's end, or a Streamable HTTP
// session's GET stream failing, wins over the buffered answer). With no
// answer written in the last readMargin, shutdown does not wait at all.
const readMargin = 100 * time.Millisecond

// closeBound bounds each remaining step of shutdown once the grace period
// is over (killed calls returning, sessions closing).
const closeBound = 5 * time.Second

// shutdown stops accepting connections, lets the requests being handled
// finish within the grace period (killing tool runs that outlast it), waits
// for their answers to be written (the hub is idle only then, see track)
// and for the clients to have had readMargin to read the last one, then
// closes every session and connection.
func (h *Hub) shutdown(srv *http.Server) {
	graceCtx, cancel := context.WithTimeout(context.Background(), h.grace)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(graceCtx) }()

	select {
	case <-h.idleCh():
	case <-graceCtx.Done():
		h.log.Warn("grace period over; killing tool calls still running and dropping answers still being written", "grace", h.grace)
		h.abortCalls()
		select {
		case <-h.idleCh():
		case <-time.After(closeBound):
		}
	}
	if left := h.readMarginLeft(time.Now()); left > 0 {
		t := time.NewTimer(left)
		<-t.C
	}

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

// readMarginLeft is how much of readMargin is left at now since the last
// answer was written; zero when none was written that recently.
func (h *Hub) readMarginLeft(now time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lastAnswer.IsZero() {
		return 0
	}
	return max(0, readMargin-now.Sub(h.lastAnswer))
}

func (h *Hub) removeSocket() {
	if h.socketPath != "" {
		os.Remove(h.socketPath)
	}
}
