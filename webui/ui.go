package webui

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/webui/httpguard"
)

// State is what the UI shows and acts on at one moment. The server builds
// it from the snapshot in service, so a reload (a rotated token, a new
// policy) reaches the next HTTP request without restarting the UI.
type State struct {
	// AdminToken is the token admin.auth_token_file holds: the API's
	// bearer token, what a browser signs in with, and the seed of the UI's
	// host name. "" admits nobody.
	AdminToken string
	// ConfigPath is the config file "Apply to config" edits.
	ConfigPath string
	// RequestLog is the capability-request log the UI reads and decides.
	RequestLog string
	// Policy is the policy in service: the page's overview, and whether a
	// request for no subcommand can be approved (only where the tool has a
	// bare rule). Nil shows no overview and refuses such approvals.
	Policy *policy.Policy
	// Base is the policy of the config alone, without grants: the
	// overview marks what Policy has beyond it as granted. Nil means
	// Policy is the config's alone.
	Base *policy.Policy
	// Grants are the capability grants in force under this config, as the
	// request log holds them (terms, tool, subcommand, flags): the
	// overview names the grant, and its expiry, behind each rule and flag
	// it adds.
	Grants []*requests.Record
	// Helps is what the tools' own help says: the flags' help lines and
	// the "(NOT IN 'git push --help')" marks. Nil shows neither.
	Helps policy.Helps
	// Paths say where "~" and the platform folders are when a request is
	// applied to the config; nil means the process's environment.
	Paths *config.Options
}

// Source gives the UI the State to use for one HTTP request. The server
// adapts its atomic snapshot to it; Current is called once per request,
// from many goroutines at once, and must not block.
type Source interface {
	Current() State
}

// Options configure New. Source and Addr are required; every other zero
// field means the default it documents.
type Options struct {
	// Source gives the current State.
	Source Source
	// Addr is the admin listener's bound address. Its port names the UI
	// host and the loopback names the API answers on, so it must be the
	// address actually bound (port 0 resolved).
	Addr net.Addr
	// Now is the clock for ages, session expiry and a grant's term; nil
	// means time.Now. A decision's own time is the request-log writer's.
	Now func() time.Time
	// Log receives sign-ins, decisions and refused applies, as given: the
	// caller names the component (serve passes component=webui). Nil
	// discards them.
	Log *slog.Logger
	// SignInDelay is how long a failed sign-in waits before its answer,
	// so guessing costs time; zero means 1 s.
	SignInDelay time.Duration
	// SessionTTL is how long a browser session lasts from sign-in; zero
	// means 12 h.
	SessionTTL time.Duration
	// Metrics serves /metrics (the Prometheus text format) once the
	// admin credentials are checked; nil answers 404 there.
	Metrics http.Handler
	// Decide records a decision through the server's request-log writer,
	// the one writer of the log within the server; nil makes a UI that
	// shows requests and records no decision (503).
	Decide Decider
	// Apply merges a request into the config file through the server's
	// config editor; nil applies nothing (503).
	Apply Applier
	// Learn has the server learn the help of a requested subcommand
	// before the page shows or decides the request; nil shows and
	// decides on the help the State already has.
	Learn Learner
}

// Decider records decision d on request id, as the request-log writer's
// DecideRequest does, waiting only while ctx lasts.
type Decider func(ctx context.Context, id string, d requests.Decision) error

// Applier merges a request's capability (tool, subcommand, flags) into the
// config file at path, as the config editor's ApplyToConfig does, and says
// what it merged ("added flags --x to git push").
type Applier func(ctx context.Context, path, tool string, sub, flags []string, paths *config.Options) (string, error)

// Defaults for Options.
const (
	defaultSignInDelay = time.Second
	defaultSessionTTL  = 12 * time.Hour
	// maxBodyBytes bounds an admin request's body: a sign-in, a deny
	// reason or a small JSON object, never more.
	maxBodyBytes = 64 << 10
	// decidedBy marks the decisions this UI records.
	decidedBy = "admin"
	// cookieName is the session cookie.
	cookieName = "wraptool_session"
)

// securityHeaders go on every response: the pages load nothing from
// elsewhere, run no inline script, cannot be framed, and are never cached.
//
// The referrer policy is same-origin, not no-referrer: under no-referrer
// the Fetch standard has browsers send "Origin: null" with every form POST
// ("append a request Origin header"), and the CSRF check, which wants the
// UI's own Origin, would refuse every form. same-origin sends no referrer
// to any other site either.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; " +
		"form-action 'self'; base-uri 'none'; connect-src 'self'; frame-ancestors 'none'",
	"X-Frame-Options":        "DENY",
	"Referrer-Policy":        "same-origin",
	"Cache-Control":          "no-store",
	"X-Content-Type-Options": "nosniff",
}

