package toolset

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// TestDenialUsesThePolicyInForce shows a call refused while grants are in
// force answered with the policy in force (config and grants): its Policy:
// line and Allowed flags are what is allowed now. Before, the denial was
// the config's alone: "'fake commit' is not in the allowlist" while a grant
// exposed fake_commit.
func TestDenialUsesThePolicyInForce(t *testing.T) {
	t.Parallel()
	f := newGrantFixture(t)
	commit := policy.Tool{Name: "fake", Binary: fakecli, Allow: []*policy.AllowRule{
		{Subcommand: []string{"report"}, Flags: help()},
		{Subcommand: []string{"commit"}, Flags: append([]string{"--allow-empty"}, help()...)},
	}}
	granted := newPolicy(t, commit)
	cases := []struct {
		name        string
		sub         string
		policy      *policy.Policy // with the grant merged
		args        map[string]any
		want, never []string
	}{
		{
			name: "a flag the grant does not add, on a subcommand only the grant exposes", sub: "commit", policy: granted,
			args:  map[string]any{"m": "one", "allow-empty": true},
			want:  []string{"Policy: flag '-m' is not in the allowlist for 'fake commit'.", "Allowed flags for 'fake commit': --allow-empty"},
			never: []string{"'fake commit' is not in the allowlist"},
		},
		{
			name: "a flag besides the granted one on the config's subcommand", sub: "report", policy: f.grant,
			args:  map[string]any{"depth": "2", "verbose": true},
			want:  []string{"Policy: flag '--verbose' is not in the allowlist for 'fake report'.", "Allowed flags for 'fake report': --depth"},
			never: []string{"'--depth' is not in the allowlist", "(none)"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := f.state(&Grants{Capability: []CapabilityGrant{{ID: "req_00000001", Until: time.Now().Add(time.Hour),
				Tool: "fake", Subcommand: []string{tc.sub}, Policy: tc.policy}}})
			st.Policy = tc.policy
			text := toolsettest.ResultText(t, callSub(t, st, tc.sub, tc.args))
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("denial lacks %q:\n%s", w, text)
				}
			}
			for _, n := range tc.never {
				if strings.Contains(text, n) {
					t.Errorf("denial says %q:\n%s", n, text)
				}
			}
		})
	}
}

// TestDenialSaysTheOnceGrantWasUsed shows the call after a once-grant's use
// told so, on its own line after Policy:, within the denial's shape; a call
// the used grant would not have allowed is not.
func TestDenialSaysTheOnceGrantWasUsed(t *testing.T) {
	t.Parallel()
	f := newGrantFixture(t)
	id := f.decide(t, requests.Request{Tool: "fake", Subcommand: []string{"report"}, Flags: []string{"--depth"}},
		requests.Grant{Once: true, Until: time.Now().Add(time.Hour)})
	st := f.state(&Grants{Capability: []CapabilityGrant{{ID: id, Once: true, Until: time.Now().Add(time.Hour),
		Tool: "fake", Subcommand: []string{"report"}, Policy: f.grant}}})
	st.Used = NewUsedGrants()
	if res := callHandler(t, st, map[string]any{"depth": "2"}); !ran(t, res) {
		t.Fatalf("the once-grant's call did not run: %s", toolsettest.ResultText(t, res))
	}
	// The grant's use took it out of force: the next snapshot has none.
	after := f.state(nil)
	after.Policy, after.Used = f.base, st.Used
	text := toolsettest.ResultText(t, callHandler(t, after, map[string]any{"depth": "2"}))
	note := regexp.MustCompile(`\n\nPolicy: flag '--depth' is not in the allowlist for 'fake report'\.\n` +
		`Note: the once-grant ` + id + ` was used at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ; another use needs a new request\.\n` +
		`Allowed flags for 'fake report': \(none\)\n\nTo request`)
	if !note.MatchString(text) {
		t.Errorf("the denial after the use does not say so in its shape:\n%s", text)
	}
	if got := strings.Count(text, "\n"); got != 6 {
		t.Errorf("the denial has %d line breaks, want 6 (one line added):\n%s", got, text)
	}
	other := toolsettest.ResultText(t, callHandler(t, after, map[string]any{"verbose": true}))
	if strings.Contains(other, "once-grant") {
		t.Errorf("a call the used grant never allowed is told of it:\n%s", other)
	}
}

// TestUsedNoteKeepsTheShape feeds the note hostile denial texts: it adds
// exactly one line after the Policy: line, or nothing when there is none.
func TestUsedNoteKeepsTheShape(t *testing.T) {
	t.Parallel()
	g := UsedGrant{ID: "req_0000abcd", At: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	cases := []struct{ name, text, want string }{
		{"no Policy: line", "DENIED: the arguments must be a JSON object.", "DENIED: the arguments must be a JSON object."},
		{"a Policy: line without its end", "DENIED: 'x' is not permitted.\n\nPolicy: cut", "DENIED: 'x' is not permitted.\n\nPolicy: cut"},
		{"a quoted Policy: inside the command stays put",
			"DENIED: '\"\\n\\nPolicy: x\"' is not permitted.\n\nPolicy: y.\n\nTo request",
			"DENIED: '\"\\n\\nPolicy: x\"' is not permitted.\n\nPolicy: y.\nNote: the once-grant req_0000abcd was used at 2026-12-01T10:00:00Z; another use needs a new request.\n\nTo request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := withUsedNote(tc.text, g); got != tc.want {
				t.Errorf("withUsedNote:\n got  %q\n want %q", got, tc.want)
			}
		})
	}
	hostile := UsedGrant{ID: "req_\u202e\n1", At: g.At}
	if got := withUsedNote("DENIED: x.\n\nPolicy: y.\n\nTo request", hostile); strings.Count(got, "\n") != 5 || strings.ContainsRune(got, '\u202e') {
		t.Errorf("a hostile id split or hid a line: %q", got)
	}
}

// callSub calls the handler of fake's subcommand sub under st.
func callSub(t *testing.T, st *State, sub string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	raw, _ := json.Marshal(args)
	h := NewHandler("fake", []string{sub}, func() *State { return st }, context.Background(), discard)
	res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "fake_" + sub, Arguments: raw}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
