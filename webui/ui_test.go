package webui

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/wraptool/wraptool/webui/httpguard"
)

func TestHostLabelIsTheFirst16HexDigitsOfTheTokensHash(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("wraptool-admin:" + adminToken))
	want := hex.EncodeToString(sum[:])[:16]
	if got := HostLabel(adminToken); got != want {
		t.Errorf("HostLabel = %q, want %q", got, want)
	}
	if HostLabel(adminToken) == HostLabel(mcpToken) {
		t.Error("two tokens give one label")
	}
	f := newFixture(t)
	if got, want := f.ui.URL(), "http://w-"+want+".localhost:8718/"; got != want {
		t.Errorf("URL() = %q, want %q", got, want)
	}
	f.src.setToken("")
	if got := f.ui.URL(); got != "" {
		t.Errorf("URL() without a token = %q, want \"\"", got)
	}
}

func TestEveryRouteChecksHostMethodAndCredentials(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cookie, _ := f.signIn(t)
	ui := uiHost(adminToken)
	tests := []struct {
		name       string
		call       call
		want       int
		wantAllow  string
		wantBody   string // a substring
		wantJSON   bool   // the body is {"error": …}
		wantChalng bool   // WWW-Authenticate is set
		challenge  string // when set, WWW-Authenticate exactly
	}{
		{name: "a foreign Host is refused before anything else", call: call{host: "evil.example:8718", target: "/"}, want: 403},
		{name: "a rebound *.localhost name is foreign", call: call{host: "w-0000000000000000.localhost:8718", target: "/"}, want: 403},
		{name: "the UI host on another port is foreign", call: call{host: "w-" + HostLabel(adminToken) + ".localhost:9999", target: "/"}, want: 403},
		{name: "a foreign Host is refused under /api in JSON", call: call{host: "evil.example", target: "/api/requests", header: bearer(adminToken)},
			want: 403, wantJSON: true},
		{name: "a foreign Origin is refused on the UI host", call: call{target: "/", header: map[string]string{"Origin": "http://evil.example"}}, want: 403},
		{name: "an Origin of null is refused", call: call{target: "/api/requests", header: map[string]string{"Origin": "null", "Authorization": "Bearer " + adminToken}},
			want: 403, wantJSON: true},
		{name: "the review page on a loopback host is refused", call: call{host: "127.0.0.1:8718", target: "/", cookie: cookie}, want: 403},
		{name: "signing in with ?token= on localhost is refused", call: call{host: "localhost:8718", target: "/?token=" + adminToken}, want: 403},
		{name: "POST /login on [::1] is refused", call: call{method: "POST", host: "[::1]:8718", target: "/login", form: url.Values{"token": {adminToken}}}, want: 403},
		{name: "static files on a loopback host are refused", call: call{host: "localhost:8718", target: "/static/style.css"}, want: 403},
		{name: "signed out, / is the login form", call: call{target: "/"}, want: 200, wantBody: `<form method="post" action="/login">`},
		{name: "signed in, / is the review page", call: call{target: "/", cookie: cookie}, want: 200, wantBody: "Pending requests"},
		{name: "the Host is compared without case", call: call{host: strings.ToUpper(ui), target: "/", cookie: cookie}, want: 200, wantBody: "Pending requests"},
		{name: "an unknown session cookie counts as signed out", call: call{target: "/", cookie: strings.Repeat("ab", 32)}, want: 200, wantBody: `action="/login"`},
		{name: "GET /login is 405 with Allow: POST", call: call{target: "/login"}, want: 405, wantAllow: "POST"},
		{name: "DELETE / is 405 with Allow: GET, HEAD", call: call{method: "DELETE", target: "/"}, want: 405, wantAllow: "GET, HEAD"},
		{name: "GET /logout is 405", call: call{target: "/logout"}, want: 405, wantAllow: "POST"},
		{name: "GET of a decide route is 405", call: call{target: "/requests/req_00000000/decide", cookie: cookie}, want: 405, wantAllow: "POST"},
		{name: "an unknown page is 404", call: call{target: "/nope"}, want: 404},
		{name: "the stylesheet is served on the UI host", call: call{target: "/static/style.css"}, want: 200, wantBody: "pre.diff"},
		{name: "the script is served on the UI host", call: call{target: "/static/pending.js"}, want: 200, wantBody: "pending-count"},
		{name: "an unknown static file is 404", call: call{target: "/static/nope.css"}, want: 404},
		{name: "the static folder is not listed", call: call{target: "/static/"}, want: 404},
		{name: "the API without credentials is 401 with a challenge", call: call{host: "localhost:8718", target: "/api/requests"},
			want: 401, wantJSON: true, wantChalng: true, challenge: httpguard.Challenge},
		{name: "the API refuses the MCP token as a wrong token", call: call{host: "127.0.0.1:8718", target: "/api/requests", header: bearer(mcpToken)},
			want: 401, wantJSON: true, wantChalng: true, challenge: httpguard.InvalidTokenChallenge},
		{name: "the API refuses a Basic header", call: call{host: "127.0.0.1:8718", target: "/api/requests",
			header: map[string]string{"Authorization": "Basic " + adminToken}}, want: 401, wantJSON: true},
		{name: "the API takes the admin token on 127.0.0.1", call: call{host: "127.0.0.1:8718", target: "/api/requests", header: bearer(adminToken)},
			want: 200, wantBody: "[]"},
		{name: "the API takes the admin token on localhost", call: call{host: "localhost:8718", target: "/api/requests", header: bearer(adminToken)},
			want: 200, wantBody: "[]"},
		{name: "the API takes the admin token on [::1]", call: call{host: "[::1]:8718", target: "/api/requests", header: bearer(adminToken)},
			want: 200, wantBody: "[]"},
		{name: "the API takes the admin token on the UI host", call: call{target: "/api/requests", header: bearer(adminToken)}, want: 200, wantBody: "[]"},
		{name: "the bearer scheme is taken in any case", call: call{host: "localhost:8718", target: "/api/requests",
			header: map[string]string{"Authorization": "bEARER " + adminToken}}, want: 200},
		{name: "the API takes the session cookie on the UI host", call: call{target: "/api/requests", cookie: cookie}, want: 200, wantBody: "[]"},
		{name: "the session cookie is ignored on a loopback host", call: call{host: "localhost:8718", target: "/api/requests", cookie: cookie},
			want: 401, wantJSON: true, wantChalng: true},
		{name: "a wrong bearer token is not rescued by a good cookie", call: call{target: "/api/requests", cookie: cookie, header: bearer(mcpToken)},
			want: 401, wantJSON: true},
		{name: "POST /api/requests is 405 before credentials are asked", call: call{method: "POST", host: "localhost:8718", target: "/api/requests"},
			want: 405, wantAllow: "GET, HEAD", wantJSON: true},
		{name: "GET of an approve endpoint is 405", call: call{host: "localhost:8718", target: "/api/requests/req_00000000/approve", header: bearer(adminToken)},
			want: 405, wantAllow: "POST", wantJSON: true},
		{name: "an unknown API endpoint is 404 in JSON", call: call{host: "localhost:8718", target: "/api/nope", header: bearer(adminToken)}, want: 404, wantJSON: true},
		{name: "an unknown request action is 404", call: call{method: "POST", host: "localhost:8718", target: "/api/requests/req_00000000/grant", header: bearer(adminToken)},
			want: 404, wantJSON: true},
		{name: "a bad status is 400", call: call{host: "localhost:8718", target: "/api/requests?status=maybe", header: bearer(adminToken)}, want: 400, wantJSON: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := f.do(t, tt.call)
			if w.Code != tt.want {
				t.Fatalf("status = %d, want %d; body %s", w.Code, tt.want, w.Body)
			}
			if got := w.Header().Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow = %q, want %q", got, tt.wantAllow)
			}
			if !strings.Contains(w.Body.String(), tt.wantBody) {
				t.Errorf("body %q does not contain %q", w.Body, tt.wantBody)
			}
			if tt.wantJSON {
				jsonError(t, w)
			}
			if got := w.Header().Get("WWW-Authenticate"); tt.wantChalng && !strings.HasPrefix(got, "Bearer") {
				t.Errorf("WWW-Authenticate = %q, want a Bearer challenge", got)
			}
			if got := w.Header().Get("WWW-Authenticate"); tt.challenge != "" && got != tt.challenge {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tt.challenge)
			}
			if tt.want == 403 && strings.Contains(w.Body.String(), HostLabel(adminToken)) {
				t.Errorf("a refusal names the UI host: %s", w.Body)
			}
		})
	}
}

