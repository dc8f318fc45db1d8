package webui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/policy/requests"
)

// apiPost posts body to /api/requests/{id}/{action} with the admin token.
func (f *fixture) apiPost(t *testing.T, id, action, body string) *responseRecorder {
	t.Helper()
	return &responseRecorder{f.do(t, call{method: "POST", host: "127.0.0.1:8718", target: "/api/requests/" + id + "/" + action,
		header: bearer(adminToken), body: body})}
}

func TestAPIListsFoldedRecordsByStatus(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	list := func(query string) []map[string]any {
		t.Helper()
		w := f.do(t, call{host: "localhost:8718", target: "/api/requests" + query, header: bearer(adminToken)})
		if w.Code != http.StatusOK {
			t.Fatalf("GET /api/requests%s: status %d; body %s", query, w.Code, w.Body)
		}
		var out []map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out == nil {
			t.Fatalf("GET /api/requests%s: body %q is not a JSON array", query, w.Body)
		}
		return out
	}
	if w := f.do(t, call{host: "localhost:8718", target: "/api/requests?status=all", header: bearer(adminToken)}); w.Body.String() != "[]\n" {
		t.Fatalf("an empty log lists %q, want []", w.Body)
	}
	a := f.submit(t, "git", []string{"push"}, []string{"--tags"}, "release")
	b := f.submit(t, "git", []string{"pull"}, []string{"--rebase"}, "sync")
	c := f.submit(t, "git", nil, nil, "anything")
	if w := f.apiPost(t, b, "deny", `{"reason":"use --ff-only"}`); w.Code != 200 {
		t.Fatalf("deny: %d %s", w.Code, w.Body)
	}
	if w := f.apiPost(t, a, "approve", `{}`); w.Code != 200 {
		t.Fatalf("approve: %d %s", w.Code, w.Body)
	}
	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{c}},
		{"?status=pending", []string{c}},
		{"?status=approved", []string{a}},
		{"?status=denied", []string{b}},
		{"?status=all", []string{a, b, c}},
	}
	for _, tt := range tests {
		t.Run("status "+tt.query, func(t *testing.T) {
			got := list(tt.query)
			var ids []string
			for _, r := range got {
				ids = append(ids, r["id"].(string))
			}
			if strings.Join(ids, " ") != strings.Join(tt.want, " ") {
				t.Errorf("ids = %v, want %v", ids, tt.want)
			}
		})
	}
	all := list("?status=all")
	pendingRec, deniedRec := all[2], all[1]
	for _, k := range []string{"id", "created_at", "tool", "subcommand", "flags", "rationale", "enables", "status"} {
		if _, ok := pendingRec[k]; !ok {
			t.Errorf("a pending record lacks %q: %v", k, pendingRec)
		}
	}
	if sub, ok := pendingRec["subcommand"].([]any); !ok || len(sub) != 0 {
		t.Errorf("subcommand of a request for none = %#v, want []", pendingRec["subcommand"])
	}
	if fl, ok := pendingRec["flags"].([]any); !ok || len(fl) != 0 {
		t.Errorf("flags of a request without flags = %#v, want []", pendingRec["flags"])
	}
	if _, ok := pendingRec["decided_at"]; ok {
		t.Errorf("a pending record carries decided_at")
	}
	want := map[string]any{"status": "denied", "reason": "use --ff-only", "applied": false, "decided_by": "admin"}
	for k, v := range want {
		if deniedRec[k] != v {
			t.Errorf("denied record %s = %#v, want %#v", k, deniedRec[k], v)
		}
	}
	if _, err := time.Parse(time.RFC3339, deniedRec["decided_at"].(string)); err != nil {
		t.Errorf("decided_at %v: %v", deniedRec["decided_at"], err)
	}
}

// responseRecorder adds a decoder to the recorder.
type responseRecorder struct{ *httptest.ResponseRecorder }

func (w *responseRecorder) record(t *testing.T) *requests.Record {
	t.Helper()
	var r requests.Record
	if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil {
		t.Fatalf("body %q is not a record: %v", w.Body, err)
	}
	return &r
}

