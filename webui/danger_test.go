package webui

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/policy/requests"
)

// dangerHelps is testHelps with git push's --exec (which runs the program
// it names: the generic --exec* name) and --output (which writes a file),
// so neither is refused as unlisted first.
var dangerHelps = func() fakeHelps {
	h := fakeHelps{}
	for k, v := range testHelps {
		h[k] = map[string]string{}
		for f, d := range v {
			h[k][f] = d
		}
	}
	h["git push"]["--exec"] = "receive pack program"
	h["git push"]["--exec\u202e"] = "a look-alike"
	h["git push"]["--output"] = "write the report to a file"
	return h
}()

// heldExec is the fixture's push rule with --exec held by a pattern.
const heldExec = `          - --set-upstream
          - --exec
        flag_constraints:
          "--exec":
            pattern: 'git-receive-pack'
        arg_constraints:`

// newDangerFixture is the fixture with dangerHelps; held puts heldExec in
// its config.
func newDangerFixture(t *testing.T, held bool) *fixture {
	t.Helper()
	f := newFixture(t)
	f.src.mu.Lock()
	f.src.st.Helps = dangerHelps
	f.src.mu.Unlock()
	if held {
		before := string(configtest.ReadFile(t, f.config))
		after := strings.Replace(before, "          - --set-upstream\n        arg_constraints:", heldExec, 1)
		if after == before {
			t.Fatal("the fixture's push rule is not where the test expects it")
		}
		configtest.WriteFile(t, f.config, after, 0o600)
	}
	return f
}

// TestAPIApproveNeedsIKnow: a grant or an apply of a flag that runs code,
// with no pattern holding its value, is a 422 naming the flag, its class
// and i_know, and records nothing; i_know approves it; recording the
// approval alone, a writes-files flag and a held value need none.
func TestAPIApproveNeedsIKnow(t *testing.T) {
	t.Parallel()
	refusal := func(id string) string {
		return requests.DangerRefusal(id, []string{"--exec (runs-code)"}, "i_know")
	}
	tests := []struct {
		name    string
		held    bool
		flags   []string
		body    string
		want    int
		refused bool // the error is the danger refusal
		applied bool // the config changes
	}{
		{name: "once without i_know is refused", flags: []string{"--exec"}, body: `{"once":true}`, want: 422, refused: true},
		{name: "for 8h without i_know is refused", flags: []string{"--tags", "--exec"}, body: `{"for":"8h"}`, want: 422, refused: true},
		{name: "apply without i_know is refused", flags: []string{"--exec"}, body: `{"apply":true}`, want: 422, refused: true},
		{name: "i_know false is refused", flags: []string{"--exec"}, body: `{"once":true,"i_know":false}`, want: 422, refused: true},
		{name: "once with i_know is granted", flags: []string{"--exec"}, body: `{"once":true,"i_know":true}`, want: 200},
		{name: "apply with i_know is applied", flags: []string{"--exec"}, body: `{"apply":true,"i_know":true}`, want: 200, applied: true},
		{name: "recording the approval alone needs none", flags: []string{"--exec"}, body: `{}`, want: 200},
		{name: "a flag that writes files needs none", flags: []string{"--output"}, body: `{"once":true}`, want: 200},
		{name: "a value the config's pattern holds needs none", held: true, flags: []string{"--exec"}, body: `{"for":"1h"}`, want: 200},
		{name: "i_know as a string is a malformed body", flags: []string{"--exec"}, body: `{"once":true,"i_know":"i-know"}`, want: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newDangerFixture(t, tt.held)
			before := string(configtest.ReadFile(t, f.config))
			id := f.submit(t, "git", []string{"push"}, tt.flags, "mirror")
			w := f.apiPost(t, id, "approve", tt.body)
			if w.Code != tt.want {
				t.Fatalf("status = %d, want %d; body %s", w.Code, tt.want, w.Body)
			}
			if tt.refused {
				if got := jsonError(t, w.ResponseRecorder); got != refusal(id) {
					t.Errorf("error:\n got  %q\n want %q", got, refusal(id))
				}
			}
			wantStatus := requests.StatusApproved
			if tt.want != 200 {
				wantStatus = requests.StatusPending
			}
			if got := f.status(t, id); got != wantStatus {
				t.Errorf("request is %s, want %s", got, wantStatus)
			}
			if changed := string(configtest.ReadFile(t, f.config)) != before; changed != tt.applied {
				t.Errorf("config changed: %v, want %v", changed, tt.applied)
			}
		})
	}
}