func TestEveryResponseCarriesTheSecurityHeaders(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cookie, csrf := f.signIn(t)
	id := f.submit(t, "git", []string{"push"}, []string{"--tags"}, "release")
	calls := map[string]call{
		"login form":     {target: "/"},
		"review page":    {target: "/", cookie: cookie},
		"sign-in":        {target: "/?token=" + adminToken},
		"failed sign-in": {target: "/?token=wrong"},
		"preview":        {target: "/requests/" + id + "/apply", cookie: cookie},
		"form redirect":  {method: "POST", target: "/requests/" + id + "/decide", cookie: cookie, form: url.Values{"csrf": {csrf}, "action": {"apply"}}, header: map[string]string{"Origin": uiOrigin}},
		"CSRF refusal":   {method: "POST", target: "/requests/" + id + "/decide", cookie: cookie, form: url.Values{"action": {"approve"}}, header: map[string]string{"Origin": uiOrigin}},
		"foreign host":   {host: "evil.example", target: "/"},
		"loopback page":  {host: "localhost:8718", target: "/"},
		"405":            {target: "/login"},
		"404":            {target: "/nope"},
		"static":         {target: "/static/style.css"},
		"API list":       {host: "localhost:8718", target: "/api/requests", header: bearer(adminToken)},
		"API 401":        {host: "localhost:8718", target: "/api/requests"},
		"API 404":        {method: "POST", host: "localhost:8718", target: "/api/requests/req_ffffffff/deny", header: bearer(adminToken)},
		"API body too large": {method: "POST", host: "localhost:8718", target: "/api/requests/" + id + "/deny", header: bearer(adminToken),
			body: `{"reason":"` + strings.Repeat("x", maxBodyBytes) + `"}`},
	}
	want := map[string]string{
		"Content-Security-Policy": "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; form-action 'self'; " +
			"base-uri 'none'; connect-src 'self'; frame-ancestors 'none'",
		"X-Frame-Options":        "DENY",
		"Referrer-Policy":        "same-origin",
		"Cache-Control":          "no-store",
		"X-Content-Type-Options": "nosniff",
	}
	for name, c := range calls {
		t.Run(name, func(t *testing.T) {
			w := f.do(t, c)
			for k, v := range want {
				if got := w.Header().Get(k); got != v {
					t.Errorf("status %d: %s = %q, want %q", w.Code, k, got, v)
				}
			}
		})
	}
}

