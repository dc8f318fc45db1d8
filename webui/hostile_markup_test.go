package webui

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/webui/metrics"
)

// HTML and script in every string the admin UI shows: what a
// request log holds (written by wraptool for an assistant, or appended by
// any other process), what the operator typed (a deny reason), what a
// wrapped tool's help says, and what the config holds (comments, patterns)
// all reach the pages as text: no tag, attribute, handler or URL of theirs.

// markup are the hostile values, each marked by a number so a test can find
// where it landed.
var markup = []string{
	`<script>alert(1)</script>`,
	`"><img src=x onerror=alert(2)>`,
	`'><svg onload=alert(3)>`,
	`javascript:alert(4)`,
	`</code></dd><a href="javascript:alert(5)">click</a>`,
	`{{.CSRF}}`,
}

// pageTags are the elements the templates write; nothing else may appear.
var pageTags = map[string]bool{
	"html": true, "head": true, "meta": true, "title": true, "link": true, "script": true, "body": true, "header": true,
	"span": true, "a": true, "form": true, "input": true, "button": true, "main": true, "p": true, "section": true,
	"h1": true, "h2": true, "article": true, "code": true, "dl": true, "dt": true, "dd": true, "ul": true, "li": true,
	"strong": true, "label": true, "div": true, "table": true, "thead": true, "tr": true, "th": true, "tbody": true,
	"td": true, "pre": true,
}

var (
	tagRE  = regexp.MustCompile(`<(/?)([A-Za-z][A-Za-z0-9-]*)([^>]*)>`)
	attrRE = regexp.MustCompile(`\s([^\s=/>]+)(?:=("[^"]*"|'[^']*'|[^\s>]+))?`)
)

// markupProblems lists what in page the templates do not write: an
// element they do not use, a script other than the UI's own, an event
// handler attribute, a link, form action or source that leaves the site's
// own paths (javascript:, another host), or a raw escape sequence, bidi
// override or carriage return.
func markupProblems(page string) []string {
	var problems []string
	scripts := 0
	for _, m := range tagRE.FindAllStringSubmatch(page, -1) {
		name := strings.ToLower(m[2])
		if !pageTags[name] {
			problems = append(problems, "element <"+name+"> is not the templates': "+m[0])
		}
		if name == "script" && m[1] == "" {
			scripts++
			if m[0] != `<script src="/static/pending.js" defer>` {
				problems = append(problems, "a script other than the UI's own: "+m[0])
			}
		}
		for _, a := range attrRE.FindAllStringSubmatch(m[3], -1) {
			attr, val := strings.ToLower(a[1]), strings.Trim(a[2], `"'`)
			switch {
			case strings.HasPrefix(attr, "on"):
				problems = append(problems, "an event handler attribute: "+m[0])
			case (attr == "href" || attr == "action" || attr == "src") && (!strings.HasPrefix(val, "/") || strings.HasPrefix(val, "//")):
				problems = append(problems, attr+" leaves the site's paths: "+m[0])
			case !attrName.MatchString(attr):
				problems = append(problems, "attribute "+attr+" is not one a template writes: "+m[0])
			}
		}
	}
	if scripts > 1 {
		problems = append(problems, "more than one script element")
	}
	for _, raw := range []string{"\x1b", "\u202e", "\r"} {
		if strings.Contains(page, raw) {
			problems = append(problems, "holds "+strconv.Quote(raw)+" raw")
		}
	}
	return problems
}

var attrName = regexp.MustCompile(`^[a-z-]+$`)

// expectOnlyTheTemplatesMarkup fails for each of markupProblems(page).
func expectOnlyTheTemplatesMarkup(t *testing.T, what, page string) {
	t.Helper()
	for _, p := range markupProblems(page) {
		t.Errorf("%s: %s", what, p)
	}
}

// The check above finds each way a value could have become markup, so its
// silence on the pages means something.
func TestMarkupProblemsFindsInjectedMarkup(t *testing.T) {
	t.Parallel()
	page := `<p class="text">ok</p><a href="/">back</a><script src="/static/pending.js" defer></script>`
	if p := markupProblems(page); len(p) != 0 {
		t.Fatalf("the templates' own markup: %q", p)
	}
	for _, bad := range []string{
		`<script>alert(1)</script>`,
		`<code>x"><img src=x onerror=alert(2)></code>`,
		`<svg onload=alert(3)>`,
		`<a href="javascript:alert(4)">click</a>`,
		`<a href="//evil.example/">click</a>`,
		`<form action="https://evil.example/">`,
		`<code x" onmouseover="alert(5)">`,
		`<dd>` + "\x1b[2J" + `</dd>`,
	} {
		if len(markupProblems(page+bad)) == 0 {
			t.Errorf("markupProblems misses %q", bad)
		}
	}
}

