package actors

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/wraptool/wraptool/webui/httpguard"
)

// ProofPath is the unauthenticated endpoint where the listener proves it
// holds a token before a client sends it (wraptool connect, up, setup).
const ProofPath = "/connect-proof"

// ProofNonceLen is the length of a proof nonce in bytes (hex on the wire).
const ProofNonceLen = 32

// proofMaxBody bounds a proof request: the JSON of a 64-digit nonce and a
// 32-digit key id is about 120 bytes.
const proofMaxBody = 512

// ProofRequest is the body a client posts to ProofPath. Key names the
// token the client means to send by ProofKeyID (never the token itself),
// so the server answers for that token alone: it never reveals how many
// tokens it accepts, nor which, to a client that does not hold one.
type ProofRequest struct {
	// Nonce is ProofNonceLen fresh random bytes, lowercase hex.
	Nonce string `json:"nonce"`
	// Key is ProofKeyID of the token the client holds.
	Key string `json:"key"`
}

// ProofAnswer is the server's answer: Proof is ConnectProof, lowercase hex.
type ProofAnswer struct {
	Proof string `json:"proof"`
}

// proofKey derives the proof's HMAC key from a token, under a label of its
// own, so nothing computed for the proof is ever keyed by the token itself
// or usable in another role.
func proofKey(token, label string) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(label))
	return m.Sum(nil)
}

// ProofKeyID names a token on the wire: 16 bytes of a PRF of the token
// (hex), from which the token cannot be learnt; it only lets the server
// find which of its tokens to answer for.
func ProofKeyID(token string) string {
	return hex.EncodeToString(proofKey(token, "wraptool-connect-proof-key-id")[:16])
}

// ConnectProof is HMAC-SHA256(k, "wraptool-connect-proof:" || nonce || "\n"
// || addr), k derived from token. addr is the listener's address as the
// client dialled it ("127.0.0.1:8717", or the socket path), which the
// server sees as the local address of the connection: a proof that an
// impostor on another port relays from the real server was made for the
// real server's address, and fails where the impostor listens.
func ConnectProof(token, nonce, addr string) []byte {
	m := hmac.New(sha256.New, proofKey(token, "wraptool-connect-proof-key"))
	m.Write([]byte("wraptool-connect-proof:" + nonce + "\n" + addr))
	return m.Sum(nil)
}

// validHex reports whether s is exactly n bytes in lowercase hex: one
// spelling per value, so nothing but the bytes themselves reaches the HMAC.
func validHex(s string, n int) bool {
	if len(s) != 2*n {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// proofHandler answers ProofPath. It is open (the client proves nothing,
// the server does), so it must not be an oracle: its answer is an HMAC
// under a 256-bit key derived from the token, of input the caller chose;
// HMAC is a PRF, so any number of such answers tell nothing of the key,
// still less of the token, and they are bound to this listener's address,
// so they serve only a client talking to this very listener, which holds
// the token anyway. An unknown key id gets a 404 that names no token.
// Answered at once from the request alone; the nonce is never logged.
func (h *Hub) proofHandler(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		httpguard.Refuse(w, r, http.StatusMethodNotAllowed, "method not allowed: this endpoint serves POST")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, proofMaxBody+1))
	if err != nil || len(body) > proofMaxBody {
		httpguard.Refuse(w, r, http.StatusBadRequest, "bad proof request: body too large or unreadable")
		return
	}
	var req ProofRequest
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || dec.More() || !validHex(req.Nonce, ProofNonceLen) || !validHex(req.Key, 16) {
		httpguard.Refuse(w, r, http.StatusBadRequest, "bad proof request: want {\"nonce\": 64 lowercase hex digits, \"key\": 32}")
		return
	}
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		httpguard.Refuse(w, r, http.StatusInternalServerError, "no local address")
		return
	}
	tokens := append([]string{h.token()}, h.elicitTokens()...)
	for _, tok := range tokens {
		if tok == "" || !hmac.Equal([]byte(ProofKeyID(tok)), []byte(req.Key)) {
			continue
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(ProofAnswer{Proof: hex.EncodeToString(ConnectProof(tok, req.Nonce, addr.String()))})
		return
	}
	httpguard.RefuseJSON(w, r, http.StatusNotFound, map[string]string{"error": "unknown_key",
		"error_description": "this server accepts no token with that key id"})
}