func TestAPIApprove(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		tool     string
		sub      []string
		flags    []string
		decided  bool   // deny it first
		id       string // instead of the filed request's
		body     string
		want     int
		wantErr  string // a substring of the error
		applied  bool
		wantConf string // a substring of the config afterwards
	}{
		{name: "an empty body records the approval alone", tool: "git", sub: []string{"push"}, flags: []string{"--tags"}, want: 200},
		{name: "an empty object records the approval alone", tool: "git", sub: []string{"push"}, flags: []string{"--tags"}, body: `{}`, want: 200},
		{name: "apply merges into the config, then records", tool: "git", sub: []string{"push"}, flags: []string{"--tags"},
			body: `{"apply":true}`, want: 200, applied: true, wantConf: "          - --tags\n"},
		{name: "apply appends a new rule", tool: "git", sub: []string{"fetch"}, flags: []string{"--prune"},
			body: `{"apply":true}`, want: 200, applied: true, wantConf: "- subcommand: [fetch]\n        flags: [\"--prune\"]\n"},
		{name: "an unknown id is 404", tool: "git", sub: []string{"push"}, flags: []string{"--tags"}, id: "req_ffffffff", want: 404, wantErr: "req_ffffffff"},
		{name: "an id with odd characters is 404, escaped", tool: "git", sub: []string{"push"}, id: "req_%E2%80%AEx", want: 404, wantErr: `req_\u202ex`},
		{name: "a decided request is 409", tool: "git", sub: []string{"push"}, flags: []string{"--tags"}, decided: true, want: 409, wantErr: "already denied"},
		{name: "a malformed body is 400", tool: "git", sub: []string{"push"}, body: `{"apply":`, want: 400, wantErr: "malformed"},
		{name: "a body that is not an object is 400", tool: "git", sub: []string{"push"}, body: `[true]`, want: 400, wantErr: "malformed"},
		{name: "null is not an object", tool: "git", sub: []string{"push"}, body: `null`, want: 400},
		{name: "a second JSON value is 400", tool: "git", sub: []string{"push"}, body: `{} {}`, want: 400, wantErr: "more than one"},
		{name: "an unknown field is 400", tool: "git", sub: []string{"push"}, body: `{"aply":true}`, want: 400, wantErr: "aply"},
		{name: "a wrong type is 400", tool: "git", sub: []string{"push"}, body: `{"apply":"yes"}`, want: 400},
		{name: "once and for together are 400", tool: "git", sub: []string{"push"}, flags: []string{"--tags"},
			body: `{"once":true,"for":"8h"}`, want: 400, wantErr: "once and for do not combine"},
		{name: "apply with once is 400", tool: "git", sub: []string{"push"}, flags: []string{"--tags"},
			body: `{"apply":true,"once":true}`, want: 400, wantErr: "apply does not combine with once or for"},
		{name: "apply with for is 400", tool: "git", sub: []string{"push"}, flags: []string{"--tags"},
			body: `{"apply":true,"for":"1h"}`, want: 400, wantErr: "apply does not combine with once or for"},
		{name: "a for that is not a duration is 400", tool: "git", sub: []string{"push"}, flags: []string{"--tags"},
			body: `{"for":"8 hours"}`, want: 400, wantErr: `for "8 hours" is not a duration`},
		{name: "a for without a unit is 400", tool: "git", sub: []string{"push"}, flags: []string{"--tags"},
			body: `{"for":"8"}`, want: 400, wantErr: "is not a duration"},
		{name: "a zero for is 400", tool: "git", sub: []string{"push"}, flags: []string{"--tags"},
			body: `{"for":"0s"}`, want: 400, wantErr: "must be positive"},
		{name: "a negative for is 400", tool: "git", sub: []string{"push"}, flags: []string{"--tags"},
			body: `{"for":"-1h"}`, want: 400, wantErr: "must be positive"},
		{name: "a for over 168h is 400", tool: "git", sub: []string{"push"}, flags: []string{"--tags"},
			body: `{"for":"168h1s"}`, want: 400, wantErr: "at most 168h0m0s"},
		{name: "a once that is not a boolean is 400", tool: "git", sub: []string{"push"}, flags: []string{"--tags"},
			body: `{"once":"yes"}`, want: 400, wantErr: "malformed"},
		{name: "a for that is not a string is 400", tool: "git", sub: []string{"push"}, flags: []string{"--tags"},
			body: `{"for":3600}`, want: 400, wantErr: "malformed"},
		{name: "usage is checked before the id: an unknown id with once and for is 400", tool: "git", sub: []string{"push"},
			id: "req_ffffffff", body: `{"once":true,"for":"1h"}`, want: 400, wantErr: "do not combine"},
		{name: "once false and for empty record the approval alone", tool: "git", sub: []string{"push"}, flags: []string{"--tags"},
			body: `{"apply":false,"once":false,"for":""}`, want: 200},
		{name: "a flag the help does not list is 422", tool: "git", sub: []string{"push"}, flags: []string{"--verb"}, body: `{}`,
			want: 422, wantErr: "--verb (NOT IN 'git push --help')"},
		{name: "unlisted_ok approves a flag the help does not list", tool: "git", sub: []string{"push"}, flags: []string{"--verb"},
			body: `{"unlisted_ok":true}`, want: 200},
		{name: "a flag of a subcommand whose help is unknown is 422", tool: "git", sub: []string{"log"}, flags: []string{"--oneline"}, body: `{}`,
			want: 422, wantErr: "--oneline (HELP UNKNOWN for 'git log'): the subcommand's help is not known, so no flag counts as listed"},
		{name: "unlisted_ok approves a flag of a subcommand whose help is unknown", tool: "git", sub: []string{"log"}, flags: []string{"--oneline"},
			body: `{"unlisted_ok":true}`, want: 200},
		{name: "a subcommand whose help is unknown asking no flag needs no unlisted_ok", tool: "git", sub: []string{"log"}, body: `{}`, want: 200},
		{name: "any subcommand with a flag the tool's own help does not list is 422", tool: "gh", flags: []string{"--vers"}, body: `{}`,
			want: 422, wantErr: "--vers (NOT IN 'gh --help')"},
		{name: "any subcommand is refused where the tool has no bare rule", tool: "git", flags: []string{"-C"}, body: `{}`,
			want: 422, wantErr: "<ANY SUBCOMMAND>"},
		{name: "any subcommand is approved where the tool has a bare rule", tool: "gh", flags: []string{"--help"}, body: `{}`, want: 200},
		{name: "an apply a deny rule refuses is 422 and writes nothing", tool: "git", sub: []string{"config"}, flags: []string{"--global"},
			body: `{"apply":true,"unlisted_ok":true}`, want: 422, wantErr: "deny rule"},
		{name: "an apply for a tool the config lacks is 422", tool: "curl", sub: []string{"get"}, body: `{"apply":true}`,
			want: 422, wantErr: "not in the config"},
		{name: "an apply of a flag no rule could hold is 422", tool: "git", sub: []string{"fetch"}, flags: []string{"not-a-flag"},
			body: `{"apply":true,"unlisted_ok":true}`, want: 422, wantErr: "not a flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			before := string(configtest.ReadFile(t, f.config))
			id := f.submit(t, tt.tool, tt.sub, tt.flags, "because")
			if tt.decided {
				if w := f.apiPost(t, id, "deny", `{}`); w.Code != 200 {
					t.Fatalf("deny first: %d %s", w.Code, w.Body)
				}
			}
			target := id
			if tt.id != "" {
				target = tt.id
			}
			w := f.apiPost(t, target, "approve", tt.body)
			if w.Code != tt.want {
				t.Fatalf("status = %d, want %d; body %s", w.Code, tt.want, w.Body)
			}
			after := string(configtest.ReadFile(t, f.config))
			if tt.want != 200 {
				if msg := jsonError(t, w.ResponseRecorder); !strings.Contains(msg, tt.wantErr) {
					t.Errorf("error %q does not contain %q", msg, tt.wantErr)
				}
				if after != before {
					t.Errorf("a refused approve changed the config:\n%s", after)
				}
				if want := map[bool]string{true: "denied", false: "pending"}[tt.decided]; f.status(t, id) != want {
					t.Errorf("the request is %s, want %s", f.status(t, id), want)
				}
				return
			}
			rec := w.record(t)
			if rec.ID != id || rec.Status != "approved" || rec.DecidedBy != "admin" || rec.Applied == nil || *rec.Applied != tt.applied {
				t.Errorf("record %+v: want %s approved by admin, applied %v", rec, id, tt.applied)
			}
			if rec.DecidedAt == nil || !rec.DecidedAt.Equal(f.clock.now()) {
				t.Errorf("decided_at = %v, want the UI's clock %v", rec.DecidedAt, f.clock.now())
			}
			switch {
			case tt.wantConf != "" && !strings.Contains(after, tt.wantConf):
				t.Errorf("config after apply lacks %q:\n%s", tt.wantConf, after)
			case tt.wantConf == "" && after != before:
				t.Errorf("an approval without apply changed the config:\n%s", after)
			}
		})
	}
}

