package toolset

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
)

// subHelps is a Helps that knows only subcommand lists, keyed by "tool sub...".
type subHelps map[string]map[string]string

func (subHelps) Flag(string, []string, string) (policy.FlagHelp, bool) {
	return policy.FlagHelp{}, false
}
func (subHelps) Description(string, []string) string  { return "" }
func (subHelps) ShortHelpTaken(string, []string) bool { return false }
func (h subHelps) Subcommands(tool string, sub []string) (map[string]string, bool) {
	m, ok := h[strings.Join(append([]string{tool}, sub...), " ")]
	return m, ok
}

func discoverPolicy(t *testing.T) *policy.Policy {
	t.Helper()
	return newPolicy(t,
		policy.Tool{Name: "fj", Binary: "/usr/bin/fj"},
		policy.Tool{Name: "git", Binary: "/usr/bin/git", Allow: []*policy.AllowRule{
			{Subcommand: []string{"pull"}}, {Subcommand: []string{}},
		}, Deny: []*policy.DenyRule{{Subcommand: []string{"config"}}}},
		policy.Tool{Name: "gcloud", Binary: "/usr/bin/gcloud", Allow: []*policy.AllowRule{
			{Subcommand: []string{"compute", "instances", "list"}},
		}},
		policy.Tool{Name: "locked", Binary: "/usr/bin/locked", Allow: []*policy.AllowRule{
			{Subcommand: []string{"run"}},
		}, Deny: []*policy.DenyRule{{Subcommand: []string{}}}},
	)
}

func TestDiscover(t *testing.T) {
	t.Parallel()
	helps := subHelps{
		"fj":                       {"pr": "manage pull requests", "issue": "manage issues", "help": "help about any command"},
		"git":                      {"pull": "Fetch and integrate", "push": "Update remote refs", "config": "Get and set options", "bad name": "x"},
		"gcloud":                   {"compute": "Compute Engine", "auth": "Authorize"},
		"gcloud compute instances": {"list": "List instances", "describe": "Describe an instance"},
	}
	got, err := Discover(discoverPolicy(t), helps, "")
	if err != nil {
		t.Fatal(err)
	}
	want := Catalog{Tools: map[string]ToolCatalog{
		"fj":  {Allowed: []string{}, Available: map[string]string{"pr": "manage pull requests", "issue": "manage issues"}, Note: noteNoRules},
		"git": {Allowed: []string{"", "pull"}, Available: map[string]string{"push": "Update remote refs"}},
		"gcloud": {Allowed: []string{"compute instances list"}, Available: map[string]string{
			"compute": "Compute Engine", "auth": "Authorize", "compute instances describe": "Describe an instance"}},
		"locked": {Allowed: []string{}, Available: map[string]string{}, Note: noteDenied},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("catalog:\n got %+v\nwant %+v", got, want)
	}

	one, err := Discover(discoverPolicy(t), nil, "fj")
	if err != nil || len(one.Tools) != 1 || one.Tools["fj"].Note != noteNoRules || len(one.Tools["fj"].Available) != 0 {
		t.Errorf("one tool, nothing known: %+v, %v", one, err)
	}
	if _, err := Discover(discoverPolicy(t), nil, "kubectl"); err == nil || !strings.Contains(err.Error(), "tool 'kubectl' is not configured") {
		t.Errorf("unknown tool: %v", err)
	}
}

func TestDiscoverHandler(t *testing.T) {
	t.Parallel()
	st := &State{Policy: discoverPolicy(t), Helps: subHelps{"fj": {"pr": "manage <pull> requests"}}}
	h := NewDiscoverHandler(func() *State { return st })
	call := func(args string) *mcp.CallToolResult {
		res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: DiscoverTool, Arguments: json.RawMessage(args)}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := call(`{"tool":"fj"}`)
	text := res.Content[0].(*mcp.TextContent).Text
	want := `{"tools":{"fj":{"allowed":[],"available":{"pr":"manage <pull> requests"},"note":"` + noteNoRules + `"}}}`
	if res.IsError || text != want {
		t.Errorf("text:\n got %s\nwant %s", text, want)
	}
	structured, _ := json.Marshal(res.StructuredContent)
	var a, b any
	json.Unmarshal(structured, &a)
	json.Unmarshal([]byte(text), &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("structuredContent %s differs from the text %s", structured, text)
	}
	for _, bad := range []string{`{"tool":"nope"}`, `{"tool":5}`, `{"other":1}`} {
		if res := call(bad); !res.IsError {
			t.Errorf("%s: not an error", bad)
		}
	}
	if res := call(`{}`); res.IsError {
		t.Errorf("no tool: error %v", res.Content)
	}
}