// TestAPIListDanger: every listed request carries "danger", an array ([]
// when the catalog says nothing), with the requested flag as stored, the
// catalog's classes and effect, and whether a pattern holds its value.
func TestAPIListDanger(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		held  bool
		flags []string
		want  string
	}{
		{"a harmless flag", false, []string{"--tags"}, `[]`},
		{"no flags", false, nil, `[]`},
		{"a flag that runs code", false, []string{"--tags", "--exec"},
			`[{"flag":"--exec","classes":["runs-code"],"effect":"runs a program it names, with your credentials","held":false}]`},
		{"a flag a pattern holds", true, []string{"--exec"},
			`[{"flag":"--exec","classes":["runs-code"],"effect":"runs a program it names, with your credentials","held":true}]`},
		{"a flag that writes files", false, []string{"--output"},
			`[{"flag":"--output","classes":["writes-files"],"effect":"writes a file it names","held":false}]`},
		{"a look-alike is no flag a tool reads as the catalogued one", false, []string{"--exec\u202e"}, `[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newDangerFixture(t, tt.held)
			f.submit(t, "git", []string{"push"}, tt.flags, "mirror")
			w := f.do(t, call{host: "localhost:8718", target: "/api/requests", header: bearer(adminToken)})
			if w.Code != http.StatusOK {
				t.Fatalf("status %d; body %s", w.Code, w.Body)
			}
			var out []map[string]json.RawMessage
			if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || len(out) != 1 {
				t.Fatalf("body %s: %v", w.Body, err)
			}
			if mustCompact(t, string(out[0]["danger"])) != mustCompact(t, tt.want) {
				t.Errorf("danger = %s, want %s", out[0]["danger"], tt.want)
			}
			if _, ok := out[0]["flags"]; !ok {
				t.Errorf("the element lost the record's fields: %s", w.Body)
			}
		})
	}
}

// mustCompact is s re-encoded by encoding/json, for comparing JSON.
func mustCompact(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPageShowsDanger: the review page marks each requested flag's
// classes (a warning class, grave ones stronger) and, for a request that
// needs it, an i_know field in the approve form naming the flags; a lesser
// class shows without asking for one.
func TestPageShowsDanger(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		held     bool
		flags    []string
		marks    []string // in the article's HTML
		field    bool     // the i_know field is there
		label    string   // in its label
		notMarks []string
	}{
		{name: "a flag that runs code", flags: []string{"--exec"},
			marks: []string{`<strong class="danger grave">! runs-code: runs a program it names, with your credentials</strong>`},
			field: true, label: "that allows what can hand your credentials away, with no pattern holding it: --exec (runs-code)"},
		{name: "a flag a pattern holds", held: true, flags: []string{"--exec"},
			marks: []string{`<strong class="danger grave">! runs-code: runs a program it names, with your credentials (its pattern holds the value)</strong>`}},
		{name: "a flag that writes files", flags: []string{"--output"},
			marks: []string{`<strong class="danger">! writes-files: writes a file it names</strong>`}},
		{name: "a harmless flag", flags: []string{"--tags"}, notMarks: []string{`class="danger`}},
		{name: "a look-alike is escaped, and no tool reads it as the flag: no class", flags: []string{"--exec\u202e"},
			marks: []string{`<code>--exec\u202e</code>`}, notMarks: []string{"\u202e", `class="danger`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newDangerFixture(t, tt.held)
			cookie, _ := f.signIn(t)
			f.submit(t, "git", []string{"push"}, tt.flags, "mirror")
			page := f.do(t, call{target: "/", cookie: cookie}).Body.String()
			article := page[strings.Index(page, `<article class="request">`):strings.Index(page, `</article>`)]
			for _, m := range tt.marks {
				if !strings.Contains(article, m) {
					t.Errorf("the request does not hold %q:\n%s", m, article)
				}
			}
			for _, m := range tt.notMarks {
				if strings.Contains(article, m) {
					t.Errorf("the request holds %q:\n%s", m, article)
				}
			}
			if got := strings.Contains(article, `name="i_know"`); got != tt.field {
				t.Errorf("i_know field shown: %v, want %v:\n%s", got, tt.field, article)
			}
			if tt.label != "" && !strings.Contains(text(article), tt.label) {
				t.Errorf("the confirmation's label does not read %q:\n%s", tt.label, text(article))
			}
		})
	}
}

