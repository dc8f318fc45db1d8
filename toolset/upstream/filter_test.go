package upstream

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func upstreamTool(name string) *mcp.Tool {
	return &mcp.Tool{Name: name, Description: "d " + name, InputSchema: map[string]any{"type": "object"}}
}

func TestExposeUpstream(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 62)
	withSchema := func(name string, in, out any) *mcp.Tool {
		tool := upstreamTool(name)
		tool.InputSchema, tool.OutputSchema = in, out
		return tool
	}
	cases := []struct {
		name        string
		filter      Filter
		offered     []*mcp.Tool
		wantExposed []string // exposed name=upstream name
		wantSkipped []string // tool: reason fragment
		wantMissing []string
	}{
		{"default deny: nothing allowed, nothing exposed", Filter{Prefix: "fs"},
			[]*mcp.Tool{upstreamTool("read"), upstreamTool("write")}, nil, nil, nil},
		{"exact names only", Filter{Prefix: "fs", Allow: []string{"read", "Write", "rea"}},
			[]*mcp.Tool{upstreamTool("read"), upstreamTool("write"), upstreamTool("reader")},
			[]string{"fs_read=read"}, nil, []string{"Write", "rea"}},
		{"deny wins over allow", Filter{Prefix: "fs", Allow: []string{"read", "write"}, Deny: []string{"write"}},
			[]*mcp.Tool{upstreamTool("read"), upstreamTool("write")}, []string{"fs_read=read"}, nil, nil},
		{"a denied name missing upstream is not reported missing", Filter{Prefix: "fs", Allow: []string{"gone"}, Deny: []string{"gone"}},
			nil, nil, nil, nil},
		{"name rules: characters", Filter{Prefix: "fs", Allow: []string{"read.file", "a b", "ok-1_x"}},
			[]*mcp.Tool{upstreamTool("read.file"), upstreamTool("a b"), upstreamTool("ok-1_x")},
			[]string{"fs_ok-1_x=ok-1_x"}, []string{`read.file: the exposed name "fs_read.file" does not match`, `a b: the exposed name "fs_a b" does not match`}, nil},
		{"name rules: 64 characters at most", Filter{Prefix: "fs", Allow: []string{long, long[:61]}},
			[]*mcp.Tool{upstreamTool(long), upstreamTool(long[:61])},
			[]string{"fs_" + long[:61] + "=" + long[:61]}, []string{long + ": is 65 characters; the limit is 64"}, nil},
		{"a name listed twice upstream", Filter{Prefix: "fs", Allow: []string{"read"}},
			[]*mcp.Tool{upstreamTool("read"), upstreamTool("read")}, []string{"fs_read=read"}, []string{"read: lists this name twice"}, nil},
		{"nil tools are ignored", Filter{Prefix: "fs", Allow: []string{"read"}},
			[]*mcp.Tool{nil, upstreamTool("read")}, []string{"fs_read=read"}, nil, nil},
		{"schemas the SDK would refuse", Filter{Prefix: "fs", Allow: []string{"noschema", "array", "string", "badout", "good"}},
			[]*mcp.Tool{withSchema("noschema", nil, nil), withSchema("array", map[string]any{"type": "array"}, nil),
				withSchema("string", "object", nil), withSchema("badout", map[string]any{"type": "object"}, []int{1}),
				withSchema("good", json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`), map[string]any{"type": "object"})},
			[]string{"fs_good=good"},
			[]string{"noschema: input schema is not a JSON object", `array: input schema has type array, not "object"`,
				"string: input schema is not a JSON object", "badout: output schema is not a JSON object"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			exposed, skipped, missing := Expose(tc.filter, tc.offered)
			var gotExposed []string
			for _, e := range exposed {
				gotExposed = append(gotExposed, e.Def.Name+"="+e.Upstream)
			}
			if !slices.Equal(gotExposed, tc.wantExposed) {
				t.Errorf("exposed %q, want %q", gotExposed, tc.wantExposed)
			}
			if len(skipped) != len(tc.wantSkipped) {
				t.Fatalf("skipped %+v, want %q", skipped, tc.wantSkipped)
			}
			for i, want := range tc.wantSkipped {
				tool, reason, _ := strings.Cut(want, ": ")
				if skipped[i].Tool != tool || !strings.Contains(skipped[i].Reason, reason) {
					t.Errorf("skipped[%d] = %+v, want %s: …%s…", i, skipped[i], tool, reason)
				}
			}
			if !slices.Equal(missing, tc.wantMissing) {
				t.Errorf("missing %q, want %q", missing, tc.wantMissing)
			}
		})
	}
}

// TestExposePassesDefinitionsThrough shows the exposed definition is
// the upstream's, renamed, without its _meta, and that the upstream's own
// value is left as it was.
func TestExposeUpstreamPassesDefinitionsThrough(t *testing.T) {
	t.Parallel()
	up := &mcp.Tool{
		Name: "read", Title: "Read", Description: "Read a file.",
		InputSchema:  map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}},
		OutputSchema: map[string]any{"type": "object"},
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, Title: "reader"},
		Icons:        []mcp.Icon{{Source: "https://example.com/i.png"}},
		Meta:         mcp.Meta{"vendor/ui": "x"},
	}
	exposed, _, _ := Expose(Filter{Prefix: "fs", Allow: []string{"read"}}, []*mcp.Tool{up})
	if len(exposed) != 1 {
		t.Fatalf("exposed %v", exposed)
	}
	want := *up
	want.Name, want.Meta = "fs_read", nil
	got, _ := json.Marshal(exposed[0].Def)
	w, _ := json.Marshal(&want)
	if string(got) != string(w) {
		t.Errorf("definition\n got %s\nwant %s", got, w)
	}
	if up.Name != "read" || up.Meta == nil {
		t.Errorf("the upstream's definition was changed: %+v", up)
	}
}

// FuzzExpose checks, for any offered names and filter, that every
// exposed tool was allowed, not denied, follows the name rules, and is
// exposed once.
func FuzzExpose(f *testing.F) {
	f.Add("fs", "read,write", "write", "read,write,read.file")
	f.Add("x", "", "", "a")
	f.Add("p", "a b,c", "", "a b,c,c")
	f.Fuzz(func(t *testing.T, prefix, allow, deny, offered string) {
		split := func(s string) []string {
			if s == "" {
				return nil
			}
			return strings.Split(s, ",")
		}
		var tools []*mcp.Tool
		for _, n := range split(offered) {
			tools = append(tools, upstreamTool(n))
		}
		filter := Filter{Prefix: prefix, Allow: split(allow), Deny: split(deny)}
		exposed, _, _ := Expose(filter, tools)
		seen := map[string]bool{}
		for _, e := range exposed {
			switch {
			case !slices.Contains(filter.Allow, e.Upstream):
				t.Fatalf("%q exposed without being allowed", e.Upstream)
			case slices.Contains(filter.Deny, e.Upstream):
				t.Fatalf("%q exposed though denied", e.Upstream)
			case e.Def.Name != prefix+"_"+e.Upstream:
				t.Fatalf("%q exposed as %q", e.Upstream, e.Def.Name)
			case len(e.Def.Name) > 64 || strings.ContainsFunc(e.Def.Name, func(r rune) bool {
				return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
			}):
				t.Fatalf("%q breaks the name rules", e.Def.Name)
			case seen[e.Def.Name]:
				t.Fatalf("%q exposed twice", e.Def.Name)
			}
			seen[e.Def.Name] = true
		}
	})
}
