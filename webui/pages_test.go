package webui

import (
	"context"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/policy/requests"
)

// text is a page's HTML with tags dropped and entities decoded: what the
// operator reads.
func text(page string) string {
	return html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(page, ""))
}

func TestReviewPageShowsWhatTheAssistantWroteEscaped(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cookie, _ := f.signIn(t)
	rationale := "<script>alert(1)</script> \x1b[2J\x1b[1;1Happroved\r\nfake \u202egnp.exe\u200b <img src=x onerror=alert(2)>"
	s, err := requests.Submit(t.Context(), f.log, requests.Request{Tool: "g\u0456t", Subcommand: []string{"pu\x1bsh"},
		Flags: []string{"--<b>x</b>", "--t\u202eags"}, Rationale: rationale, Enables: "\"><script>alert(3)</script>"}, f.clock.now())
	if err != nil {
		t.Fatal(err)
	}
	w := f.do(t, call{target: "/", cookie: cookie})
	page := w.Body.String()
	for _, bad := range []string{"<script>alert", "<img src=x", "<b>x</b>", "\x1b", "\u202e", "\u200b", "\r"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q raw", bad)
		}
	}
	read := text(page)
	for _, want := range []string{
		`<script>alert(1)</script> \x1b[2J\x1b[1;1Happroved fake \u202egnp.exe\u200b <img src=x onerror=alert(2)>`, // free text escaped, whitespace collapsed
		`g\u0456t pu\x1bsh`, // tokens: non-ASCII and controls escaped
		`--<b>x</b>`,
		`--t\u202eags`,
		`"><script>alert(3)</script>`,
		requests.Token(s.ID),
	} {
		if !strings.Contains(read, want) {
			t.Errorf("the page does not read %q", want)
		}
	}
	if strings.Count(page, "<script") != 1 || !strings.Contains(page, `<script src="/static/pending.js" defer></script>`) {
		t.Errorf("the page holds a script other than its own")
	}
}

func TestReviewPageShowsFlagsWithTheirHelpAndMarks(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cookie, _ := f.signIn(t)
	listed := f.submit(t, "git", []string{"push"}, []string{"--tags"}, "release")
	prefix := f.submit(t, "git", []string{"push"}, []string{"--force", "--verb"}, "mirror")
	anySub := f.submit(t, "git", nil, []string{"-C"}, "anywhere")
	page := f.do(t, call{target: "/", cookie: cookie}).Body.String()
	read := text(page)
	for _, want := range []string{
		"--tags — push tags (can't be used with --all or --mirror)",
		"--force — force updates",
		"--verb (NOT IN 'git push --help')",
		"-C (HELP UNKNOWN for 'git')",
		"git <ANY SUBCOMMAND>",
		"it can be approved only where the tool already has a bare rule",
		"Pending: 3",
	} {
		if !strings.Contains(read, want) {
			t.Errorf("the page does not read %q", want)
		}
	}
	// The unlisted_ok box is offered where a flag is unlisted, and only
	// there: git's own help is not known, so -C counts as unlisted.
	articles := strings.Split(page, `<article class="request">`)[1:]
	if len(articles) != 3 {
		t.Fatalf("%d requests shown, want 3", len(articles))
	}
	for i, id := range []string{listed, prefix, anySub} {
		a := articles[i]
		if !strings.Contains(a, id) {
			t.Fatalf("request %d is not %s (log order)", i, id)
		}
		if got, want := strings.Contains(a, `name="unlisted_ok"`), id == prefix || id == anySub; got != want {
			t.Errorf("%s: unlisted_ok offered = %v, want %v", id, got, want)
		}
		// Once, 1 hour, 8 hours, apply to config, and last Mark approved,
		// which says it records the decision only.
		last := -1
		for _, button := range []string{`value="once">Approve once</button>`,
			`value="1h" aria-label="Approve for 1 hour">1 hour</button>`, `value="8h" aria-label="Approve for 8 hours">8 hours</button>`,
			`value="apply">Apply to config</button>`, `value="approve">Mark approved</button>`,
			`records the decision only: nothing is allowed until a rule exists`, `name="reason"`, `>Deny</button>`} {
			at := strings.Index(a, button)
			if at < 0 {
				t.Errorf("%s lacks %s", id, button)
				continue
			}
			if at < last {
				t.Errorf("%s: %s comes before the button it should follow", id, button)
			}
			last = at
		}
		if strings.Contains(a, `>Approve</button>`) {
			t.Errorf("%s still offers a bare Approve, which reads as if it allowed something", id)
		}
		// Enter must not press a deciding button: the form's first
		// (default) button is disabled.
		if first := a[strings.Index(a, `class="approve"`):]; !strings.Contains(first[:strings.Index(first, `value="once"`)], `<button type="submit" class="default" disabled hidden`) {
			t.Errorf("%s: the approve form's default button is not a disabled one", id)
		}
		// The grant buttons are the Approve form's, so they carry its
		// unlisted_ok box and CSRF token.
		approve := a[strings.Index(a, `class="approve"`):strings.Index(a, `class="deny"`)]
		if !strings.Contains(approve, `value="once"`) || !strings.Contains(approve, `value="8h"`) || !strings.Contains(approve, `name="csrf"`) {
			t.Errorf("%s: the grant buttons are not in the Approve form", id)
		}
		// Enter in the reason field must deny, never approve: the reason
		// has a form of its own.
		deny := a[strings.Index(a, `class="deny"`):]
		if strings.Contains(deny, "Approve") || !strings.Contains(deny, `name="reason"`) {
			t.Errorf("%s: the reason field shares a form with Approve", id)
		}
	}
}

