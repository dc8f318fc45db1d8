package toolset

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/requests"
)

// flagHelps lists, per "tool sub", the flags a subcommand's help lists.
type flagHelps map[string][]string

func (h flagHelps) Flag(tool string, sub []string, flag string) (policy.FlagHelp, bool) {
	for _, f := range h[strings.Join(append([]string{tool}, sub...), " ")] {
		if f == flag {
			return policy.FlagHelp{}, true
		}
	}
	return policy.FlagHelp{}, false
}
func (flagHelps) Description(string, []string) string  { return "" }
func (flagHelps) ShortHelpTaken(string, []string) bool { return false }
func (h flagHelps) Subcommands(tool string, sub []string) (map[string]string, bool) {
	_, ok := h[strings.Join(append([]string{tool}, sub...), " ")]
	return nil, ok
}

// Only a request a person can safely approve with one click is put to a
// client's user.
func TestElicitable(t *testing.T) {
	t.Parallel()
	st := &State{
		Policy: newPolicy(t, policy.Tool{Name: "git", Binary: "/usr/bin/git",
			Allow: []*policy.AllowRule{{Subcommand: []string{"status"}}},
			Deny:  []*policy.DenyRule{{Subcommand: []string{"config"}}}}),
		Helps: flagHelps{"git status": {"--short", "-s"}, "git push": {"--force"}},
	}
	for _, tc := range []struct {
		name string
		r    requests.Request
		want string
	}{
		{"a listed flag", requests.Request{Tool: "git", Subcommand: []string{"status"}, Flags: []string{"--short"}}, ""},
		{"no flags on a new subcommand", requests.Request{Tool: "git", Subcommand: []string{"fetch"}}, ""},
		{"a listed flag of another subcommand's help", requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force"}}, ""},
		{"an unknown tool", requests.Request{Tool: "gh", Subcommand: []string{"pr"}}, "the tool is not in the config"},
		{"an empty subcommand", requests.Request{Tool: "git", Flags: []string{"--short"}}, "the request names no subcommand"},
		{"a deny-covered subcommand", requests.Request{Tool: "git", Subcommand: []string{"config", "alias.x"}}, "a deny rule covers the subcommand"},
		{"a prefix of a listed flag", requests.Request{Tool: "git", Subcommand: []string{"status"}, Flags: []string{"--sho"}}, "flag --sho is not in the help"},
		{"a flag where the help is unknown", requests.Request{Tool: "git", Subcommand: []string{"fetch"}, Flags: []string{"--all"}}, "flag --all is not in the help"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := elicitable(st, tc.r); got != tc.want {
				t.Errorf("elicitable = %q, want %q", got, tc.want)
			}
		})
	}
}

// The question names the client first, escapes what the assistant wrote,
// and lists deny first; an exact call offers no hour.
func TestQuestion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		r        requests.Request
		wantMsg  string
		wantEnum string
	}{
		{"flags", requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force"}, Rationale: "rebased"},
			"Desk: the assistant asks to run 'git push' with --force: rebased", "deny,once,hour"},
		{"no flags", requests.Request{Tool: "git", Subcommand: []string{"fetch"}, Rationale: "sync\nnow"},
			"Desk: the assistant asks to run 'git fetch': sync now", "deny,once,hour"},
		{"an exact call", requests.Request{Tool: "git", Subcommand: []string{"push"}, Rationale: "once",
			Call: &requests.Call{Command: []string{"git", "push", "origin", "x'; rm -rf ~"}}},
			`Desk: the assistant asks to run exactly 'git push origin "x'; rm -rf ~"': once`, "deny,once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := question("Desk", tc.r)
			if !strings.HasPrefix(q.Message, "Desk: the assistant asks to run ") {
				t.Errorf("message %q does not start with the client's name", q.Message)
			}
			if q.Message != tc.wantMsg {
				t.Errorf("message %q, want %q", q.Message, tc.wantMsg)
			}
			schema := q.RequestedSchema.(map[string]any)
			enum := schema["properties"].(map[string]any)["decision"].(map[string]any)["enum"].([]string)
			if got := strings.Join(enum, ","); got != tc.wantEnum {
				t.Errorf("choices %s, want %s", got, tc.wantEnum)
			}
		})
	}
}

