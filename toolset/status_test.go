package toolset

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy/requests"
)

func TestStatusHandler(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: the status tool against real calls")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 60 {
		s, err := requests.Submit(t.Context(), path, requests.Request{Tool: "git", Subcommand: []string{fmt.Sprintf("s%02d", i)}, Flags: []string{}, Rationale: "r"}, t0.Add(time.Duration(i)*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	// 55 decided (the first 55, decided in order), 5 pending.
	for i, id := range ids[:55] {
		d := requests.Decision{Status: requests.StatusDenied, Reason: "use --force-with-lease instead", DecidedBy: requests.DecidedByCLI}
		if i == 54 {
			d = requests.Decision{Status: requests.StatusApproved, Applied: true, DecidedBy: requests.DecidedByCLI}
		}
		if err := requests.Decide(t.Context(), path, id, d, t0.Add(2*time.Hour+time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	h := NewStatusHandler(func() *State { return &State{RequestLog: path} })
	call := func(args string) (*mcp.CallToolResult, StatusResult) {
		res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: StatusTool, Arguments: json.RawMessage(args)}})
		if err != nil {
			t.Fatal(err)
		}
		var out StatusResult
		if !res.IsError {
			json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out)
		}
		return res, out
	}

	_, all := call(`{}`)
	if len(all.Requests) != 5+50 {
		t.Fatalf("%d requests, want the 5 pending and the 50 most recently decided", len(all.Requests))
	}
	if first := all.Requests[0]; first.ID != ids[54] || first.Status != requests.StatusApproved || first.Applied == nil || !*first.Applied {
		t.Errorf("first = %+v, want the most recent decision (approved, applied)", first)
	}
	for i := 1; i < len(all.Requests); i++ {
		if strings.Contains(fmt.Sprint(all.Requests[i]), ids[0]) {
			t.Errorf("the oldest decision is listed, beyond the 50 most recent")
		}
	}

	res, one := call(`{"id":"` + ids[3] + `"}`)
	if res.IsError || len(one.Requests) != 1 || one.Requests[0].Reason == nil || *one.Requests[0].Reason != "use --force-with-lease instead" {
		t.Errorf("by id: %+v", one)
	}
	if res, _ := call(`{"id":"req_deadbeef"}`); !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "req_deadbeef") {
		t.Errorf("an unknown id is not an error naming it: %+v", res.Content)
	}
	if res, _ := call(`{"id":5}`); !res.IsError {
		t.Errorf("a non-string id is not an error")
	}
	structured, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(structured), `"reason":"use --force-with-lease instead"`) {
		t.Errorf("structuredContent %s", structured)
	}
}

func TestAnApprovalThatAllowsNothingSaysSo(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	until := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	reason := "no"
	cases := []struct {
		name     string
		rec      requests.Record
		wantNote bool
		wantText string
	}{
		{"a plain approval allows nothing", requests.Record{ID: "req_00000001", Status: requests.StatusApproved, Applied: &no}, true,
			"Request req_00000001 approved, but nothing is allowed until the operator adds the rule."},
		{"a plain approval without applied allows nothing", requests.Record{ID: "req_00000002", Status: requests.StatusApproved}, true,
			"Request req_00000002 approved, but nothing is allowed until the operator adds the rule."},
		{"an applied approval allows", requests.Record{ID: "req_00000003", Status: requests.StatusApproved, Applied: &yes}, false,
			"Request req_00000003 approved and applied to the config."},
		{"a timed grant allows", requests.Record{ID: "req_00000004", Status: requests.StatusApproved, Applied: &no,
			Grant: &requests.Grant{Until: until}}, false, "Request req_00000004 approved until 2026-12-01T10:00:00Z."},
		{"a once-grant allows", requests.Record{ID: "req_00000005", Status: requests.StatusApproved, Applied: &no,
			Grant: &requests.Grant{Once: true, Until: until}}, false, "Request req_00000005 approved (once)."},
		{"a denial is no approval", requests.Record{ID: "req_00000006", Status: requests.StatusDenied, Reason: &reason}, false,
			"Request req_00000006 denied: no"},
		{"a pending request is no approval", requests.Record{ID: "req_00000007", Status: requests.StatusPending}, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := entry(&c.rec)
			if got := e.Note != ""; got != c.wantNote {
				t.Errorf("note = %q, want one: %v", e.Note, c.wantNote)
			}
			if want := "approved, but nothing is allowed until the operator adds the rule"; c.wantNote && e.Note != want {
				t.Errorf("note = %q, want %q", e.Note, want)
			}
			b, _ := json.Marshal(e)
			if c.wantNote != strings.Contains(string(b), `"note":"approved, but nothing is allowed until the operator adds the rule"`) {
				t.Errorf("JSON %s: note present = %v, want %v", b, !c.wantNote, c.wantNote)
			}
			if c.wantText == "" {
				return
			}
			text := DecidedResult(c.rec).Content[0].(*mcp.TextContent).Text
			if !strings.HasPrefix(text, c.wantText) {
				t.Errorf("wait text = %q, want it to start %q", text, c.wantText)
			}
		})
	}
}
