package webui

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config/edit"
	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/webui/httpguard"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pages are the parsed templates, one set per page, each with the layout.
var pages = func() map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, page := range []string{"login", "review", "preview", "notice"} {
		out[page] = template.Must(template.New("").Funcs(template.FuncMap{"dangerText": requests.DangerText}).
			ParseFS(templateFS, "templates/layout.html", "templates/"+page+".html"))
	}
	return out
}()

// serveBrowser routes the pages, on the UI host only: the route and method
// (404, 405), the session (the login form otherwise), then for a POST the
// Origin, the body and the CSRF token.
func (u *UI) serveBrowser(w http.ResponseWriter, r *http.Request, s site) {
	p := r.URL.EscapedPath()
	switch {
	case p == "/":
		if allowMethod(w, r, false, http.MethodGet) {
			u.index(w, r, s)
		}
	case p == "/login":
		if allowMethod(w, r, false, http.MethodPost) {
			u.login(w, r, s)
		}
	case p == "/logout":
		if allowMethod(w, r, false, http.MethodPost) {
			u.logout(w, r, s)
		}
	case strings.HasPrefix(p, "/static/"):
		if allowMethod(w, r, false, http.MethodGet) {
			serveStatic(w, r, strings.TrimPrefix(p, "/static/"))
		}
	case strings.HasPrefix(p, "/requests/"):
		id, action, ok := splitIDPath(strings.TrimPrefix(p, "/requests/"))
		switch {
		case ok && action == "decide":
			if allowMethod(w, r, false, http.MethodPost) {
				u.signedPost(w, r, s, func(ref sessionRef) { u.decideForm(w, r, s, ref, id) })
			}
		case ok && action == "apply":
			if !allowMethod(w, r, false, http.MethodGet, http.MethodPost) {
				return
			}
			if r.Method == http.MethodPost {
				u.signedPost(w, r, s, func(ref sessionRef) { u.confirmApply(w, r, s, ref, id) })
				return
			}
			u.previewPage(w, r, s, id)
		default:
			http.NotFound(w, r)
		}
	default:
		http.NotFound(w, r)
	}
}

// index is GET /: a sign-in with ?token=, else the review page or, signed
// out, the login form.
func (u *UI) index(w http.ResponseWriter, r *http.Request, s site) {
	if q := r.URL.Query(); q.Has("token") {
		u.tryToken(w, r, s, q.Get("token"), "?token=")
		return
	}
	ref, ok := u.session(r, s)
	if !ok {
		u.render(w, http.StatusOK, "login", pageData{Title: "Sign in"})
		return
	}
	recs, err := u.records(s)
	if err != nil {
		u.log.Error("read request log", "err", err)
		u.renderNotice(w, s, ref, http.StatusInternalServerError, oneLine(err.Error()))
		return
	}
	learning := u.learnHelps(r.Context(), &s, recs, pageLearnWait)
	d := reviewData(s, recs, u.now())
	d.Title, d.SignedIn, d.CSRF, d.Flash = "Requests", true, ref.csrf, u.sessions.takeFlash(ref)
	if learning {
		d.Learning, d.Refresh = true, learnRefresh
	}
	if f := d.Flash; f != nil && f.Awaiting != nil {
		if !inService(s.Policy, f.Awaiting) && u.now().Before(f.Awaiting.Until) {
			// The page refreshes itself until the reload shows the
			// applied rule, keeping the flash for the next one.
			u.sessions.setFlash(ref, *f)
			d.Reloading, d.Refresh = true, applyRefresh
		}
	}
	u.render(w, http.StatusOK, "review", d)
}

// applyRefresh is how often, in seconds, the review page refreshes itself
// while the policy in service does not yet show an apply just written;
// awaitApplyFor is how long it keeps doing so (the reload debounce is far
// shorter; a config the reload rejects never shows it).
const (
	applyRefresh  = 1
	awaitApplyFor = 15 * time.Second
)

// inService reports whether p has the rule a is waiting for, with every
// flag a merged.
func inService(p *policy.Policy, a *awaitedApply) bool {
	if p == nil {
		return false
	}
	for _, r := range p.ToolRules(a.Tool) {
		if !slices.Equal(r.Subcommand(), a.Subcommand) {
			continue
		}
		have := map[string]bool{}
		for _, f := range r.Flags() {
			have[f.Flag] = true
		}
		for _, f := range a.Flags {
			if !have[f] {
				return false
			}
		}
		return true
	}
	return false
}

// login is POST /login with the form field token.
func (u *UI) login(w http.ResponseWriter, r *http.Request, s site) {
	if r.Header.Get("Origin") != "" && !sameOrigin(s, r) {
		refuse(w, r, false, http.StatusForbidden, "forbidden: sign in from the admin page itself")
		return
	}
	u.withBody(w, r, false, func(w http.ResponseWriter, r *http.Request) {
		u.tryToken(w, r, s, r.PostFormValue("token"), "login form")
	})
}

