package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/requests"
)

// StatusTool is the built-in tool the assistant asks what became of its
// requests: this is how it learns that one was approved, or reads the
// operator's reason for a denial.
const StatusTool = "wraptool_request_status"

// maxRecentDecided is how many decided requests the status lists without an
// id, the most recent first.
const maxRecentDecided = 50

// StatusEntry is one request as wraptool_request_status reports it.
type StatusEntry struct {
	ID         string     `json:"id"`
	Tool       string     `json:"tool"`
	Subcommand []string   `json:"subcommand"`
	Flags      []string   `json:"flags"`
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	DecidedAt  *time.Time `json:"decided_at,omitempty"`
	Reason     *string    `json:"reason,omitempty"`
	Applied    *bool      `json:"applied,omitempty"`
	// Grant is a temporary grant's terms: once, or until a time; used_at
	// once a once-grant was used.
	Grant *StatusGrant `json:"grant,omitempty"`
	// Command is an exact-call request's call, as it would run.
	Command []string `json:"command,omitempty"`
	// Note is NothingAllowedNote for an approval that allows nothing by
	// itself, so that an assistant reading "approved" does not retry a
	// call that will be refused again; empty otherwise.
	Note string `json:"note,omitempty"`
}

// NothingAllowedNote is what the assistant is told of an approval with no
// apply and no grant: the operator recorded a yes, but no rule exists yet.
const NothingAllowedNote = "approved, but nothing is allowed until the operator adds the rule"

// allowsNothing reports whether r is an approval that allows nothing by
// itself: neither applied to the config nor granted for now.
func allowsNothing(r *requests.Record) bool {
	return r.Status == requests.StatusApproved && r.Grant == nil && (r.Applied == nil || !*r.Applied)
}

// StatusGrant is what the assistant learns of a grant: its terms, not the
// config path or policy hash it is bound to.
type StatusGrant struct {
	Once   bool       `json:"once,omitempty"`
	Until  time.Time  `json:"until"`
	UsedAt *time.Time `json:"used_at,omitempty"`
	Exact  bool       `json:"exact,omitempty"`
}

// StatusResult is wraptool_request_status's answer, as structuredContent
// and as JSON text.
type StatusResult struct {
	Requests []StatusEntry `json:"requests"`
}

// StatusDefinition is the wraptool_request_status tool.
func StatusDefinition() *mcp.Tool {
	return &mcp.Tool{
		Name: StatusTool,
		Description: "See what became of your capability requests: with an id, that request; without, every " +
			"pending request and the 50 most recently decided, newest first. A decided request carries the " +
			"operator's reason and whether it was applied to the config (its tools then appear in your list).",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"id": map[string]any{"type": "string", "description": "A request id (req_…); all when absent."},
			},
		},
	}
}

// NewStatusHandler returns the handler of wraptool_request_status; it reads
// the request log of the state in service (readers need no lock: a torn or
// foreign line is skipped).
func NewStatusHandler(current func() *State) mcp.ToolHandler {
	return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			ID *string `json:"id"`
		}
		if raw := bytes.TrimSpace(req.Params.Arguments); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&in); err != nil {
				return errorResult("wraptool_request_status takes an optional id (a string) and nothing else."), nil
			}
		}
		recs, _, err := requests.Read(current().RequestLog)
		if err != nil {
			return errorResult("wraptool could not read its request log; the operator can see why in the server log."), nil
		}
		var out StatusResult
		if in.ID != nil {
			i := slices.IndexFunc(recs, func(r *requests.Record) bool { return r.ID == *in.ID })
			if i < 0 {
				return errorResult("No request has the id " + policy.Quote(*in.ID) + "."), nil
			}
			out.Requests = []StatusEntry{entry(recs[i])}
		} else {
			out.Requests = recent(recs)
		}
		var text bytes.Buffer
		enc := json.NewEncoder(&text)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: strings.TrimSuffix(text.String(), "\n")}},
			StructuredContent: out,
		}, nil
	}
}

// recent is every pending request and the most recently decided ones,
// newest first (by decision time for a decided request, by filing time for
// a pending one).
func recent(recs []*requests.Record) []StatusEntry {
	var pending, decided []*requests.Record
	for _, r := range recs {
		if r.Status == requests.StatusPending {
			pending = append(pending, r)
		} else {
			decided = append(decided, r)
		}
	}
	when := func(r *requests.Record) time.Time {
		if r.DecidedAt != nil {
			return *r.DecidedAt
		}
		return r.CreatedAt
	}
	newest := func(a, b *requests.Record) int { return when(b).Compare(when(a)) }
	slices.SortStableFunc(decided, newest)
	all := append(pending, decided[:min(len(decided), maxRecentDecided)]...)
	slices.SortStableFunc(all, newest)
	out := make([]StatusEntry, len(all))
	for i, r := range all {
		out[i] = entry(r)
	}
	return out
}

func entry(r *requests.Record) StatusEntry {
	e := StatusEntry{ID: r.ID, Tool: r.Tool, Subcommand: r.Subcommand, Flags: r.Flags, Status: r.Status,
		CreatedAt: r.CreatedAt, DecidedAt: r.DecidedAt, Reason: r.Reason, Applied: r.Applied}
	if g := r.Grant; g != nil {
		e.Grant = &StatusGrant{Once: g.Once, Until: g.Until, UsedAt: g.UsedAt, Exact: g.Exact}
	}
	if r.Call != nil {
		e.Command = r.Call.Command
	}
	if allowsNothing(r) {
		e.Note = NothingAllowedNote
	}
	return e
}
