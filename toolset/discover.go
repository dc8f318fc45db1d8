package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
)

// DiscoverTool is the built-in tool that lists what the assistant could ask
// for: a tool with no allow rules registers no MCP tool at all, so without
// it the assistant would have nothing to call and nothing to be refused.
const DiscoverTool = "wraptool_discover"

// Notes for a tool with nothing callable.
const (
	noteNoRules = "no allow rules: nothing is callable yet — request one of the available subcommands"
	noteDenied  = "every allow rule is covered by a deny rule: nothing is callable — request one of the available subcommands"
)

// Catalog is wraptool_discover's answer: per wrapped tool, what the policy
// allows and what the tool's help advertises beyond it.
type Catalog struct {
	Tools map[string]ToolCatalog `json:"tools"`
}

// ToolCatalog is one tool's entry. Appearing in Available grants nothing.
type ToolCatalog struct {
	// Allowed are the exposed rules' subcommands, tokens joined by spaces;
	// "" is the bare tool.
	Allowed []string `json:"allowed"`
	// Available maps subcommands the tool's help lists but the policy does
	// not allow (nor deny) to their one-line descriptions: the top level,
	// and below each allowed multi-token rule's parent.
	Available map[string]string `json:"available"`
	// Note says why nothing is callable, when Allowed is empty.
	Note string `json:"note,omitempty"`
}

// DiscoverDefinition is the wraptool_discover tool.
func DiscoverDefinition() *mcp.Tool {
	return &mcp.Tool{
		Name: DiscoverTool,
		Description: "List the wrapped tools: for each, the subcommands you may call now (allowed) and those " +
			"its own --help advertises that you could ask the operator for (available) with " +
			"wraptool_request_capability. Appearing in available grants nothing.",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"tool": map[string]any{"type": "string", "description": "One wrapped tool, e.g. git; all when absent."},
			},
		},
	}
}

// Discover builds the catalog from a policy and what the tools' help says
// (helps may be nil). Only wrapped CLI tools appear. An unknown tool is an
// error naming it.
func Discover(p *policy.Policy, helps policy.Helps, tool string) (Catalog, error) {
	names := p.Tools()
	if tool != "" {
		if !slices.Contains(names, tool) {
			return Catalog{}, fmt.Errorf("tool %s is not configured; wrapped tools: %s", policy.Quote(tool), strings.Join(names, ", "))
		}
		names = []string{tool}
	}
	c := Catalog{Tools: map[string]ToolCatalog{}}
	for _, name := range names {
		c.Tools[name] = discoverTool(p, helps, name)
	}
	return c, nil
}

func discoverTool(p *policy.Policy, helps policy.Helps, tool string) ToolCatalog {
	tc := ToolCatalog{Allowed: []string{}, Available: map[string]string{}}
	rules := p.ToolRules(tool)
	allowed := map[string]bool{}
	parents := [][]string{nil} // the top level, then each allowed rule's parent
	for _, r := range rules {
		if !r.Exposed() {
			continue
		}
		sub := r.Subcommand()
		key := strings.Join(sub, " ")
		tc.Allowed = append(tc.Allowed, key)
		allowed[key] = true
		if len(sub) >= 2 {
			parents = append(parents, sub[:len(sub)-1])
		}
	}
	if helps != nil {
		for _, parent := range parents {
			subs, ok := helps.Subcommands(tool, parent)
			if !ok {
				continue
			}
			for name, desc := range subs {
				path := append(slices.Clone(parent), name)
				key := strings.Join(path, " ")
				if name == "help" || !policy.ValidToken(name) || allowed[key] || p.Denies(tool, path) {
					continue
				}
				tc.Available[key] = desc
			}
		}
	}
	slices.Sort(tc.Allowed)
	if len(tc.Allowed) == 0 {
		tc.Note = noteNoRules
		if len(rules) > 0 {
			tc.Note = noteDenied
		}
	}
	return tc
}

// NewDiscoverHandler returns the handler of wraptool_discover. It answers
// from the state in service (introspected while its policy was built, never
// when discover is called): the same JSON as text and structuredContent.
func NewDiscoverHandler(current func() *State) mcp.ToolHandler {
	return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			Tool *string `json:"tool"`
		}
		if raw := bytes.TrimSpace(req.Params.Arguments); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&in); err != nil {
				return errorResult("wraptool_discover takes an optional tool (a string) and nothing else."), nil
			}
		}
		tool := ""
		if in.Tool != nil {
			tool = *in.Tool
		}
		st := current()
		c, err := Discover(st.Policy, st.Helps, tool)
		if err != nil {
			return errorResult(err.Error() + "."), nil
		}
		var text bytes.Buffer
		enc := json.NewEncoder(&text)
		enc.SetEscapeHTML(false) // descriptions such as "<file>" stay readable
		if err := enc.Encode(c); err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: strings.TrimSuffix(text.String(), "\n")}},
			StructuredContent: c,
		}, nil
	}
}