func TestReviewPageShowsHistoryNewestFirstAndThePolicy(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cookie, _ := f.signIn(t)
	first := f.submit(t, "git", []string{"push"}, []string{"--tags"}, "release")
	second := f.submit(t, "git", []string{"pull"}, []string{"--rebase"}, "sync")
	f.apiPost(t, first, "approve", `{"apply":true}`)
	f.clock.advance(time.Minute)
	f.apiPost(t, second, "deny", `{"reason":"use <--ff-only>"}`)
	third := f.submit(t, "git", []string{"fetch"}, nil, "asked in a client")
	if err := requests.Decide(t.Context(), f.log, third, requests.Decision{Status: requests.StatusDenied,
		Reason: "declined in the client", DecidedBy: "client", Client: "Claude Desktop"}, f.clock.now()); err != nil {
		t.Fatal(err)
	}
	page := f.do(t, call{target: "/", cookie: cookie}).Body.String()
	hist := text(page[strings.Index(page, `<section class="history">`):strings.Index(page, `<section class="policy">`)])
	i, j := strings.Index(hist, second), strings.Index(hist, first)
	if i < 0 || j < 0 || i > j {
		t.Fatalf("history does not list %s before %s:\n%s", second, first, hist)
	}
	for _, want := range []string{"2026-03-01 12:01:00Zdeniedadminno", "deniedclient (Claude Desktop)no", "use <--ff-only>", "2026-03-01 12:00:00Zapprovedadminyes", "git push --tags"} {
		if !strings.Contains(hist, want) {
			t.Errorf("history does not read %q:\n%s", want, hist)
		}
	}
	if strings.Contains(page, "<--ff-only>") {
		t.Errorf("the reason is not HTML-escaped")
	}
	pol := text(page[strings.Index(page, `<section class="policy">`):])
	for _, want := range []string{"git pull: --ff-only; any number of positional arguments", "git push: --set-upstream; at most 2 positional arguments",
		"gh: --version;", "gh", "-h and --help"} {
		if !strings.Contains(pol, want) {
			t.Errorf("policy does not read %q:\n%s", want, pol)
		}
	}
	if strings.Contains(pol, "git config") {
		t.Errorf("the policy lists a denied subcommand")
	}
}

// post sends a form of the signed-in page.
func (f *fixture) post(t *testing.T, cookie, target string, form url.Values) *httptest.ResponseRecorder {
	t.Helper()
	return f.do(t, call{method: "POST", target: target, cookie: cookie, form: form, header: map[string]string{"Origin": uiOrigin}})
}

// flashAfter follows a 303 back to the page and returns the flash line.
func (f *fixture) flashAfter(t *testing.T, cookie string, w *httptest.ResponseRecorder) string {
	t.Helper()
	if w.Code != http.StatusSeeOther {
		t.Fatalf("status = %d, want 303; body %s", w.Code, w.Body)
	}
	page := f.do(t, call{target: w.Header().Get("Location"), cookie: cookie}).Body.String()
	m := regexp.MustCompile(`<p class="flash (ok|error)" role="status">([^<]*)</p>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no flash after the redirect to %s", w.Header().Get("Location"))
	}
	if again := f.do(t, call{target: "/", cookie: cookie}).Body.String(); strings.Contains(again, `class="flash`) {
		t.Errorf("the flash shows twice")
	}
	return m[1] + ": " + html.UnescapeString(m[2])
}

