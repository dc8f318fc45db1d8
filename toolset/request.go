package toolset

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/danger"
	"github.com/wraptool/wraptool/policy/requests"
)

// Submitter records a request, or finds the identical pending one.
type Submitter func(context.Context, requests.Request) (requests.Submitted, error)

// Watcher registers a wait for request id's decision, by any writer: the
// folded record arrives on the channel once it is decided, or the channel
// is closed without one when the server stops. The wait ends (and is
// forgotten) when ctx does.
type Watcher func(ctx context.Context, id string) (<-chan requests.Record, error)

// PendingChecker says which of ids are still pending and whether a request
// identical to r is, from the server's request-log writer (which reads only
// what was appended since it last looked).
type PendingChecker func(ctx context.Context, ids []string, r requests.Request) (still []string, identical bool, err error)

// Decider records a decision made in a client (elicitation) through the
// server's request-log writer.
type Decider func(ctx context.Context, id string, d requests.Decision) error

// Learner has the help of requested subcommands learned (specs: the
// requests' tool, subcommand and flags) and waits, while ctx lasts, until
// the state in service knows it or it could not be learned, as the policy
// holder's LearnHelps does.
type Learner func(ctx context.Context, specs []config.GrantSpec) error

// RequestResult is the built-in tool's structuredContent: the request's id
// and status, and once decided its reason, whether it was applied, and a
// grant's terms.
type RequestResult struct {
	ID      string       `json:"id"`
	Status  string       `json:"status"`
	Reason  *string      `json:"reason,omitempty"`
	Applied *bool        `json:"applied,omitempty"`
	Grant   *StatusGrant `json:"grant,omitempty"`
}

// Bounds of interactive approval.
const (
	// ElicitTimeout is how long a client's user has to answer.
	ElicitTimeout = 120 * time.Second
	// LearnTimeout bounds the wait for a subcommand's help to be learned
	// before a client's user is asked: each help form runs 5 s at most,
	// a form that times out ends them, and at most 4 run at once. Past
	// it, the request is not put to the client (its flags count as not
	// listed) and stays pending.
	LearnTimeout = 20 * time.Second
	// WaitProgress is how often a waiting call reports progress.
	WaitProgress = 5 * time.Second
	// MaxPendingPerSession and MaxWaitingPerSession bound what one MCP
	// session may have outstanding.
	MaxPendingPerSession = 10
	MaxWaitingPerSession = 4
	// maxSessions bounds the sessions the limits remember.
	maxSessions = 10000
)

// RequestTool serves wraptool_request_capability: it records the request,
// asks an elicitation client's user when the session is one, and waits for
// the decision when asked to.
type RequestTool struct {
	// Submit records a request; required.
	Submit Submitter
	// Denials resolves an exact-call request's call_id; nil knows none.
	Denials *Denials
	// Watch waits for decisions; nil answers every wait at once, pending.
	Watch Watcher
	// Decide records a client's answer; nil asks no client.
	Decide Decider
	// Learn has a requested subcommand's help learned before a client's
	// user is asked about it; nil asks on the help the state already has.
	Learn Learner
	// Pending re-checks a session at its limit of pending requests; nil
	// never lets a session past the limit once it has filed that many.
	Pending PendingChecker
	// State is the snapshot in service (policy, help, elicitation
	// tokens, the config's path).
	State func() *State
	// Log receives the recorded requests and the failures.
	Log *slog.Logger

	once   sync.Once
	limits sessionLimits
}

// DefinitionAndHandler are the tool's definition and handler, for AddTool.
func (t *RequestTool) DefinitionAndHandler() (*mcp.Tool, mcp.ToolHandler) {
	return RequestDefinition(), t.Handler()
}

func (t *RequestTool) init() {
	t.once.Do(func() {
		t.limits = sessionLimits{waiting: map[*mcp.ServerSession]int{}, filed: map[*mcp.ServerSession][]string{},
			inflight: map[*mcp.ServerSession]int{}}
		if t.Log == nil {
			t.Log = slog.New(slog.DiscardHandler)
		}
	})
}

// NewRequestHandler returns a handler that only records requests (no waits,
// no elicitation): what tests of the recording need.
func NewRequestHandler(submit Submitter, denials *Denials, log *slog.Logger) mcp.ToolHandler {
	return (&RequestTool{Submit: submit, Denials: denials, Log: log}).Handler()
}

