package connect

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wraptool/wraptool/actors"
)

// proofToken is the token the tests' listeners may or may not hold.
const proofToken = "proof-token-of-the-test-0123456789"

// recordingListener serves handler and keeps every byte each connection
// sent it, for checking that no token went out.
type recordingListener struct {
	net.Listener
	mu  sync.Mutex
	got bytes.Buffer
}

func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: c, l: l}, nil
}

type recordingConn struct {
	net.Conn
	l *recordingListener
}

func (c *recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.l.mu.Lock()
	c.l.got.Write(p[:n])
	c.l.mu.Unlock()
	return n, err
}

func (l *recordingListener) bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.got.Bytes())
}

// serveRecorded runs handler on a loopback port and returns its listener.
func serveRecorded(t *testing.T, handler http.HandlerFunc) *recordingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rl := &recordingListener{Listener: ln}
	srv := &http.Server{Handler: handler}
	go srv.Serve(rl)
	t.Cleanup(func() { srv.Close() })
	return rl
}

// proofAnswer answers a proof request with what answer makes of its nonce
// and the address the client dialled.
func proofAnswer(answer func(nonce, addr string) []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req actors.ProofRequest
		json.NewDecoder(io.LimitReader(r.Body, 512)).Decode(&req)
		addr := r.Context().Value(http.LocalAddrContextKey).(net.Addr).String()
		json.NewEncoder(w).Encode(actors.ProofAnswer{Proof: hex.EncodeToString(answer(req.Nonce, addr))})
	}
}

func TestProveRefusesEveryListenerThatDoesNotHoldTheToken(t *testing.T) {
	t.Parallel()
	other := strings.Repeat("cd", actors.ProofNonceLen)
	tests := []struct {
		name    string
		handler http.HandlerFunc
		ok      bool
		// silent: no answer at all (a server dying or starting), which
		// connect tries again rather than stop on; still no token.
		silent bool
	}{
		{"the holder of the token proves it", proofAnswer(func(n, a string) []byte { return actors.ConnectProof(proofToken, n, a) }), true, false},
		{"an impostor answering like /healthz is refused", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "ok\nconfinement: landlock\n")
		}, false, false},
		{"an impostor without the endpoint is refused", http.NotFound, false, false},
		{"an impostor saying it knows no such key is refused", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(404)
			io.WriteString(w, `{"error":"unknown_key"}`)
		}, false, false},
		{"a guessed proof is refused", proofAnswer(func(n, a string) []byte { return actors.ConnectProof("guess", n, a) }), false, false},
		{"an answer replayed for another nonce is refused", proofAnswer(func(n, a string) []byte { return actors.ConnectProof(proofToken, other, a) }), false, false},
		{"an answer relayed from another address is refused", proofAnswer(func(n, a string) []byte { return actors.ConnectProof(proofToken, n, "127.0.0.1:8717") }), false, false},
		{"a proof without its last byte is refused", proofAnswer(func(n, a string) []byte { return actors.ConnectProof(proofToken, n, a)[:31] }), false, false},
		{"an empty proof is refused", proofAnswer(func(n, a string) []byte { return nil }), false, false},
		{"a silent listener is refused within the proof's bound", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
		}, false, true},
		{"a listener that hangs up unanswered is refused", func(w http.ResponseWriter, r *http.Request) {
			c, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				c.Close()
			}
		}, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ln := serveRecorded(t, tc.handler)
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			start := time.Now()
			err = Prove(ctx, c, ln.Addr().String(), proofToken)
			if took := time.Since(start); took > ProofTimeout+time.Second {
				t.Errorf("Prove took %v, more than its bound %v", took, ProofTimeout)
			}
			switch {
			case tc.ok && err != nil:
				t.Fatalf("Prove = %v, want nil", err)
			case !tc.ok && err == nil:
				t.Fatal("Prove = nil, want an error")
			case !tc.ok && errors.Is(err, ErrNoProof) == tc.silent:
				t.Fatalf("Prove = %v; want ErrNoProof only for an answer that is no proof (silent %v)", err, tc.silent)
			case !tc.ok && !strings.Contains(err.Error(), ln.Addr().String()):
				t.Errorf("Prove = %v, want it to name %s", err, ln.Addr())
			}
			if sent := ln.bytes(); len(sent) == 0 || bytes.Contains(sent, []byte(proofToken)) {
				t.Errorf("the proof request carried the token, or nothing:\n%s", sent)
			}
		})
	}
}