func TestPageDecisions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		flags     []string
		form      url.Values
		wantFlash string // a prefix
		wantSays  string // also in the flash
		wantState string
		wantTo    string // a redirect other than /
	}{
		{name: "Mark approved records the approval alone, and says nothing is allowed yet", flags: []string{"--tags"}, form: url.Values{"action": {"approve"}},
			wantFlash: "ok: approved req_", wantSays: " (nothing is allowed until a rule exists: Apply to config writes it, once / 1 hour / 8 hours grant it now)",
			wantState: "approved"},
		{name: "Deny records the reason", flags: []string{"--tags"}, form: url.Values{"action": {"deny"}, "reason": {"not now"}},
			wantFlash: "ok: denied req_", wantState: "denied"},
		{name: "an unlisted flag is refused without the box", flags: []string{"--verb"}, form: url.Values{"action": {"approve"}},
			wantFlash: "error: not approved, req_", wantState: "pending"},
		{name: "an unlisted flag is approved with the box", flags: []string{"--verb"}, form: url.Values{"action": {"approve"}, "unlisted_ok": {"1"}},
			wantFlash: "ok: approved", wantState: "approved"},
		{name: "Apply to config goes to the preview", flags: []string{"--tags"}, form: url.Values{"action": {"apply"}},
			wantState: "pending", wantTo: "/apply"},
		{name: "Apply to config carries the box", flags: []string{"--verb"}, form: url.Values{"action": {"apply"}, "unlisted_ok": {"1"}},
			wantState: "pending", wantTo: "/apply?unlisted_ok=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			cookie, csrf := f.signIn(t)
			id := f.submit(t, "git", []string{"push"}, tt.flags, "release")
			before := string(configtest.ReadFile(t, f.config))
			tt.form.Set("csrf", csrf)
			w := f.post(t, cookie, "/requests/"+id+"/decide", tt.form)
			if tt.wantTo != "" {
				if loc := w.Header().Get("Location"); w.Code != http.StatusSeeOther || loc != "/requests/"+id+tt.wantTo {
					t.Fatalf("status %d to %q, want 303 to %q", w.Code, loc, "/requests/"+id+tt.wantTo)
				}
			} else {
				if loc := w.Header().Get("Location"); loc != "/" {
					t.Fatalf("redirect to %q, want /", loc)
				}
				if got := f.flashAfter(t, cookie, w); !strings.HasPrefix(got, tt.wantFlash) || !strings.Contains(got, tt.wantSays) {
					t.Errorf("flash %q, want it to start with %q and hold %q", got, tt.wantFlash, tt.wantSays)
				}
			}
			if got := f.status(t, id); got != tt.wantState {
				t.Errorf("request is %s, want %s", got, tt.wantState)
			}
			if string(configtest.ReadFile(t, f.config)) != before {
				t.Errorf("the config changed")
			}
		})
	}
	t.Run("a decision on a decided request says so", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		cookie, csrf := f.signIn(t)
		id := f.submit(t, "git", []string{"push"}, []string{"--tags"}, "release")
		f.apiPost(t, id, "deny", `{}`)
		w := f.post(t, cookie, "/requests/"+id+"/decide", url.Values{"csrf": {csrf}, "action": {"approve"}})
		if got := f.flashAfter(t, cookie, w); got != "error: "+id+" is already denied" {
			t.Errorf("flash %q", got)
		}
	})
	t.Run("an unknown action is 400", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		cookie, csrf := f.signIn(t)
		id := f.submit(t, "git", []string{"push"}, []string{"--tags"}, "release")
		if w := f.post(t, cookie, "/requests/"+id+"/decide", url.Values{"csrf": {csrf}, "action": {"grant"}}); w.Code != 400 {
			t.Errorf("status %d, want 400", w.Code)
		}
	})
}

// diffOf is the preview page's diff as text.
func diffOf(page string) string {
	i := strings.Index(page, `<pre class="diff">`)
	if i < 0 {
		return ""
	}
	j := strings.Index(page[i:], "</pre>")
	return strings.TrimSpace(html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(page[i:i+j], "")))
}

func TestApplyPreviewShowsTheDiffAndWritesOnlyOnConfirm(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		sub      []string
		flags    []string
		wantDiff string
		effect   []string
		applied  string
	}{
		{
			name: "a flag added to a block-style rule", sub: []string{"push"}, flags: []string{"--tags"},
			wantDiff: `--- a/config.yaml
+++ b/config.yaml
@@ -11,6 +11,7 @@
       - subcommand: [push]
         flags:
           - --set-upstream
+          - --tags
         arg_constraints:
           positional_max: 2
     deny:`,
			effect:  []string{"--set-upstream takes any value — set upstream for git pull/status", "--tags takes any value — push tags", "positional arguments: at most 2"},
			applied: "added flags --tags to git push",
		},
		{
			name: "a new rule appended", sub: []string{"fetch"}, flags: []string{"--prune"},
			wantDiff: `--- a/config.yaml
+++ b/config.yaml
@@ -13,6 +13,9 @@
           - --set-upstream
         arg_constraints:
           positional_max: 2
+      - subcommand: [fetch]
+        flags: ["--prune"]
+        arg_constraints: {positional_max: 0}
     deny:
       - subcommand: [config]
   gh:`,
			effect:  []string{"--prune takes any value", "positional arguments: none (positional_max: 0; widen it by hand)"},
			applied: "appended allow rule for git fetch",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			cookie, csrf := f.signIn(t)
			id := f.submit(t, "git", tt.sub, tt.flags, "needed")
			before := string(configtest.ReadFile(t, f.config))
			info, _ := os.Stat(f.config)

			w := f.do(t, call{target: "/requests/" + id + "/apply", cookie: cookie})
			if w.Code != http.StatusOK {
				t.Fatalf("preview: status %d; body %s", w.Code, w.Body)
			}
			page := w.Body.String()
			if got := diffOf(page); got != tt.wantDiff {
				t.Errorf("diff:\n%s\nwant:\n%s", got, tt.wantDiff)
			}
			read := text(page)
			for _, want := range append(tt.effect, tt.applied, "Confirm apply") {
				if !strings.Contains(read, want) {
					t.Errorf("the preview does not read %q", want)
				}
			}
			// The preview wrote nothing: same bytes, same file, no temp file.
			after, _ := os.Stat(f.config)
			if string(configtest.ReadFile(t, f.config)) != before || !os.SameFile(info, after) || !after.ModTime().Equal(info.ModTime()) {
				t.Fatalf("the preview touched the config")
			}
			entries, _ := os.ReadDir(f.dir)
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".config.yaml") {
					t.Errorf("the preview left %s", e.Name())
				}
			}
			if f.status(t, id) != "pending" {
				t.Fatalf("the preview decided the request")
			}

			plan := regexp.MustCompile(`name="plan" value="([0-9a-f]+)"`).FindStringSubmatch(page)
			if plan == nil {
				t.Fatal("no plan in the confirm form")
			}
			w = f.post(t, cookie, "/requests/"+id+"/apply", url.Values{"csrf": {csrf}, "plan": {plan[1]}})
			f.reload(t) // as the server's file watcher does
			if got := f.flashAfter(t, cookie, w); got != "ok: approved "+id+" and applied: "+tt.applied {
				t.Errorf("flash %q", got)
			}
			// What was written is what the diff showed.
			var added []string
			for _, l := range strings.Split(tt.wantDiff, "\n")[2:] {
				if strings.HasPrefix(l, "+") {
					added = append(added, strings.TrimPrefix(l, "+"))
				}
			}
			if now := string(configtest.ReadFile(t, f.config)); !strings.Contains(now, strings.Join(added, "\n")) || len(now) <= len(before) {
				t.Errorf("the config after confirm does not hold the previewed lines:\n%s", now)
			}
			w2 := f.do(t, call{host: "localhost:8718", target: "/api/requests?status=approved", header: bearer(adminToken)})
			if !strings.Contains(w2.Body.String(), `"applied":true`) || !strings.Contains(w2.Body.String(), `"decided_by":"admin"`) {
				t.Errorf("the decision is not recorded as applied by admin: %s", w2.Body)
			}
		})
	}
}

