package actors

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// undelivered keeps the SDK from logging a warning for every session a
// list_changed cannot reach. A Streamable HTTP session whose client never
// opened the GET stream has nowhere to receive it: the transport rejects
// the notification, and the SDK would log "rejected by transport:
// undelivered message" at WARN, once per such session on every reload.
// Its sending middleware counts those rejections instead and logs one
// debug line per notify round. Safe for concurrent use.
type undelivered struct {
	log *slog.Logger

	mu     sync.Mutex
	rounds map[context.Context]int // rejections so far, by notify round
}

// middleware is sending middleware for the MCP server: a list_changed the
// transport rejected is counted and reported as sent.
//
// The SDK notifies every session of one change in one loop, under one
// context that it cancels when the loop ends; that context names the
// round, and its end is when the count is logged. A context that never
// ends (a change in the SDK) gets its line at once, so nothing is held.
func (u *undelivered) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err == nil || !strings.HasSuffix(method, "/list_changed") || !rejectedByTransport(err) {
			return res, err
		}
		if ctx.Done() == nil {
			u.log.Debug("list_changed not delivered", "method", method, "count", 1, "why", "no GET stream")
			return res, nil
		}
		u.mu.Lock()
		if u.rounds[ctx] == 0 {
			context.AfterFunc(ctx, func() {
				u.mu.Lock()
				n := u.rounds[ctx]
				delete(u.rounds, ctx)
				u.mu.Unlock()
				u.log.Debug("list_changed not delivered", "method", method, "count", n, "why", "no GET stream")
			})
		}
		u.rounds[ctx]++
		u.mu.Unlock()
		return res, nil
	}
}

// rejectedByTransport reports whether err is the JSON-RPC layer's
// "rejected by transport" (code -32005): the transport refused one message
// (here: no stream to carry it), the connection is fine.
func rejectedByTransport(err error) bool {
	var wire *jsonrpc.Error
	return errors.As(err, &wire) && wire.Code == codeRejected
}

// codeRejected is the go-sdk's jsonrpc2.ErrRejected code, which its public
// jsonrpc package does not export.
const codeRejected = -32005
