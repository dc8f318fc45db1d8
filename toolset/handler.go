package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
)

// State is what a tool call needs: the policy and each tool's runtime. It is
// immutable; a call keeps the State it started with through a reload.
type State struct {
	Policy *policy.Policy
	// Runtimes is keyed by tool key.
	Runtimes map[string]Runtime
}

// Output is a run's structuredContent (CONTRACT §3).
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
func NewHandler(tool string, sub []string, current func() *State, stop context.Context, log *slog.Logger) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		st := current()
		params, err := decodeArguments(req.Params.Arguments)
		if err != nil {
			return errorResult("DENIED: the arguments must be a JSON object of named parameters (" + err.Error() + ")."), nil
		}
		d := st.Policy.Evaluate(policy.Call{Tool: tool, Subcommand: sub, Params: params})
		if !d.Allowed() {
			return denied(log, req.Params.Name, d.Refusal), nil
		}
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(stop, cancel)()
		res, d := Execute(runCtx, d, st.Runtimes[tool])
		if !d.Allowed() {
			return denied(log, req.Params.Name, d.Refusal), nil
		}
		log.Info("tool call", "tool", req.Params.Name, "exit_code", res.ExitCode, "duration", res.Duration, "truncated", res.Truncated, "error", errString(res.Err))
		return RunResult(res), nil
	}
}

// RunResult renders a run: one text item with stdout, then stderr under a
// "--- stderr ---" line when there is any, then wraptool's own note when the
// run failed outright; structuredContent carries the fields of Output.
func RunResult(res Result) *mcp.CallToolResult {
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

// denied logs a refusal and renders it for the assistant.
func denied(log *slog.Logger, tool string, r *policy.Refusal) *mcp.CallToolResult {
	log.Info("tool call denied", "tool", tool, "kind", r.Kind.String(), "reason", r.Reason)
	return errorResult(r.Text)
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

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