func TestApplyPreviewOfARefusedApply(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cookie, csrf := f.signIn(t)
	id := f.submit(t, "git", []string{"config"}, []string{"--global"}, "set my name")
	before := string(configtest.ReadFile(t, f.config))
	page := f.do(t, call{target: "/requests/" + id + "/apply", cookie: cookie}).Body.String()
	read := text(page)
	if !strings.Contains(read, "The capability cannot be merged into the config: deny rule tools.git.deny[0]") {
		t.Errorf("the preview does not say why:\n%s", read)
	}
	if strings.Contains(page, "Confirm apply") || strings.Contains(page, `class="diff"`) {
		t.Errorf("a refused apply offers a confirmation")
	}
	// Confirming anyway is refused in the apply's own words.
	w := f.post(t, cookie, "/requests/"+id+"/apply", url.Values{"csrf": {csrf}, "unlisted_ok": {"1"}})
	if got := f.flashAfter(t, cookie, w); !strings.HasPrefix(got, "error: not applied, "+id+" stays pending: deny rule") {
		t.Errorf("flash %q", got)
	}
	if string(configtest.ReadFile(t, f.config)) != before || f.status(t, id) != "pending" {
		t.Errorf("a refused apply wrote something")
	}
}

func TestConfirmApplyRefusesAChangeItDidNotShow(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cookie, csrf := f.signIn(t)
	id := f.submit(t, "git", []string{"push"}, []string{"--tags"}, "release")
	page := f.do(t, call{target: "/requests/" + id + "/apply", cookie: cookie}).Body.String()
	plan := regexp.MustCompile(`name="plan" value="([0-9a-f]+)"`).FindStringSubmatch(page)[1]

	edited := strings.Replace(string(configtest.ReadFile(t, f.config)), "# wraptool test config", "# edited by hand", 1)
	configtest.WriteFile(t, f.config, edited, 0o600)
	w := f.post(t, cookie, "/requests/"+id+"/apply", url.Values{"csrf": {csrf}, "plan": {plan}})
	if loc := w.Header().Get("Location"); loc != "/requests/"+id+"/apply" {
		t.Fatalf("redirect to %q, want the preview again", loc)
	}
	if got := f.flashAfter(t, cookie, w); !strings.Contains(got, "The config changed since the preview") {
		t.Errorf("flash %q", got)
	}
	if string(configtest.ReadFile(t, f.config)) != edited || f.status(t, id) != "pending" {
		t.Errorf("a stale confirmation was applied")
	}
}

func TestApplyPreviewOfUnknownAndDecidedRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cookie, _ := f.signIn(t)
	id := f.submit(t, "git", []string{"push"}, []string{"--tags"}, "release")
	f.apiPost(t, id, "deny", `{}`)
	for target, want := range map[string]int{"/requests/req_ffffffff/apply": 404, "/requests/" + id + "/apply": 409} {
		if w := f.do(t, call{target: target, cookie: cookie}); w.Code != want {
			t.Errorf("GET %s: status %d, want %d", target, w.Code, want)
		}
	}
	if w := f.do(t, call{target: "/requests/" + id + "/apply"}); w.Code != http.StatusUnauthorized {
		t.Errorf("signed out: status %d, want 401", w.Code)
	}
}

