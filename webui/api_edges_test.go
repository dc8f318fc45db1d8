package webui

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// An API 401 says which case it is, in its JSON error, and never what was
// sent: no bearer token, or one that is not the admin token (the MCP token
// included).
func TestAPIUnauthorizedSaysWhichCase(t *testing.T) {
	t.Parallel()
	served := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "wraptool_sessions 1\n") })
	f := newFixture(t, func(o *Options) { o.Metrics = served })
	const wrong = "the bearer token does not match the admin token file"
	tests := []struct {
		name, target, auth, want string
	}{
		{"no Authorization header is no bearer token", "/api/requests", "", "no bearer token"},
		{"the MCP token does not match the admin token file", "/api/requests", "Bearer " + mcpToken, wrong},
		{"a wrong token does not match", "/api/requests", "Bearer wrong-token-4f1c", wrong},
		{"another scheme does not match", "/api/requests", "Basic " + adminToken, wrong},
		{"/metrics says the same without a token", "/metrics", "", "no bearer token"},
		{"/metrics says the same with a wrong token", "/metrics", "Bearer " + mcpToken, wrong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := call{host: "127.0.0.1:8718", target: tt.target}
			if tt.auth != "" {
				c.header = map[string]string{"Authorization": tt.auth}
			}
			w := f.do(t, c)
			if w.Code != http.StatusUnauthorized {
				t.Fatalf("status = %d, want 401; body %s", w.Code, w.Body)
			}
			if got := jsonError(t, w); got != tt.want {
				t.Errorf("error = %q, want %q", got, tt.want)
			}
		})
	}
}

// An API call with the admin token and a body far over the limit reads its
// 413, as the API's JSON error, even a client that reads only once it has
// sent everything: the rest of the body is read and thrown away before the
// connection closes, instead of the client meeting a reset that drops the
// answer.
func TestAPIOversizedBodyGets413(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.submit(t, "git", []string{"push"}, []string{"--tags"}, "release")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.ui = New(f.options(ln.Addr()))
	srv := &http.Server{Handler: f.ui.Handler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, size := range []int{5_000_000, 20_000_000} {
		t.Run(fmt.Sprintf("a %d-byte body", size), func(t *testing.T) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			var msg bytes.Buffer
			fmt.Fprintf(&msg, "POST /api/requests/%s/deny HTTP/1.1\r\nHost: localhost:%s\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", id, port, adminToken, size)
			msg.Write(bytes.Repeat([]byte("x"), size))
			if _, err := conn.Write(msg.Bytes()); err != nil {
				t.Fatalf("write: %v, want the whole body taken", err)
			}
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("read the answer: %v", err)
			}
			body, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatalf("read the answer's body: %v", err)
			}
			var e map[string]string
			if res.StatusCode != 413 || json.Unmarshal(body, &e) != nil || !strings.Contains(e["error"], "too large") {
				t.Fatalf("got %d %q, want 413 with a JSON error saying too large", res.StatusCode, body)
			}
			if !res.Close {
				t.Errorf("no Connection: close; header %v", res.Header)
			}
		})
	}
	if got := f.status(t, id); got != "pending" {
		t.Errorf("the request is %s, want pending", got)
	}
}