// Handler returns the MCP handler.
func (t *RequestTool) Handler() mcp.ToolHandler {
	t.init()
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		start := time.Now()
		p, err := ParseRequest(req.Params.Arguments)
		if err != nil {
			return errorResult("The request was not recorded: " + err.Error() + "."), nil
		}
		var st *State
		if t.State != nil {
			st = t.State()
		}
		client := t.elicitClient(st, req)
		if len(req.Params.InputResponses) > 0 || req.Params.RequestState != "" {
			// This server never returns input requests: an "answer" to
			// one is made up, and must not decide anything.
			return errorResult("The request was not recorded: wraptool asked nothing that this call could answer " +
				"(inputResponses and requestState are not accepted)."), nil
		}
		r := p.Request
		if p.CallID != "" {
			denied, ok := t.Denials.Get(p.CallID, time.Now())
			if !ok {
				return errorResult("The request was not recorded: call_id " + p.CallID + " is unknown or expired " +
					"(wraptool remembers the last " + fmt.Sprint(MaxDenials) + " refused calls for " + DenialTTL.String() +
					"); make the call again to get a new one, or ask for the capability with tool and subcommand."), nil
			}
			call := denied.Call
			r.Tool, r.Subcommand, r.Flags, r.Call = denied.Tool, denied.Subcommand, denied.Flags, &call
		}
		res, release := t.limits.pending(ctx, req.Session, t.Pending, r)
		if res != nil {
			return res, nil
		}
		s, err := t.Submit(ctx, r)
		if err == nil && !s.Existing {
			t.limits.remember(req.Session, s.ID)
		}
		release() // after remember: the slot passes from in flight to filed at once
		if err != nil {
			return t.notRecorded(r, err), nil
		}
		if !s.Existing {
			t.Log.Info("capability request recorded", "id", s.ID, "tool", r.Tool, "subcommand", r.Subcommand, "flags", r.Flags)
		}
		wait := p.Wait
		if client != "" && !s.Existing && t.Decide != nil {
			st = t.learnHelp(ctx, st, r)
			if effect, why := elicitable(st, r); why != "" {
				t.Log.Info("not asking the client", "id", s.ID, "client", client, "why", why)
			} else {
				// The client's user decides, or the call waits as with
				// wait_seconds, up to ElicitTimeout at least.
				wait = max(wait, ElicitTimeout)
				if res := t.elicit(ctx, req, st, s.ID, client, r, effect); res != nil {
					return res, nil
				}
			}
		}
		if wait > 0 {
			left := wait - time.Since(start)
			if !t.limits.startWaiting(req.Session) {
				return errorResult(fmt.Sprintf("Request %s recorded (pending), but this session already has %d calls waiting; "+
					"ask wraptool_request_status later.", s.ID, MaxWaitingPerSession)), nil
			}
			defer t.limits.stopWaiting(req.Session)
			return t.wait(ctx, req, s.ID, wait, left)
		}
		text := "Request " + s.ID + " recorded (pending). The operator will review it; if it is approved, " +
			"this server's tool list changes and you are notified."
		if s.Existing {
			text = "Request " + s.ID + " recorded (pending). An identical request was already pending, " +
				"so no new one was filed; the operator will review it."
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: text}},
			StructuredContent: RequestResult{ID: s.ID, Status: requests.StatusPending},
		}, nil
	}
}

// learnHelp has the help of r's subcommand learned, when the state lacks
// it and the config lets wraptool run it, before a client's user is asked:
// what one click grants is computed from that help, and a flag it does not
// list is never asked about. It returns the state in service once the help
// is learned (or could not be), or st when the wait ends first.
func (t *RequestTool) learnHelp(ctx context.Context, st *State, r requests.Request) *State {
	if t.Learn == nil || t.State == nil || !config.HelpWanted(st.base(), st.Helps, r.Tool, r.Subcommand) {
		return st
	}
	lctx, cancel := context.WithTimeout(ctx, LearnTimeout)
	defer cancel()
	if err := t.Learn(lctx, []config.GrantSpec{{Tool: r.Tool, Subcommand: r.Subcommand, Flags: r.Flags}}); err != nil {
		t.Log.Info("help not learned before asking the client", "tool", requests.Token(r.Tool),
			"subcommand", requests.Subcommand(r.Subcommand), "error", err)
		return st
	}
	return t.State()
}