// Where a subcommand's help is unknown, every flag counts as not listed:
// the review page and the apply preview mark it HELP UNKNOWN and offer the
// unlisted_ok box, and approving without the box is refused.
func TestReviewPageMarksEveryFlagWhereTheHelpIsUnknown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		noHelps  bool // the server knows no help at all
		sub      []string
		flags    []string
		wantMark string // "" for none
	}{
		{name: "a flag of a subcommand whose help was never learned is marked HELP UNKNOWN", sub: []string{"log"},
			flags: []string{"--oneline"}, wantMark: "--oneline (HELP UNKNOWN for 'git log')"},
		{name: "a flag the help would list is marked HELP UNKNOWN where no help is known at all", noHelps: true, sub: []string{"push"},
			flags: []string{"--tags"}, wantMark: "--tags (HELP UNKNOWN for 'git push')"},
		{name: "a flag the known help lists is not marked", sub: []string{"push"}, flags: []string{"--tags"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			if tt.noHelps {
				f.src.mu.Lock()
				f.src.st.Helps = nil
				f.src.mu.Unlock()
			}
			cookie, csrf := f.signIn(t)
			id := f.submit(t, "git", tt.sub, tt.flags, "look")
			for _, target := range []string{"/", "/requests/" + id + "/apply"} {
				page := f.do(t, call{target: target, cookie: cookie}).Body.String()
				if got := strings.Contains(text(page), "UNKNOWN"); got != (tt.wantMark != "") {
					t.Errorf("%s: a HELP UNKNOWN mark shown = %v, want %v", target, got, tt.wantMark != "")
				}
				if tt.wantMark != "" && !strings.Contains(text(page), tt.wantMark) {
					t.Errorf("%s does not read %q:\n%s", target, tt.wantMark, text(page))
				}
				if got := strings.Contains(page, `name="unlisted_ok"`); got != (tt.wantMark != "") {
					t.Errorf("%s: unlisted_ok offered = %v, want %v", target, got, tt.wantMark != "")
				}
			}
			w := f.post(t, cookie, "/requests/"+id+"/decide", url.Values{"csrf": {csrf}, "action": {"approve"}})
			flash := f.flashAfter(t, cookie, w)
			if tt.wantMark == "" {
				if !strings.HasPrefix(flash, "ok: approved "+id) {
					t.Errorf("flash %q, want approved", flash)
				}
				return
			}
			if !strings.HasPrefix(flash, "error: not approved, "+id+" stays pending: "+tt.wantMark) || f.status(t, id) != "pending" {
				t.Errorf("without the box: flash %q, status %s; want refused, pending", flash, f.status(t, id))
			}
			w = f.post(t, cookie, "/requests/"+id+"/decide", url.Values{"csrf": {csrf}, "action": {"approve"}, "unlisted_ok": {"1"}})
			if flash := f.flashAfter(t, cookie, w); !strings.HasPrefix(flash, "ok: approved "+id) || f.status(t, id) != "approved" {
				t.Errorf("with the box: flash %q, status %s; want approved", flash, f.status(t, id))
			}
		})
	}
}

func TestAPreviewOffersTheUnlistedBoxCarriedFromTheReviewPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cookie, csrf := f.signIn(t)
	id := f.submit(t, "git", []string{"push"}, []string{"--verb"}, "prefix")
	for query, checked := range map[string]bool{"": false, "?unlisted_ok=1": true} {
		page := f.do(t, call{target: "/requests/" + id + "/apply" + query, cookie: cookie}).Body.String()
		if !strings.Contains(page, `name="unlisted_ok"`) {
			t.Fatalf("no unlisted_ok box on the preview")
		}
		if got := strings.Contains(page, `value="1" checked>`); got != checked {
			t.Errorf("query %q: box checked = %v, want %v", query, got, checked)
		}
	}
	page := f.do(t, call{target: "/requests/" + id + "/apply", cookie: cookie}).Body.String()
	plan := regexp.MustCompile(`name="plan" value="([0-9a-f]+)"`).FindStringSubmatch(page)[1]
	w := f.post(t, cookie, "/requests/"+id+"/apply", url.Values{"csrf": {csrf}, "plan": {plan}})
	if got := f.flashAfter(t, cookie, w); !strings.Contains(got, "--verb (NOT IN 'git push --help')") {
		t.Errorf("flash %q", got)
	}
	if f.status(t, id) != "pending" || strings.Contains(string(configtest.ReadFile(t, f.config)), "--verb") {
		t.Fatalf("an unlisted flag was applied without the box")
	}
	w = f.post(t, cookie, "/requests/"+id+"/apply", url.Values{"csrf": {csrf}, "plan": {plan}, "unlisted_ok": {"1"}})
	f.reload(t)
	if got := f.flashAfter(t, cookie, w); !strings.HasPrefix(got, "ok: approved "+id+" and applied") {
		t.Errorf("flash %q", got)
	}
}