func TestSigningIn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		call   call
		want   int
		signed bool
	}{
		{name: "?token= with the admin token signs in and takes the token out of the URL", call: call{target: "/?token=" + adminToken}, want: 303, signed: true},
		{name: "?token= ignores surrounding spaces", call: call{target: "/?token=" + url.QueryEscape(" "+adminToken+"\n")}, want: 303, signed: true},
		{name: "POST /login with the admin token signs in", call: call{method: "POST", target: "/login", form: url.Values{"token": {adminToken}},
			header: map[string]string{"Origin": uiOrigin}}, want: 303, signed: true},
		{name: "POST /login without an Origin signs in", call: call{method: "POST", target: "/login", form: url.Values{"token": {adminToken}}}, want: 303, signed: true},
		{name: "POST /login from a loopback origin is refused", call: call{method: "POST", target: "/login", form: url.Values{"token": {adminToken}},
			header: map[string]string{"Origin": "http://localhost:8718"}}, want: 403},
		{name: "a wrong ?token= gets the login form with 401", call: call{target: "/?token=wrong"}, want: 401},
		{name: "the MCP token is a wrong token", call: call{target: "/?token=" + mcpToken}, want: 401},
		{name: "an empty ?token= is wrong", call: call{target: "/?token="}, want: 401},
		{name: "a wrong token at POST /login gets 401", call: call{method: "POST", target: "/login", form: url.Values{"token": {"wrong"}}}, want: 401},
		{name: "a missing token at POST /login gets 401", call: call{method: "POST", target: "/login", form: url.Values{}}, want: 401},
		{name: "the token as a prefix is wrong", call: call{target: "/?token=" + adminToken[:20]}, want: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			w := f.do(t, tt.call)
			if w.Code != tt.want {
				t.Fatalf("status = %d, want %d; body %s", w.Code, tt.want, w.Body)
			}
			if !tt.signed {
				for _, c := range w.Result().Cookies() {
					if c.Name == cookieName && c.Value != "" {
						t.Errorf("a refused sign-in set a session cookie")
					}
				}
				if tt.want == 401 && !strings.Contains(w.Body.String(), `action="/login"`) {
					t.Errorf("401 without the login form: %s", w.Body)
				}
				return
			}
			if loc := w.Header().Get("Location"); loc != "/" {
				t.Errorf("Location = %q, want /", loc)
			}
			c := sessionCookie(t, w)
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Domain != "" {
				t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/ and no Domain", c)
			}
			if len(c.Value) != 64 || strings.Trim(c.Value, "0123456789abcdef") != "" {
				t.Errorf("session id %q: want 32 random bytes in hex", c.Value)
			}
			if strings.Contains(c.Value, adminToken) || strings.Contains(w.Header().Get("Set-Cookie"), adminToken) {
				t.Errorf("the cookie carries the token")
			}
			page := f.do(t, call{target: "/", cookie: c.Value})
			if !strings.Contains(page.Body.String(), "Pending requests") {
				t.Errorf("the cookie does not open the review page: %s", page.Body)
			}
			// Each sign-in is a new session.
			if other := sessionCookie(t, f.do(t, tt.call)); other.Value == c.Value {
				t.Errorf("two sign-ins got one session id")
			}
		})
	}
}

