package connect

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// TestAConnectionCarriesOnlyTheTokenItProved: connections are dialled (and
// so proved) for one token, and a request with another token never goes
// out on one of them, however the pool would reuse it: after a token file
// is rotated, a listener that proved the old token gets no request with the
// new one on that connection.
func TestAConnectionCarriesOnlyTheTokenItProved(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string][]string{} // each connection's remote address -> the tokens it carried
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.RemoteAddr] = append(seen[r.RemoteAddr], r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	var dialled []string
	b := newBridge(Options{Address: srv.Listener.Addr().String(), URL: srv.URL + "/mcp",
		Dial: func(ctx context.Context, token string) (net.Conn, error) {
			mu.Lock()
			dialled = append(dialled, token)
			mu.Unlock()
			var d net.Dialer
			return d.DialContext(ctx, "tcp", srv.Listener.Addr().String())
		}})
	t.Cleanup(b.closeIdle)
	for _, tok := range []string{"old", "old", "new", "new", "old"} {
		resp, err := b.do(t.Context(), http.MethodPost, &session{token: tok}, []byte("{}"), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"old", "new", "old"}; !slices.Equal(dialled, want) {
		t.Errorf("connections dialled for %q, want %q (one per change of token, reused while it stays)", dialled, want)
	}
	for addr, toks := range seen {
		if len(slices.Compact(slices.Clone(toks))) != 1 {
			t.Errorf("connection %s carried %q: more than the one token it proved", addr, toks)
		}
	}
}
