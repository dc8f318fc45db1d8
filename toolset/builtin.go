package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/requests"
)

// Bounds on a capability request's input.
const (
	maxTokenLen     = 64
	maxSubcommand   = 16
	maxFlags        = 64
	maxFlagLen      = 128
	maxRationaleLen = 4 << 10
	maxEnablesLen   = 4 << 10
)

// RequestDefinition is the built-in wraptool_request_capability tool.
func RequestDefinition() *mcp.Tool {
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	list := func(desc string) map[string]any {
		return map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": desc}
	}
	return &mcp.Tool{
		Name: policy.RequestTool,
		Description: "Ask the operator for a capability wraptool refused: a tool's subcommand and the flags " +
			"it needs (give tool and subcommand), or exactly one refused call (give the call_id its denial " +
			"carried). The request is recorded for review; nothing changes until the operator approves it, " +
			"after which the tool list changes.",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"tool":       str("The wrapped tool, e.g. git."),
				"subcommand": list("The subcommand tokens, e.g. [\"push\"]; [] for the bare tool."),
				"flags":      list("Flags needed, each -X or --name, e.g. [\"--force-with-lease\"]."),
				"call_id":    str("Instead of tool, subcommand and flags: the call_id of a refused call, to ask for exactly that call."),
				"rationale":  str("Why the capability is needed."),
				"enables":    str("What approval would let you do."),
			},
			"required": []string{"rationale"},
		},
		OutputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"id":     map[string]any{"type": "string"},
				"status": map[string]any{"type": "string"},
			},
			"required": []string{"id", "status"},
		},
	}
}

// requestInput is the built-in tool's input as sent.
type requestInput struct {
	Tool       *string   `json:"tool"`
	Subcommand *[]string `json:"subcommand"`
	Flags      []string  `json:"flags"`
	CallID     *string   `json:"call_id"`
	Rationale  *string   `json:"rationale"`
	Enables    string    `json:"enables"`
}

// ParseRequest checks a wraptool_request_capability input: token and flag
// syntax, lengths, required fields. Duplicate flags are dropped. The error
// says what is wrong, for the assistant to correct. An exact-call request
// (call_id given instead of tool, subcommand and flags) comes back with
// callID set and only Rationale and Enables filled: the caller looks the
// call up.
func ParseRequest(raw json.RawMessage) (r requests.Request, callID string, err error) {
	var in requestInput
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return requests.Request{}, "", fmt.Errorf("the arguments must be an object with tool, subcommand, flags (or call_id), rationale and enables: %v", err)
	}
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if in.CallID != nil {
		switch {
		case in.Tool != nil || in.Subcommand != nil || in.Flags != nil:
			bad("give tool and subcommand, or call_id, not both")
		case !validCallID(*in.CallID):
			bad("call_id %q is not one wraptool issues (call_ and 8 hex digits)", *in.CallID)
		}
		rationale(in, bad)
		if len(errs) > 0 {
			return requests.Request{}, "", errors.New(strings.Join(errs, "; "))
		}
		return requests.Request{Rationale: *in.Rationale, Enables: in.Enables}, *in.CallID, nil
	}
	switch {
	case in.Tool == nil || *in.Tool == "":
		bad("tool is required")
	case len(*in.Tool) > maxTokenLen || !policy.ValidToken(*in.Tool):
		bad("tool %q must match [A-Za-z0-9][A-Za-z0-9_-]* (at most %d characters)", *in.Tool, maxTokenLen)
	case strings.HasPrefix(strings.ToLower(*in.Tool), policy.ReservedPrefix):
		bad("tool %q is one of wraptool's own", *in.Tool)
	}
	var sub []string
	switch {
	case in.Subcommand == nil:
		bad("subcommand is required ([] for the bare tool)")
	case len(*in.Subcommand) > maxSubcommand:
		bad("subcommand has %d tokens; at most %d", len(*in.Subcommand), maxSubcommand)
	default:
		sub = *in.Subcommand
		for _, tok := range sub {
			if len(tok) > maxTokenLen || !policy.ValidToken(tok) {
				bad("subcommand token %q must match [A-Za-z0-9][A-Za-z0-9_-]* (at most %d characters)", tok, maxTokenLen)
			}
		}
	}
	if len(in.Flags) > maxFlags {
		bad("flags has %d entries; at most %d", len(in.Flags), maxFlags)
	}
	var flags []string
	for _, f := range in.Flags {
		if len(f) > maxFlagLen || !policy.ValidFlag(f) {
			bad("flag %q must be -X or --name, name in [A-Za-z0-9][A-Za-z0-9_.-]*", f)
			continue
		}
		if !slices.Contains(flags, f) {
			flags = append(flags, f)
		}
	}
	rationale(in, bad)
	if len(errs) > 0 {
		return requests.Request{}, "", errors.New(strings.Join(errs, "; "))
	}
	if flags == nil {
		flags = []string{}
	}
	return requests.Request{Tool: *in.Tool, Subcommand: sub, Flags: flags, Rationale: *in.Rationale, Enables: in.Enables}, "", nil
}