// TestABrowserSessionOverHTTP drives the pages as a browser does, over a
// real connection: the UI host resolves to the listener, cookies are kept
// by a jar, and forms carry the page's Origin.
func TestABrowserSessionOverHTTP(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.ui = New(f.options(ln.Addr()))
	srv := &http.Server{Handler: f.ui.Handler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Transport: &http.Transport{
		// *.localhost is loopback, as browsers resolve it.
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, ln.Addr().String())
		},
	}}
	base := strings.TrimSuffix(f.ui.URL(), "/")
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	post := func(path string, form url.Values) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	id := f.submit(t, "git", []string{"push"}, []string{"--tags"}, "release")
	if code, page := get("/"); code != 200 || !strings.Contains(page, `action="/login"`) {
		t.Fatalf("signed out: %d, want the login form", code)
	}
	code, page := post("/login", url.Values{"token": {adminToken}})
	if code != 200 || !strings.Contains(page, "Pending requests") {
		t.Fatalf("after sign-in the redirect leads to %d, want the review page", code)
	}
	csrf := csrfField.FindStringSubmatch(page)[1]
	code, page = post("/requests/"+url.PathEscape(id)+"/decide", url.Values{"csrf": {csrf}, "action": {"approve"}})
	if code != 200 || !strings.Contains(page, "approved "+id) {
		t.Fatalf("after Approve: %d, want the page with its result", code)
	}
	if code, _ := post("/logout", url.Values{"csrf": {csrf}}); code != 200 {
		t.Fatalf("sign-out: %d", code)
	}
	if _, page := get("/"); !strings.Contains(page, `action="/login"`) {
		t.Fatalf("still signed in after sign-out")
	}
	u, _ := url.Parse(base)
	if cs := jar.Cookies(u); len(cs) != 0 {
		t.Errorf("the jar still holds %v", cs)
	}
	// The same listener on its loopback name refuses the pages.
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("the page on %s: %d, want 403", ln.Addr(), resp.StatusCode)
	}
}

// TestReviewPageShowsAnExactCall shows an exact-call request as the CLI
// does: the command, each token escaped, and its directory, in place of the
// flags with their help lines; then its grant in the history.
func TestReviewPageShowsAnExactCall(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cookie, csrf := f.signIn(t)
	id := f.submitExact(t, []string{"push"}, []string{"--force"},
		map[string]any{"force": true, "args": []any{"origin", "ma\u202ein\\x <b>"}}, nil)
	page := f.do(t, call{target: "/", cookie: cookie}).Body.String()
	if strings.Contains(page, "\u202e") || strings.Contains(page, "<b>") {
		t.Errorf("the page holds the command raw")
	}
	article := page[strings.Index(page, `<article class="request">`):strings.Index(page, `</article>`)]
	read := text(article)
	for _, want := range []string{
		`git push --force origin "ma\u202ein\\x <b>"`, // requests.Command: quoted where a shell would split or read it
		"in " + requests.Token(f.dir),
		"exactly this call, nothing like it",
		"Approve and Apply to config take its kind of call: git push --force",
	} {
		if !strings.Contains(read, want) {
			t.Errorf("the request does not read %q:\n%s", want, read)
		}
	}
	if strings.Contains(read, "force updates") || strings.Contains(article, `class="flags"`) {
		t.Errorf("an exact-call request shows the flags with their help lines:\n%s", read)
	}

	w := f.post(t, cookie, "/requests/"+id+"/decide", url.Values{"csrf": {csrf}, "action": {"once"}})
	if got := f.flashAfter(t, cookie, w); got != "ok: approved "+id+" once (within 24h); the config is not changed" {
		t.Errorf("flash %q", got)
	}
	page = f.do(t, call{target: "/", cookie: cookie}).Body.String()
	hist := text(page[strings.Index(page, `<section class="history">`):strings.Index(page, `<section class="policy">`)])
	if want := `approved onceadminnoexactly: git push --force origin "ma\u202ein\\x <b>"`; !strings.Contains(hist, want) {
		t.Errorf("history does not read %q:\n%s", want, hist)
	}
}

