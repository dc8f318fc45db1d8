package actors

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
)

// batchRefusal is the answer to a JSON-RPC batch: a JSON-RPC error
// (-32600, invalid request) with a null id, since no one message of the
// batch is answered.
var batchRefusal = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"JSON-RPC batches are not supported: send each message in a request of its own"}}` + "\n")

// refuseBatches answers a POST whose body is a JSON-RPC batch (its first
// byte that is not JSON whitespace is '[') with 400 and batchRefusal, on
// both endpoints and whatever protocol version the session speaks. MCP
// dropped batching in 2025-06-18, and the SDK, which still runs the
// batches of older sessions, would run every message of one in a single
// step: an [initialize, tools/call] batch called a tool before the client
// had sent notifications/initialized. The body is already in memory (the
// guard read it, within its limit and deadline), so the look costs no
// network read and leaves the body whole for the SDK.
func refuseBatches(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Body != nil && r.Body != http.NoBody {
			// A small buffer: only the first bytes are looked at, and
			// the SDK's larger reads then go past it to the body.
			br := bufio.NewReaderSize(r.Body, 64)
			lead, batch := startsBatch(br)
			if batch {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("X-Content-Type-Options", "nosniff")
				w.WriteHeader(http.StatusBadRequest)
				w.Write(batchRefusal)
				return
			}
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(lead), br), r.Body}
		}
		next.ServeHTTP(w, r)
	})
}

// startsBatch reports whether the JSON text br holds is an array, reading
// no further than its first byte that is not whitespace (left unread). It
// returns the whitespace it read, to be put back.
func startsBatch(br *bufio.Reader) (lead []byte, batch bool) {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return lead, false
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			lead = append(lead, c)
			continue
		}
		br.UnreadByte()
		return lead, c == '['
	}
}