func TestAPIDeny(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		body       string
		id         string
		decided    bool
		want       int
		wantReason string
	}{
		{name: "a reason is recorded for the assistant", body: `{"reason":"use --ff-only"}`, want: 200, wantReason: "use --ff-only"},
		{name: "no body denies without a reason", want: 200},
		{name: "an unknown id is 404", id: "req_ffffffff", body: `{}`, want: 404},
		{name: "a decided request is 409", decided: true, body: `{}`, want: 409},
		{name: "an unknown field is 400", body: `{"why":"x"}`, want: 400},
		{name: "a reason over 4 KiB is 400", body: `{"reason":"` + strings.Repeat("x", maxReasonBytes+1) + `"}`, want: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			id := f.submit(t, "git", []string{"push"}, []string{"--force"}, "oops")
			if tt.decided {
				f.apiPost(t, id, "approve", `{}`)
			}
			target := id
			if tt.id != "" {
				target = tt.id
			}
			w := f.apiPost(t, target, "deny", tt.body)
			if w.Code != tt.want {
				t.Fatalf("status = %d, want %d; body %s", w.Code, tt.want, w.Body)
			}
			if tt.want != 200 {
				jsonError(t, w.ResponseRecorder)
				return
			}
			rec := w.record(t)
			if rec.Status != "denied" || rec.Reason == nil || *rec.Reason != tt.wantReason || rec.DecidedBy != "admin" || *rec.Applied {
				t.Errorf("record %+v: want denied by admin with reason %q, not applied", rec, tt.wantReason)
			}
		})
	}
}

