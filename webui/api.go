package webui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/webui/httpguard"
)

// serveAPI routes /api/*: the route and method (404, 405), the
// credentials (401: the admin bearer token, or the session cookie on the UI
// host), the CSRF check for a cookie-authenticated POST (403), then the
// body (413, 408) and the handler.
func (u *UI) serveAPI(w http.ResponseWriter, r *http.Request, s site, kind hostKind) {
	path := r.URL.EscapedPath()
	var (
		id, action string
		method     = http.MethodPost
	)
	switch {
	case path == "/api/requests":
		method = http.MethodGet
	case strings.HasPrefix(path, "/api/requests/"):
		var ok bool
		id, action, ok = splitIDPath(strings.TrimPrefix(path, "/api/requests/"))
		if !ok || (action != "approve" && action != "deny") {
			refuse(w, r, true, http.StatusNotFound, "no such endpoint: the API has GET /api/requests and POST /api/requests/{id}/approve|deny")
			return
		}
	default:
		refuse(w, r, true, http.StatusNotFound, "no such endpoint: the API has GET /api/requests and POST /api/requests/{id}/approve|deny")
		return
	}
	if !allowMethod(w, r, true, method) {
		return
	}
	bearer := r.Header.Get("Authorization") != ""
	switch {
	case bearer && httpguard.BearerMatches(r.Header.Get("Authorization"), s.AdminToken):
	case !bearer && kind == hostUI:
		ref, ok := u.session(r, s)
		if !ok {
			unauthorized(w, r)
			return
		}
		// A script of the page: the same CSRF check as a form, with the
		// token in a header.
		if method == http.MethodPost && (!sameOrigin(s, r) || !csrfMatches(ref, r.Header.Get("X-CSRF-Token"))) {
			refuse(w, r, true, http.StatusForbidden, "forbidden: a signed-in POST needs the page's Origin and its X-CSRF-Token")
			return
		}
	default:
		unauthorized(w, r)
		return
	}
	switch action {
	case "":
		u.apiList(w, r, s)
	case "approve":
		u.withBody(w, r, true, func(w http.ResponseWriter, r *http.Request) { u.apiApprove(w, r, s, id) })
	case "deny":
		u.withBody(w, r, true, func(w http.ResponseWriter, r *http.Request) { u.apiDeny(w, r, s, id) })
	}
}

// unauthorized answers an API call without valid credentials, saying which
// case it is (no bearer token, or one that is not the admin token) and
// never what was sent.
func unauthorized(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("WWW-Authenticate", httpguard.ChallengeFor(r))
	refuse(w, r, true, http.StatusUnauthorized, httpguard.UnauthorizedMessage(r, "the admin token file"))
}

// splitIDPath splits "{id}/{action}" (still escaped) into its parts.
func splitIDPath(rest string) (id, action string, ok bool) {
	rawID, action, ok := strings.Cut(rest, "/")
	if !ok || rawID == "" || strings.Contains(action, "/") {
		return "", "", false
	}
	id, err := url.PathUnescape(rawID)
	if err != nil || id == "" {
		return "", "", false
	}
	return id, action, true
}

// apiList answers GET /api/requests?status=…: the folded records with
// that status (pending by default), as `requests list --json` prints them,
// each with "danger": what the catalog says of its subcommand and flags
// under the config in service.
func (u *UI) apiList(w http.ResponseWriter, r *http.Request, s site) {
	status := r.URL.Query().Get("status")
	switch status {
	case "":
		status = requests.StatusPending
	case requests.StatusPending, requests.StatusApproved, requests.StatusDenied, "all":
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("status %s: want pending, approved, denied or all", requests.Token(status)))
		return
	}
	recs, err := u.records(s)
	if err != nil {
		u.log.Error("read request log", "err", err)
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	shown := []listedRequest{}
	x := newEffects(s)
	for _, rec := range recs {
		if status == "all" || rec.Status == status {
			shown = append(shown, listedRequest{Record: rec, Danger: dangerOf(rec, x.of(rec))})
		}
	}
	writeJSON(w, http.StatusOK, shown)
}

