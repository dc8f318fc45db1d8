package toolset

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
)

// Definition is the MCP tool for one exposed allow rule: its
// name, a description naming the command and its flags, an object input
// schema with one property per allowed flag plus args and cwd, and the
// output schema of a run.
//
// The input schema never rejects a call: unknown properties are allowed so
// they reach the policy and get a denial that says how to ask for them.
func Definition(r *policy.Rule) *mcp.Tool { return NewDefiner().Definition(r) }

// Definer builds the definitions of a policy's rules, sharing one schema
// map among the properties whose schemas are equal: thousands of rules
// repeat the same flags (--depth, --ref, cwd), and a map per property per
// rule was half of the definitions' memory with 5,000 rules exposed.
// Nothing modifies a definition's schema once built (the SDK and the
// registry only encode it), so sharing is safe. A Definer is not safe for
// concurrent use; one serves one snapshot's rules.
type Definer struct {
	flags map[flagKey]map[string]any
	args  map[argsKey]map[string]any
}

// flagKey is everything flagSchema reads from a flag.
type flagKey struct {
	flag, description, pattern string
	typ                        policy.Type
	min, max                   int64
	hasMin, hasMax             bool
	unproven, help, required   bool
}

// argsKey is everything the args property depends on.
type argsKey struct {
	description string
	max         int
	limited     bool
}

// NewDefiner returns a Definer with nothing shared yet.
func NewDefiner() *Definer {
	return &Definer{flags: map[flagKey]map[string]any{}, args: map[argsKey]map[string]any{}}
}

func (d *Definer) flagSchema(f policy.Flag) map[string]any {
	k := flagKey{flag: f.Flag, description: f.Description, pattern: f.Pattern, typ: f.Type,
		unproven: f.Unproven, help: f.Help, required: f.Required}
	if f.Min != nil {
		k.min, k.hasMin = *f.Min, true
	}
	if f.Max != nil {
		k.max, k.hasMax = *f.Max, true
	}
	if s, ok := d.flags[k]; ok {
		return s
	}
	s := flagSchema(f)
	d.flags[k] = s
	return s
}

func (d *Definer) argsSchema(r *policy.Rule, max int, limited bool) map[string]any {
	k := argsKey{description: "Positional arguments, in order. None may begin with '-': pass flags as named parameters." + argPatterns(r.ArgPatterns()),
		max: max, limited: limited}
	if s, ok := d.args[k]; ok {
		return s
	}
	s := map[string]any{
		"type":        "array",
		"items":       sharedStringItems,
		"description": k.description,
	}
	if limited {
		s["maxItems"] = max
	}
	d.args[k] = s
	return s
}

// sharedStringItems and sharedCwdSchema are the same in every rule.
var (
	sharedStringItems = map[string]any{"type": "string"}
	sharedCwdSchema   = map[string]any{
		"type":        "string",
		"description": "Working directory for the command; defaults to the tool's configured directory.",
	}
)

// Definition is the package-level Definition, sharing schemas with the
// definitions d built before.
func (d *Definer) Definition(r *policy.Rule) *mcp.Tool {
	props := map[string]any{}
	var required []string
	var listed []string
	for _, f := range r.Flags() {
		props[f.Property] = d.flagSchema(f)
		if f.Required {
			required = append(required, f.Property)
		}
		if !f.Help {
			listed = append(listed, f.Flag)
		}
	}
	max, limited := r.PositionalMax()
	if !limited || max > 0 {
		props[policy.ArgsProperty] = d.argsSchema(r, max, limited)
	}
	props[policy.CwdProperty] = sharedCwdSchema
	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		schema["required"] = required
	}
	allowed := "none"
	if len(listed) > 0 {
		allowed = strings.Join(listed, ", ")
	}
	desc := fmt.Sprintf("Run '%s' (allowed flags: %s). Pass each flag as a named parameter "+
		"(true for a switch) and positional arguments in args.", r.Command(), allowed)
	if d := r.Description(); d != "" {
		desc = strings.TrimRight(d, ". ") + ". " + desc
	}
	return &mcp.Tool{
		Name:         r.Name(),
		Description:  desc,
		InputSchema:  schema,
		OutputSchema: sharedOutputSchema,
	}
}

func flagSchema(f policy.Flag) map[string]any {
	s := map[string]any{}
	desc := []string{f.Flag}
	if f.Description != "" {
		desc[0] = f.Flag + ": " + f.Description
	}
	switch f.Type {
	case policy.TypeBoolean:
		s["type"] = "boolean"
		desc = append(desc, "a switch: true adds it")
	case policy.TypeInteger:
		s["type"] = "integer"
		if f.Min != nil {
			s["minimum"] = *f.Min
			desc = append(desc, "at least "+strconv.FormatInt(*f.Min, 10))
		}
		if f.Max != nil {
			s["maximum"] = *f.Max
			desc = append(desc, "at most "+strconv.FormatInt(*f.Max, 10))
		}
	default:
		s["type"] = "string"
	}
	if f.Pattern != "" {
		desc = append(desc, "must match "+policy.AnchorPattern(f.Pattern))
	}
	if f.Unproven {
		desc = append(desc, "its value counts as a positional argument (before args)")
	}
	if f.Help {
		desc = append(desc, "runs alone: give no other flags or arguments")
	}
	if f.Required {
		desc = append(desc, "required")
	}
	s["description"] = strings.Join(desc, "; ")
	return s
}

// sharedOutputSchema is the one output schema every rule's definition
// points at: it is the same for all rules, and a copy per rule was a fifth
// of the definitions' memory with thousands of rules exposed. Nothing
// modifies a definition's schema (the SDK and the registry only encode it).
var sharedOutputSchema = runOutputSchema()

// runOutputSchema describes structuredContent: a run's, or a denial's.
// Clients validate structuredContent against it even on errors, so it
// admits both shapes and requires nothing.
func runOutputSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"exit_code":   map[string]any{"type": "integer", "description": "exit status; -1 when the process has none (timeout, failure to start)"},
			"stdout":      map[string]any{"type": "string"},
			"stderr":      map[string]any{"type": "string"},
			"duration_ms": map[string]any{"type": "integer"},
			"truncated":   map[string]any{"type": "boolean", "description": "true when a stream was cut at the output cap"},
			"denied":      map[string]any{"type": "boolean", "description": "true when wraptool refused the call (nothing ran)"},
			"call_id": map[string]any{"type": "string", "description": "names a refused call for " + policy.RequestTool +
				" (call_id), to ask for exactly this call"},
			"command": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "the refused call as it would have run"},
			"reason":  map[string]any{"type": "string", "description": "why the call was refused"},
		},
	}
}

// argPatterns describes the positional patterns for the args property (the
// policy checks them; the schema only says so, since a client's regex
// dialect may differ from RE2).
func argPatterns(pats []string) string {
	switch len(pats) {
	case 0:
		return ""
	case 1:
		return " Each must match " + policy.AnchorPattern(pats[0]) + "."
	}
	parts := make([]string, len(pats))
	for i, p := range pats {
		parts[i] = "argument " + strconv.Itoa(i+1) + " must match " + policy.AnchorPattern(p)
	}
	return " In order: " + strings.Join(parts, "; ") + "; any later one must match the last."
}
