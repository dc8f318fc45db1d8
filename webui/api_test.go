package webui

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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
		{name: "once is refused: this build has no temporary grants", tool: "git", sub: []string{"push"}, body: `{"apply":false,"once":true}`,
			want: 400, wantErr: "temporary grants"},
		{name: "for is refused: this build has no temporary grants", tool: "git", sub: []string{"push"}, body: `{"apply":false,"for":"8h"}`,
			want: 400, wantErr: "temporary grants"},
		{name: "a flag the help does not list is 422", tool: "git", sub: []string{"push"}, flags: []string{"--rece"}, body: `{}`,
			want: 422, wantErr: "--rece (NOT IN 'git push --help')"},
		{name: "unlisted_ok approves a flag the help does not list", tool: "git", sub: []string{"push"}, flags: []string{"--rece"},
			body: `{"unlisted_ok":true}`, want: 200},
		{name: "a subcommand without known help marks nothing", tool: "git", sub: []string{"fetch"}, flags: []string{"--prun"}, body: `{}`, want: 200},
		{name: "any subcommand is refused where the tool has no bare rule", tool: "git", flags: []string{"-C"}, body: `{}`,
			want: 422, wantErr: "<ANY SUBCOMMAND>"},
		{name: "any subcommand is approved where the tool has a bare rule", tool: "gh", flags: []string{"--help"}, body: `{}`, want: 200},
		{name: "an apply a deny rule refuses is 422 and writes nothing", tool: "git", sub: []string{"config"}, flags: []string{"--global"},
			body: `{"apply":true}`, want: 422, wantErr: "deny rule"},
		{name: "an apply for a tool the config lacks is 422", tool: "curl", sub: []string{"get"}, body: `{"apply":true}`,
			want: 422, wantErr: "not in the config"},
		{name: "an apply of a flag no rule could hold is 422", tool: "git", sub: []string{"fetch"}, flags: []string{"not-a-flag"},
			body: `{"apply":true}`, want: 422, wantErr: "not a flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			before := readFile(t, f.config)
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
			after := readFile(t, f.config)
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