// TestAPIApproveGrants grants capabilities for now, refused as
// `requests approve --once|--for` refuses them: 422, the request left
// pending and the config untouched.
func TestAPIApproveGrants(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		tool      string
		sub       []string
		flags     []string
		decided   bool   // deny it first
		id        string // instead of the filed request's
		body      string
		want      int
		wantErr   string        // a substring of the error
		wantOnce  bool          // the grant's kind
		wantUntil time.Duration // the grant's until, from the UI's clock
	}{
		{name: "once grants one call within 24h", tool: "git", sub: []string{"push"}, flags: []string{"--tags"},
			body: `{"apply":false,"once":true}`, want: 200, wantOnce: true, wantUntil: 24 * time.Hour},
		{name: "for 8h grants calls for 8 hours", tool: "git", sub: []string{"push"}, flags: []string{"--tags"},
			body: `{"apply":false,"for":"8h"}`, want: 200, wantUntil: 8 * time.Hour},
		{name: "for takes any Go duration", tool: "git", sub: []string{"fetch"}, flags: []string{"--prune"},
			body: `{"for":"1h30m"}`, want: 200, wantUntil: 90 * time.Minute},
		{name: "for 168h is the longest", tool: "git", sub: []string{"push"}, flags: []string{"--tags"},
			body: `{"for":"168h"}`, want: 200, wantUntil: 168 * time.Hour},
		{name: "a grant on a subcommand a deny rule covers is 422", tool: "git", sub: []string{"config"}, flags: []string{"--global"},
			body: `{"once":true}`, want: 422, wantErr: "stays pending: deny rule"},
		{name: "a grant for a tool the config lacks is 422", tool: "curl", sub: []string{"get"},
			body: `{"for":"1h"}`, want: 422, wantErr: "not in the config"},
		{name: "a grant of a flag no rule could hold is 422", tool: "git", sub: []string{"fetch"}, flags: []string{"not-a-flag"},
			body: `{"once":true}`, want: 422, wantErr: "not a flag"},
		{name: "a grant of a flag the help does not list is 422", tool: "git", sub: []string{"push"}, flags: []string{"--verb"},
			body: `{"once":true}`, want: 422, wantErr: "--verb (NOT IN 'git push --help')"},
		{name: "unlisted_ok grants a flag the help does not list", tool: "git", sub: []string{"push"}, flags: []string{"--verb"},
			body: `{"once":true,"unlisted_ok":true}`, want: 200, wantOnce: true, wantUntil: 24 * time.Hour},
		{name: "a grant for any subcommand is 422 where the tool has no bare rule", tool: "git", flags: []string{"-C"},
			body: `{"for":"8h"}`, want: 422, wantErr: "<ANY SUBCOMMAND>"},
		{name: "a grant on a decided request is 409", tool: "git", sub: []string{"push"}, flags: []string{"--tags"}, decided: true,
			body: `{"once":true}`, want: 409, wantErr: "already denied"},
		{name: "a grant on an unknown id is 404", tool: "git", sub: []string{"push"}, id: "req_ffffffff",
			body: `{"once":true}`, want: 404, wantErr: "req_ffffffff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			before := string(configtest.ReadFile(t, f.config))
			id := f.submit(t, tt.tool, tt.sub, tt.flags, "for now")
			if tt.decided {
				if w := f.apiPost(t, id, "deny", `{}`); w.Code != 200 {
					t.Fatalf("deny first: %d %s", w.Code, w.Body)
				}
			}
			target := id
			if tt.id != "" {
				target = tt.id
			}
			w := f.apiPost(t, target, "approve", tt.body)
			if w.Code != tt.want {
				t.Fatalf("status = %d, want %d; body %s", w.Code, tt.want, w.Body)
			}
			if after := string(configtest.ReadFile(t, f.config)); after != before {
				t.Errorf("a grant changed the config:\n%s", after)
			}
			if tt.want != 200 {
				if msg := jsonError(t, w.ResponseRecorder); !strings.Contains(msg, tt.wantErr) {
					t.Errorf("error %q does not contain %q", msg, tt.wantErr)
				}
				if want := map[bool]string{true: "denied", false: "pending"}[tt.decided]; f.status(t, id) != want {
					t.Errorf("the request is %s, want %s", f.status(t, id), want)
				}
				return
			}
			if !strings.Contains(w.Body.String(), `"grant":{`) {
				t.Errorf("the answer carries no grant: %s", w.Body)
			}
			rec := w.record(t)
			if rec.Status != "approved" || rec.DecidedBy != "admin" || rec.Applied == nil || *rec.Applied {
				t.Errorf("record %+v: want approved by admin, not applied", rec)
			}
			want := &requests.Grant{Once: tt.wantOnce, Until: f.clock.now().Add(tt.wantUntil), Config: f.config}
			if diff := grantDiff(rec.Grant, want); diff != "" {
				t.Errorf("the answer's grant: %s", diff)
			}
			// What the log holds, signed and folded, is what was answered.
			if diff := grantDiff(f.record(t, id).Grant, want); diff != "" {
				t.Errorf("the log's grant: %s", diff)
			}
		})
	}
}

