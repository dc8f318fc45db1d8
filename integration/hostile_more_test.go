package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// More hostile input against the built binary (beyond hostile_test.go): the headers of
// an MCP request, argument injection through every parameter of a wrapped
// tool over a real session, and a cwd swapped for a symlink while calls
// run.

// rawExchange sends req as written on a new connection to s and returns
// the status line of the answer (or "" when the server closed without
// one), bounded by eventTimeout.
func rawExchange(t *testing.T, s *server, req string) string {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(eventTimeout))
	// The server may answer (and close) before it has read everything: a
	// write error is fine, the answer is what counts.
	go conn.Write([]byte(req))
	line, _ := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line)
}

// Headers a client controls: a session id that is forged, huge or holds
// control characters; a wrong Content-Type or Accept; a protocol version
// the server does not speak; a header block over the limit; a second
// Authorization header. Each is refused at once with a 4xx, and the server
// keeps serving.
func TestHostileHeaders(t *testing.T) {
	slow(t, "hostile MCP headers")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, toolsPull))
	raw := openRawMCP(t, s)
	host := strings.TrimPrefix(s.URL, "http://")
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

	tests := []struct {
		name   string
		header map[string]string // set on a request that is otherwise valid
		del    []string          // headers left out
		want   int
	}{
		{name: "a forged session id", header: map[string]string{"Mcp-Session-Id": "FORGED0000000000000000000000"}, want: http.StatusNotFound},
		{name: "a 100 KB session id", header: map[string]string{"Mcp-Session-Id": strings.Repeat("A", 100_000)}, want: http.StatusNotFound},
		{name: "a session id of another shape", header: map[string]string{"Mcp-Session-Id": "../../" + raw.session}, want: http.StatusNotFound},
		{name: "Content-Type text/plain", header: map[string]string{"Content-Type": "text/plain"}, want: http.StatusUnsupportedMediaType},
		{name: "Content-Type of a form", header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, want: http.StatusUnsupportedMediaType},
		{name: "no Content-Type", del: []string{"Content-Type"}, want: http.StatusUnsupportedMediaType},
		{name: "no Accept", del: []string{"Accept"}, want: http.StatusBadRequest},
		{name: "a protocol version from the future", header: map[string]string{"Mcp-Protocol-Version": "9999-01-01"}, want: http.StatusBadRequest},
	}
	client := &http.Client{Timeout: eventTimeout}
	for _, tt := range tests {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, s.URL+"/mcp", strings.NewReader(list))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+s.Token)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", raw.session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			for _, k := range tt.del {
				req.Header.Del(k)
			}
			start := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
			t.Logf("%s: %d in %v", tt.name, resp.StatusCode, time.Since(start).Round(time.Microsecond))
		})
	}

	// What Go's client will not send: written on the wire by hand.
	wire := func(headers string) string {
		return "POST /mcp HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\n" +
			"Accept: application/json, text/event-stream\r\n" + headers +
			"Content-Length: " + strconv.Itoa(len(list)) + "\r\n\r\n" + list
	}
	for _, tt := range []struct{ name, req, want string }{
		{"a session id holding an escape sequence", wire("Authorization: Bearer " + s.Token + "\r\nMcp-Session-Id: " + raw.session + "\x1b[2J\r\n"), "HTTP/1.1 400"},
		{"a header block over 1 MiB", wire("Authorization: Bearer " + s.Token + "\r\nX-Pad: " + strings.Repeat("a", 2<<20) + "\r\n"), "HTTP/1.1 431"},
		{"a wrong Authorization before the right one", wire("Authorization: Bearer wrong\r\nAuthorization: Bearer " + s.Token + "\r\n"), "HTTP/1.1 401"},
		{"a header name holding a space", wire("Authorization: Bearer " + s.Token + "\r\nMcp Session Id: x\r\n"), "HTTP/1.1 400"},
	} {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			if got := rawExchange(t, s, tt.req); !strings.HasPrefix(got, tt.want) {
				t.Errorf("answer %q, want %s", got, tt.want)
			}
		})
	}
	if strings.Contains(s.Log(), "\x1b") {
		t.Errorf("the server log holds a raw escape sequence from a header")
	}
	expectStillServing(t, s)
}

// toolsReport is a rule over fakecli (which prints the argv it got) with a
// string flag and any positionals.
const toolsReport = `  fake:
    binary: $FAKECLI
    allow:
      - subcommand: [report]
        flags: ["--message"]
        flag_constraints:
          "--message": {type: string}
`