// TestFormNeedsIKnow drives the review page's buttons for a request with
// a flag that runs code: a grant without i-know typed, or with another
// word, is refused in the flash and leaves it pending; Mark approved
// needs none; i-know typed grants it; the CSRF check still comes first.
func TestFormNeedsIKnow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		form       url.Values
		noCSRF     bool
		wantCode   int    // 303 unless set
		wantFlash  string // a prefix, "req_…" replaced by ID
		wantStatus string
	}{
		{name: "once without i-know is refused", form: url.Values{"action": {"once"}},
			wantFlash:  "error: not approved, ID stays pending: it allows what can hand your credentials away, and no pattern holds it: --exec (runs-code); approve with \"i-know\" typed in the confirmation field if you mean it",
			wantStatus: requests.StatusPending},
		{name: "another word is refused", form: url.Values{"action": {"8h"}, "i_know": {"yes"}},
			wantFlash: "error: not approved, ID stays pending", wantStatus: requests.StatusPending},
		{name: "the word in capitals is refused", form: url.Values{"action": {"1h"}, "i_know": {"I-KNOW"}},
			wantFlash: "error: not approved, ID stays pending", wantStatus: requests.StatusPending},
		{name: "i-know typed grants it", form: url.Values{"action": {"once"}, "i_know": {" i-know "}},
			wantFlash: "ok: approved ID once (within 24h)", wantStatus: requests.StatusApproved},
		{name: "Mark approved needs none", form: url.Values{"action": {"approve"}},
			wantFlash: "ok: approved ID (nothing is allowed", wantStatus: requests.StatusApproved},
		{name: "without the CSRF token nothing is decided, i-know or not", form: url.Values{"action": {"once"}, "i_know": {"i-know"}}, noCSRF: true,
			wantCode: http.StatusForbidden, wantStatus: requests.StatusPending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newDangerFixture(t, false)
			cookie, csrf := f.signIn(t)
			id := f.submit(t, "git", []string{"push"}, []string{"--exec"}, "mirror")
			form := url.Values{}
			for k, v := range tt.form {
				form[k] = v
			}
			if !tt.noCSRF {
				form.Set("csrf", csrf)
			}
			w := f.post(t, cookie, "/requests/"+id+"/decide", form)
			if tt.wantCode != 0 {
				if w.Code != tt.wantCode {
					t.Fatalf("status %d, want %d", w.Code, tt.wantCode)
				}
			} else if got := strings.ReplaceAll(f.flashAfter(t, cookie, w), id, "ID"); !strings.HasPrefix(got, tt.wantFlash) {
				t.Errorf("flash:\n got  %q\n want %q…", got, tt.wantFlash)
			}
			if got := f.status(t, id); got != tt.wantStatus {
				t.Errorf("request is %s, want %s", got, tt.wantStatus)
			}
		})
	}
}