func TestFailedSignInWaitsTheDelay(t *testing.T) {
	t.Parallel()
	const delay = 60 * time.Millisecond
	f := newFixture(t, func(o *Options) { o.SignInDelay = delay })
	for _, c := range []call{{target: "/?token=wrong"}, {method: "POST", target: "/login", form: url.Values{"token": {"wrong"}}}} {
		start := time.Now()
		w := f.do(t, c)
		if took := time.Since(start); took < delay {
			t.Errorf("%s %s answered after %v, want at least %v", c.method, c.target, took, delay)
		}
		if w.Code != 401 {
			t.Errorf("status = %d, want 401", w.Code)
		}
	}
	start := time.Now()
	f.do(t, call{target: "/?token=" + adminToken})
	if took := time.Since(start); took >= delay {
		t.Errorf("a right token waited %v", took)
	}
}

func TestFailedSignInEndsWithTheRequest(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(o *Options) { o.SignInDelay = time.Hour })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	r := httptest.NewRequestWithContext(ctx, "GET", "/?token=wrong", nil)
	r.Host = uiHost(adminToken)
	w := httptest.NewRecorder()
	start := time.Now()
	f.ui.Handler().ServeHTTP(w, r)
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the handler waited %v after its request ended", took)
	}
	if strings.Contains(w.Body.String(), "Pending requests") {
		t.Errorf("a wrong token signed in")
	}
}

