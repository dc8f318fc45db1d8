package toolset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CallAudit is the audit log's line for one tool call. A redacted flag's
// value never reaches it: Argv is the argv as wraptool
// shows it (policy.Decision.Shown), and Reason the denial's Policy: line,
// which hides such values too.
type CallAudit struct {
	// Event is "call"; the audit writer sets it.
	Event string    `json:"event"`
	Time  time.Time `json:"time"`
	// Session is the MCP session id; Client the client's name/version
	// from its initialize. Both "" when unknown.
	Session string `json:"session"`
	Client  string `json:"client"`
	// Tool is the MCP tool name called.
	Tool string `json:"tool"`
	// Decision is "allowed" or "denied".
	Decision string `json:"decision"`
	// Reason is the Policy: line of a denial's text; Kind its kind
	// (policy.Kind's name). Both absent for an allowed call.
	Reason string `json:"reason,omitempty"`
	Kind   string `json:"kind,omitempty"`
	// Argv is what ran (binary first), or for a denial the command as the
	// denial quotes it (tool key first); nil for an upstream tool, whose
	// arguments are not argv.
	Argv []string `json:"argv"`
	// Cwd is the working directory the client asked for ("" for the
	// default).
	Cwd string `json:"cwd"`
	// ExitCode is the child's exit status (-1 for a timeout or a failure
	// to start), nil for a denial or an upstream call.
	ExitCode *int `json:"exit_code"`
	// DurationMS is how long the run took (0 for a denial).
	DurationMS int64 `json:"duration_ms"`
	// StdoutBytes and StderrBytes are the sizes of the output returned
	// (after the caps).
	StdoutBytes int `json:"stdout_bytes"`
	StderrBytes int `json:"stderr_bytes"`
	// TimedOut marks a run killed at its timeout; Error is wraptool's note
	// on a run that failed outright ("" otherwise).
	TimedOut bool   `json:"timed_out,omitempty"`
	Error    string `json:"error,omitempty"`
	// Policy is the hash of what decided the call: the config, overrides
	// and env files, and the grants in force (State.AuditPolicy).
	Policy string `json:"policy"`
	// Grant is the id of the grant that allowed the call; absent when the
	// config alone did. GrantOnce, GrantUntil and GrantExact say which
	// kind of grant it was.
	Grant      string     `json:"grant,omitempty"`
	GrantOnce  bool       `json:"grant_once,omitempty"`
	GrantUntil *time.Time `json:"grant_until,omitempty"`
	GrantExact bool       `json:"grant_exact,omitempty"`
	// Upstream names the mcp_servers entry of an upstream tool's call.
	Upstream string `json:"upstream,omitempty"`
}

// Auditor records one call's audit line. It returns once the line is
// queued for the writer: when the queue is full it waits for room (the
// writer counts such waits) for as long as ctx lasts, and gives up only
// when ctx ends or the writer has stopped. Nil means no audit log.
type Auditor func(ctx context.Context, c CallAudit)

// AuditPolicy hashes what decides a call for the audit log: the policy
// hash of the config, overrides and env files, and the ids of the grants
// in force, so a line says which policy, grants included, allowed or
// refused it. grantIDs may be in any order.
func AuditPolicy(policyHash string, grantIDs []string) string {
	if len(grantIDs) == 0 {
		return policyHash
	}
	ids := slices.Clone(grantIDs)
	slices.Sort(ids)
	h := sha256.New()
	h.Write([]byte(policyHash))
	for _, id := range ids {
		h.Write([]byte{0})
		h.Write([]byte(id))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// GrantIDs lists the ids of the grants in force, in no particular order.
func (g *Grants) GrantIDs() []string {
	if g == nil {
		return nil
	}
	ids := make([]string, 0, len(g.Capability)+len(g.Exact))
	for _, c := range g.Capability {
		ids = append(ids, c.ID)
	}
	for _, e := range g.Exact {
		ids = append(ids, e.ID)
	}
	return ids
}

// sessionIDKey is the context key WithSessionID sets.
type sessionIDKey struct{}

// WithSessionID returns ctx carrying id, which names the session of the
// calls made in it, for a transport whose sessions the SDK gives no id:
// go-sdk's legacy SSE sessions answer ID() with "" although the stream
// announced ?sessionid=… to the client. id is called when a call is
// audited, so it may learn the id after ctx was made.
func WithSessionID(ctx context.Context, id func() string) context.Context {
	return context.WithValue(ctx, sessionIDKey{}, id)
}

// SessionOf names the session and client of a call for the audit log:
// the MCP session id (the SDK's, else WithSessionID's), and name/version
// from the client's initialize.
func SessionOf(ctx context.Context, req *mcp.CallToolRequest) (session, client string) {
	if req == nil || req.Session == nil {
		return "", ""
	}
	session = req.Session.ID()
	if id, ok := ctx.Value(sessionIDKey{}).(func() string); ok && session == "" {
		session = id()
	}
	if ip := req.Session.InitializeParams(); ip != nil && ip.ClientInfo != nil {
		client = ip.ClientInfo.Name + "/" + ip.ClientInfo.Version
	}
	return session, client
}

// auditContext is the context a call's audit line is queued with: the
// call's values, not its cancellation (a client that gives up must not
// cost the line), ended when stop is (the end of the shutdown grace), so
// a full queue never holds a shutdown forever.
func auditContext(ctx, stop context.Context) (context.Context, context.CancelFunc) {
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	unhook := context.AfterFunc(stop, cancel)
	return actx, func() { unhook(); cancel() }
}
