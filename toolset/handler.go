package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/toolset/runner"
)

// State is what a tool call needs: the policy, each tool's runtime, and the
// server-wide limits every call shares. It is immutable; a call keeps the
// State it started with through a reload (the limits are shared objects, the
// same in every State).
type State struct {
	Policy *policy.Policy
	// Helps is what the tools' own help says (what wraptool_discover
	// lists); nil when nothing is known.
	Helps policy.Helps
	// RequestLog is the capability-request log's path, which
	// wraptool_request_status reads.
	RequestLog string
	// Runtimes is keyed by tool key.
	Runtimes map[string]Runtime
	// Slots bounds the wrapped-tool children running at once
	// (mcp.max_concurrent_calls); one *Slots lives for the server's
	// lifetime, its limit changed on reload. Nil means unlimited.
	Slots *Slots
	// Reaper tracks every child a call starts and is rung after each call
	// to end what outlived it. Nil means no tracking and no sweeps.
	Reaper *runner.Reaper

	// Base is the config's own policy, which decides every call first;
	// Policy is Base with the capability grants in force merged (what
	// clients see). Nil means Policy: no grants.
	Base *policy.Policy
	// Grants are the temporary grants in force; nil means none.
	Grants *Grants
	// PolicyHash identifies the config, overrides and env files in
	// service (config.Loaded.PolicyHash): exact-call grants and denials
	// are bound to it.
	PolicyHash string
	// Denials remembers refused calls for exact-call requests (one for the
	// server's lifetime); nil issues no call_ids.
	Denials *Denials
	// UseGrant consumes a once-grant (the request-log writer's); nil when
	// none can be.
	UseGrant GrantUser
	// Used remembers the once-grants used (one for the server's life), so
	// a later denial of the same call says so; nil remembers none.
	Used *UsedGrants
	// ElicitTokens maps each elicitation client's token to its name
	// (mcp.elicit_clients); ConfigPath is the served config's canonical
	// path, which a grant decided in a client records.
	ElicitTokens map[string]string
	ConfigPath   string
	// Preview is the allow rule a capability would stand as once a grant
	// merges it into the served config (config.Loaded.PreviewRule), for
	// the effect a client's user is shown before deciding; nil when it
	// cannot be computed, and then nobody is asked.
	Preview func(tool string, sub, flags []string) (*policy.AllowRule, error)
	// Audit queues each call's audit line; nil when the audit log is
	// off. AuditPolicy is the hash the line records as
	// "policy" (see AuditPolicy): PolicyHash with the grants in force.
	Audit       Auditor
	AuditPolicy string
}

// base is the policy that decides a call before any grant.
func (s *State) base() *policy.Policy {
	if s.Base != nil {
		return s.Base
	}
	return s.Policy
}

// runtime is the tool's Runtime carrying the State's limits.
func (s *State) runtime(tool string) Runtime {
	rt := s.Runtimes[tool]
	rt.slots, rt.reaper = s.Slots, s.Reaper
	return rt
}

