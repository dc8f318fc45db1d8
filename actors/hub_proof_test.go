package actors

import (
	"crypto/hmac"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// proofNonce is a well-formed nonce of the tests.
var proofNonce = strings.Repeat("ab", ProofNonceLen)

func TestProofEndpointProvesEachAcceptedTokenAndNothingElse(t *testing.T) {
	h := startBindingHub(t, HubOptions{})
	addr := h.hub.ln.Addr().String()
	body := func(nonce, key string) string { return fmt.Sprintf(`{"nonce":%q,"key":%q}`, nonce, key) }
	tests := []struct {
		name   string
		method string
		body   string
		host   string
		status int
		token  string // the token whose proof the answer must be; "" for none
	}{
		{name: "the MCP token is proven for its key id", method: "POST", body: body(proofNonce, ProofKeyID(mainToken)), status: 200, token: mainToken},
		{name: "an elicitation token is proven for its key id", method: "POST", body: body(proofNonce, ProofKeyID(elicitToken)), status: 200, token: elicitToken},
		{name: "an unknown key id gets a 404 naming no token", method: "POST", body: body(proofNonce, ProofKeyID("guess")), status: 404},
		{name: "a short nonce is refused", method: "POST", body: body(proofNonce[:62], ProofKeyID(mainToken)), status: 400},
		{name: "a long nonce is refused", method: "POST", body: body(proofNonce+"ab", ProofKeyID(mainToken)), status: 400},
		{name: "an uppercase nonce is refused", method: "POST", body: body(strings.ToUpper(proofNonce), ProofKeyID(mainToken)), status: 400},
		{name: "a non-hex nonce is refused", method: "POST", body: body(strings.Repeat("zz", ProofNonceLen), ProofKeyID(mainToken)), status: 400},
		{name: "the token itself as key is refused", method: "POST", body: body(proofNonce, mainToken), status: 400},
		{name: "an unknown field is refused", method: "POST", body: `{"nonce":"` + proofNonce + `","key":"` + ProofKeyID(mainToken) + `","x":1}`, status: 400},
		{name: "two documents are refused", method: "POST", body: body(proofNonce, ProofKeyID(mainToken)) + "{}", status: 400},
		{name: "a huge body is refused", method: "POST", body: `{"nonce":"` + strings.Repeat(" ", 1<<20) + `"}`, status: 400},
		{name: "not JSON is refused", method: "POST", body: "nonce=" + proofNonce, status: 400},
		{name: "GET is not served", method: "GET", status: 405},
		{name: "a rebinding Host is refused first", method: "POST", body: body(proofNonce, ProofKeyID(mainToken)), host: "evil.example:80", status: 403},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := h.do(t, hubRequest{method: tc.method, path: ProofPath, body: cmpOr(tc.body, "{}"), host: tc.host})
			if res.status != tc.status {
				t.Fatalf("status = %d, want %d (body %q)", res.status, tc.status, res.body)
			}
			if strings.Contains(res.body, mainToken) || strings.Contains(res.body, elicitToken) {
				t.Fatalf("the answer contains a token: %q", res.body)
			}
			if tc.token == "" {
				return
			}
			var a ProofAnswer
			if err := json.Unmarshal([]byte(res.body), &a); err != nil {
				t.Fatalf("answer %q: %v", res.body, err)
			}
			got, _ := hex.DecodeString(a.Proof)
			if !hmac.Equal(got, ConnectProof(tc.token, proofNonce, addr)) {
				t.Fatalf("proof %s is not ConnectProof for the token at %s", a.Proof, addr)
			}
		})
	}
}

func TestConnectProofBindsNonceAddressAndToken(t *testing.T) {
	base := ConnectProof(mainToken, proofNonce, "127.0.0.1:8717")
	others := []struct{ name, token, nonce, addr string }{
		{"another nonce (a replayed answer)", mainToken, strings.Repeat("cd", ProofNonceLen), "127.0.0.1:8717"},
		{"another address (a relayed answer)", mainToken, proofNonce, "127.0.0.1:8718"},
		{"another token", elicitToken, proofNonce, "127.0.0.1:8717"},
	}
	for _, o := range others {
		t.Run(o.name, func(t *testing.T) {
			if hmac.Equal(base, ConnectProof(o.token, o.nonce, o.addr)) {
				t.Fatalf("the proof does not change with %s", o.name)
			}
		})
	}
	if strings.Contains(ProofKeyID(mainToken), mainToken) || strings.Contains(hex.EncodeToString(base), hex.EncodeToString([]byte(mainToken))) {
		t.Fatal("the key id or the proof carries the token")
	}
}

// cmpOr is cmp.Or for the table above (a GET has no body).
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