// A client's answer maps to a decision: accept once/hour approves, deny,
// decline and cancel deny; anything else decides nothing.
func TestRecordAnswer(t *testing.T) {
	t.Parallel()
	plain := requests.Request{Tool: "git", Subcommand: []string{"push"}}
	exact := requests.Request{Tool: "git", Subcommand: []string{"push"}, Call: &requests.Call{Command: []string{"git", "push"}}}
	for _, tc := range []struct {
		name   string
		r      requests.Request
		answer mcp.ElicitResult
		want   string // status, "once", "hour" or "" for nothing
	}{
		{"accept once", plain, mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}, "once"},
		{"accept hour", plain, mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "hour"}}, "hour"},
		{"accept deny", plain, mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "deny"}}, "denied"},
		{"decline", plain, mcp.ElicitResult{Action: "decline"}, "denied"},
		{"cancel", plain, mcp.ElicitResult{Action: "cancel"}, "denied"},
		{"hour on an exact call decides nothing", exact, mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "hour"}}, ""},
		{"once on an exact call", exact, mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}, "once"},
		{"an unknown choice decides nothing", plain, mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "forever"}}, ""},
		{"a choice of the wrong type decides nothing", plain, mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": 1}}, ""},
		{"an unknown action decides nothing", plain, mcp.ElicitResult{Action: "approve"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got *requests.Decision
			tool := &RequestTool{Decide: func(_ context.Context, _ string, d requests.Decision) error {
				got = &d
				return nil
			}}
			tool.init()
			res := tool.record(t.Context(), &State{ConfigPath: "/etc/wraptool/config.yaml"}, "req_0123abcd", "Desk", tc.r, &tc.answer)
			switch {
			case tc.want == "":
				if got != nil || res != nil {
					t.Errorf("decided %+v, want nothing", got)
				}
				return
			case got == nil:
				t.Fatalf("decided nothing, want %s", tc.want)
			case got.DecidedBy != "client" || got.Client != "Desk":
				t.Errorf("decided by %q %q, want client Desk", got.DecidedBy, got.Client)
			}
			switch tc.want {
			case "denied":
				if got.Status != requests.StatusDenied || got.Reason != "declined in the client" || got.Grant != nil {
					t.Errorf("decision %+v, want a denial declined in the client", got)
				}
			case "once":
				if got.Status != requests.StatusApproved || got.Grant == nil || !got.Grant.Once || got.Grant.Exact != (tc.r.Call != nil) {
					t.Errorf("decision %+v, want a once-grant", got)
				}
			case "hour":
				if got.Status != requests.StatusApproved || got.Grant == nil || got.Grant.Once || time.Until(got.Grant.Until) < 59*time.Minute {
					t.Errorf("decision %+v, want an hour's grant", got)
				}
			}
		})
	}
}

// Calls at once from one session cannot all pass the per-session check
// before any is remembered: the eleventh in flight is refused, and a
// released slot lets the next one in.
func TestSessionLimitsCountCallsInFlight(t *testing.T) {
	t.Parallel()
	l := sessionLimits{waiting: map[*mcp.ServerSession]int{}, filed: map[*mcp.ServerSession][]string{}, inflight: map[*mcp.ServerSession]int{}}
	s := &mcp.ServerSession{}
	var releases []func()
	for i := range MaxPendingPerSession {
		res, release := l.pending(t.Context(), s, nil, requests.Request{Tool: "git", Subcommand: []string{"s" + strconv.Itoa(i)}})
		if res != nil {
			t.Fatalf("request %d refused: %v", i, res.Content)
		}
		releases = append(releases, release)
	}
	if res, _ := l.pending(t.Context(), s, nil, requests.Request{Tool: "git", Subcommand: []string{"one-more"}}); res == nil {
		t.Fatalf("an eleventh request in flight passed the limit")
	}
	releases[0]() // its submit failed: nothing filed
	res, release := l.pending(t.Context(), s, nil, requests.Request{Tool: "git", Subcommand: []string{"one-more"}})
	if res != nil {
		t.Fatalf("a freed slot was not given: %v", res.Content)
	}
	release()
	for _, r := range releases[1:] {
		r()
	}
	if len(l.inflight) != 0 {
		t.Errorf("slots left in flight: %v", l.inflight)
	}
}

// At the limit, the session's filed requests are checked with the
// request-log writer: decided ones free their slots, and a request
// identical to a pending one passes (its submit files nothing).
func TestSessionLimitsAskTheWriter(t *testing.T) {
	t.Parallel()
	l := sessionLimits{waiting: map[*mcp.ServerSession]int{}, filed: map[*mcp.ServerSession][]string{}, inflight: map[*mcp.ServerSession]int{}}
	s := &mcp.ServerSession{}
	for i := range MaxPendingPerSession {
		l.remember(s, "req_"+strconv.Itoa(i))
	}
	var asked []string
	stillAll := func(_ context.Context, ids []string, r requests.Request) ([]string, bool, error) {
		asked = ids
		return ids, r.Subcommand[0] == "same", nil
	}
	if res, _ := l.pending(t.Context(), s, stillAll, requests.Request{Tool: "git", Subcommand: []string{"new"}}); res == nil {
		t.Fatalf("a session with 10 pending passed the limit")
	}
	if len(asked) != MaxPendingPerSession {
		t.Errorf("the writer was asked about %v, want the 10 filed ids", asked)
	}
	res, release := l.pending(t.Context(), s, stillAll, requests.Request{Tool: "git", Subcommand: []string{"same"}})
	if res != nil {
		t.Fatalf("a request identical to a pending one was refused")
	}
	release()
	oneDecided := func(_ context.Context, ids []string, _ requests.Request) ([]string, bool, error) {
		return ids[1:], false, nil
	}
	res, release = l.pending(t.Context(), s, oneDecided, requests.Request{Tool: "git", Subcommand: []string{"new"}})
	if res != nil {
		t.Fatalf("a decided request did not free its slot")
	}
	release()
	if got := len(l.filed[s]); got != MaxPendingPerSession-1 {
		t.Errorf("%d filed ids kept, want %d (the decided one forgotten)", got, MaxPendingPerSession-1)
	}
}