// Output is a run's structuredContent.
type Output struct {
	ExitCode   int    `json:"exit_code"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	DurationMS int64  `json:"duration_ms"`
	Truncated  bool   `json:"truncated"`
}

// NewHandler returns the MCP handler for the allow rule tool+sub. Each call
// evaluates the State that current returns when it starts. stop is done when
// in-flight runs must be killed (the end of the shutdown grace period).
//
// Every call, allowed or denied, gets one audit line (State.Audit) and
// one log line; neither ever shows the value of a flag with redact: true.
func NewHandler(tool string, sub []string, current func() *State, stop context.Context, log *slog.Logger) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		st := current()
		name := req.Params.Name
		a := st.auditFor(ctx, stop, req)
		defer a.done()
		params, err := decodeArguments(req.Params.Arguments)
		if err != nil {
			// The decoder's own text names Go types ("into Go value of
			// type map[string]interface {}"); the assistant is told what
			// it sent instead.
			const reason = "the arguments must be a JSON object of named parameters"
			log.Info("tool call denied", "tool", bound(name), "kind", "arguments", "reason", reason)
			if a.record != nil {
				a.line.Cwd = plannedDir("", st.runtime(tool))
			}
			a.denied(nil, "arguments", reason)
			res := errorResult("DENIED: the arguments must be a JSON object of named parameters (got " + jsonKind(req.Params.Arguments) + ").")
			res.StructuredContent = Denial{Denied: true, Reason: reason}
			return res, nil
		}
		call := policy.Call{Tool: tool, Subcommand: sub, Params: params}
		rt := st.runtime(tool)
		// The config alone decides first: a call it allows never touches
		// a grant.
		d := st.base().Evaluate(call)
		refusal := d.Refusal
		var use *grantUse
		if !d.Allowed() && st.Grants != nil {
			canonical, _ := requests.CanonicalArguments(req.Params.Arguments)
			if gd, u := st.grantFor(name, call, canonical, time.Now()); u != nil {
				d, use = gd, u
			}
		}
		if use == nil && !d.Allowed() && st.Policy != nil && st.Policy != st.base() {
			// Grants are in force and none allows the call: the denial
			// is the policy in force's (config and grants), so its
			// Allowed flags line lists what is granted now.
			if in := st.Policy.Evaluate(call); !in.Allowed() {
				refusal = in.Refusal
			}
		}
		cwd, _ := params[policy.CwdProperty].(string)
		// ranIn is where the child ran, or a refused call would have: set
		// by Execute once it has checked the directory.
		ranIn, settled := "", false
		deny := func(r *policy.Refusal, attrs ...any) *mcp.CallToolResult {
			log.Info("tool call denied", append([]any{"tool", bound(name), "kind", r.Kind.String(), "reason", bound(r.Reason)}, attrs...)...)
			shown, _, _ := st.base().ShownCommand(call)
			if a.record != nil {
				if !settled || ranIn == "" {
					ranIn = plannedDir(cwd, rt)
				}
				a.line.Cwd = ranIn
			}
			a.denied(shown, r.Kind.String(), r.Reason)
			res := st.denial(name, call, req.Params.Arguments, rt, r)
			if g, ok := st.Used.find(call); ok {
				res.Content = []mcp.Content{&mcp.TextContent{Text: withUsedNote(r.Text, g)}}
			}
			return res
		}
		if !d.Allowed() {
			return deny(refusal), nil
		}
		shown := d.Shown()
		log.Debug("tool call allowed", "tool", bound(name), "argv", boundAll(shown), "cwd", bound(d.Cwd), "grant", use.ID())
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(stop, cancel)()
		// Rung as the handler returns: the sweep runs in the Reaper's
		// goroutine, so it costs the call nothing.
		defer st.Reaper.Sweep()
		if use != nil {
			rt.admit = st.admit(runCtx, use)
		}
		if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
			// On the call's own context, so the notes travel with the
			// call (on its POST's stream) and stop with it.
			defer reportProgress(runCtx, req.Session.NotifyProgress, token, name, rt.Timeout)()
		}
		res, d, ranIn := execute(runCtx, d, rt)
		settled = true
		a.line.Cwd = ranIn
		if !d.Allowed() {
			return deny(d.Refusal), nil
		}
		var na errNotAdmitted
		if errors.As(res.Err, &na) {
			// Another call took the once-grant, or the grant ended while
			// this one waited: the config's own answer stands.
			return deny(refusal, "grant", use.id, "why", na.Error()), nil
		}
		if use != nil {
			log.Info("tool call", "tool", bound(name), "grant", use.id, "exit_code", res.ExitCode, "duration", res.Duration, "truncated", res.Truncated, "error", bound(errString(res.Err)))
		} else {
			log.Info("tool call", "tool", bound(name), "exit_code", res.ExitCode, "duration", res.Duration, "truncated", res.Truncated, "error", bound(errString(res.Err)))
		}
		a.ran(shown, res, use)
		return RunResult(res), nil
	}
}

// callAudit builds one call's audit line and queues it when the call
// ends.
type callAudit struct {
	line    CallAudit
	record  Auditor
	ctx     context.Context
	release context.CancelFunc
	set     bool
}

// auditFor starts the audit line of a call under st.
func (st *State) auditFor(ctx, stop context.Context, req *mcp.CallToolRequest) *callAudit {
	a := &callAudit{record: st.Audit}
	if a.record == nil {
		return a
	}
	a.ctx, a.release = auditContext(ctx, stop)
	a.line = CallAudit{Time: time.Now().UTC(), Tool: req.Params.Name, Policy: st.AuditPolicy}
	a.line.Session, a.line.Client = SessionOf(ctx, req)
	return a
}

// denied completes the line of a refused call: argv is the command as
// the denial shows it.
func (a *callAudit) denied(argv []string, kind, reason string) {
	a.line.Decision, a.line.Kind, a.line.Reason, a.line.Argv = "denied", kind, reason, argv
	a.set = true
}

// ran completes the line of a call that ran (or failed to start).
func (a *callAudit) ran(argv []string, res runner.Result, use *grantUse) {
	code := res.ExitCode
	a.line.Decision, a.line.Argv, a.line.ExitCode = "allowed", argv, &code
	a.line.DurationMS = res.Duration.Milliseconds()
	a.line.StdoutBytes, a.line.StderrBytes = len(res.Stdout), len(res.Stderr)
	a.line.TimedOut, a.line.Error = res.TimedOut, errString(res.Err)
	if use != nil {
		a.line.Grant, a.line.GrantOnce, a.line.GrantExact = use.id, use.once, use.exact != nil
		if len(use.all) > 1 {
			a.line.Grants = use.all
		}
		if !use.until.IsZero() {
			until := use.until.UTC()
			a.line.GrantUntil = &until
		}
	}
	a.set = true
}

// done queues the line, once the call has its outcome. A call that ended
// without one (its context ended before it ran: the client went away)
// is still recorded, as allowed with no exit code.
func (a *callAudit) done() {
	if a.record == nil {
		return
	}
	defer a.release()
	if !a.set {
		a.line.Decision, a.line.Error = "allowed", "the call ended before it ran"
	}
	a.record(a.ctx, a.line.Bounded())
}

// ID is the grant's id for a log line; "" without a grant.
func (u *grantUse) ID() string {
	if u == nil {
		return ""
	}
	return u.id
}

// boundAll bounds each token for a log line (see bound).
func boundAll(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i] = bound(t)
	}
	return out
}

// CallProgress is how often a wrapped-tool call whose request carries a
// progress token reports how long it has run. Clients give a request a
// timeout (the TypeScript SDK's default is 60 s) that a progress
// notification resets when they ask for that; a tool that runs for
// minutes without a word would otherwise be abandoned by the client while
// it still runs. The request tool's wait reports at the same pace
// (WaitProgress).
const CallProgress = 5 * time.Second

// reportProgress sends notify a notifications/progress for token every
// CallProgress until the returned stop is called: progress is the whole
// seconds the call has run, total its timeout in seconds (when it has one,
// so the numbers only grow towards it), and the message says the same in
// words. stop waits for the reporter to end, so no note follows the
// call's result. A note that cannot be sent is dropped: progress is
// advisory, and the call's answer reports what matters.
func reportProgress(ctx context.Context, notify func(context.Context, *mcp.ProgressNotificationParams) error,
	token any, tool string, limit time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	began := time.Now()
	go func() {
		defer close(done)
		tick := time.NewTicker(CallProgress)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				ran := time.Since(began).Round(time.Second)
				p := &mcp.ProgressNotificationParams{ProgressToken: token, Progress: ran.Seconds(),
					Message: fmt.Sprintf("%s has run for %d s", tool, int(ran/time.Second))}
				if limit > 0 {
					p.Total = limit.Round(time.Second).Seconds()
					p.Message += fmt.Sprintf(" (timeout %d s)", int(limit.Round(time.Second)/time.Second))
				}
				notify(ctx, p)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// RunResult renders a run: one text item with stdout, then stderr under a
// "--- stderr ---" line when there is any, then wraptool's own note when the
// run failed outright; structuredContent carries the fields of Output.
func RunResult(res runner.Result) *mcp.CallToolResult {
	var b strings.Builder
	b.WriteString(res.Stdout)
	section := func(title, body string) {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(title)
		b.WriteByte('\n')
		b.WriteString(body)
	}
	if res.Stderr != "" {
		section("--- stderr ---", res.Stderr)
	}
	if res.Err != nil {
		section("--- wraptool: "+res.Err.Error()+" ---", "")
	}
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: b.String()}},
		StructuredContent: Output{
			ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr,
			DurationMS: res.Duration.Milliseconds(), Truncated: res.Truncated,
		},
		IsError: res.ExitCode != 0 || res.Err != nil,
	}
}

// maxLogString bounds each client-derived string the handler logs: a
// 3 MiB flag name must not cost 3 MiB of log per call.
const maxLogString = 256

// bound cuts s to maxLogString bytes at a character boundary, marking how
// many bytes were cut ("…(N bytes cut)"). Invalid UTF-8 becomes U+FFFD
// first, so the result is always valid.
func bound(s string) string {
	if len(s) <= maxLogString && utf8.ValidString(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxLogString {
		return s
	}
	cut := maxLogString
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(" + strconv.Itoa(len(s)-cut) + " bytes cut)"
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}
}

// decodeArguments reads the call's arguments as a JSON object, keeping
// numbers exact (json.Number). Absent or null arguments are no parameters.
func decodeArguments(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var params map[string]any
	if err := dec.Decode(&params); err != nil {
		return nil, err
	}
	if params == nil {
		params = map[string]any{}
	}
	return params, nil
}

// jsonKind names the kind of JSON value raw holds ("an array", "a
// string"), for an error that says what the client sent.
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if !json.Valid(raw) {
		return "something that is not JSON"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