// grantDiff says how got differs from want; "" when it does not.
func grantDiff(got, want *requests.Grant) string {
	switch {
	case got == nil && want == nil:
		return ""
	case got == nil || want == nil:
		return fmt.Sprintf("got %+v, want %+v", got, want)
	case got.Once != want.Once || !got.Until.Equal(want.Until) || got.Exact != want.Exact || got.Policy != want.Policy ||
		got.Config != want.Config || (got.UsedAt == nil) != (want.UsedAt == nil):
		return fmt.Sprintf("got {once %v until %s used %v exact %v policy %q config %q}, want {once %v until %s used %v exact %v policy %q config %q}",
			got.Once, got.Until.UTC().Format(time.RFC3339), got.UsedAt, got.Exact, got.Policy, got.Config,
			want.Once, want.Until.UTC().Format(time.RFC3339), want.UsedAt, want.Exact, want.Policy, want.Config)
	}
	return ""
}

// TestAPIApproveExactCall grants an exact-call request exactly as
// `requests approve` does: refused (422, still pending) when the policy
// changed since the denial, when the recorded command is not what its
// arguments build, and when the call is refused for a reason no exact
// grant lifts; a plain approval or an apply takes its capability as for
// any request.
func TestAPIApproveExactCall(t *testing.T) {
	t.Parallel()
	push := map[string]any{"force": true, "args": []any{"origin", "main"}}
	tests := []struct {
		name      string
		sub       []string
		flags     []string
		params    map[string]any
		edit      func(*requests.Call) // the call as filed
		change    bool                 // edit the config after the denial
		body      string
		want      int
		wantErr   string
		wantGrant bool // the decision carries an exact grant
		wantOnce  bool
		wantUntil time.Duration
		wantConf  string // a substring of the config afterwards; "" for unchanged
	}{
		{name: "once grants exactly the call", sub: []string{"push"}, flags: []string{"--force"}, params: push,
			body: `{"once":true}`, want: 200, wantGrant: true, wantOnce: true, wantUntil: 24 * time.Hour},
		{name: "for 8h grants exactly the call for 8 hours", sub: []string{"push"}, flags: []string{"--force"}, params: push,
			body: `{"for":"8h"}`, want: 200, wantGrant: true, wantUntil: 8 * time.Hour},
		{name: "a call with too many positionals is granted: an exact grant lifts the count", sub: []string{"push"},
			params: map[string]any{"args": []any{"origin", "main", "next"}}, body: `{"once":true}`, want: 200, wantGrant: true,
			wantOnce: true, wantUntil: 24 * time.Hour},
		{name: "a policy changed since the denial is 422", sub: []string{"push"}, flags: []string{"--force"}, params: push, change: true,
			body: `{"once":true}`, want: 422, wantErr: "stays pending: the config, an overrides file or an env file changed since the call was refused"},
		{name: "a policy hash that is not the config's is 422", sub: []string{"push"}, flags: []string{"--force"}, params: push,
			edit: func(c *requests.Call) { c.Policy = strings.Repeat("0", 64) }, body: `{"for":"1h"}`, want: 422, wantErr: "changed since the call was refused"},
		{name: "a subcommand a deny rule covers is 422", sub: []string{"config"}, flags: []string{"--global"},
			params: map[string]any{"global": true, "args": []any{"user.name", "x"}}, body: `{"once":true}`, want: 422,
			wantErr: "no grant can allow it: "},
		{name: "a positional that looks like a flag is 422", sub: []string{"push"}, flags: []string{"--force"},
			params: map[string]any{"force": true, "args": []any{"-rf"}}, body: `{"for":"1h"}`, want: 422, wantErr: "no grant can allow it: "},
		{name: "a command the arguments do not build is 422", sub: []string{"push"}, flags: []string{"--force"}, params: push,
			edit: func(c *requests.Call) { c.Command = append(c.Command, "--mirror") }, body: `{"once":true}`, want: 422,
			wantErr: "the recorded command is not what these arguments build"},
		{name: "a flag the help does not list needs unlisted_ok", sub: []string{"push"}, flags: []string{"--verb"},
			params: map[string]any{"verb": true}, body: `{"once":true}`, want: 422, wantErr: "--verb (NOT IN 'git push --help')"},
		{name: "unlisted_ok grants it", sub: []string{"push"}, flags: []string{"--verb"},
			params: map[string]any{"verb": true}, body: `{"once":true,"unlisted_ok":true}`, want: 200, wantGrant: true,
			wantOnce: true, wantUntil: 24 * time.Hour},
		// --receive-pack names a program (runs-code): a fixed value is still
		// granted only with i_know, and never when it is too long to show.
		{name: "an exact call that runs a program needs i_know", sub: []string{"push"}, flags: []string{"--receive-pack"},
			params: map[string]any{"receive-pack": "git-receive-pack"}, body: `{"once":true,"unlisted_ok":true}`, want: 422,
			wantErr: "no pattern holds it: --receive-pack (runs-code); approve with i_know"},
		{name: "i_know grants it", sub: []string{"push"}, flags: []string{"--receive-pack"},
			params: map[string]any{"receive-pack": "git-receive-pack"}, body: `{"once":true,"unlisted_ok":true,"i_know":true}`, want: 200,
			wantGrant: true, wantOnce: true, wantUntil: 24 * time.Hour},
		{name: "a value too long to show whole is refused even with i_know", sub: []string{"push"}, flags: []string{"--receive-pack"},
			params: map[string]any{"receive-pack": "git-receive-pack" + strings.Repeat("_", 300) + "; id"}, body: `{"once":true,"unlisted_ok":true,"i_know":true}`,
			want: 422, wantErr: "is longer than the 200 characters shown whole"},
		{name: "a plain approval records no grant", sub: []string{"push"}, flags: []string{"--force"}, params: push, body: `{}`, want: 200},
		{name: "apply merges its capability into the config", sub: []string{"push"}, flags: []string{"--force"}, params: push,
			body: `{"apply":true}`, want: 200, wantConf: "          - --force\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			id := f.submitExact(t, tt.sub, tt.flags, tt.params, tt.edit)
			hash := f.record(t, id).Call.Policy
			if tt.change {
				configtest.WriteFile(t, f.config, string(configtest.ReadFile(t, f.config))+"# edited after the denial\n", 0o600)
			}
			before := string(configtest.ReadFile(t, f.config))
			w := f.apiPost(t, id, "approve", tt.body)
			if w.Code != tt.want {
				t.Fatalf("status = %d, want %d; body %s", w.Code, tt.want, w.Body)
			}
			after := string(configtest.ReadFile(t, f.config))
			if tt.want != 200 {
				if msg := jsonError(t, w.ResponseRecorder); !strings.Contains(msg, tt.wantErr) {
					t.Errorf("error %q does not contain %q", msg, tt.wantErr)
				}
				if f.status(t, id) != "pending" {
					t.Errorf("the request is %s, want pending", f.status(t, id))
				}
				if after != before {
					t.Errorf("a refused grant changed the config:\n%s", after)
				}
				return
			}
			rec := w.record(t)
			if rec.Status != "approved" || rec.DecidedBy != "admin" || rec.Call == nil {
				t.Errorf("record %+v: want an approved exact-call request", rec)
			}
			var want *requests.Grant
			if tt.wantGrant {
				want = &requests.Grant{Once: tt.wantOnce, Until: f.clock.now().Add(tt.wantUntil), Exact: true, Policy: hash, Config: f.config}
			}
			if diff := grantDiff(rec.Grant, want); diff != "" {
				t.Errorf("the answer's grant: %s", diff)
			}
			if diff := grantDiff(f.record(t, id).Grant, want); diff != "" {
				t.Errorf("the log's grant: %s", diff)
			}
			switch {
			case tt.wantConf != "" && !strings.Contains(after, tt.wantConf):
				t.Errorf("config after apply lacks %q:\n%s", tt.wantConf, after)
			case tt.wantConf == "" && after != before:
				t.Errorf("the config changed:\n%s", after)
			}
		})
	}
}