// hostileFixture is the fixture with markup in its config (a comment in
// the push rule's flags and a positional pattern), in the help of git push, and in
// every field of the log's lines. It returns the ids: a request whose every
// field is hostile, a plain git push request (its preview has a diff), an
// exact call, and a decided one.
func hostileFixture(t *testing.T) (f *fixture, hostile, push, exact, decided string) {
	t.Helper()
	f = newFixture(t)
	all := strings.Join(markup, " ")
	cfg := strings.ReplaceAll(fixtureConfig, "$DIR", f.dir)
	cfg = strings.Replace(cfg, "        flags:\n          - --set-upstream\n", "        flags:\n          # "+all+"\n          - --set-upstream\n", 1)
	cfg = strings.Replace(cfg, "          positional_max: 2\n",
		"          positional_max: 2\n          pattern: '"+strings.ReplaceAll(regexp.QuoteMeta(all), "'", "''")+"'\n", 1)
	configtest.WriteFile(t, f.config, cfg, 0o600)
	paths := f.src.Current().Paths
	l, err := config.LoadFile(t.Context(), f.config, &config.LoadOptions{Paths: paths})
	if err != nil {
		t.Fatalf("load the hostile config: %v", err)
	}
	f.src.mu.Lock()
	f.src.st.Policy = l.Policy
	f.src.st.Helps = fakeHelps{"git push": {"--tags": "push tags " + all, "--set-upstream": all}}
	f.src.mu.Unlock()

	hostile = `req_"><script>alert(0)</script>`
	push, exact, decided = "req_0a0a0a0a", "req_0b0b0b0b", "req_0c0c0c0c"
	lines := []map[string]any{
		{"id": hostile, "created_at": "2026-03-01T11:00:00Z", "tool": "git" + markup[0], "subcommand": []string{markup[1]},
			"flags": []string{"--" + markup[2]}, "rationale": all, "enables": all, "status": "pending"},
		{"id": push, "created_at": "2026-03-01T11:00:00Z", "tool": "git", "subcommand": []string{"push"},
			"flags": []string{"--tags", "--set-upstream"}, "rationale": all + " \x1b[2J\u202e\r", "enables": all, "status": "pending"},
		{"id": exact, "created_at": "2026-03-01T11:00:00Z", "tool": "git", "subcommand": []string{"push"}, "flags": []string{},
			"rationale": "exact", "status": "pending", "call": map[string]any{"tool": "git_push", "arguments": map[string]any{"args": markup},
				"command": append([]string{"git", "push"}, markup...), "cwd": "/tmp/" + all}},
		{"id": decided, "created_at": "2026-03-01T11:00:00Z", "tool": "git", "subcommand": []string{"pull"}, "flags": []string{},
			"rationale": "r", "status": "pending"},
		{"id": decided, "status": "denied", "decided_at": "2026-03-01T11:30:00Z", "reason": all, "applied": false,
			"decided_by": markup[1], "client": markup[3]},
	}
	var b strings.Builder
	for _, m := range lines {
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(f.log, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return f, hostile, push, exact, decided
}

func TestHostileMarkupIsTextOnEveryPage(t *testing.T) {
	t.Parallel()
	f, hostile, push, exact, decided := hostileFixture(t)
	cookie, csrf := f.signIn(t)
	all := strings.Join(markup, " ")
	pages := []struct {
		name string
		call call
		code int
		// reads is what the page's text must hold: the hostile values as
		// text, in the escaped forms the terminal shows.
		reads []string
	}{
		{"the review page shows every field of every request as text", call{target: "/", cookie: cookie}, http.StatusOK, []string{
			requests.Token(hostile), // the id
			requests.Token("git"+markup[0]) + " " + requests.Token(markup[1]), // tool and subcommand
			requests.Token("--" + markup[2]),                                  // a flag
			all,                                                               // rationale, enables, the deny reason
			"--tags — push tags " + all,                                       // a wrapped tool's help line
			requests.Command(append([]string{"git", "push"}, markup...)), // an exact call's command
			requests.Token("/tmp/" + all),                                // and its folder
			requests.Token(markup[1]) + " (" + markup[3] + ")",           // decided_by and the client
			"matching " + regexp.QuoteMeta(all),                          // the config's pattern
		}},
		{"the apply preview shows the config's comment, the help and the pattern as text",
			call{target: "/requests/" + push + "/apply", cookie: cookie}, http.StatusOK, []string{
				"# " + all, // the diff's context: a comment in the config
				"pattern: '" + strings.ReplaceAll(regexp.QuoteMeta(all), "'", "''") + "'", // and its pattern
				"--tags takes any value — push tags " + all,
				"positional patterns: " + requests.Token(regexp.QuoteMeta(all)),
				all,
			}},
		{"the apply preview of a request it cannot merge quotes the refusal as text",
			call{target: requestPath(hostile, "apply"), cookie: cookie}, http.StatusOK, []string{"cannot be merged into the config"}},
		{"the preview of an exact call", call{target: "/requests/" + exact + "/apply", cookie: cookie}, http.StatusOK, nil},
		{"a notice for an unknown id quotes it as text",
			call{target: "/requests/" + url.PathEscape(markup[0]) + "/apply", cookie: cookie}, http.StatusNotFound,
			[]string{"No request has the id " + requests.Token(markup[0])}},
		{"a notice for a decided request", call{target: "/requests/" + decided + "/apply", cookie: cookie}, http.StatusConflict,
			[]string{decided + " is already denied"}},
		{"the login form after a wrong token", call{target: "/?token=" + url.QueryEscape(markup[0])}, http.StatusUnauthorized, nil},
	}
	for _, p := range pages {
		t.Run(p.name, func(t *testing.T) {
			w := f.do(t, p.call)
			if w.Code != p.code {
				t.Fatalf("status %d, want %d:\n%s", w.Code, p.code, w.Body)
			}
			if ct := w.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			page := w.Body.String()
			expectOnlyTheTemplatesMarkup(t, p.name, page)
			read := text(page)
			for _, want := range p.reads {
				if !strings.Contains(read, want) {
					t.Errorf("the page does not read %q:\n%s", want, read)
				}
			}
		})
	}

	// The id reaches the forms as one escaped path segment.
	review := f.do(t, call{target: "/", cookie: cookie}).Body.String()
	if want := `action="/requests/req_%22%3E%3Cscript%3Ealert%280%29%3C%2Fscript%3E/decide"`; !strings.Contains(review, want) {
		t.Errorf("the review page has no form with %s", want)
	}

	// Form fields the operator sends: a deny reason full of markup, and a
	// decision on an id that holds it; each answer's flash is text too.
	for _, d := range []struct {
		name, id string
		form     url.Values
	}{
		{"a deny reason", push, url.Values{"action": {"deny"}, "reason": {all}}},
		{"an approval of an id holding markup", hostile, url.Values{"action": {"approve"}}},
		{"a decision on an unknown id", markup[0], url.Values{"action": {"once"}}},
	} {
		t.Run(d.name+" comes back as text", func(t *testing.T) {
			d.form.Set("csrf", csrf)
			w := f.do(t, call{method: http.MethodPost, target: requestPath(d.id, "decide"), cookie: cookie, form: d.form,
				header: map[string]string{"Origin": uiOrigin}})
			if w.Code != http.StatusSeeOther {
				t.Fatalf("status %d, want 303:\n%s", w.Code, w.Body)
			}
			page := f.do(t, call{target: "/", cookie: cookie}).Body.String()
			expectOnlyTheTemplatesMarkup(t, "the review page after "+d.name, page)
			if !strings.Contains(page, `class="flash`) {
				t.Errorf("no flash after %s", d.name)
			}
		})
	}
	if read := text(f.do(t, call{target: "/", cookie: cookie}).Body.String()); !strings.Contains(read, all) {
		t.Errorf("the history does not show the typed reason as text")
	}
}

// The JSON API carries the same values as JSON: application/json with
// nosniff, and HTML's characters escaped (\u003c), so no browser reads a
// response as a page.
func TestHostileMarkupInTheAPIIsJSON(t *testing.T) {
	t.Parallel()
	f, hostile, _, _, _ := hostileFixture(t)
	for _, c := range []call{
		{host: "localhost:8718", target: "/api/requests?status=all", header: bearer(adminToken)},
		{method: http.MethodPost, host: "localhost:8718", target: "/api/requests/" + url.PathEscape(markup[0]) + "/deny",
			header: bearer(adminToken), body: `{"reason":"x"}`},
		{method: http.MethodPost, host: "localhost:8718", target: "/api/requests/" + url.PathEscape(hostile) + "/approve",
			header: bearer(adminToken), body: `{"apply":true}`},
		{method: http.MethodPost, host: "localhost:8718", target: "/api/requests/" + url.PathEscape(hostile) + "/deny",
			header: bearer(adminToken), body: `{"reason":` + strings.Trim(jsonText(t, strings.Join(markup, " ")), "\n") + `}`},
	} {
		w := f.do(t, c)
		if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s: Content-Type %q, nosniff %q", c.method, c.target, ct, w.Header().Get("X-Content-Type-Options"))
		}
		if body := w.Body.String(); strings.ContainsAny(body, "<>") {
			t.Errorf("%s %s: a raw < or > in %s", c.method, c.target, body)
		}
		var v any
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
			t.Errorf("%s %s: not JSON: %s", c.method, c.target, w.Body)
		}
	}
	// The denial recorded through the API reads back whole.
	if r := f.record(t, hostile); r.Status != requests.StatusDenied || r.Reason == nil || *r.Reason != strings.Join(markup, " ") {
		t.Errorf("the record after the API's deny: %+v", r)
	}
}