// TestPageGrants drives the Approve once, 1 hour and 8 hours buttons: the
// decision carries the grant, the flash says its term, and a refusal shows
// its reason as an apply's does, leaving the request pending.
func TestPageGrants(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		sub       []string
		flags     []string
		exact     bool // file an exact-call request
		change    bool // edit the config after filing
		form      url.Values
		wantFlash string // a prefix, after "req_…" is replaced by ID
		wantGrant *requests.Grant
	}{
		{name: "Approve once grants one call within 24h", sub: []string{"push"}, flags: []string{"--tags"},
			form: url.Values{"action": {"once"}}, wantFlash: "ok: approved ID once (within 24h); the config is not changed",
			wantGrant: &requests.Grant{Once: true, Until: time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)}},
		{name: "1 hour grants calls for an hour", sub: []string{"push"}, flags: []string{"--tags"},
			form: url.Values{"action": {"1h"}}, wantFlash: "ok: approved ID until 2026-03-01 13:00:00Z; the config is not changed",
			wantGrant: &requests.Grant{Until: time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)}},
		{name: "8 hours grants calls for 8 hours", sub: []string{"push"}, flags: []string{"--tags"},
			form: url.Values{"action": {"8h"}}, wantFlash: "ok: approved ID until 2026-03-01 20:00:00Z",
			wantGrant: &requests.Grant{Until: time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC)}},
		{name: "a grant a deny rule refuses shows why", sub: []string{"config"}, flags: []string{"--global"},
			form: url.Values{"action": {"once"}}, wantFlash: "error: not granted, ID stays pending: deny rule tools.git.deny[0]"},
		{name: "an unlisted flag is refused without the box", sub: []string{"push"}, flags: []string{"--verb"},
			form: url.Values{"action": {"8h"}}, wantFlash: "error: not approved, ID stays pending: --verb (NOT IN 'git push --help')"},
		{name: "an unlisted flag is granted with the box", sub: []string{"push"}, flags: []string{"--verb"},
			form:      url.Values{"action": {"1h"}, "unlisted_ok": {"1"}},
			wantFlash: "ok: approved ID until", wantGrant: &requests.Grant{Until: time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)}},
		{name: "an exact call is granted exactly", sub: []string{"push"}, flags: []string{"--force"}, exact: true,
			form: url.Values{"action": {"once"}}, wantFlash: "ok: approved ID once",
			wantGrant: &requests.Grant{Once: true, Until: time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC), Exact: true}},
		{name: "an exact call under a changed policy shows why", sub: []string{"push"}, flags: []string{"--force"}, exact: true, change: true,
			form: url.Values{"action": {"8h"}}, wantFlash: "error: not granted, ID stays pending: the config, an overrides file or an env file changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			cookie, csrf := f.signIn(t)
			var id string
			if tt.exact {
				id = f.submitExact(t, tt.sub, tt.flags, map[string]any{"force": true, "args": []any{"origin", "main"}}, nil)
			} else {
				id = f.submit(t, "git", tt.sub, tt.flags, "for now")
			}
			if tt.change {
				configtest.WriteFile(t, f.config, string(configtest.ReadFile(t, f.config))+"# edited\n", 0o600)
			}
			before := string(configtest.ReadFile(t, f.config))
			tt.form.Set("csrf", csrf)
			w := f.post(t, cookie, "/requests/"+id+"/decide", tt.form)
			if loc := w.Header().Get("Location"); loc != "/" {
				t.Fatalf("redirect to %q, want /", loc)
			}
			if got, want := f.flashAfter(t, cookie, w), strings.ReplaceAll(tt.wantFlash, "ID", id); !strings.HasPrefix(got, want) {
				t.Errorf("flash %q, want it to start with %q", got, want)
			}
			if string(configtest.ReadFile(t, f.config)) != before {
				t.Errorf("a grant changed the config")
			}
			rec := f.record(t, id)
			if tt.wantGrant == nil {
				if rec.Status != "pending" {
					t.Errorf("the request is %s, want pending", rec.Status)
				}
				return
			}
			want := *tt.wantGrant
			want.Config = f.config
			if tt.exact {
				want.Policy = rec.Call.Policy
			}
			if rec.Status != "approved" || rec.DecidedBy != "admin" {
				t.Errorf("the request is %s by %q, want approved by admin", rec.Status, rec.DecidedBy)
			}
			if diff := grantDiff(rec.Grant, &want); diff != "" {
				t.Errorf("grant: %s", diff)
			}
		})
	}
}

// TestHistoryShowsTheGrantState shows each decision's grant as `requests
// list` does (requests.GrantStatus): once, until, used, expired.
func TestHistoryShowsTheGrantState(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cookie, _ := f.signIn(t)
	once := f.submit(t, "git", []string{"push"}, []string{"--tags"}, "once")
	used := f.submit(t, "git", []string{"push"}, []string{"--force"}, "used")
	timed := f.submit(t, "git", []string{"fetch"}, []string{"--prune"}, "timed")
	long := f.submit(t, "git", []string{"fetch"}, []string{"--all"}, "long")
	plain := f.submit(t, "git", []string{"pull"}, []string{"--ff-only"}, "plain")
	for id, body := range map[string]string{once: `{"once":true}`, used: `{"once":true}`, timed: `{"for":"1h"}`, long: `{"for":"72h"}`, plain: `{}`} {
		if w := f.apiPost(t, id, "approve", body); w.Code != 200 {
			t.Fatalf("approve %s %s: %d %s", id, body, w.Code, w.Body)
		}
	}
	if _, err := requests.Open(f.log).UseGrant(t.Context(), used, f.clock.now()); err != nil {
		t.Fatalf("use the once-grant: %v", err)
	}
	history := func() map[string]string {
		t.Helper()
		page := f.do(t, call{target: "/", cookie: cookie}).Body.String()
		rows := regexp.MustCompile(`(?s)<tr class="approved"><td><code>(req_[0-9a-f]+)</code></td><td>[^<]*</td><td>([^<]*)</td>`).FindAllStringSubmatch(page, -1)
		out := map[string]string{}
		for _, m := range rows {
			out[m[1]] = html.UnescapeString(m[2])
		}
		return out
	}
	want := map[string]string{once: "approved once", used: "approved once, used", timed: "approved until 13:00Z",
		long: "approved until 2026-03-04 12:00Z", plain: "approved"}
	got := history()
	if len(got) != len(want) {
		t.Fatalf("history rows %v, want %v", got, want)
	}
	for id, state := range got {
		if state != want[id] {
			t.Errorf("%s: %q, want %q", id, state, want[id])
		}
	}
	f.clock.advance(25 * time.Hour)
	cookie, _ = f.signIn(t) // the session lasts 12 h
	want = map[string]string{once: "approved once, expired", used: "approved once, used", timed: "approved until 13:00Z, expired",
		long: "approved until 2026-03-04 12:00Z", plain: "approved"}
	got = history()
	if len(got) != len(want) {
		t.Fatalf("history rows %v, want %v", got, want)
	}
	for id, state := range got {
		if state != want[id] {
			t.Errorf("a day later, %s: %q, want %q", id, state, want[id])
		}
	}
}