// UI is the admin UI's HTTP handler with its sessions. Build it with New
// and serve Handler on the admin listener.
type UI struct {
	src      Source
	port     string
	loopback map[string]bool // canonical host:port names of the loopback host
	now      func() time.Time
	log      *slog.Logger
	delay    time.Duration
	ttl      time.Duration
	guard    *httpguard.Guard
	sessions *sessions
	// turn is held by the decision being made: a one-slot semaphore rather
	// than a mutex, so a decision queued behind another one stuck on a file
	// lock still ends with its request.
	turn *semaphore.Weighted
	// metrics serves /metrics behind the admin credentials; nil for none.
	metrics http.Handler
	// decider and applier are Options.Decide and Options.Apply.
	decider Decider
	applier Applier
	// learner is Options.Learn.
	learner Learner

	warnMu sync.Mutex
	warned map[string]bool // request-log warnings already logged
}

// New returns a UI for o. It starts nothing and reads nothing yet.
func New(o Options) *UI {
	u := &UI{
		src:      o.Source,
		now:      o.Now,
		log:      o.Log,
		delay:    o.SignInDelay,
		ttl:      o.SessionTTL,
		guard:    httpguard.New(&httpguard.Options{MaxBodyBytes: maxBodyBytes}),
		sessions: newSessions(),
		turn:     semaphore.NewWeighted(1),
		metrics:  o.Metrics,
		decider:  o.Decide,
		applier:  o.Apply,
		learner:  o.Learn,
		warned:   map[string]bool{},
	}
	if u.now == nil {
		u.now = time.Now
	}
	if u.log == nil {
		u.log = slog.New(slog.DiscardHandler)
	}
	if u.delay <= 0 {
		u.delay = defaultSignInDelay
	}
	if u.ttl <= 0 {
		u.ttl = defaultSessionTTL
	}
	u.port = portOf(o.Addr)
	u.loopback = map[string]bool{}
	names := httpguard.LoopbackHosts(o.Addr)
	if names == nil {
		// Bound elsewhere (0.0.0.0, say): the loopback names still reach
		// it, and the Host check must stay on whatever the address.
		names = []string{"localhost:" + u.port, "127.0.0.1:" + u.port, "[::1]:" + u.port}
	}
	for _, n := range names {
		u.loopback[canonicalHost(n)] = true
	}
	return u
}

// portOf is the port of addr, "0" when it has none.
func portOf(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return strconv.Itoa(tcp.Port)
	}
	if addr != nil {
		if _, p, err := net.SplitHostPort(addr.String()); err == nil {
			return p
		}
	}
	return "0"
}

// HostLabel is the label of the UI's host name for an admin token: the
// first 16 hex digits of SHA-256 of "wraptool-admin:" and the token. Only
// holders of the token can name the host whose cookies count, and rotating
// the token moves it.
func HostLabel(token string) string {
	sum := sha256.Sum256([]byte("wraptool-admin:" + token))
	return hex.EncodeToString(sum[:8])
}

// URL is the address an operator opens, http://w-<label>.localhost:<port>/,
// for the current admin token; serve logs it and up prints it. It is ""
// while no admin token is set.
func (u *UI) URL() string {
	s := u.site()
	if s.uiHost == "" {
		return ""
	}
	return s.origin + "/"
}

// Handler serves the admin UI. Every response carries the security
// headers; every request body gets the body deadline.
func (u *UI) Handler() http.Handler {
	return u.guard.Deadline(http.HandlerFunc(u.serve))
}

// site is the State of one HTTP request with what follows from its token.
type site struct {
	State
	uiHost    string   // canonical "w-<label>.localhost:<port>"; "" without a token
	origin    string   // "http://" + uiHost
	tokenHash [32]byte // SHA-256 of the admin token, what sessions are bound to
}

func (u *UI) site() site {
	s := site{State: u.src.Current()}
	s.tokenHash = sha256.Sum256([]byte(s.AdminToken))
	if s.AdminToken != "" {
		s.uiHost = "w-" + HostLabel(s.AdminToken) + ".localhost:" + u.port
		s.origin = "http://" + s.uiHost
	}
	return s
}

// hostKind is what a request's Host names.
type hostKind int

const (
	hostForeign  hostKind = iota // neither: DNS rebinding, refused
	hostLoopback                 // localhost, 127.0.0.1 or [::1] with our port
	hostUI                       // the UI's own host
)

func (u *UI) hostKind(s site, host string) hostKind {
	h := canonicalHost(host)
	switch {
	case s.uiHost != "" && h == s.uiHost:
		return hostUI
	case u.loopback[h]:
		return hostLoopback
	}
	return hostForeign
}

// canonicalHost lower-cases host and gives it its port: browsers leave out
// :80 in Host and Origin.
func canonicalHost(host string) string {
	host = strings.ToLower(host)
	if _, _, err := net.SplitHostPort(host); err != nil {
		return host + ":80"
	}
	return host
}

