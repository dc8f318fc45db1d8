package webui

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"sync"
	"time"
)

// maxSessions bounds the sessions kept; past it the one closest to expiry
// goes. Only holders of the token can make one, so it is never reached in
// practice.
const maxSessions = 256

// sessions are the signed-in browsers, in memory: a restart signs every
// browser out, which is what an operator expects of a local tool.
//
// Safe for concurrent use: mu guards every field and is held only for map
// operations.
type sessions struct {
	mu sync.Mutex
	// byKey holds each session under the SHA-256 of its id, so the
	// lookup's timing says nothing about the ids themselves.
	byKey map[[32]byte]*session
	// token is the admin token's hash the sessions were last used with:
	// meeting another one ends them all.
	token [32]byte
}

// session is one signed-in browser.
type session struct {
	csrf    string    // the per-session CSRF token; immutable
	token   [32]byte  // hash of the admin token it was made with
	expires time.Time // absolute: a session is not extended by use
	flash   *flash    // the result of the last POST, shown once
}

// flash is a one-line result shown at the top of the next page.
type flash struct {
	OK   bool
	Text string
	// Awaiting is an apply just written to the config, which the policy in
	// service shows only once the server reloaded it; until then the page
	// says so and refreshes itself. Nil for any other result.
	Awaiting *awaitedApply
}

// awaitedApply is what an apply merged, and until when the page waits for
// the reload that puts it in service.
type awaitedApply struct {
	Tool       string
	Subcommand []string
	Flags      []string
	Until      time.Time
}

// sessionRef is what a request learns of its session.
type sessionRef struct {
	key  [32]byte
	csrf string
}

func newSessions() *sessions { return &sessions{byKey: map[[32]byte]*session{}} }

// randomHex is n random bytes from the system's cryptographic source, in
// hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand crashes the program instead)
	return hex.EncodeToString(b)
}

// observe ends every session when the admin token is not the one they were
// last used with. The UI calls it on every request, so a rotated token
// ends the sessions at the first request that sees it.
func (ss *sessions) observe(token [32]byte) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.rotate(token)
}

// rotate is observe with mu held.
func (ss *sessions) rotate(token [32]byte) {
	if ss.token != token {
		ss.token = token
		clear(ss.byKey)
	}
}

// create starts a session for token, expiring ttl after now, and returns
// its id (for the cookie).
func (ss *sessions) create(token [32]byte, now time.Time, ttl time.Duration) string {
	id := randomHex(32)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.rotate(token)
	for k, s := range ss.byKey {
		if !now.Before(s.expires) {
			delete(ss.byKey, k)
		}
	}
	for len(ss.byKey) >= maxSessions {
		var oldest [32]byte
		var when time.Time
		for k, s := range ss.byKey {
			if when.IsZero() || s.expires.Before(when) {
				oldest, when = k, s.expires
			}
		}
		delete(ss.byKey, oldest)
	}
	ss.byKey[sha256.Sum256([]byte(id))] = &session{csrf: randomHex(32), token: token, expires: now.Add(ttl)}
	return id
}

// get finds the live session with id made with token.
func (ss *sessions) get(id string, token [32]byte, now time.Time) (sessionRef, bool) {
	key := sha256.Sum256([]byte(id))
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.rotate(token)
	s := ss.byKey[key]
	if s == nil {
		return sessionRef{}, false
	}
	if !now.Before(s.expires) || s.token != token {
		delete(ss.byKey, key)
		return sessionRef{}, false
	}
	return sessionRef{key: key, csrf: s.csrf}, true
}

// end ends a session.
func (ss *sessions) end(ref sessionRef) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.byKey, ref.key)
}

// setFlash leaves f for the session's next page.
func (ss *sessions) setFlash(ref sessionRef, f flash) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s := ss.byKey[ref.key]; s != nil {
		s.flash = &f
	}
}

// takeFlash returns and clears the session's flash.
func (ss *sessions) takeFlash(ref sessionRef) *flash {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.byKey[ref.key]
	if s == nil {
		return nil
	}
	f := s.flash
	s.flash = nil
	return f
}

// session is r's live session, read from its cookie; the caller has made
// sure r is on the UI host, the only one where the cookie counts.
func (u *UI) session(r *http.Request, s site) (sessionRef, bool) {
	c, err := r.Cookie(cookieName)
	if err != nil || c.Value == "" || s.AdminToken == "" {
		return sessionRef{}, false
	}
	return u.sessions.get(c.Value, s.tokenHash, u.now())
}

// signIn starts a session and sets its cookie: a random id, never the token.
func (u *UI) signIn(w http.ResponseWriter, s site) {
	id := u.sessions.create(s.tokenHash, u.now(), u.ttl)
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: id, Path: "/", MaxAge: int(u.ttl / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode,
	})
}

// clearCookie tells the browser to forget its session cookie.
func clearCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode,
	})
}

// csrfMatches compares a sent CSRF token with the session's in constant
// time.
func csrfMatches(ref sessionRef, sent string) bool {
	return sent != "" && subtle.ConstantTimeCompare([]byte(sent), []byte(ref.csrf)) == 1
}

// tokenMatches compares a typed admin token with the current one as the
// bearer check does: hashed, then in constant time. "" matches nothing.
func tokenMatches(s site, typed string) bool {
	if s.AdminToken == "" || typed == "" {
		return false
	}
	got := sha256.Sum256([]byte(typed))
	return subtle.ConstantTimeCompare(got[:], s.tokenHash[:]) == 1
}