// approveBody is POST /api/requests/{id}/approve's body: apply, or a
// temporary grant for once or for a Go duration, and
// unlisted_ok. A wrong type is a malformed body (400).
type approveBody struct {
	Apply      bool   `json:"apply"`
	UnlistedOK bool   `json:"unlisted_ok"`
	Once       bool   `json:"once"`
	For        string `json:"for"`
	// IKnow confirms a grant or an apply of a request whose flags or
	// subcommand can hand the credentials away with no pattern holding
	// them; without it such an approval is a 422.
	IKnow bool `json:"i_know"`
}

func (u *UI) apiApprove(w http.ResponseWriter, r *http.Request, s site, id string) {
	var b approveBody
	if err := decodeBody(r, &b); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	term, err := grantTerms(b.Apply, b.Once, b.For)
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	out, err := u.approve(r.Context(), s, id, approval{apply: b.Apply, unlistedOK: b.UnlistedOK, grant: term, iKnow: b.IKnow})
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, out.rec)
}

// denyBody is POST /api/requests/{id}/deny's body.
type denyBody struct {
	Reason string `json:"reason"`
}

func (u *UI) apiDeny(w http.ResponseWriter, r *http.Request, s site, id string) {
	var b denyBody
	if err := decodeBody(r, &b); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	rec, err := u.deny(r.Context(), s, id, b.Reason)
	if err != nil {
		writeError(w, statusOf(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

// decodeBody decodes r's body, already whole in memory, as one JSON object
// with no unknown fields; an empty body is an empty object.
func decodeBody(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return fmt.Errorf("cannot read request body: %w", err)
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil
	}
	if body[0] != '{' {
		return errors.New("malformed body: want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("malformed body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("malformed body: more than one JSON value")
	}
	return nil
}

// withBody runs next with r's body read whole through the guard (413 too
// large, 408 too slow). Under /api the guard's plain-text refusals are
// turned into the API's JSON errors; an API call has passed its credentials
// check, so an oversized body gets its 413 before the rest of it is thrown
// away (the client, still sending, reads the 413 instead of a reset). The
// browser's forms are read as ReadBody does, refused at once: the sign-in
// form carries its credentials in its body.
func (u *UI) withBody(w http.ResponseWriter, r *http.Request, api bool, next http.HandlerFunc) {
	if !api {
		u.guard.ReadBody(next).ServeHTTP(w, r)
		return
	}
	reached := false
	jw := &refusalWriter{ResponseWriter: w}
	u.guard.ReadAuthenticatedBody(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		reached = true
		next(w, r)
	})).ServeHTTP(jw, r)
	if !reached && jw.status != 0 && !jw.sent {
		writeError(w, jw.status, strings.TrimSpace(jw.body.String()))
	}
}

// refusalWriter holds back the guard's plain-text refusal so withBody can
// send it as JSON; headers it sets (Connection: close) go through. It
// unwraps for http.ResponseController, which the guard uses for deadlines.
type refusalWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
	sent   bool // FlushError sent the refusal
}

// FlushError sends the refusal held so far, as the API's JSON error, when
// the guard flushes it: the guard sends a 413 out before it reads the rest
// of the body, and the client must have it then, whole, with a
// Content-Length of the JSON (the guard's own counted its plain text).
func (rw *refusalWriter) FlushError() error {
	if rw.status != 0 && !rw.sent {
		rw.sent = true
		data, err := json.Marshal(map[string]string{"error": strings.TrimSpace(rw.body.String())})
		if err != nil {
			return err
		}
		data = append(data, '\n')
		h := rw.Header()
		h.Set("Content-Type", "application/json; charset=utf-8")
		h.Set("Content-Length", strconv.Itoa(len(data)))
		rw.ResponseWriter.WriteHeader(rw.status)
		rw.ResponseWriter.Write(data)
	}
	return http.NewResponseController(rw.ResponseWriter).Flush()
}

func (rw *refusalWriter) WriteHeader(status int)      { rw.status = status }
func (rw *refusalWriter) Write(p []byte) (int, error) { return rw.body.Write(p) }

// Unwrap gives http.ResponseController the connection's writer.
func (rw *refusalWriter) Unwrap() http.ResponseWriter { return rw.ResponseWriter }