// tryToken signs in with typed, redirecting to / (so the token leaves the
// URL), or, when it is wrong, answers the login form with 401 after the
// sign-in delay.
func (u *UI) tryToken(w http.ResponseWriter, r *http.Request, s site, typed, via string) {
	if tokenMatches(s, strings.TrimSpace(typed)) {
		u.signIn(w, s)
		u.log.Info("signed in", "via", via, "remote", r.RemoteAddr)
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	u.log.Warn("sign-in refused: wrong token", "via", via, "remote", r.RemoteAddr)
	t := time.NewTimer(u.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
		return
	}
	w.Header().Set("WWW-Authenticate", httpguard.Challenge)
	u.render(w, http.StatusUnauthorized, "login", pageData{Title: "Sign in",
		Flash: &flash{Text: "That is not the admin token. It is in the file admin.auth_token_file names."}})
}

// logout is POST /logout.
func (u *UI) logout(w http.ResponseWriter, r *http.Request, s site) {
	if _, ok := u.session(r, s); !ok {
		clearCookie(w)
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	u.signedPost(w, r, s, func(ref sessionRef) {
		u.sessions.end(ref)
		clearCookie(w)
		u.log.Info("signed out", "remote", r.RemoteAddr)
		http.Redirect(w, r, "/", http.StatusSeeOther)
	})
}

// signedPost runs next for a POST of a signed-in page that passes the CSRF
// check: the UI's own Origin (before the body is read) and the session's
// token in the form field csrf or the header X-CSRF-Token. Signed out, it
// answers the login form with 401.
func (u *UI) signedPost(w http.ResponseWriter, r *http.Request, s site, next func(sessionRef)) {
	ref, ok := u.session(r, s)
	if !ok {
		w.Header().Set("Connection", "close")
		if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
			http.NewResponseController(w).SetReadDeadline(time.Now())
		}
		u.render(w, http.StatusUnauthorized, "login", pageData{Title: "Sign in",
			Flash: &flash{Text: "You are signed out (the session ended); sign in again. Nothing was decided."}})
		return
	}
	if !sameOrigin(s, r) {
		refuse(w, r, false, http.StatusForbidden, "forbidden: this form must be sent from the admin page itself (Origin)")
		return
	}
	u.withBody(w, r, false, func(w http.ResponseWriter, r *http.Request) {
		sent := r.Header.Get("X-CSRF-Token")
		if sent == "" {
			sent = r.PostFormValue("csrf")
		}
		if !csrfMatches(ref, sent) {
			http.Error(w, "forbidden: the form's CSRF token is missing or wrong; reload the page", http.StatusForbidden)
			return
		}
		next(ref)
	})
}

// decideForm is POST /requests/{id}/decide: the review page's buttons
// (Approve once, for 1 hour, for 8 hours, Apply to config, Mark approved,
// Deny).
func (u *UI) decideForm(w http.ResponseWriter, r *http.Request, s site, ref sessionRef, id string) {
	unlistedOK := r.PostFormValue("unlisted_ok") != ""
	iKnow := formIKnow(r)
	var f flash
	switch r.PostFormValue("action") {
	case "approve":
		_, err := u.approve(r.Context(), s, id, approval{unlistedOK: unlistedOK})
		f = result(err, "approved "+requests.Token(id)+
			" (nothing is allowed until a rule exists: Apply to config writes it, once / 1 hour / 8 hours grant it now)")
	case "once", "1h", "8h":
		term := formGrants[r.PostFormValue("action")]
		out, err := u.approve(r.Context(), s, id, approval{unlistedOK: unlistedOK, grant: &term, iKnow: iKnow, confirmWith: formIKnowOption})
		f = result(err, "approved "+requests.Token(id)+" "+out.granted+"; the config is not changed")
	case "apply":
		http.Redirect(w, r, applyPreviewPath(id, unlistedOK), http.StatusSeeOther)
		return
	case "deny":
		_, err := u.deny(r.Context(), s, id, r.PostFormValue("reason"))
		f = result(err, "denied "+requests.Token(id))
	default:
		http.Error(w, "bad request: action must be approve, once, 1h, 8h, apply or deny", http.StatusBadRequest)
		return
	}
	u.sessions.setFlash(ref, f)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// formIKnow reports whether the form's i_know field holds IKnow, as
// typed (surrounding blanks aside): a checkbox or a default value would
// let one click confirm.
func formIKnow(r *http.Request) bool {
	return strings.TrimSpace(r.PostFormValue("i_know")) == IKnow
}

// applyPreviewPath is the apply preview of request id, carrying the
// unlisted_ok box the operator ticked on the review page. i-know is never
// carried: a link (which the assistant, knowing its request's id, could
// hand the operator) must not arrive with the confirmation typed, so the
// preview asks for it again.
func applyPreviewPath(id string, unlistedOK bool) string {
	q := url.Values{}
	if unlistedOK {
		q.Set("unlisted_ok", "1")
	}
	if len(q) == 0 {
		return requestPath(id, "apply")
	}
	return requestPath(id, "apply") + "?" + q.Encode()
}

// result is the flash for a decision: ok, or the refusal's own words.
func result(err error, ok string) flash {
	if err != nil {
		return flash{Text: oneLine(err.Error())}
	}
	return flash{OK: true, Text: ok}
}

// previewPage is GET /requests/{id}/apply: the exact change to the config
// as a unified diff, computed without writing, with Confirm apply.
func (u *UI) previewPage(w http.ResponseWriter, r *http.Request, s site, id string) {
	ref, ok := u.session(r, s)
	if !ok {
		u.render(w, http.StatusUnauthorized, "login", pageData{Title: "Sign in",
			Flash: &flash{Text: "You are signed out (the session ended); sign in again."}})
		return
	}
	recs, err := u.records(s)
	if err != nil {
		u.renderNotice(w, s, ref, http.StatusInternalServerError, oneLine(err.Error()))
		return
	}
	var rec *requests.Record
	pending := 0
	for _, x := range recs {
		if x.ID == id {
			rec = x
		}
		if x.Status == requests.StatusPending {
			pending++
		}
	}
	switch {
	case rec == nil:
		u.renderNotice(w, s, ref, http.StatusNotFound, "No request has the id "+requests.Token(id)+".")
		return
	case rec.Status != requests.StatusPending:
		u.renderNotice(w, s, ref, http.StatusConflict, requests.Token(id)+" is already "+rec.Status+".")
		return
	}
	u.learnHelps(r.Context(), &s, []*requests.Record{rec}, learnWait)
	v := viewRequest(s, rec, u.now())
	v.addDanger(rec, newEffects(s).of(rec))
	d := pageData{Title: "Apply " + v.IDText, SignedIn: true, CSRF: ref.csrf, Pending: pending, Counted: true,
		Flash: u.sessions.takeFlash(ref), Req: &v, Preview: preview(s, rec, r.URL.Query().Get("unlisted_ok") != "")}
	u.render(w, http.StatusOK, "preview", d)
}

// confirmApply is POST /requests/{id}/apply: Confirm apply. It applies only
// the change the preview showed; if the config changed since, it shows the
// new preview instead.
func (u *UI) confirmApply(w http.ResponseWriter, r *http.Request, s site, ref sessionRef, id string) {
	unlistedOK := r.PostFormValue("unlisted_ok") != ""
	iKnow := formIKnow(r)
	back := applyPreviewPath(id, unlistedOK)
	rec, err := u.pending(s, id)
	if err != nil {
		u.sessions.setFlash(ref, result(err, ""))
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	p, err := edit.PlanApply(s.ConfigPath, rec.Tool, rec.Subcommand, rec.Flags, s.Paths)
	if err == nil && planID(p) != r.PostFormValue("plan") {
		u.sessions.setFlash(ref, flash{Text: "The config changed since the preview, so nothing was applied: review the change as it now stands."})
		http.Redirect(w, r, back, http.StatusSeeOther)
		return
	}
	// A refused plan is refused again by the apply, in its own words.
	out, err := u.approve(r.Context(), s, id, approval{apply: true, unlistedOK: unlistedOK, iKnow: iKnow, confirmWith: formIKnowOption})
	f := result(err, "")
	if err == nil {
		f.Text = "approved " + requests.Token(id) + " and applied: " + oneLine(out.applied)
		f.Awaiting = &awaitedApply{Tool: rec.Tool, Subcommand: rec.Subcommand, Flags: rec.Flags, Until: u.now().Add(awaitApplyFor)}
	}
	u.sessions.setFlash(ref, f)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// renderNotice answers a page that could not be shown with a sentence
// saying why and the way back.
func (u *UI) renderNotice(w http.ResponseWriter, s site, ref sessionRef, status int, msg string) {
	u.render(w, status, "notice", pageData{Title: "Notice", SignedIn: true, CSRF: ref.csrf, Notice: msg})
}

// render executes a page into memory first, so a template error is a clean
// 500 rather than half a page.
func (u *UI) render(w http.ResponseWriter, status int, page string, d pageData) {
	var b bytes.Buffer
	if err := pages[page].ExecuteTemplate(&b, "layout", d); err != nil {
		u.log.Error("render page", "page", page, "err", err)
		http.Error(w, "internal error: the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// serveStatic serves one embedded file of static/ (no listings).
func serveStatic(w http.ResponseWriter, r *http.Request, name string) {
	name, err := url.PathUnescape(name)
	if err != nil || name == "" || strings.Contains(name, "/") || !fs.ValidPath(name) {
		http.NotFound(w, r)
		return
	}
	data, err := fs.ReadFile(staticFS, "static/"+name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	switch path.Ext(name) {
	case ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	default:
		w.Header().Set("Content-Type", "application/octet-stream")
	}
	w.Write(data)
}
