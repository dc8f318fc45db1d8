package main

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/actors"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/webui/metrics"
)

// scrapeWait bounds how long a scrape waits for the registry's answer.
const scrapeWait = 2 * time.Second

// callMetrics counts every tools/call by tool and decision and times it,
// from the call's arrival to its answer: "denied" for a policy refusal
// (the denial text), "error" for any other tool or protocol error, else
// "allowed" (a run that exited non-zero was still allowed).
func callMetrics(m *metrics.Metrics) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			start := time.Now()
			res, err := next(ctx, method, req)
			tool := ""
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok {
				tool = p.Name
			}
			if unknownTool(err) {
				// The name is the client's, not a tool's: one series per
				// made-up name would grow /metrics without bound, and the
				// name's bytes would reach the scrape as sent.
				tool = unknownToolLabel
			}
			m.Call(tool, callDecision(res, err), time.Since(start))
			return res, err
		}
	}
}

// unknownToolLabel is the tool label of calls to a tool that is not
// exposed. Tool names never hold parentheses, so it names no tool.
const unknownToolLabel = "(unknown)"

// unknownTool reports whether a call ended as the SDK answers a tool it
// does not have: before any handler ran, so the name is only what the
// client sent.
func unknownTool(err error) bool {
	var rpc *jsonrpc.Error
	return errors.As(err, &rpc) && rpc.Code == jsonrpc.CodeInvalidParams && strings.HasPrefix(rpc.Message, "unknown tool")
}

// callDecision names a call's outcome for the metrics.
func callDecision(res mcp.Result, err error) string {
	r, ok := res.(*mcp.CallToolResult)
	switch {
	case err != nil || !ok:
		return "error"
	case !r.IsError:
		return "allowed"
	}
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok && strings.HasPrefix(t.Text, "DENIED: ") {
			return "denied"
		}
	}
	return "error"
}

// metricSource answers the metrics' gauges at scrape time from state that
// already lives elsewhere: the snapshot in service (grants), the request
// log (pending requests), the MCP server (sessions), the upstream
// supervisor's registry (upstream state) and the audit writer (waits).
type metricSource struct {
	holder *actors.PolicyHolder
	server *mcp.Server
	// upstreams answers the upstream servers' state; nil reports none.
	upstreams func() map[string]string
	// auditWaits counts the calls that waited for the audit queue, and
	// auditLost the lines the writer could not write; nil reports 0.
	auditWaits, auditLost func() uint64
}

// PendingRequests folds the request log as the CLI does; -1 when it cannot
// be read (the gauge is then absent rather than wrong).
func (m *metricSource) PendingRequests() int {
	recs, _, err := requests.Read(m.holder.Current().Config.MCP.RequestLog)
	if err != nil {
		return -1
	}
	n := 0
	for _, r := range recs {
		if r.Status == requests.StatusPending {
			n++
		}
	}
	return n
}

// ActiveGrants counts the grants in force for the config in service: those
// the grants actor gave for this config that are not dormant.
func (m *metricSource) ActiveGrants() int {
	s := m.holder.Current()
	path := config.CanonicalPath(s.Config.File)
	n := 0
	for _, g := range s.Grants {
		if g.Grant == nil || g.Grant.Config != path {
			continue
		}
		if _, dormant := s.Dormant[g.ID]; !dormant {
			n++
		}
	}
	return n
}

// Sessions counts the MCP sessions connected now.
func (m *metricSource) Sessions() int {
	n := 0
	for range m.server.Sessions() {
		n++
	}
	return n
}

// Upstreams is the upstream servers' state by name.
func (m *metricSource) Upstreams() map[string]string {
	if m.upstreams == nil {
		return nil
	}
	return m.upstreams()
}

// AuditWaits is how many calls have waited for room in the audit queue.
func (m *metricSource) AuditWaits() uint64 {
	if m.auditWaits == nil {
		return 0
	}
	return m.auditWaits()
}

// AuditLost is how many audit lines could not be written.
func (m *metricSource) AuditLost() uint64 {
	if m.auditLost == nil {
		return 0
	}
	return m.auditLost()
}

// Confinement is what confines the processes the snapshot in service
// starts.
func (m *metricSource) Confinement() string {
	return m.holder.Current().Confinement()
}