// rationale checks the free-text fields every request has.
func rationale(in requestInput, bad func(string, ...any)) {
	switch {
	case in.Rationale == nil || strings.TrimSpace(*in.Rationale) == "":
		bad("rationale is required: say why the capability is needed")
	default:
		textBounds("rationale", *in.Rationale, maxRationaleLen, bad)
	}
	textBounds("enables", in.Enables, maxEnablesLen, bad)
}

// validCallID reports whether s has the form of a call_id: "call_" and 8
// lowercase hex digits.
func validCallID(s string) bool {
	hex, ok := strings.CutPrefix(s, "call_")
	if !ok || len(hex) != 8 {
		return false
	}
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// textBounds checks free text the operator will read in a terminal or a
// browser: bounded, UTF-8, and free of anything that could hide or fake what
// is shown — controls other than newline and tab, line and paragraph
// separators, bidirectional and zero-width characters, tags. It is the rule
// denials escape by (policy.NeedsEscape), so the two paths agree on what is
// hostile.
func textBounds(field, s string, limit int, bad func(string, ...any)) {
	switch {
	case len(s) > limit:
		bad("%s is %d bytes; at most %d", field, len(s), limit)
	case !utf8.ValidString(s):
		bad("%s must be UTF-8 text", field)
	case policy.NeedsEscape(withoutLineBreaks(s)):
		bad("%s must not contain control characters, line separators, bidirectional or zero-width characters (newlines and tabs are fine)", field)
	}
}

// withoutLineBreaks drops the two controls free text may hold.
func withoutLineBreaks(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return -1
		}
		return r
	}, s)
}

// Submitter records a request, or finds the identical pending one.
type Submitter func(context.Context, requests.Request) (requests.Submitted, error)

// RequestResult is the built-in tool's structuredContent.
type RequestResult struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// NewRequestHandler returns the handler of wraptool_request_capability.
// denials resolves the call_id of an exact-call request; nil knows none.
func NewRequestHandler(submit Submitter, denials *Denials, log *slog.Logger) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r, callID, err := ParseRequest(req.Params.Arguments)
		if err != nil {
			return errorResult("The request was not recorded: " + err.Error() + "."), nil
		}
		if callID != "" {
			denied, ok := denials.Get(callID, time.Now())
			if !ok {
				return errorResult("The request was not recorded: call_id " + callID + " is unknown or expired " +
					"(wraptool remembers the last " + fmt.Sprint(MaxDenials) + " refused calls for " + DenialTTL.String() +
					"); make the call again to get a new one, or ask for the capability with tool and subcommand."), nil
			}
			call := denied.Call
			r.Tool, r.Subcommand, r.Flags, r.Call = denied.Tool, denied.Subcommand, denied.Flags, &call
		}
		s, err := submit(ctx, r)
		if err != nil {
			log.Warn("capability request not recorded", "tool", r.Tool, "subcommand", r.Subcommand, "error", err)
			if errors.Is(err, requests.ErrLocked) {
				// Another process (the CLI, a backup) holds the log: say so,
				// naming the file, so the assistant can try again later.
				return errorResult("The request was not recorded: " + err.Error() + ". Try again in a moment."), nil
			}
			if errors.Is(err, requests.ErrPendingLimit) {
				return errorResult("The request was not recorded: the pending limit is reached (" +
					fmt.Sprint(requests.MaxPending) + " requests await the operator's decision). " +
					"A slot frees when the operator decides one."), nil
			}
			// The detail (paths, I/O errors) is for the operator's log.
			return errorResult("The request was not recorded: wraptool could not write its request log; " +
				"the operator can see why in the server log."), nil
		}
		text := "Request " + s.ID + " recorded (pending). The operator will review it; if it is approved, " +
			"this server's tool list changes and you are notified."
		if s.Existing {
			text = "Request " + s.ID + " recorded (pending). An identical request was already pending, " +
				"so no new one was filed; the operator will review it."
		} else {
			log.Info("capability request recorded", "id", s.ID, "tool", r.Tool, "subcommand", r.Subcommand, "flags", r.Flags)
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: text}},
			StructuredContent: RequestResult{ID: s.ID, Status: requests.StatusPending},
		}, nil
	}
}
