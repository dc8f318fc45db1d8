package toolset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
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
				"wait_seconds": map[string]any{"type": "integer", "minimum": 0, "maximum": MaxWaitSeconds,
					"description": "Wait up to this many seconds (0 to 300) for the operator's decision; the call returns as soon as " +
						"the request is decided. Progress notifications come every 5 s when the call carries a progress token."},
			},
			"required": []string{"rationale"},
		},
		OutputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"id":      map[string]any{"type": "string"},
				"status":  map[string]any{"type": "string"},
				"reason":  map[string]any{"type": "string", "description": "the operator's reason, once decided"},
				"applied": map[string]any{"type": "boolean", "description": "merged into the config, once approved"},
				"grant":   map[string]any{"type": "object", "description": "a temporary grant's terms: once, until"},
			},
			"required": []string{"id", "status"},
		},
	}
}

// requestInput is the built-in tool's input as sent; a nil pointer is a
// property that is absent or null.
type requestInput struct {
	Tool       *string
	Subcommand *[]string
	Flags      []string
	CallID     *string
	Rationale  *string
	Enables    string
	Wait       json.RawMessage
	// wrong names the properties given with the wrong type (already
	// reported): they count as given, so no "is required" follows.
	wrong map[string]bool
}

// requestProperties are the request tool's input properties, in the order
// its errors name them.
var requestProperties = []string{"tool", "subcommand", "flags", "call_id", "rationale", "enables", "wait_seconds"}

// decodeRequest reads raw into a requestInput. Every problem is reported in
// the product's words, for the assistant to correct: a property of the
// wrong type is named with the type it needs ("subcommand must be an array
// of strings"), never with the Go decoder's message, which names Go types
// and struct fields the assistant has never seen.
func decodeRequest(raw json.RawMessage, bad func(string, ...any)) (requestInput, bool) {
	in := requestInput{wrong: map[string]bool{}}
	var props map[string]json.RawMessage
	if err := json.Unmarshal(raw, &props); err != nil {
		bad("the arguments must be an object with tool, subcommand, flags (or call_id), rationale, enables and wait_seconds")
		return in, false
	}
	var unknown []string
	for name := range props {
		if !slices.Contains(requestProperties, name) {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown)
	for _, name := range unknown {
		if len(name) > maxTokenLen {
			name = name[:maxTokenLen] + "…"
		}
		bad("unknown field %q; the fields are %s", name, strings.Join(requestProperties, ", "))
	}
	present := func(name string) (json.RawMessage, bool) {
		v, ok := props[name]
		return v, ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
	}
	str := func(name string) *string {
		v, ok := present(name)
		if !ok {
			return nil
		}
		var out string
		if json.Unmarshal(v, &out) != nil {
			bad("%s must be a string", name)
			in.wrong[name] = true
			return nil
		}
		return &out
	}
	list := func(name string) *[]string {
		v, ok := present(name)
		if !ok {
			return nil
		}
		var out []string
		if json.Unmarshal(v, &out) != nil {
			bad("%s must be an array of strings", name)
			in.wrong[name] = true
			return nil
		}
		if out == nil {
			out = []string{}
		}
		return &out
	}
	in.Tool, in.Subcommand, in.CallID, in.Rationale = str("tool"), list("subcommand"), str("call_id"), str("rationale")
	if flags := list("flags"); flags != nil {
		in.Flags = *flags
	}
	if enables := str("enables"); enables != nil {
		in.Enables = *enables
	}
	in.Wait = props["wait_seconds"]
	return in, true
}

// MaxWaitSeconds bounds wait_seconds, how long a request call waits for the
// operator's decision.
const MaxWaitSeconds = 300

// Parsed is a checked wraptool_request_capability input.
type Parsed struct {
	// Request is what to record; for an exact-call request only Rationale
	// and Enables are set, and CallID names the call to look up.
	Request requests.Request
	CallID  string
	// Wait is how long the call may wait for a decision; zero for none.
	Wait time.Duration
}

// waitSeconds reads wait_seconds: absent or null is 0; a JSON integer or a
// string of digits from 0 to MaxWaitSeconds.
func waitSeconds(raw json.RawMessage) (time.Duration, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return 0, nil
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, fmt.Errorf("wait_seconds must be an integer from 0 to %d", MaxWaitSeconds)
		}
	} else {
		s = string(raw)
	}
	if s == "" || len(s) > 3 || strings.Trim(s, "0123456789") != "" {
		if len(raw) > 24 { // the value is echoed only while it is short
			return 0, fmt.Errorf("wait_seconds must be an integer from 0 to %d", MaxWaitSeconds)
		}
		return 0, fmt.Errorf("wait_seconds must be an integer from 0 to %d, got %s", MaxWaitSeconds, raw)
	}
	n, _ := strconv.Atoi(s)
	if n > MaxWaitSeconds {
		return 0, fmt.Errorf("wait_seconds must be an integer from 0 to %d, got %d", MaxWaitSeconds, n)
	}
	return time.Duration(n) * time.Second, nil
}

// ParseRequest checks a wraptool_request_capability input: token and flag
// syntax, lengths, required fields. Duplicate flags are dropped. The error
// says what is wrong, for the assistant to correct. An exact-call request
// (call_id given instead of tool, subcommand and flags) comes back with
// callID set and only Rationale and Enables filled: the caller looks the
// call up.
func ParseRequest(raw json.RawMessage) (Parsed, error) {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	in, ok := decodeRequest(raw, bad)
	if !ok {
		return Parsed{}, errors.New(strings.Join(errs, "; "))
	}
	wait, err := waitSeconds(in.Wait)
	if err != nil {
		bad("%v", err)
	}
	if in.CallID != nil || in.wrong["call_id"] {
		switch {
		case in.Tool != nil || in.Subcommand != nil || in.Flags != nil || in.wrong["tool"] || in.wrong["subcommand"] || in.wrong["flags"]:
			bad("give tool and subcommand, or call_id, not both")
		case in.CallID != nil && !validCallID(*in.CallID):
			bad("call_id %q is not one wraptool issues (call_ and 8 hex digits)", *in.CallID)
		}
		rationale(in, bad)
		if len(errs) > 0 {
			return Parsed{}, errors.New(strings.Join(errs, "; "))
		}
		return Parsed{Request: requests.Request{Rationale: *in.Rationale, Enables: in.Enables}, CallID: *in.CallID, Wait: wait}, nil
	}
	switch {
	case in.wrong["tool"]:
	case in.Tool == nil || *in.Tool == "":
		bad("tool is required")
	case len(*in.Tool) > maxTokenLen || !policy.ValidToken(*in.Tool):
		bad("tool %q must match [A-Za-z0-9][A-Za-z0-9_-]* (at most %d characters)", *in.Tool, maxTokenLen)
	case strings.HasPrefix(strings.ToLower(*in.Tool), policy.ReservedPrefix):
		bad("tool %q is one of wraptool's own", *in.Tool)
	}
	var sub []string
	switch {
	case in.wrong["subcommand"]:
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
		return Parsed{}, errors.New(strings.Join(errs, "; "))
	}
	if flags == nil {
		flags = []string{}
	}
	return Parsed{Request: requests.Request{Tool: *in.Tool, Subcommand: sub, Flags: flags, Rationale: *in.Rationale, Enables: in.Enables}, Wait: wait}, nil
}

// rationale checks the free-text fields every request has.
func rationale(in requestInput, bad func(string, ...any)) {
	switch {
	case in.wrong["rationale"]:
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