func TestCSRFGuardsEveryCookiePost(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cookie, csrf := f.signIn(t)
	other, otherCSRF := f.signIn(t)
	_ = other
	id := f.submit(t, "git", []string{"push"}, []string{"--tags"}, "release")
	form := func(token string) url.Values {
		return url.Values{"csrf": {token}, "action": {"deny"}, "reason": {"no"}}
	}
	grant := func(token, action string) url.Values { return url.Values{"csrf": {token}, "action": {action}} }
	origin := func(o string) map[string]string { return map[string]string{"Origin": o} }
	decide := "/requests/" + id + "/decide"
	tests := []struct {
		name string
		call call
	}{
		{"a form without an Origin", call{form: form(csrf)}},
		{"a form from a loopback origin", call{form: form(csrf), header: origin("http://localhost:8718")}},
		{"a form from the UI host over https", call{form: form(csrf), header: origin("https://" + uiHost(adminToken))}},
		{"a form from a foreign origin", call{form: form(csrf), header: origin("http://evil.example")}},
		{"a form from a null origin", call{form: form(csrf), header: origin("null")}},
		{"a form without its CSRF token", call{form: url.Values{"action": {"deny"}}, header: origin(uiOrigin)}},
		{"a form with a wrong CSRF token", call{form: form(strings.Repeat("0", 64)), header: origin(uiOrigin)}},
		{"a form with another session's CSRF token", call{form: form(otherCSRF), header: origin(uiOrigin)}},
		{"a form with a wrong X-CSRF-Token header", call{form: url.Values{"action": {"deny"}}, header: map[string]string{"Origin": uiOrigin, "X-CSRF-Token": "x"}}},
		{"an API POST with the cookie and no CSRF header", call{target: "/api/requests/" + id + "/deny", body: `{}`, header: origin(uiOrigin)}},
		{"an API POST with the cookie from another origin", call{target: "/api/requests/" + id + "/deny", body: `{}`,
			header: map[string]string{"Origin": "http://127.0.0.1:8718", "X-CSRF-Token": csrf}}},
		{"an API POST with the cookie and a wrong CSRF header", call{target: "/api/requests/" + id + "/deny", body: `{}`,
			header: map[string]string{"Origin": uiOrigin, "X-CSRF-Token": otherCSRF}}},
		{"sign-out without the CSRF token", call{target: "/logout", form: url.Values{}, header: origin(uiOrigin)}},
		{"an Approve once form without its CSRF token", call{form: url.Values{"action": {"once"}}, header: origin(uiOrigin)}},
		{"an Approve once form from a foreign origin", call{form: grant(csrf, "once"), header: origin("http://evil.example")}},
		{"a 1 hour form with another session's CSRF token", call{form: grant(otherCSRF, "1h"), header: origin(uiOrigin)}},
		{"an 8 hours form with a wrong CSRF token", call{form: grant(strings.Repeat("0", 64), "8h"), header: origin(uiOrigin)}},
		{"an 8 hours form without an Origin", call{form: grant(csrf, "8h")}},
		{"an API grant with the cookie and no CSRF header", call{target: "/api/requests/" + id + "/approve", body: `{"once":true}`, header: origin(uiOrigin)}},
		{"an API grant with the cookie and a wrong CSRF header", call{target: "/api/requests/" + id + "/approve", body: `{"for":"8h"}`,
			header: map[string]string{"Origin": uiOrigin, "X-CSRF-Token": otherCSRF}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.call
			c.method, c.cookie = "POST", cookie
			if c.target == "" {
				c.target = decide
			}
			if w := f.do(t, c); w.Code != http.StatusForbidden {
				t.Fatalf("status = %d, want 403; body %s", w.Code, w.Body)
			}
			if got := f.status(t, id); got != "pending" {
				t.Fatalf("the request is %s after a refused POST", got)
			}
		})
	}
	if w := f.do(t, call{target: "/", cookie: cookie}); !strings.Contains(w.Body.String(), "Pending requests") {
		t.Fatalf("a refused sign-out ended the session")
	}
	t.Run("the page's own form passes", func(t *testing.T) {
		w := f.do(t, call{method: "POST", target: decide, cookie: cookie, form: form(csrf), header: origin(uiOrigin)})
		if w.Code != http.StatusSeeOther || f.status(t, id) != "denied" {
			t.Fatalf("status = %d, request %s; want 303 and denied; body %s", w.Code, f.status(t, id), w.Body)
		}
	})
	t.Run("the page's own Approve once form passes", func(t *testing.T) {
		id := f.submit(t, "git", []string{"push"}, []string{"--set-upstream"}, "track")
		w := f.do(t, call{method: "POST", target: "/requests/" + id + "/decide", cookie: cookie, form: grant(csrf, "once"), header: origin(uiOrigin)})
		if w.Code != http.StatusSeeOther || f.status(t, id) != "approved" {
			t.Fatalf("status = %d, request %s; want 303 and approved; body %s", w.Code, f.status(t, id), w.Body)
		}
	})
	t.Run("a script of the page passes with X-CSRF-Token", func(t *testing.T) {
		id := f.submit(t, "git", []string{"pull"}, []string{"--ff-only"}, "sync")
		w := f.do(t, call{method: "POST", target: "/api/requests/" + id + "/deny", cookie: cookie, body: `{"reason":"no"}`,
			header: map[string]string{"Origin": uiOrigin, "X-CSRF-Token": csrf}})
		if w.Code != http.StatusOK {
			t.Fatalf("status = %d, want 200; body %s", w.Code, w.Body)
		}
	})
	t.Run("a signed-out POST gets the login form and decides nothing", func(t *testing.T) {
		id := f.submit(t, "git", []string{"pull"}, []string{"--rebase"}, "sync")
		w := f.do(t, call{method: "POST", target: "/requests/" + id + "/decide", form: form(csrf), header: origin(uiOrigin)})
		if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), `action="/login"`) {
			t.Fatalf("status = %d, want 401 with the login form; body %s", w.Code, w.Body)
		}
		if got := f.status(t, id); got != "pending" {
			t.Fatalf("the request is %s", got)
		}
	})
}