// originHost is the canonical host of an http or https Origin; ok is false
// for "null", other schemes, and anything that is not a bare origin.
func originHost(origin string) (scheme, host string, ok bool) {
	o, err := url.Parse(origin)
	if err != nil || (o.Scheme != "http" && o.Scheme != "https") || o.Host == "" ||
		o.User != nil || o.Path != "" || o.RawQuery != "" || o.Fragment != "" {
		return "", "", false
	}
	return o.Scheme, canonicalHost(o.Host), true
}

// originAllowed reports whether a sent Origin names this server: a page
// elsewhere must not drive it through a rebound name.
func (u *UI) originAllowed(s site, origin string) bool {
	_, h, ok := originHost(origin)
	return ok && ((s.uiHost != "" && h == s.uiHost) || u.loopback[h])
}

// sameOrigin reports whether r comes from the UI's own pages: the CSRF
// check's first half, for every cookie-authenticated POST.
func sameOrigin(s site, r *http.Request) bool {
	scheme, h, ok := originHost(r.Header.Get("Origin"))
	return ok && s.uiHost != "" && scheme == "http" && h == s.uiHost
}

// isAPI reports whether path is under /api, whose errors are JSON.
func isAPI(path string) bool { return path == "/api" || strings.HasPrefix(path, "/api/") }

func (u *UI) serve(w http.ResponseWriter, r *http.Request) {
	for k, v := range securityHeaders {
		w.Header().Set(k, v)
	}
	s := u.site()
	u.sessions.observe(s.tokenHash)
	api := isAPI(r.URL.Path)
	kind := u.hostKind(s, r.Host)
	if kind == hostForeign {
		refuse(w, r, api, http.StatusForbidden, "forbidden: Host is not this server's name")
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !u.originAllowed(s, o) {
		refuse(w, r, api, http.StatusForbidden, "forbidden: Origin is not this server's name")
		return
	}
	if api {
		u.serveAPI(w, r, s, kind)
		return
	}
	if r.URL.Path == "/metrics" {
		u.serveMetrics(w, r, s, kind)
		return
	}
	if kind != hostUI {
		refuse(w, r, false, http.StatusForbidden,
			"forbidden: the admin pages answer only on their own host name, which wraptool serve logs")
		return
	}
	u.serveBrowser(w, r, s)
}

// refuse answers r before its body is read, as httpguard.Refuse does
// (Connection: close, no body read), in JSON under /api.
func refuse(w http.ResponseWriter, r *http.Request, api bool, status int, msg string) {
	if !api {
		httpguard.Refuse(w, r, status, msg)
		return
	}
	w.Header().Set("Connection", "close")
	if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
		http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	writeError(w, status, msg)
}

// allowMethod checks r's method against the route's (HEAD goes with GET),
// answering 405 with Allow otherwise.
func allowMethod(w http.ResponseWriter, r *http.Request, api bool, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m || (m == http.MethodGet && r.Method == http.MethodHead) {
			return true
		}
	}
	allow := strings.Join(methods, ", ")
	if len(methods) == 1 && methods[0] == http.MethodGet {
		allow = "GET, HEAD"
	}
	w.Header().Set("Allow", allow)
	refuse(w, r, api, http.StatusMethodNotAllowed, "method "+r.Method+" is not allowed here; use "+allow)
	return false
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// writeError answers {"error": msg}.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// logWarnings logs each request-log line the reader skipped, once.
func (u *UI) logWarnings(path string, warns []requests.Warning) {
	u.warnMu.Lock()
	defer u.warnMu.Unlock()
	for _, w := range warns {
		key := path + "\x00" + w.String()
		if u.warned[key] || len(u.warned) >= 1000 {
			continue
		}
		u.warned[key] = true
		u.log.Warn("request log: skipped a line", "file", path, "warning", w.String())
	}
}

// serveMetrics answers GET /metrics with the admin credentials the API
// takes: the admin bearer token on any loopback name, or the
// session cookie on the UI's host; 401 otherwise, before anything is read.
func (u *UI) serveMetrics(w http.ResponseWriter, r *http.Request, s site, kind hostKind) {
	if u.metrics == nil {
		refuse(w, r, false, http.StatusNotFound, "no metrics here")
		return
	}
	if !allowMethod(w, r, false, http.MethodGet) {
		return
	}
	auth := r.Header.Get("Authorization")
	switch {
	case auth != "" && httpguard.BearerMatches(auth, s.AdminToken):
	case auth == "" && kind == hostUI:
		if _, ok := u.session(r, s); !ok {
			unauthorized(w, r)
			return
		}
	default:
		unauthorized(w, r)
		return
	}
	u.metrics.ServeHTTP(w, r)
}
