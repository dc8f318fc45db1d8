package upstream

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
)

// Filter is one mcp_servers entry's exposure rules: which of the
// upstream's tools are exposed, and under what prefix.
type Filter struct {
	// Prefix is the name_prefix; exposed names are Prefix + "_" + name.
	Prefix string
	// Allow and Deny are exact upstream tool names. A tool is exposed only
	// when allowed and not denied.
	Allow, Deny []string
}

// FilterOf is an mcp_servers entry's exposure rules.
func FilterOf(s *config.MCPServer) Filter {
	f := Filter{Prefix: s.NamePrefix}
	for _, ref := range s.Allow {
		f.Allow = append(f.Allow, ref.Tool)
	}
	for _, ref := range s.Deny {
		f.Deny = append(f.Deny, ref.Tool)
	}
	return f
}

// Tool is one exposed upstream tool.
type Tool struct {
	// Upstream is the upstream's own name, which calls are forwarded to.
	Upstream string
	// Def is the definition clients see: the upstream's, renamed.
	Def *mcp.Tool
}

// Skip is an allowed upstream tool that is not exposed, and why; the
// caller logs it.
type Skip struct {
	// Tool is the upstream's name for it.
	Tool string
	// Reason says why, in lower case.
	Reason string
}

// Expose applies f to the tools an upstream offers. Tools neither
// allowed nor denied are hidden silently: hiding is the default. An allowed
// tool is skipped, with a reason, when its exposed name breaks the name
// rules, its input schema is not an object schema (no client could call it,
// and the SDK would refuse it), or the upstream lists the name twice.
// Missing lists the allowed names the upstream does not offer, so a typo in
// the config is visible.
//
// Each definition is passed through as the upstream wrote it (title,
// description, schemas, annotations, icons) under its new name, except its
// _meta, which is dropped: it addresses the upstream's own clients, not
// wraptool's.
func Expose(f Filter, offered []*mcp.Tool) (exposed []Tool, skipped []Skip, missing []string) {
	allow, deny := set(f.Allow), set(f.Deny)
	seen := map[string]bool{}
	for _, t := range offered {
		if t == nil || !allow[t.Name] || deny[t.Name] {
			continue
		}
		if seen[t.Name] {
			skipped = append(skipped, Skip{t.Name, "the upstream lists this name twice; only the first is exposed"})
			continue
		}
		seen[t.Name] = true
		name := f.Prefix + "_" + t.Name
		if reason := policy.ExposedNameProblem(name); reason != "" {
			skipped = append(skipped, Skip{t.Name, reason})
			continue
		}
		if reason := schemaProblem(t); reason != "" {
			skipped = append(skipped, Skip{t.Name, reason})
			continue
		}
		def := *t
		def.Name = name
		def.Meta = nil
		exposed = append(exposed, Tool{Upstream: t.Name, Def: &def})
	}
	for _, name := range f.Allow {
		if !seen[name] && !deny[name] {
			missing = append(missing, name)
		}
	}
	return exposed, skipped, missing
}

// schemaProblem checks what the MCP SDK requires of a definition it serves:
// an input schema that is a JSON object of type "object", and an output
// schema, when there is one, that is a JSON object.
func schemaProblem(t *mcp.Tool) string {
	in, ok := jsonObject(t.InputSchema)
	if !ok {
		return "its input schema is not a JSON object"
	}
	if in["type"] != "object" {
		return fmt.Sprintf("its input schema has type %v, not \"object\"", in["type"])
	}
	if t.OutputSchema != nil {
		if _, ok := jsonObject(t.OutputSchema); !ok {
			return "its output schema is not a JSON object"
		}
	}
	return ""
}

func jsonObject(v any) (map[string]any, bool) {
	if v == nil {
		return nil, false
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	if json.Unmarshal(data, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

func set(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
