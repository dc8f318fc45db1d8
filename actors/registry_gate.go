package actors

import (
	"context"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolListChanged is the notification the gate watches.
const toolListChanged = "notifications/tools/list_changed"

// listGate keeps one change of the tool list to one tools/list_changed.
// The SDK sends the notification 10 ms after the last change call it was
// given, so a burst of calls that the scheduler interrupts for longer (a
// loaded machine, a GC pause) sent one for each part of the burst: a
// client was seen to get two for one reload. The registry tells the gate
// how many SDK calls a burst makes, and the gate's sending middleware
// holds back every tool list_changed sent before the last of them has
// returned: the SDK sends another after that last call, with every change
// in place.
//
// One held-back notification may have been that last one: the registry
// can be held up after the SDK took its last change and before the call
// returned. So when one was held back while the last call was in flight,
// the gate makes that call again when the burst ends (adding a tool again
// with the same definition and handler changes nothing a client sees, and
// makes the SDK send once more, or once in all if its send is still
// pending). A last call that removes tools cannot be made again (removing
// a removed tool is no change, and the SDK sends nothing for it); that
// case, a registry held up for 10 ms within the few instructions between
// the SDK's unlock and the call's return, is left.
//
// The gate's state is the registry's burst, which the SDK's sending
// goroutines read through the middleware, so a mutex guards it.
type listGate struct {
	log *slog.Logger

	mu      sync.Mutex
	planned int // the open burst's SDK calls; 0: no burst is open
	started int
	done    int
	late    bool   // one was held back while the last call was in flight
	last    func() // the last call, to make again when late
}

// middleware is sending middleware for the MCP server.
func (g *listGate) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != toolListChanged {
			return next(ctx, method, req)
		}
		g.mu.Lock()
		if g.planned == 0 || g.done == g.planned {
			g.mu.Unlock()
			return next(ctx, method, req)
		}
		if g.started == g.planned {
			g.late = true
		}
		g.mu.Unlock()
		g.log.Debug("list_changed held back: the tool list is part way through a change")
		return nil, nil
	}
}

// open begins a burst of calls SDK calls.
func (g *listGate) open(calls int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.planned, g.started, g.done, g.late, g.last = calls, 0, 0, false, nil
}

// call makes one of the burst's SDK calls. f must be safe to call twice.
func (g *listGate) call(f func()) {
	g.mu.Lock()
	g.started++
	if g.started == g.planned {
		g.last = f
	}
	g.mu.Unlock()
	f()
	g.mu.Lock()
	g.done++
	g.mu.Unlock()
}

// close ends the burst.
func (g *listGate) close() {
	g.mu.Lock()
	late, last := g.late, g.last
	g.planned, g.started, g.done, g.late, g.last = 0, 0, 0, false, nil
	g.mu.Unlock()
	if late && last != nil {
		g.log.Debug("list_changed held back during the last change; making it again")
		last()
	}
}
