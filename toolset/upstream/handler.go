// Package upstream is how wraptool exposes an upstream MCP server's tools:
// which of the tools it offers are exposed and under what names (Expose,
// the mcp_servers entry's filter), and the handler that forwards a call of
// one of them to the upstream's client and maps the answer (Handler,
// Audited, Outcome). It starts, supervises and restarts nothing: the
// upstream clients that carry calls are the actors' (actors.Upstreams),
// reached through the channels of messages.UpstreamTools.
//
// Its functions keep no state between calls and are safe for concurrent
// use; a handler's call owns the channels it makes.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/toolset"
)

// ProgressBuffer is the room a call has for progress notes its handler
// has not passed on yet; a note beyond it is dropped.
const ProgressBuffer = 16

// Down answers a call that reaches an upstream client between two runs of
// its upstream (starting, restarting, or refusing to start); Why says which.
type Down struct{ Why string }

// Error says why, as the call's tool error will.
func (e Down) Error() string { return e.Why }

// Handler forwards calls of one exposed upstream tool to its upstream client.
// Each call is bounded by the server's timeout, read from the snapshot in
// service when the call starts, and ends at the latest when abort does (the
// hub's shutdown). Progress notes from the upstream reach the client under
// the client's own progress token, and only when the client asked for
// progress.
func Handler(server, tool string, offer messages.UpstreamTools, timeout func() time.Duration, abort context.Context) mcp.ToolHandler {
	return func(caller context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		limit := timeout()
		ctx, cancel := context.WithTimeout(caller, limit)
		defer cancel()
		stop := context.AfterFunc(abort, cancel)
		defer stop()
		token := req.Params.GetProgressToken()
		var progress chan messages.UpstreamProgress
		if token != nil {
			progress = make(chan messages.UpstreamProgress, ProgressBuffer)
		}
		reply := make(chan messages.UpstreamResult, 1)
		call := messages.UpstreamCall{Tool: tool, Arguments: req.Params.Arguments, Done: ctx.Done(), Progress: progress, Reply: reply}
		ended := func() (*mcp.CallToolResult, error) {
			switch {
			case caller.Err() != nil:
				return nil, caller.Err()
			case abort.Err() != nil:
				return toolError("the call to upstream server %q was stopped: wraptool is shutting down", server), nil
			}
			return toolError("upstream server %q did not answer %s within its timeout (%s); the call was cancelled", server, tool, limit), nil
		}
		select {
		case offer.Calls <- call:
		case <-offer.Gone:
			return toolError("upstream server %q was stopped (its config entry was removed or changed); list the tools again", server), nil
		case <-ctx.Done():
			return ended()
		}
		for {
			select {
			case r := <-reply:
				// Notes already here precede the result: pass them on.
				for len(progress) > 0 {
					p := <-progress
					req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
						Progress: p.Progress, Total: p.Total, Message: p.Message})
				}
				return Outcome(server, r)
			case p := <-progress:
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
					Progress: p.Progress, Total: p.Total, Message: p.Message})
			case <-ctx.Done():
				select {
				case r := <-reply: // answered as the deadline fell: the answer wins
					return Outcome(server, r)
				default:
				}
				return ended()
			}
		}
	}
}

// Audited wraps an upstream tool's handler so each call gets its audit
// line: allowed (the registry exposes only what the config allows), with no
// argv (an upstream takes JSON arguments, which are not recorded: wraptool
// knows nothing of which of them are secret), no exit code, and "error" set
// when the call failed. The line is queued with the call's values but not
// its cancellation, bounded by stop.
func Audited(server string, state func() *toolset.State, stop context.Context, h mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		st := state()
		if st.Audit == nil {
			return h(ctx, req)
		}
		line := toolset.CallAudit{Time: time.Now().UTC(), Tool: req.Params.Name, Decision: "allowed",
			Policy: st.AuditPolicy, Upstream: server}
		line.Session, line.Client = toolset.SessionOf(ctx, req)
		began := time.Now()
		res, err := h(ctx, req)
		line.DurationMS = time.Since(began).Milliseconds()
		switch {
		case err != nil:
			line.Error = err.Error()
		case res != nil && res.IsError:
			line.Error = "the upstream tool reported an error"
		}
		actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		defer context.AfterFunc(stop, cancel)()
		st.Audit(actx, line)
		return res, err
	}
}

// Outcome turns an upstream client's answer into the client's: the upstream's
// result as it sent it, its JSON-RPC error as that same error, and a tool
// error saying what happened when the upstream failed or was down.
func Outcome(server string, r messages.UpstreamResult) (*mcp.CallToolResult, error) {
	var wire *jsonrpc.Error
	var down Down
	switch {
	case r.Err == nil && r.Result == nil:
		return &mcp.CallToolResult{Content: []mcp.Content{}}, nil
	case r.Err == nil && (r.Result.NeedsInput() || r.Result.InputRequests != nil):
		return toolError("upstream server %q asked the client for input (elicitation, sampling or roots), "+
			"which wraptool does not pass on", server), nil
	case r.Err == nil:
		r.Result.RequestState = "" // only ever echoed back with input responses
		return r.Result, nil
	case errors.As(r.Err, &wire):
		return nil, wire
	case errors.As(r.Err, &down):
		return toolError("upstream server %q is not available: %s; try again in a moment", server, down.Why), nil
	case errors.Is(r.Err, mcp.ErrConnectionClosed), errors.Is(r.Err, io.EOF), errors.Is(r.Err, io.ErrUnexpectedEOF):
		return toolError("upstream server %q stopped while handling the call; it is restarted, so try again in a moment", server), nil
	}
	return toolError("upstream server %q failed the call: %v", server, r.Err), nil
}

// toolError is a tool error result saying what happened, for the client.
func toolError(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}
