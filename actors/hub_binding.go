package actors

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/wraptool/wraptool/actors/sessionstore"
	"github.com/wraptool/wraptool/webui/httpguard"
)

// binding is what a session belongs to: the role of the token that created
// it and a digest of that token. Only the digest is kept, never the token,
// so the hub holds no credential of its own and a binding could be written
// down as it is.
type binding struct {
	// role is roleMain, roleElicit followed by the client's name, or ""
	// for a request that matched no configured token (a server without
	// authentication).
	role   string
	digest [sha256.Size]byte // SHA-256 of the bearer token sent ("" when none)
}

// The roles a token can have. A session is asked to approve its own
// requests only on an elicitation client's token, so a session must never
// change role: the main token's session must not become askable because
// one request carried another token.
const (
	roleMain   = "mcp.auth_token_file"
	roleElicit = "mcp.elicit_clients:"
)

// The refusals of a request on a session that belongs to another token.
// They say which case it is and what to do, and name no token or client.
const (
	refuseOtherToken = "forbidden: this session belongs to the bearer token that created it, and this request carries another one; " +
		"send the session's own token, or open a new session with this one"
	refuseRoleChanged = "forbidden: the bearer token that created this session has since been given another role in the config; " +
		"open a new session"
)

// admit decides whether a request that authenticated as cred may use a
// session bound to b. It returns the binding the session keeps and, when
// the request is refused, why. The same token in the same role is admitted.
// Another token is admitted only as the rotated replacement of the
// session's: the same role, and the session's own token no longer valid
// (valid reports whether a digest is of a token the config holds now), so
// a session on the main token survives the rotation of the main token, and
// is bound to the new one from then on. Everything else is refused: a
// token of another role (the main token's session used with an elicitation
// client's, or the reverse), a second token of the same role while the
// first still works, and the session's own token after a reload gave it
// another role.
func admit(b, cred binding, valid func([sha256.Size]byte) bool) (binding, string) {
	sameToken := subtle.ConstantTimeCompare(b.digest[:], cred.digest[:]) == 1
	switch {
	case sameToken && cred.role == b.role:
		return b, ""
	case sameToken:
		return b, refuseRoleChanged
	case cred.role == b.role && !valid(b.digest):
		return cred, ""
	}
	return b, refuseOtherToken
}

// credentialKey is the context key under which gateStreamable hands
// observe the credential of the request that may create a session.
type credentialKey struct{}

// credential is what r authenticated as: the role of the token it carries
// and the token's digest. Every configured token is compared, in constant
// time, each time.
func (h *Hub) credential(r *http.Request) binding {
	header := r.Header.Get("Authorization")
	token := header
	if scheme, rest, ok := strings.Cut(header, " "); ok && strings.EqualFold(scheme, "Bearer") {
		token = strings.TrimSpace(rest)
	}
	b := binding{digest: sha256.Sum256([]byte(token))}
	if h.snapshots == nil {
		return b
	}
	snap := h.snapshots.Current()
	if httpguard.BearerMatches(header, snap.MCPToken) {
		b.role = roleMain
	}
	for tok, name := range snap.ElicitTokens {
		if httpguard.BearerMatches(header, tok) && b.role == "" {
			b.role = roleElicit + name
		}
	}
	return b
}

// tokenValid reports whether digest is of a token the config holds now
// (the MCP token or an elicitation client's).
func (h *Hub) tokenValid(digest [sha256.Size]byte) bool {
	if h.snapshots == nil {
		return false
	}
	snap := h.snapshots.Current()
	valid := false
	check := func(tok string) {
		if tok == "" {
			return
		}
		d := sha256.Sum256([]byte(tok))
		if subtle.ConstantTimeCompare(d[:], digest[:]) == 1 {
			valid = true
		}
	}
	check(snap.MCPToken)
	for tok := range snap.ElicitTokens {
		check(tok)
	}
	return valid
}

// storedTokenValid reports whether d, a stored session's token digest, is
// of a token the config holds now.
func (h *Hub) storedTokenValid(d sessionstore.Digest) bool {
	if h.snapshots == nil {
		return false
	}
	snap := h.snapshots.Current()
	valid := 0
	for _, tok := range append(slices.Collect(maps.Keys(snap.ElicitTokens)), snap.MCPToken) {
		if tok != "" {
			want := sessionstore.TokenDigest(sha256.Sum256([]byte(tok)))
			valid |= subtle.ConstantTimeCompare(want[:], d[:])
		}
	}
	return valid == 1
}

// gateStreamable refuses, before the SDK sees it, a request on a
// Streamable HTTP session (POST, GET stream, DELETE) that belongs to
// another token (403), or that names a session the hub never bound (404,
// as the SDK answers an unknown id; the client initializes anew), unless
// the session is one the last run kept for a restart, which restore brings
// back first. So
// whether a session is asked to approve never depends on one request's
// header: every request that reaches it carries a token of its role. A
// request without a session id goes on with its credential, which the
// session it creates is bound to.
func (h *Hub) gateStreamable(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred := h.credential(r)
		if id := r.Header.Get(sessionHeader); id != "" {
			status, msg := h.streams.admit(id, cred, h.tokenValid)
			if status == http.StatusNotFound {
				// Unknown here, perhaps known to the last run: restored
				// on its own token, refused on another, else not found.
				if status, msg = h.streams.restore(r, id, cred, h.storedTokenValid, next); status == 0 {
					status, msg = h.streams.admit(id, cred, h.tokenValid)
				}
			}
			if status != 0 {
				refuseSession(w, r, status, msg)
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), credentialKey{}, cred)))
	})
}

// refuseSession answers a request admit refused. A 403 closes the
// connection as every refusal does; a 404 is a session that ended, which
// its client meets in the normal course, so its connection stays.
func refuseSession(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if status == http.StatusForbidden {
		httpguard.Refuse(w, r, status, msg)
		return
	}
	http.Error(w, msg, status)
}

// newBindingWriter tells created the session id an initialize's answer
// carries, as that answer's head is written (by WriteHeader, the first
// Write or a Flush), before anything reaches the client.
func newBindingWriter(w http.ResponseWriter, created func(id string)) *headWriter {
	hw := &headWriter{ResponseWriter: w}
	hw.head = func(int) {
		if id := hw.Header().Get(sessionHeader); id != "" {
			created(id)
		}
	}
	return hw
}

// headWriter tells head the status of the answer as its head is written
// (by WriteHeader, the first Write or a Flush), once, before anything
// reaches the client.
type headWriter struct {
	http.ResponseWriter
	head func(code int)
	once sync.Once
}

// writingHead tells head code, the first time only: the writes call it,
// and so does a caller whose handler wrote nothing (net/http then writes a
// 200 head after the handler returns).
func (w *headWriter) writingHead(code int) { w.once.Do(func() { w.head(code) }) }

func (w *headWriter) WriteHeader(code int) {
	w.writingHead(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *headWriter) Write(p []byte) (int, error) {
	w.writingHead(http.StatusOK)
	return w.ResponseWriter.Write(p)
}

// Flush keeps the answer flushable (the SDK flushes each event of a
// stream; an unwrapped flush would write the head unseen); a flush before
// any head writes 200.
func (w *headWriter) Flush() {
	w.writingHead(http.StatusOK)
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *headWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