func TestBearerAPINeedsNoCSRF(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.submit(t, "git", []string{"push"}, []string{"--tags"}, "release")
	for _, host := range []string{"localhost:8718", uiHost(adminToken)} {
		w := f.do(t, call{method: "POST", host: host, target: "/api/requests/" + id + "/approve", body: `{}`, header: bearer(adminToken)})
		if host == "localhost:8718" && w.Code != http.StatusOK {
			t.Fatalf("status = %d, want 200; body %s", w.Code, w.Body)
		}
		if host != "localhost:8718" && w.Code != http.StatusConflict {
			t.Fatalf("second approve: status = %d, want 409; body %s", w.Code, w.Body)
		}
	}
}

func TestRotatingTheTokenEndsSessionsAndMovesTheHost(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cookie, _ := f.signIn(t)
	oldURL := f.ui.URL()
	const newToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	f.src.setToken(newToken)

	if f.ui.URL() == oldURL || !strings.Contains(f.ui.URL(), HostLabel(newToken)) {
		t.Fatalf("URL() = %q after rotation, was %q", f.ui.URL(), oldURL)
	}
	if w := f.do(t, call{host: uiHost(adminToken), target: "/", cookie: cookie}); w.Code != http.StatusForbidden {
		t.Errorf("the old UI host: status %d, want 403", w.Code)
	}
	if w := f.do(t, call{host: uiHost(newToken), target: "/", cookie: cookie}); !strings.Contains(w.Body.String(), `action="/login"`) {
		t.Errorf("the old session on the new host is not signed out: %d %s", w.Code, w.Body)
	}
	if w := f.do(t, call{host: "localhost:8718", target: "/api/requests", header: bearer(adminToken)}); w.Code != http.StatusUnauthorized {
		t.Errorf("the old token on the API: status %d, want 401", w.Code)
	}
	if w := f.do(t, call{host: "localhost:8718", target: "/api/requests", header: bearer(newToken)}); w.Code != http.StatusOK {
		t.Errorf("the new token on the API: status %d, want 200", w.Code)
	}
	// Back to the first token: the sessions made with it stay ended.
	f.src.setToken(adminToken)
	if w := f.do(t, call{target: "/", cookie: cookie}); !strings.Contains(w.Body.String(), `action="/login"`) {
		t.Errorf("a session survived a rotation and back: %s", w.Body)
	}
	// A sign-in with the new token works on the new host only.
	f.src.setToken(newToken)
	w := f.do(t, call{host: uiHost(newToken), target: "/?token=" + newToken})
	if w.Code != http.StatusSeeOther {
		t.Fatalf("sign-in with the new token: status %d", w.Code)
	}
}