// notRecorded answers a request the writer could not record. The detail
// (paths, I/O errors) is for the operator's log.
func (t *RequestTool) notRecorded(r requests.Request, err error) *mcp.CallToolResult {
	t.Log.Warn("capability request not recorded", "tool", r.Tool, "subcommand", r.Subcommand, "error", err)
	switch {
	case errors.Is(err, requests.ErrLocked):
		// Another process (the CLI, a backup) holds the log: say so,
		// naming the file, so the assistant can try again later.
		return errorResult("The request was not recorded: " + err.Error() + ". Try again in a moment.")
	case errors.Is(err, requests.ErrPendingLimit):
		return errorResult("The request was not recorded: the pending limit is reached (" +
			fmt.Sprint(requests.MaxPending) + " requests await the operator's decision). " +
			"A slot frees when the operator decides one.")
	}
	return errorResult("The request was not recorded: wraptool could not write its request log; " +
		"the operator can see why in the server log.")
}

// wait waits up to left for request id's decision (the call asked for
// total), reporting progress every WaitProgress when the call carries a
// progress token. A cancelled call stops waiting; the request stays
// pending.
func (t *RequestTool) wait(ctx context.Context, req *mcp.CallToolRequest, id string, total, left time.Duration) (*mcp.CallToolResult, error) {
	pending := func() *mcp.CallToolResult {
		return &mcp.CallToolResult{
			Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("Request %s still pending after %d s. "+
				"Ask wraptool_request_status later; if it is approved, this server's tool list changes and you are notified.",
				id, int(total.Round(time.Second)/time.Second))}},
			StructuredContent: RequestResult{ID: id, Status: requests.StatusPending},
		}
	}
	if t.Watch == nil || left <= 0 {
		return pending(), nil
	}
	wctx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	decided, err := t.Watch(wctx, id)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return pending(), nil
	}
	t.Log.Debug("waiting for a decision", "id", id, "up_to", left.Round(time.Second))
	token := req.Params.GetProgressToken()
	tick := time.NewTicker(WaitProgress)
	defer tick.Stop()
	began := time.Now()
	for {
		select {
		case r, ok := <-decided:
			if !ok {
				// The server is stopping: the request stays pending.
				t.Log.Info("wait ended", "id", id, "why", "stopping")
				return pending(), nil
			}
			t.Log.Info("wait ended", "id", id, "why", "decided", "status", r.Status)
			return DecidedResult(r), nil
		case <-tick.C:
			if token != nil {
				waited := time.Since(began).Round(time.Second)
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
					Progress: waited.Seconds(), Total: left.Round(time.Second).Seconds(),
					Message: "waiting for the operator's decision on " + id})
			}
		case <-wctx.Done():
			if ctx.Err() != nil {
				t.Log.Info("wait ended", "id", id, "why", "cancelled")
				return nil, ctx.Err() // cancelled: the request stays pending
			}
			select {
			case r, ok := <-decided: // decided as the wait ended: the decision wins
				if ok {
					t.Log.Info("wait ended", "id", id, "why", "decided", "status", r.Status)
					return DecidedResult(r), nil
				}
			default:
			}
			t.Log.Info("wait ended", "id", id, "why", "timeout")
			return pending(), nil
		}
	}
}

// DecidedResult is the request tool's answer once a request is decided:
// "Request req_… approved (once).", "… approved until
// 2026-12-01T10:00:00Z.", "… approved and applied to the config.",
// "… approved, but nothing is allowed until the operator adds the rule.",
// or "… denied: <reason>".
func DecidedResult(r requests.Record) *mcp.CallToolResult {
	out := RequestResult{ID: r.ID, Status: r.Status, Reason: r.Reason, Applied: r.Applied}
	var text string
	switch {
	case r.Status == requests.StatusDenied:
		reason := ""
		if r.Reason != nil {
			reason = *r.Reason
		}
		text = "Request " + r.ID + " denied."
		if reason != "" {
			text = "Request " + r.ID + " denied: " + reason
		}
	case r.Grant != nil && r.Grant.Once:
		out.Grant = &StatusGrant{Once: true, Until: r.Grant.Until, UsedAt: r.Grant.UsedAt, Exact: r.Grant.Exact}
		text = "Request " + r.ID + " approved (once). The tool list changes once the grant is in force."
	case r.Grant != nil:
		out.Grant = &StatusGrant{Until: r.Grant.Until, Exact: r.Grant.Exact}
		text = "Request " + r.ID + " approved until " + r.Grant.Until.UTC().Format(time.RFC3339) + "."
	case r.Applied != nil && *r.Applied:
		text = "Request " + r.ID + " approved and applied to the config."
	default:
		text = "Request " + r.ID + " " + NothingAllowedNote + "."
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: out}
}