// TestApplyFormNeedsIKnow: Apply to config carries i-know typed on the
// review page into the preview's Confirm apply form; Confirm apply
// without it is refused and writes nothing, with it applies.
func TestApplyFormNeedsIKnow(t *testing.T) {
	t.Parallel()
	f := newDangerFixture(t, false)
	cookie, csrf := f.signIn(t)
	id := f.submit(t, "git", []string{"push"}, []string{"--exec"}, "mirror")
	before := string(configtest.ReadFile(t, f.config))

	w := f.post(t, cookie, "/requests/"+id+"/decide", url.Values{"csrf": {csrf}, "action": {"apply"}, "i_know": {"i-know"}})
	// The preview asks for i-know again: a link (the assistant knows its
	// request's id) must never arrive with the confirmation typed.
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != requestPath(id, "apply") {
		t.Fatalf("apply: %d to %q, want 303 to the preview, carrying nothing", w.Code, w.Header().Get("Location"))
	}
	preview := f.do(t, call{target: w.Header().Get("Location") + "?i_know=i-know", cookie: cookie}).Body.String()
	for _, want := range []string{`name="i_know" autocomplete="off" autocapitalize="off" spellcheck="false" size="8" aria-label="type i-know to confirm">`,
		`<strong class="danger grave">! runs-code: runs a program it names, with your credentials</strong>`} {
		if !strings.Contains(preview, want) {
			t.Errorf("the preview does not hold %q:\n%s", want, preview)
		}
	}
	if strings.Contains(preview, `value="i-know"`) {
		t.Errorf("a link filled in the confirmation:\n%s", preview)
	}
	plan := regexp.MustCompile(`name="plan" value="([0-9a-f]+)"`).FindStringSubmatch(preview)
	if plan == nil {
		t.Fatalf("no plan in the preview:\n%s", preview)
	}
	w = f.post(t, cookie, requestPath(id, "apply"), url.Values{"csrf": {csrf}, "plan": {plan[1]}})
	if got := f.flashAfter(t, cookie, w); !strings.HasPrefix(got, "error: not approved, "+id+" stays pending: it allows what can hand") {
		t.Errorf("confirm without i-know: flash %q", got)
	}
	if f.status(t, id) != requests.StatusPending || string(configtest.ReadFile(t, f.config)) != before {
		t.Fatalf("a refused apply decided or wrote something")
	}
	w = f.post(t, cookie, requestPath(id, "apply"), url.Values{"csrf": {csrf}, "plan": {plan[1]}, "i_know": {"i-know"}})
	f.reload(t) // as the server's file watcher does
	if got := f.flashAfter(t, cookie, w); !strings.HasPrefix(got, "ok: approved "+id+" and applied") {
		t.Errorf("confirm with i-know: flash %q", got)
	}
	if f.status(t, id) != requests.StatusApproved || string(configtest.ReadFile(t, f.config)) == before {
		t.Errorf("an apply confirmed with i-know did not apply")
	}
}

// TestCatalogCLIIsTheBinarys: the catalog knows a tool by its binary, with
// rules or none (tools.store with /usr/local/bin/aws and no rule yet is
// aws, so its --debug is prints-credentials), else by its key.
func TestCatalogCLIIsTheBinarys(t *testing.T) {
	t.Parallel()
	p, err := policy.New([]policy.Tool{
		{Name: "store", Binary: "/usr/local/bin/aws"},
		{Name: "git", Binary: "/opt/wrapped"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ tool, want string }{{"store", "aws"}, {"git", "git"}, {"nope", "nope"}} {
		if got := catalogCLI(p, tt.tool); got != tt.want {
			t.Errorf("catalogCLI(%q) = %q, want %q", tt.tool, got, tt.want)
		}
	}
	if got := catalogCLI(nil, "store"); got != "store" {
		t.Errorf("catalogCLI(nil, store) = %q", got)
	}
}