func TestSessionsExpire(t *testing.T) {
	t.Parallel()
	for _, ttl := range []time.Duration{0, time.Hour} {
		f := newFixture(t, func(o *Options) { o.SessionTTL = ttl })
		want := ttl
		if want == 0 {
			want = 12 * time.Hour
		}
		cookie, _ := f.signIn(t)
		f.clock.advance(want - time.Second)
		if w := f.do(t, call{target: "/", cookie: cookie}); !strings.Contains(w.Body.String(), "Pending requests") {
			t.Fatalf("TTL %v: the session ended before its time", want)
		}
		f.clock.advance(time.Second)
		if w := f.do(t, call{target: "/", cookie: cookie}); !strings.Contains(w.Body.String(), `action="/login"`) {
			t.Fatalf("TTL %v: the session outlived its time", want)
		}
		if w := f.do(t, call{target: "/api/requests", cookie: cookie}); w.Code != http.StatusUnauthorized {
			t.Fatalf("TTL %v: an expired cookie on the API: status %d, want 401", want, w.Code)
		}
	}
}

func TestSigningOutEndsTheSession(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cookie, csrf := f.signIn(t)
	w := f.do(t, call{method: "POST", target: "/logout", cookie: cookie, form: url.Values{"csrf": {csrf}}, header: map[string]string{"Origin": uiOrigin}})
	if w.Code != http.StatusSeeOther {
		t.Fatalf("status = %d, want 303", w.Code)
	}
	if c := sessionCookie(t, w); c.MaxAge >= 0 || c.Value != "" {
		t.Errorf("cookie %+v: want it cleared", c)
	}
	if w := f.do(t, call{target: "/", cookie: cookie}); !strings.Contains(w.Body.String(), `action="/login"`) {
		t.Errorf("the session outlived sign-out")
	}
}

func TestBodiesAreBoundedAndRefusedInJSON(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.submit(t, "git", []string{"push"}, []string{"--tags"}, "release")
	w := f.do(t, call{method: "POST", host: "localhost:8718", target: "/api/requests/" + id + "/deny", header: bearer(adminToken),
		body: `{"reason":"` + strings.Repeat("x", maxBodyBytes) + `"}`})
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status = %d, want 413", w.Code)
	}
	if msg := jsonError(t, w); !strings.Contains(msg, "too large") {
		t.Errorf("error %q does not say the body is too large", msg)
	}
	if w.Header().Get("Connection") != "close" {
		t.Errorf("Connection = %q, want close", w.Header().Get("Connection"))
	}
	if got := f.status(t, id); got != "pending" {
		t.Errorf("the request is %s", got)
	}
}

func TestARealServerRefusesBeforeReadingTheBody(t *testing.T) {
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

	// A request that announces a body and never sends it is answered at
	// once when it has no credentials.
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if _, err := conn.Write([]byte("POST /api/requests/req_1/deny HTTP/1.1\r\nHost: localhost:" + port + "\r\nContent-Length: 100000\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("no answer without the body: %v", err)
	}
	if got := string(buf[:n]); !strings.HasPrefix(got, "HTTP/1.1 401") || !strings.Contains(got, "Connection: close") {
		t.Errorf("answer %q: want 401 with Connection: close", got)
	}
}

func TestAnyRequestUnderANewTokenEndsTheOldSessions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cookie, _ := f.signIn(t)
	const newToken = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	f.src.setToken(newToken)
	// A script's API call, with no cookie at all, sees the new token.
	if w := f.do(t, call{host: "localhost:8718", target: "/api/requests", header: bearer(newToken)}); w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	f.src.setToken(adminToken)
	if w := f.do(t, call{target: "/", cookie: cookie}); !strings.Contains(w.Body.String(), `action="/login"`) {
		t.Errorf("a session made before the rotation still opens the page")
	}
}