// reload puts the config as it now stands in service, as the server's
// reload after a write does.
func (f *fixture) reload(t *testing.T) {
	t.Helper()
	l := f.loadFixture(t)
	f.src.mu.Lock()
	defer f.src.mu.Unlock()
	f.src.st.Policy, f.src.st.Base = l.Policy, nil
}

// After Confirm apply the review page says the change awaits the reload
// and refreshes itself, keeping its flash, until the policy in service has
// the applied rule; then it shows the rule, once, and stops refreshing. It
// stops too when the reload never comes.
func TestThePageRefreshesUntilAnApplyIsInService(t *testing.T) {
	t.Parallel()
	for _, reloads := range []bool{true, false} {
		t.Run(map[bool]string{true: "until the reload", false: "until it gives up"}[reloads], func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			cookie, csrf := f.signIn(t)
			id := f.submit(t, "git", []string{"push"}, []string{"--tags"}, "push the tags")
			page := f.do(t, call{target: "/requests/" + id + "/apply", cookie: cookie}).Body.String()
			plan := regexp.MustCompile(`name="plan" value="([0-9a-f]+)"`).FindStringSubmatch(page)
			if plan == nil {
				t.Fatal("no plan in the confirm form")
			}
			if w := f.post(t, cookie, "/requests/"+id+"/apply", url.Values{"csrf": {csrf}, "plan": {plan[1]}}); w.Code != http.StatusSeeOther {
				t.Fatalf("confirm: status %d", w.Code)
			}
			const refresh = `<body data-refresh="1">`
			for i := range 2 {
				page := f.do(t, call{target: "/", cookie: cookie}).Body.String()
				if !strings.Contains(page, refresh) || !strings.Contains(page, "refreshes until the server has reloaded it") ||
					!strings.Contains(page, "and applied: added flags --tags to git push") {
					t.Fatalf("view %d before the reload: no refresh, note or flash:\n%s", i, page)
				}
			}
			if reloads {
				f.reload(t)
			} else {
				f.clock.advance(awaitApplyFor + time.Second)
			}
			page = f.do(t, call{target: "/", cookie: cookie}).Body.String()
			if strings.Contains(page, refresh) || strings.Contains(page, "refreshes until") {
				t.Errorf("the page still refreshes:\n%s", page)
			}
			if reloads && !regexp.MustCompile(`<code>git push</code>: [^<]*<code>--set-upstream</code>, <code>--tags</code>`).MatchString(page) {
				t.Errorf("the policy in service does not show the applied flag:\n%s", page)
			}
			if again := f.do(t, call{target: "/", cookie: cookie}).Body.String(); strings.Contains(again, `class="flash`) {
				t.Errorf("the flash shows after the page stopped refreshing")
			}
		})
	}
}

// "Policy in service" marks what the grants in force add to the config's
// rules, with each grant's id and expiry: a flag added to a rule of the
// config, and a rule of its own; the config's flags and rules stay
// unmarked. A grant whose id holds markup shows as text.
func TestPolicyInServiceMarksWhatGrantsAdd(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cookie, _ := f.signIn(t)
	until := time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)
	l := f.loadFixture(t)
	timed := config.GrantSpec{ID: "req_aaaaaaaa", Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--tags"}}
	once := config.GrantSpec{ID: "req_<b>bbbbb", Tool: "git", Subcommand: []string{"fetch"}, Flags: []string{"--prune"}}
	ov := l.Overlay([]config.GrantSpec{timed}, []config.GrantSpec{once})
	if len(ov.Dormant) > 0 {
		t.Fatalf("dormant grants: %v", ov.Dormant)
	}
	rec := func(g config.GrantSpec, isOnce bool) *requests.Record {
		return &requests.Record{ID: g.ID, Tool: g.Tool, Subcommand: g.Subcommand, Flags: g.Flags, Status: requests.StatusApproved,
			Grant: &requests.Grant{Once: isOnce, Until: until}}
	}
	f.src.mu.Lock()
	f.src.st.Policy, f.src.st.Base = ov.Policy, l.Policy
	f.src.st.Grants = []*requests.Record{rec(timed, false), rec(once, true)}
	f.src.mu.Unlock()

	page := f.do(t, call{target: "/", cookie: cookie}).Body.String()
	section := page[strings.Index(page, `<section class="policy">`):]
	for _, want := range []string{
		`<li><code>git push</code>: <code>--set-upstream</code>, <code>--tags</code> <span class="grant">(grant req_aaaaaaaa until 2026-03-01 13:00Z)</span>; at most 2`,
		`<li class="granted"><code>git fetch</code> <span class="grant">(once-grant req_\u003cb\u003ebbbbb until 2026-03-01 13:00Z)</span>: <code>--prune</code>; no positional arguments`,
		`<li><code>git pull</code>: <code>--ff-only</code>;`,
	} {
		want = strings.ReplaceAll(want, `\u003c`, "&lt;")
		want = strings.ReplaceAll(want, `\u003e`, "&gt;")
		if !strings.Contains(section, want) {
			t.Errorf("the policy lacks %s:\n%s", want, section)
		}
	}
	if strings.Contains(section, "<b>") {
		t.Errorf("markup from a grant's id reached the page")
	}
}
