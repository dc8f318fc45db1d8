package main

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/actors"
	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/webui/metrics"
)

// scrapeWait bounds how long a scrape waits for the registry's answer.
const scrapeWait = 2 * time.Second

// callMetrics counts every tools/call by tool and decision and times it,
// from the call's arrival to its answer: "denied" for a policy refusal
// (the denial text), "error" for any other tool or protocol error, else
// "allowed" (a run that exited non-zero was still allowed). It also turns
// the SDK's protocol error for a tool that is not exposed into a tool error
// saying what to do (unknownToolResult): an assistant reads tool errors,
// while a protocol error often reaches it as a bare failure. Metrics and
// this answer share the one place every call passes.
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
				res, err = unknownToolResult(tool), nil
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

// maxUnknownName bounds how much of a made-up tool name the answer repeats:
// the name is the client's, and echoing megabytes back helps no one.
const maxUnknownName = 200

// unknownToolResult is the answer to a call of a tool that is not exposed:
// a tool error naming the tools that help (discover what is allowed,
// request what is not). The name is quoted as denials quote a token
// (Go-quoted when it holds a character that could fake a line), cut to
// maxUnknownName bytes on a character boundary with its length after it,
// so it cannot add lines or grow the answer.
func unknownToolResult(name string) *mcp.CallToolResult {
	shown := name
	cut := ""
	if len(shown) > maxUnknownName {
		n := maxUnknownName
		for n > 0 && !utf8.RuneStart(shown[n]) {
			n--
		}
		shown, cut = shown[:n], "…("+strconv.Itoa(len(name))+" bytes)"
	}
	text := "UNKNOWN TOOL: " + policy.Quote(shown) + cut + " is not a tool this server exposes.\n\n" +
		"To see the tools you can call and what each allows, call the 'wraptool_discover' tool.\n" +
		"To ask the operator for a capability no tool gives, call the 'wraptool_request_capability' tool."
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
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
	snapshots actors.Snapshots
	server    *mcp.Server
	// states asks the registry for the upstream servers' state, and
	// registryStopped is closed once it no longer answers; a nil states
	// reports none.
	states          chan<- messages.UpstreamStates
	registryStopped <-chan struct{}
	// audit counts the calls that waited for the audit queue and the
	// lines the writer could not write; nil reports 0.
	audit *actors.AuditCounts
}

// PendingRequests folds the request log as the CLI does; -1 when it cannot
// be read (the gauge is then absent rather than wrong).
func (m *metricSource) PendingRequests() int {
	recs, _, err := requests.Read(m.snapshots.Current().Config.MCP.RequestLog)
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
	s := m.snapshots.Current()
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

// Upstreams is the upstream servers' state by name, asked of the registry
// within scrapeWait; nil when it does not answer in time.
func (m *metricSource) Upstreams() map[string]string {
	if m.states == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeWait)
	defer cancel()
	reply := make(chan map[string]string, 1)
	states, err := messages.Ask(ctx, m.registryStopped, m.states, messages.UpstreamStates{Reply: reply}, reply)
	if err != nil {
		return nil
	}
	return states
}

// AuditWaits is how many calls have waited for room in the audit queue.
func (m *metricSource) AuditWaits() uint64 {
	if m.audit == nil {
		return 0
	}
	return m.audit.Waited()
}

// AuditLost is how many audit lines could not be written.
func (m *metricSource) AuditLost() uint64 {
	if m.audit == nil {
		return 0
	}
	return m.audit.Lost()
}

// Confinement is what confines the processes the snapshot in service
// starts.
func (m *metricSource) Confinement() string {
	return m.snapshots.Current().Confinement()
}