// elicitClient names the elicitation client this call's session
// authenticated as, when its client declared the elicitation capability;
// "" otherwise, and always for a session on the main MCP token. Only
// Streamable HTTP carries the request's headers to the handler, so a
// legacy SSE session is never asked.
func (t *RequestTool) elicitClient(st *State, req *mcp.CallToolRequest) string {
	if st == nil || len(st.ElicitTokens) == 0 || req.Extra == nil || req.Session == nil {
		return ""
	}
	auth := req.Extra.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(auth, " ")
	token = strings.TrimSpace(token) // as the hub reads it
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return ""
	}
	name := ""
	for tok, n := range st.ElicitTokens {
		if subtle.ConstantTimeCompare([]byte(tok), []byte(token)) == 1 {
			name = n
		}
	}
	if name == "" {
		return ""
	}
	ip := req.Session.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return ""
	}
	return name
}

// elicitable says why a request must not be put to a client's user (""
// when it may be), and otherwise what approving it does, as `requests
// approve` prints it: never asked are a tool the config does not have, a
// subcommand a deny rule covers, an empty subcommand, a flag the help does
// not list (any flag, where the subcommand's help is unknown; exact calls
// included), a value too long to be shown whole (one click would allow a
// tail nobody saw), an exact call no grant could allow, a capability whose
// merge would be refused or whose effect cannot be computed (a person must
// see what one click grants), and one whose effect has Unconfirmed entries
// (a flag that can hand the credentials away with no pattern holding its
// value, or such a subcommand), which only a typed confirmation approves.
func elicitable(st *State, r requests.Request) (effect []string, why string) {
	p := st.base()
	switch {
	case !slices.Contains(p.Tools(), r.Tool):
		return nil, "the tool is not in the config"
	case len(r.Subcommand) == 0:
		return nil, "the request names no subcommand"
	case p.Denies(r.Tool, r.Subcommand):
		return nil, "a deny rule covers the subcommand"
	}
	if unlisted, l := requests.Unlisted(st.Helps, r.Tool, r.Subcommand, r.Flags); len(unlisted) > 0 {
		return nil, "not listed in the help: " + requests.Flags(unlisted) + " " + requests.Mark(r.Tool, r.Subcommand, l)
	}
	shown := append(append([]string{r.Tool}, r.Subcommand...), r.Flags...)
	if r.Call != nil {
		shown = append(append(shown, r.Call.Command...), r.Call.Cwd)
	}
	for _, t := range shown {
		if !requests.Whole(t) {
			return nil, fmt.Sprintf("a value is longer than the %d characters a question shows whole", requests.MaxTokenDisplay)
		}
	}
	rec := requests.Record{Tool: r.Tool, Subcommand: r.Subcommand, Flags: r.Flags, Call: r.Call}
	cli := danger.CLI(r.Tool, binaryOf(p, r.Tool))
	if r.Call != nil {
		if err := rec.Grantable(p, st.PolicyHash); err != nil {
			return nil, err.Error()
		}
		// An exact grant of what can hand the credentials away needs the
		// same typed confirmation as a rule's, which a click cannot carry.
		if unc, _ := requests.ExactUnconfirmed(cli, &rec); len(unc) > 0 {
			return nil, DangerReason + ": " + strings.Join(unc, ", ")
		}
		return requests.ExactLinesFor(cli, &rec, ""), ""
	}
	if st.Preview == nil {
		return nil, "what approving grants cannot be computed"
	}
	rule, err := st.Preview(r.Tool, r.Subcommand, r.Flags)
	if err != nil {
		return nil, "a grant would be refused: " + err.Error()
	}
	e := requests.RuleEffectFor(st.Helps, cli, &rec, rule)
	if unconfirmed := e.Unconfirmed(); len(unconfirmed) > 0 {
		// A one-click form cannot carry the typed confirmation these
		// need; the operator decides them with their own tools.
		return nil, DangerReason + ": " + strings.Join(unconfirmed, ", ")
	}
	return e.Lines(), ""
}