// Shell syntax in a flag's value or a positional reaches the child as one
// argv entry over a real session; what would escape the allowlist or the
// roots is refused with the denial text; nothing creates the file every value
// tries to create.
func TestHostileArgumentsOverTheWire(t *testing.T) {
	slow(t, "argument injection over a real session")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, toolsReport))
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	c := s.Connect(t, "/mcp")
	const pwned = "PWNED"
	values := []string{"$(touch " + pwned + ")", "`touch " + pwned + "`", "; touch " + pwned, "| touch " + pwned,
		"x\ntouch " + pwned, "${IFS}touch${IFS}" + pwned, "*", "--upload-pack=touch " + pwned, "\x1b]0;t\x07\x1b[2J"}
	for _, v := range values {
		args := map[string]any{"message": v, "cwd": work}
		if !strings.HasPrefix(v, "-") {
			args["args"] = []any{v}
		}
		res := c.Call(t, "fake_report", args)
		text := toolsettest.ResultText(t, res)
		if res.IsError {
			t.Errorf("%q: refused: %s", v, text)
			continue
		}
		var r toolsettest.Report
		if err := json.Unmarshal([]byte(text), &r); err != nil {
			t.Fatalf("%q: not fakecli's report: %q", v, text)
		}
		want := []string{fakecli, "report", "--message=" + v}
		if !strings.HasPrefix(v, "-") {
			want = append(want, v)
		}
		if !slices.Equal(r.Argv, want) {
			t.Errorf("argv %q, want %q", r.Argv, want)
		}
	}
	for _, tt := range []struct {
		args   map[string]any
		reason string
	}{
		{map[string]any{"exec": "touch " + pwned}, "flag '--exec' is not in the allowlist for 'fake report'"},
		{map[string]any{"args": []any{"--upload-pack=touch " + pwned}}, "positional argument '--upload-pack=touch " + pwned + "' looks like a flag"},
		{map[string]any{"cwd": "/"}, "cwd '/' is outside the allowed roots"},
		{map[string]any{"cwd": work + "/../.."}, "is outside the allowed roots"},
		{map[string]any{"cwd": dir}, "names a folder wraptool protects"},
		{map[string]any{"message": filepath.Join(dir, "requests.jsonl")}, "value of '--message' names a file wraptool protects"},
	} {
		res := c.Call(t, "fake_report", tt.args)
		if text := toolsettest.ResultText(t, res); !res.IsError || !strings.HasPrefix(text, "DENIED: ") || !strings.Contains(text, tt.reason) {
			t.Errorf("%v: isError %v, text %q; want a denial saying %q", tt.args, res.IsError, text, tt.reason)
		}
	}
	for _, d := range []string{dir, work, filepath.Join(dir, "home")} {
		if _, err := os.Stat(filepath.Join(d, pwned)); err == nil {
			t.Errorf("%s was created in %s: something ran a shell", pwned, d)
		}
	}
}

// A client that can write inside a root keeps swapping the cwd it asks for
// between a folder and a symlink to one outside the roots, while calls run
// over a real session. Whatever the timing, no child starts outside the
// roots: a call that sees the link is refused (cwd outside the roots), one
// whose folder is briefly missing is refused or fails to start.
func TestHostileCwdSwappedDuringCalls(t *testing.T) {
	slow(t, "a cwd swapped for a symlink during calls")
	t.Parallel()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	s := startServerIn(t, dir, serverConfig(t, dir, toolsReport))
	root := filepath.Join(dir, "root")
	cwd, parked, link := filepath.Join(root, "d"), filepath.Join(root, "d.real"), filepath.Join(root, "link")
	if err := os.MkdirAll(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	swapped := make(chan error, 1)
	go func() {
		// rename cannot put a symlink over a directory, so each swap is
		// two renames: the name is briefly missing, a folder, or the link.
		for ctx.Err() == nil {
			for _, mv := range [][2]string{{cwd, parked}, {link, cwd}, {cwd, link}, {parked, cwd}} {
				if err := os.Rename(mv[0], mv[1]); err != nil {
					swapped <- err
					return
				}
			}
		}
		swapped <- nil
	}()
	defer func() {
		cancel()
		if err := <-swapped; err != nil {
			t.Errorf("swapping the cwd: %v", err)
		}
	}()

	c := s.Connect(t, "/mcp")
	var ran, refused, calls int
	var escaped []string
	deadline := time.Now().Add(90 * time.Second)
	for ; calls < 300 || ran < 20; calls++ {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d calls ran in 90 s: the test proves too little", ran, calls)
		}
		res := c.Call(t, "fake_report", map[string]any{"cwd": cwd})
		text := toolsettest.ResultText(t, res)
		if res.IsError {
			if !strings.HasPrefix(text, "DENIED: ") && !strings.Contains(text, "failed to start") {
				t.Fatalf("call %d: an error that is neither a denial nor a failure to start: %q", calls, text)
			}
			refused++
			continue
		}
		var r toolsettest.Report
		if err := json.Unmarshal([]byte(text), &r); err != nil {
			t.Fatalf("call %d: not fakecli's report: %q", calls, text)
		}
		ran++
		if r.Cwd != dir && !strings.HasPrefix(r.Cwd, dir+"/") {
			escaped = append(escaped, r.Cwd)
		}
	}
	t.Logf("%d calls: %d ran (all inside the root), %d refused or failed to start", calls, ran, refused)
	if len(escaped) > 0 {
		t.Errorf("%d of %d runs started outside the roots, in %q", len(escaped), ran, escaped[0])
	}
}

// An upstream MCP server is semi-trusted: what it writes to stderr reaches
// the operator through the server's log. An escape sequence, a title, CR
// and a bidi override there are logged quoted (the log's text format), and
// the upstream's tools still serve.
func TestHostileUpstreamStderrIsLoggedQuoted(t *testing.T) {
	slow(t, "an upstream's stderr logged quoted")
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "upstream.sh")
	body := "#!/bin/sh\nprintf 'evil \\033]0;pwned\\007\\033[2J\\342\\200\\256\\rfake level=ERROR\\n' >&2\nexec " + fakeupstream + " \"$@\"\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	s := startServerIn(t, dir, serverConfig(t, dir, "")+"mcp_servers:\n  evil:\n    command: "+script+"\n    allow: [{tool: echo}]\n")
	logged := s.WaitLog(t, `msg="upstream stderr" component=upstream server=evil`, 1, eventTimeout)
	if !strings.Contains(logged, `line="evil \x1b]0;pwned\a\x1b[2J\u202e\rfake level=ERROR"`) {
		t.Errorf("the stderr line is not logged Go-quoted:\n%s", logged)
	}
	if log := s.Log(); strings.ContainsAny(log, "\x1b\a\r\u202e") {
		t.Errorf("the server log holds a raw control from the upstream's stderr")
	}
	c := s.Connect(t, "/mcp")
	if got := c.WrappedTools(t); !slices.Contains(got, "evil_echo") {
		t.Errorf("tools %v, want evil_echo", got)
	}
}
