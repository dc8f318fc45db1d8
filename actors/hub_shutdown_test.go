package actors

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHubShutdownWaitsNoFixedTime shows that the shutdown waits for events
// (the last answer written), never a fixed settle time: with nothing
// answered it closes at once, and after an answer only what is left of the
// clients' moment to read it. Simulated time makes any wait visible.
func TestHubShutdownWaitsNoFixedTime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// answeredAgo is how long before the shutdown the last answer was
		// written; negative for none.
		answeredAgo time.Duration
		want        time.Duration
	}{
		{"with nothing answered it closes at once", -1, 0},
		{"an answer written long before does not hold it", time.Second, 0},
		{"an answer written just now gets what is left of the read margin", readMargin / 4, readMargin * 3 / 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				server := mcp.NewServer(&mcp.Implementation{Name: "wraptool-test", Version: "v0"}, nil)
				h := NewHub(server, HubOptions{Transport: "sse", Listen: "127.0.0.1:0"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
				if tt.answeredAgo >= 0 {
					h.lastAnswer = time.Now().Add(-tt.answeredAgo)
				}
				begin := time.Now()
				h.shutdown(&http.Server{})
				if took := time.Since(begin); took != tt.want {
					t.Errorf("shutdown took %v of simulated time, want %v", took, tt.want)
				}
			})
		})
	}
}

// TestHubShutdownDeliversAnAnswerBeingWritten holds a call's answer back
// after its handler has returned, as the SDK's write of it may lag, while
// the shutdown runs: the session must stay open until the answer is out,
// and the client gets it.
func TestHubShutdownDeliversAnAnswerBeingWritten(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"streamable", "sse"} {
		t.Run("over "+kind, func(t *testing.T) {
			t.Parallel()
			h := newHubHarness(t, HubOptions{Transport: "sse", Listen: "127.0.0.1:0", Grace: time.Hour}, "secret-token")
			returned := make(chan struct{})
			// Added after NewHub's, so it wraps the hub's tracking: what it
			// holds is past the handler, before the SDK writes the answer.
			h.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					res, err := next(ctx, method, req)
					if method != "tools/call" {
						return res, err
					}
					close(returned)
					closed := make(chan struct{})
					go func() { req.GetSession().(*mcp.ServerSession).Wait(); close(closed) }()
					// A shutdown that closes the session now drops the
					// answer; one that waits for it lets quiet pass.
					select {
					case <-closed:
					case <-time.After(quiet):
					}
					return res, err
				}
			})
			h.stop = start(t, h.hub)
			called := h.callSlow(t, h.connect(t, kind))
			stopped := make(chan error, 1)
			go func() { stopped <- h.stop() }()
			waitUntil(t, "the listener closes", func() bool {
				c, err := net.DialTimeout("tcp", h.hub.Addr().String(), time.Second)
				if err == nil {
					c.Close()
				}
				return err != nil
			})
			close(h.release)
			receive(t, returned, "the slow call's handler returning")
			if err := receive(t, called, "the slow call's result"); err != nil {
				t.Errorf("CallTool: %v, want its result", err)
			}
			if err := receive(t, stopped, "return from Run"); err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
		})
	}
}