// DangerReason is why a request whose approval could hand the
// credentials away, with no pattern to hold it, is not put to a client's
// user (requests.Effect.Unconfirmed lists what, after it).
const DangerReason = "it can hand your credentials away and approving it needs a typed confirmation"

// binaryOf is tool's binary as p holds it, rules or none; "" for a tool
// the config does not have, which the catalog then knows by its key.
func binaryOf(p *policy.Policy, tool string) string {
	return p.Binary(tool)
}

// question is the elicitation's message and form: the client's name first,
// everything the assistant wrote escaped, each flag the help does not list
// marked as every screen marks it (elicitable keeps such requests from a
// client, so the mark is there should that change), then the effect, one
// line per flag, as `requests approve` prints it; and the answers deny,
// once, hour (deny and once for an exact call).
func question(client string, r requests.Request, helps policy.Helps, effect []string) *mcp.ElicitParams {
	var msg string
	choices := []string{"deny", "once", "hour"}
	if r.Call != nil {
		msg = fmt.Sprintf("%s: the assistant asks to run exactly '%s'", client, requests.Command(r.Call.Command))
		if unlisted, l := requests.Unlisted(helps, r.Tool, r.Subcommand, r.Flags); len(unlisted) > 0 {
			msg += " (" + requests.Flags(unlisted) + " " + requests.Mark(r.Tool, r.Subcommand, l) + ")"
		}
		msg += ": " + requests.Text(r.Rationale)
		choices = []string{"deny", "once"}
	} else {
		cmd := strings.TrimSpace(requests.Token(r.Tool) + " " + requests.Subcommand(r.Subcommand))
		msg = fmt.Sprintf("%s: the assistant asks to run '%s'", client, cmd)
		if len(r.Flags) > 0 {
			msg += " with " + requests.MarkedFlags(helps, r.Tool, r.Subcommand, r.Flags)
		}
		msg += ": " + requests.Text(r.Rationale)
	}
	if len(effect) > 0 {
		msg += "\n" + strings.Join(effect, "\n")
	}
	return &mcp.ElicitParams{Message: msg, RequestedSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"decision": map[string]any{"type": "string", "enum": choices, "title": "Decision",
				"description": "deny, allow once, or allow for an hour"},
		},
		"required": []string{"decision"},
	}}
}

// elicit asks the client's user at once with elicitation/create, within
// ElicitTimeout, and records the answer. (wraptool's Streamable HTTP
// endpoint keeps sessions, which the MCP SDK serves on protocols up to
// 2025-11-25 only, so a server-sent request during a call is always
// allowed; a 2026-07-28 client falls back to 2025-11-25 there.) It
// returns the call's answer when the request was decided, nil when it
// stays pending (no answer, or an
// answer that decides nothing).
func (t *RequestTool) elicit(ctx context.Context, req *mcp.CallToolRequest, st *State, id, client string, r requests.Request, effect []string) *mcp.CallToolResult {
	ectx, cancel := context.WithTimeout(ctx, ElicitTimeout)
	defer cancel()
	res, err := req.Session.Elicit(ectx, question(client, r, st.Helps, effect))
	if err != nil {
		t.Log.Info("the client did not answer", "id", id, "client", client, "error", err)
		return nil
	}
	return t.record(ctx, st, id, client, r, res)
}

