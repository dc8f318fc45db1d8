package actors

import (
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/webui/httpguard"
)

// Handler is the whole HTTP surface, valid after Listen: /sse and /mcp
// behind the guard (DNS-rebinding check on a loopback listener, a method
// the endpoint does not serve, bearer token, body limits), /healthz open,
// and the OAuth discovery and registration paths answered with a 404 that
// says wraptool has no OAuth, and ProofPath open (after the DNS-rebinding
// check), where the listener proves it holds a token. Every request body, on every route, gets the
// body timeout to arrive, so neither a handler nor net/http (which reads
// what a handler left of a body to reuse the connection) waits on a
// stalled client for ever.
func (h *Hub) Handler() http.Handler {
	guard := httpguard.New(&httpguard.Options{
		Hosts:        httpguard.LoopbackHosts(h.ln.Addr()),
		Token:        h.token,
		Others:       h.elicitTokens,
		MaxBodyBytes: MaxBodyBytes,
		BodyTimeout:  h.bodyTimeout,
	})
	getServer := func(*http.Request) *mcp.Server { return h.server }
	sse := h.newSSEHandler() // legacy SSE; initialises a reconnected stream's session for its client
	streamable := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		SessionTimeout:      SessionTimeout,
		MaxRequestBodyBytes: MaxBodyBytes,
	})
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		// Matched by path alone, so the catch-all below cannot take its
		// other methods: they get the 405 every endpoint gives.
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			httpguard.Refuse(w, r, http.StatusMethodNotAllowed, "method not allowed: this endpoint serves GET, HEAD")
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		// The first line stays "ok" for whoever checks only that; the
		// second says which confinement keeps the started processes away
		// from wraptool's files.
		w.Write([]byte("ok\nconfinement: " + h.confinement() + "\n"))
	})
	// The proof that this listener holds a token, before a client sends
	// it: open (it proves, it authorizes nothing), after the DNS-rebinding
	// check as every route.
	mux.Handle(ProofPath, guard.CheckHost(http.HandlerFunc(h.proofHandler)))
	mux.Handle("/sse", guard.WrapMethods(sseMethods, h.sseLife(refuseBatches(sse))))
	mux.Handle("/mcp", guard.WrapMethods(streamableMethods, h.gateStreamable(refuseBatches(h.streams.observe(streamable)))))
	// Every other path, after the DNS-rebinding check: the OAuth ones get
	// their 404 that says why, the rest a plain one. Both are refusals:
	// answered at once, without waiting for a body nobody reads.
	mux.Handle("/", guard.CheckHost(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isOAuthPath(r.URL.Path) {
			httpguard.RefuseJSON(w, r, http.StatusNotFound, noOAuth)
			return
		}
		httpguard.Refuse(w, r, http.StatusNotFound, "404 page not found")
	})))
	return guard.Deadline(mux)
}

// sseMethods is what /sse serves: GET opens a session's stream, and a POST
// that names a session (?sessionid=…, the message endpoint the stream
// announces) carries a message to it. A POST without one is not served:
// 405 with Allow: GET, so a client that tries Streamable HTTP first
// (mcp-remote POSTs initialize) falls back to legacy SSE instead of
// failing on the SDK's 400.
func sseMethods(r *http.Request) (bool, string) {
	if r.URL.Query().Get("sessionid") != "" {
		return r.Method == http.MethodGet || r.Method == http.MethodPost, "GET, POST"
	}
	return r.Method == http.MethodGet, "GET"
}

// streamableMethods is what /mcp serves in stateful mode: POST (messages),
// GET (the session's stream) and DELETE (ending the session).
func streamableMethods(r *http.Request) (bool, string) {
	switch r.Method {
	case http.MethodGet, http.MethodPost, http.MethodDelete:
		return true, ""
	}
	return false, "GET, POST, DELETE"
}

// noOAuth is the body of the 404 on the OAuth paths. OAuth clients
// (mcp-remote, editors) that meet a 401 look for an authorization server
// there and, finding plain 404s, try to register a client; the text then
// reaches the user inside their error message, saying what to do.
var noOAuth = map[string]string{
	"error":             "not_supported",
	"error_description": "wraptool uses a static bearer token from its token file; run 'wraptool up' to print client set-up",
}

// isOAuthPath reports whether path is one an OAuth client asks for while
// looking for a way to sign in: /register (dynamic client registration at
// its default place) and the discovery documents under /.well-known/, at
// the root (RFC 8414 and RFC 9728, with the resource's path as a suffix:
// /.well-known/oauth-protected-resource/mcp) or below the resource's path
// (OpenID Connect's form, /mcp/.well-known/openid-configuration, which
// mcp-remote 0.15.1 asks for too).
func isOAuthPath(path string) bool {
	return path == "/register" ||
		strings.Contains(path, "/.well-known/oauth-") ||
		strings.Contains(path, "/.well-known/openid-configuration")
}