func jsonText(t *testing.T, s string) string {
	t.Helper()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A metric label holds what a client sent as a tool name; /metrics, which
// a signed-in browser can open, is plain text that no browser renders as a
// page: text/plain, nosniff, and a CSP that allows nothing.
func TestHostileMarkupInMetricsIsPlainText(t *testing.T) {
	t.Parallel()
	m := metrics.New(nil)
	m.Call(markup[0]+markup[1], "error", time.Millisecond)
	f := newFixture(t, func(o *Options) { o.Metrics = m.Handler() })
	cookie, _ := f.signIn(t)
	w := f.do(t, call{target: "/metrics", cookie: cookie})
	if w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	if !strings.Contains(w.Body.String(), `tool="<script>alert(1)</script>\"><img src=x onerror=alert(2)>"`) {
		t.Errorf("the label is not in the scrape as text:\n%s", w.Body)
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q, want text/plain", ct)
	}
	if w.Header().Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(w.Header().Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("headers %v, want nosniff and a CSP allowing nothing", w.Header())
	}
}

// Admin API bodies nested beyond any sense, or holding what is not UTF-8,
// are answered at once with a JSON error or recorded as text: never a
// crash, never a hang.
func TestHostileAdminBodies(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tt := range []struct {
		name string
		body string
		want int
	}{
		{"30,000 nested arrays, within the 64 KiB limit", `{"reason":` + strings.Repeat("[", 30_000) + strings.Repeat("]", 30_000) + `}`, http.StatusBadRequest},
		{"12,000 unclosed objects", strings.Repeat(`{"a":`, 12_000), http.StatusBadRequest},
		{"100,000 nested arrays, over the limit", `{"reason":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}`, http.StatusRequestEntityTooLarge},
		{"a reason that is not UTF-8", "{\"reason\":\"bad \xff\xfe byte\"}", http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := f.submit(t, "git", []string{"push"}, []string{"--tags"}, "release "+tt.name)
			start := time.Now()
			w := f.do(t, call{method: http.MethodPost, host: "localhost:8718", target: "/api/requests/" + id + "/deny",
				header: bearer(adminToken), body: tt.body})
			if w.Code != tt.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.want, w.Body)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("answered after %v", took)
			}
			if tt.want != http.StatusOK {
				jsonError(t, w)
				if f.status(t, id) != requests.StatusPending {
					t.Errorf("a refused body decided the request")
				}
			} else if r := f.record(t, id); r.Reason == nil || *r.Reason != "bad \ufffd\ufffd byte" {
				t.Errorf("reason %v, want the bytes as U+FFFD", r.Reason)
			}
		})
	}
}