// record turns a client's answer into a decision: accept with once or
// hour approves as --once / --for 1h would; deny, decline or cancel
// denies. It returns the call's answer, or nil when nothing was decided.
func (t *RequestTool) record(ctx context.Context, st *State, id, client string, r requests.Request, res *mcp.ElicitResult) *mcp.CallToolResult {
	now := time.Now()
	d := requests.Decision{DecidedBy: "client", Client: client}
	choice, _ := res.Content["decision"].(string)
	switch {
	case res.Action == "accept" && (choice == "once" || choice == "hour" && r.Call == nil):
		term := requests.Term{Once: true}
		if choice == "hour" {
			term = requests.Term{Dur: time.Hour}
		}
		d.Status = requests.StatusApproved
		d.Grant = term.Grant(&requests.Record{Call: r.Call}, st.ConfigPath, now)
	case res.Action == "accept" && choice == "deny", res.Action == "decline", res.Action == "cancel":
		d.Status, d.Reason = requests.StatusDenied, "declined in the client"
	default:
		t.Log.Warn("the client's answer decides nothing; the request stays pending", "id", id, "client", client,
			"action", res.Action, "decision", choice)
		return nil
	}
	if err := t.Decide(ctx, id, d); err != nil {
		t.Log.Warn("the client's decision could not be recorded; the request stays pending", "id", id, "client", client, "error", err)
		return nil
	}
	t.Log.Info("request decided in the client", "id", id, "client", client, "status", d.Status)
	rec := requests.Record{ID: id, Status: d.Status, Reason: &d.Reason, Applied: new(bool), Grant: d.Grant}
	return DecidedResult(rec)
}

// sessionLimits bound what one MCP session may have outstanding: pending
// requests it filed, and calls waiting for a decision.
type sessionLimits struct {
	mu      sync.Mutex
	waiting map[*mcp.ServerSession]int
	filed   map[*mcp.ServerSession][]string
	// inflight counts the requests a session has between the limit's
	// check and their submit's answer, so calls at once cannot all pass
	// the check before any is remembered.
	inflight map[*mcp.ServerSession]int
}

// pending refuses a new request from a session with MaxPendingPerSession
// requests still pending or in flight (the log is read only when it has
// that many); nil lets it through, holding a slot until release is called
// (after the submit, and remember when it filed one). An identical pending
// request always passes: its submit files nothing.
func (l *sessionLimits) pending(ctx context.Context, s *mcp.ServerSession, check PendingChecker, r requests.Request) (*mcp.CallToolResult, func()) {
	if s == nil {
		return nil, func() {}
	}
	release := func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.inflight[s]--; l.inflight[s] <= 0 {
			delete(l.inflight, s)
		}
	}
	// reserve forgets the ids in gone, then takes a slot when the session
	// has room (its filed requests and those in flight), or always with
	// force; it returns the filed ids when it takes none.
	reserve := func(gone map[string]bool, force bool) (bool, []string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(gone) > 0 {
			l.filed[s] = slices.DeleteFunc(l.filed[s], func(id string) bool { return gone[id] })
		}
		if !force && len(l.filed[s])+l.inflight[s] >= MaxPendingPerSession {
			return false, slices.Clone(l.filed[s])
		}
		l.inflight[s]++
		return true, nil
	}
	ok, ids := reserve(nil, false)
	if ok {
		return nil, release
	}
	var (
		still     []string
		identical bool
		err       error
	)
	if check != nil {
		still, identical, err = check(ctx, ids, r)
	} else {
		still = ids
	}
	if err != nil {
		reserve(nil, true) // the submit reports the log's trouble
		return nil, release
	}
	gone := map[string]bool{}
	for _, id := range ids {
		gone[id] = !slices.Contains(still, id)
	}
	if ok, left := reserve(gone, identical); !ok {
		return errorResult(fmt.Sprintf("The request was not recorded: this session already has %d requests awaiting the "+
			"operator's decision (%s). Wait for a decision (wraptool_request_status) before asking for more.",
			len(left), strings.Join(left, ", "))), func() {}
	}
	return nil, release
}

// remember records a request a session filed.
func (l *sessionLimits) remember(s *mcp.ServerSession, id string) {
	if s == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, known := l.filed[s]; !known && len(l.filed) >= maxSessions {
		for old := range l.filed { // forget one that waits for nothing
			if l.waiting[old] == 0 {
				delete(l.filed, old)
				break
			}
		}
	}
	l.filed[s] = append(l.filed[s], id)
}

// startWaiting counts a waiting call; false when the session has
// MaxWaitingPerSession already.
func (l *sessionLimits) startWaiting(s *mcp.ServerSession) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.waiting[s] >= MaxWaitingPerSession {
		return false
	}
	l.waiting[s]++
	return true
}

func (l *sessionLimits) stopWaiting(s *mcp.ServerSession) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.waiting[s]--; l.waiting[s] <= 0 {
		delete(l.waiting, s)
	}
}