// /metrics answers only with the admin credentials the API takes: 401
// without them or with the MCP token, the registry's text with the admin
// token or a session on the UI host; GET only; 404 without a metrics
// handler.
func TestMetricsNeedTheAdminCredentials(t *testing.T) {
	t.Parallel()
	served := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "wraptool_sessions 1\n") })
	f := newFixture(t, func(o *Options) { o.Metrics = served })
	cookie, _ := f.signIn(t)
	for _, tt := range []struct {
		name string
		call call
		want int
	}{
		{"no credentials", call{host: "127.0.0.1:8718", target: "/metrics"}, 401},
		{"the MCP token", call{host: "127.0.0.1:8718", target: "/metrics", header: bearer(mcpToken)}, 401},
		{"the admin token on 127.0.0.1", call{host: "127.0.0.1:8718", target: "/metrics", header: bearer(adminToken)}, 200},
		{"the admin token on localhost", call{host: "localhost:8718", target: "/metrics", header: bearer(adminToken)}, 200},
		{"the session on the UI host", call{target: "/metrics", cookie: cookie}, 200},
		{"the session on a loopback host", call{host: "localhost:8718", target: "/metrics", cookie: cookie}, 401},
		{"a foreign host", call{host: "evil.example:8718", target: "/metrics", header: bearer(adminToken)}, 403},
		{"POST", call{method: "POST", host: "127.0.0.1:8718", target: "/metrics", header: bearer(adminToken)}, 405},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := f.do(t, tt.call)
			if w.Code != tt.want {
				t.Fatalf("status %d, want %d; body %s", w.Code, tt.want, w.Body)
			}
			if tt.want == 200 && w.Body.String() != "wraptool_sessions 1\n" {
				t.Errorf("body %q", w.Body)
			}
			if tt.want == 401 && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("no Bearer challenge")
			}
		})
	}
	none := newFixture(t)
	if w := none.do(t, call{host: "127.0.0.1:8718", target: "/metrics", header: bearer(adminToken)}); w.Code != 404 {
		t.Errorf("without a metrics handler: status %d, want 404", w.Code)
	}
}

// One decision is made at a time: a second waits for the turn while its
// request lasts, and gives up with 503 when the request ends first, even
// where the turn is free by then; a released turn is taken at once.
func TestDecisionTurn(t *testing.T) {
	t.Parallel()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		// held: another decision holds the turn while this one asks.
		held bool
		ctx  func(t *testing.T) context.Context
		want int // 0: the turn is taken
	}{
		{"a free turn is taken", false, func(t *testing.T) context.Context { return t.Context() }, 0},
		{"a held turn makes the next decision wait until its request ends, then 503", true,
			func(t *testing.T) context.Context {
				ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
				t.Cleanup(cancel)
				return ctx
			}, http.StatusServiceUnavailable},
		{"a request already ended does not take a free turn", false, func(*testing.T) context.Context { return ended }, http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := New(Options{})
			if tt.held {
				other, err := u.take(t.Context())
				if err != nil {
					t.Fatalf("first take: %v", err)
				}
				defer other()
			}
			release, err := u.take(tt.ctx(t))
			if tt.want == 0 {
				if err != nil {
					t.Fatalf("take = %v, want the turn", err)
				}
				release()
				again, err := u.take(t.Context())
				if err != nil {
					t.Fatalf("take after release = %v, want the turn", err)
				}
				again()
				return
			}
			if err == nil {
				release()
				t.Fatalf("take got the turn, want a %d refusal", tt.want)
			}
			if got := statusOf(err); got != tt.want || !strings.Contains(err.Error(), "another decision is being made") {
				t.Errorf("take = %d %q, want %d \"another decision is being made: …\"", got, err, tt.want)
			}
		})
	}
}
