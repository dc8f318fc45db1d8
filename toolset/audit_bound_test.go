package toolset

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy/jsonl"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// cutNote is the note BoundValue ends a cut value with, for original.
func cutNote(original string) string {
	sum := sha256.Sum256([]byte(original))
	return fmt.Sprintf("…(%d bytes, sha256 %s)", len(original), hex.EncodeToString(sum[:]))
}

// checkCut fails unless got is original's cut form: the note with the
// original's length and hash, a valid prefix of at most AuditValueKept
// input bytes (wantPrefix).
func checkCut(t *testing.T, what, got, original, wantPrefix string) {
	t.Helper()
	if want := wantPrefix + cutNote(original); got != want {
		show := func(s string) string {
			if len(s) > 400 {
				return fmt.Sprintf("%q…(%d bytes)", s[:400], len(s))
			}
			return fmt.Sprintf("%q", s)
		}
		t.Errorf("%s: got %s, want %s", what, show(got), show(want))
	}
	if !utf8.ValidString(got) {
		t.Errorf("%s: the cut value is not valid UTF-8", what)
	}
}

// BoundValue keeps a value of at most 1 KiB and cuts a longer one to its
// first 256 bytes, on a character boundary and valid, plus the original's
// length and hash.
func TestBoundValue(t *testing.T) {
	t.Parallel()
	euro := strings.Repeat("€", 2000) // 3 bytes each: 256 falls inside one
	invalid := strings.Repeat("\xff", 3_800_000)
	mixed := strings.Repeat("a", 255) + "\xe2\x82" + strings.Repeat("b", 2000) // a torn "€" at the cut
	for _, tc := range []struct {
		name, in, prefix string
		kept             bool
	}{
		{"a short value is kept", "claude-code/1.0.3", "", true},
		{"a value of exactly 1 KiB is kept", strings.Repeat("x", MaxAuditValue), "", true},
		{"a value one byte over 1 KiB is cut", strings.Repeat("x", MaxAuditValue+1), strings.Repeat("x", AuditValueKept), false},
		{"a 5 MB value is cut", strings.Repeat("y", 5_000_000), strings.Repeat("y", AuditValueKept), false},
		{"a character across the cut is left out whole", euro, strings.Repeat("€", AuditValueKept/3), false},
		{"3.8 MB of invalid UTF-8 keeps one U+FFFD and hashes the original bytes", invalid, "\uFFFD", false},
		{"a torn character at the cut is cut by bytes and made valid", mixed, strings.Repeat("a", 255) + "\uFFFD", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := BoundValue(tc.in)
			if tc.kept {
				if got != tc.in {
					t.Errorf("got %q, want the value unchanged", got)
				}
				return
			}
			checkCut(t, "BoundValue", got, tc.in, tc.prefix)
			if BoundValue(got) != got {
				t.Errorf("bounding a bounded value changed it")
			}
		})
	}
}

// encodedLine is the audit line as the writer encodes it (newline
// included).
func encodedLine(t *testing.T, c CallAudit) []byte {
	t.Helper()
	c.Event = "call"
	b, err := jsonl.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// argvNote is the closing argv element for the omitted elements rest.
func argvNote(rest []string) string {
	h := sha256.New()
	n := 0
	for _, a := range rest {
		h.Write([]byte(a + "\x00"))
		n += len(a) + 1
	}
	return fmt.Sprintf("…(%d more arguments, %d bytes, sha256 %s)", len(rest), n, hex.EncodeToString(h.Sum(nil)))
}

// A call's line is at most 64 KiB whatever it holds: many argv elements
// end in one note naming the rest (count, bytes, hash); every field at its
// worst for JSON (control characters, six bytes each) still fits; and
// bounding a bounded line changes nothing.
func TestBoundedLine(t *testing.T) {
	t.Parallel()
	kib := func(c string) string { return strings.Repeat(c, MaxAuditValue) }
	many := make([]string, 10_000)
	for i := range many {
		many[i] = fmt.Sprintf("%04d", i) + strings.Repeat("a", MaxAuditValue-4)
	}
	controls := make([]string, 100)
	for i := range controls {
		controls[i] = kib("\x01")
	}
	// Each a 1 KiB value (kept) whose JSON takes 6 KiB: over 64 KiB together.
	worst := CallAudit{Session: kib("\x01"), Client: kib("\x02"), Tool: kib("\x03"), Decision: "denied",
		Reason: kib("\x04"), Kind: kib("\x05"), Cwd: kib("\x06"), Error: kib("\x0e"), Policy: kib("\x0f"),
		Grant: kib("\x10"), Upstream: kib("\x11"), Grants: []string{kib("\x12"), kib("\x13")}, Argv: controls}
	for _, tc := range []struct {
		name string
		line CallAudit
		// kept is how many argv elements stay as they were; -1 for all.
		kept int
	}{
		{"a plain call is untouched", CallAudit{Tool: "git_log", Argv: []string{"/usr/bin/git", "log", "--oneline"}, Cwd: "/repo"}, -1},
		{"10,000 arguments of 1 KiB each", CallAudit{Tool: "fake_report", Decision: "denied", Argv: many}, 0},
		{"every field at its worst for JSON", worst, 0},
		{"an upstream call's line at its worst, without argv", func() CallAudit { w := worst; w.Argv = nil; return w }(), 0},
		{"a 5 MB argument among short ones", CallAudit{Tool: "fake_report", Argv: []string{"fake", "report", strings.Repeat("z", 5_000_000), "last"}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := tc.line.Bounded()
			line := encodedLine(t, b)
			if len(line) > MaxAuditLine {
				t.Fatalf("the line takes %d bytes, more than %d", len(line), MaxAuditLine)
			}
			if again := encodedLine(t, b.Bounded()); string(again) != string(line) {
				t.Errorf("bounding a bounded line changed it")
			}
			if tc.kept == -1 {
				if string(line) != string(encodedLine(t, tc.line)) {
					t.Errorf("a small line changed:\n got %s\nwant %s", line, encodedLine(t, tc.line))
				}
				return
			}
			// Each element kept is its bounded self; the rest, if any, is one note.
			for i, a := range b.Argv {
				if strings.HasPrefix(a, "…(") {
					if i != len(b.Argv)-1 || a != argvNote(tc.line.Argv[i:]) {
						t.Errorf("argv[%d] = %q, want the note %q as the last element", i, a, argvNote(tc.line.Argv[i:]))
					}
					break
				}
				if a != BoundValue(tc.line.Argv[i]) {
					t.Errorf("argv[%d] is not the original's bounded form", i)
				}
			}
			if len(tc.line.Argv) > 1000 && len(b.Argv) >= len(tc.line.Argv) {
				t.Errorf("all %d elements were kept", len(b.Argv))
			}
		})
	}
}

// A handler's audit line from a 5 MB argument is at most 64 KiB and shows
// the argument cut, with its length and hash, whether the call is denied
// or allowed (the latter fails to start: no argv element can be 5 MB).
func TestAuditLineFromAHugeArgument(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("A", 5_000_000)
	for _, tc := range []struct {
		name     string
		args     map[string]any
		decision string
		argv     func() []string
	}{
		{"a denied call", map[string]any{"args": []string{big}, "nope": true}, "denied",
			func() []string { return []string{"fake", "report", "--nope", big} }},
		{"an allowed call", map[string]any{"m": big}, "allowed",
			func() []string { return []string{fakecli, "report", "-m", big} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			st := fakeState(t, t.TempDir(), fakeRules()...)
			st.Audit, st.AuditPolicy = rec.record, "hash-1"
			raw, _ := json.Marshal(tc.args)
			h := NewHandler("fake", []string{"report"}, func() *State { return st }, context.Background(), discard)
			if _, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "fake_report", Arguments: raw}}); err != nil {
				t.Fatal(err)
			}
			if len(rec.lines) != 1 {
				t.Fatalf("%d audit lines, want 1", len(rec.lines))
			}
			l := rec.lines[0]
			if line := encodedLine(t, l); len(line) > MaxAuditLine {
				t.Fatalf("the audit line takes %d bytes, more than %d", len(line), MaxAuditLine)
			}
			want := tc.argv()
			if l.Decision != tc.decision || len(l.Argv) != len(want) {
				t.Fatalf("line: decision %q, argv %.300q; want %s with %d elements", l.Decision, l.Argv, tc.decision, len(want))
			}
			for i := range want {
				if i == len(want)-1 {
					checkCut(t, "the argument", l.Argv[i], want[i], want[i][:AuditValueKept])
				} else if l.Argv[i] != want[i] {
					t.Errorf("argv[%d] = %q, want %q", i, l.Argv[i], want[i])
				}
			}
		})
	}
}

// SessionOf bounds the client's name/version: a client that writes a
// 3.8 MB name of raw invalid UTF-8 into its initialize (as a hostile client
// can; the JSON decoder makes each byte a 3-byte U+FFFD, 11.4 MB) comes out
// as its first bytes and the length and hash of what the server received.
func TestSessionOfBoundsTheClient(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: bounding huge client names in the audit session")
	}
	t.Parallel()
	const junk = 3_800_000
	type seen struct{ session, client string }
	got := make(chan seen, 1)
	server := mcp.NewServer(&mcp.Implementation{Name: "wraptool", Version: "test"}, nil)
	server.AddTool(&mcp.Tool{Name: "probe", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s, c := SessionOf(ctx, req)
		got <- seen{s, c}
		return &mcp.CallToolResult{}, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	defer fromClient.Close()
	defer toClient.Close()
	ss, err := server.Connect(ctx, &mcp.IOTransport{Reader: toServer, Writer: fromServer}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	// The client's side by hand: the go-sdk client would escape the bytes.
	answers := make(chan []byte, 4)
	go func() {
		r := bufio.NewReader(toClient)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				close(answers)
				return
			}
			answers <- line
		}
	}()
	answer := func(what string) {
		t.Helper()
		select {
		case a, ok := <-answers:
			if !ok || !bytes.Contains(a, []byte(`"result"`)) {
				t.Fatalf("%s: answered %.300s", what, a)
			}
		case <-ctx.Done():
			t.Fatalf("%s: no answer", what)
		}
	}
	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(fromClient, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},` +
		`"clientInfo":{"name":"evil-` + strings.Repeat("\xff", junk) + `","version":"9.9"}}}`)
	answer("initialize")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"probe","arguments":{}}}`)
	answer("tools/call")
	var s seen
	select {
	case s = <-got:
	case <-ctx.Done():
		t.Fatal("the tool was not called")
	}
	received := "evil-" + strings.Repeat("\uFFFD", junk) + "/9.9"
	checkCut(t, "client", s.client, received, "evil-"+strings.Repeat("\uFFFD", (AuditValueKept-5)/3))
	if len(s.session) > MaxAuditValue {
		t.Errorf("session id of %d bytes", len(s.session))
	}
	// A name that stayed raw (no JSON in between) is hashed as it is.
	raw := "evil-" + strings.Repeat("\xff", junk)
	checkCut(t, "raw name", BoundValue(raw), raw, "evil-\uFFFD")
}

// The audit line's cwd is the directory the child ran in, resolved: the
// tool's working_dir or the server's own when the client gives none, the
// client's cwd through a symlink as its target. A denial records where the
// call would have run, and the resolved default when the client's cwd is
// what was refused.
func TestAuditCwdIsWhereTheChildRan(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	real := filepath.Join(root, "real")
	other := filepath.Join(root, "other")
	for _, d := range []string{real, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{"link": real, "default": other} {
		if err := os.Symlink(to, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	resolved := func(p string) string {
		t.Helper()
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	outside := t.TempDir()
	for _, tc := range []struct {
		name       string
		workingDir string
		args       json.RawMessage
		decision   string
		want       string
	}{
		{"no cwd: the tool's working_dir, through its symlink", filepath.Join(root, "default"), json.RawMessage(`{}`), "allowed", resolved(other)},
		{"no cwd and no working_dir: the first root, never the server's folder outside the roots", "", json.RawMessage(`{}`), "allowed", resolved(root)},
		{"a client cwd through a symlink: its target", filepath.Join(root, "default"), jsonArgs(map[string]any{"cwd": filepath.Join(root, "link")}), "allowed", resolved(real)},
		{"a denied call: where it would have run", filepath.Join(root, "default"), jsonArgs(map[string]any{"cwd": filepath.Join(root, "link"), "nope": true}), "denied", resolved(real)},
		{"a denied call with no cwd: the default", filepath.Join(root, "default"), jsonArgs(map[string]any{"nope": true}), "denied", resolved(other)},
		{"a refused cwd: the default", filepath.Join(root, "default"), jsonArgs(map[string]any{"cwd": outside}), "denied", resolved(other)},
		{"arguments that are no object: the default", filepath.Join(root, "default"), json.RawMessage(`[1]`), "denied", resolved(other)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			st := fakeState(t, tc.workingDir, fakeRules()...)
			rt := st.Runtimes["fake"]
			rt.Roots = []string{root}
			st.Runtimes["fake"] = rt
			st.Audit = rec.record
			h := NewHandler("fake", []string{"report"}, func() *State { return st }, context.Background(), discard)
			res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "fake_report", Arguments: tc.args}})
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.lines) != 1 {
				t.Fatalf("%d audit lines, want 1", len(rec.lines))
			}
			l := rec.lines[0]
			if l.Decision != tc.decision || l.Cwd != tc.want {
				t.Errorf("line: decision %q, cwd %q; want %q, %q", l.Decision, l.Cwd, tc.decision, tc.want)
			}
			if tc.decision == "allowed" {
				var out struct{ Cwd string }
				if err := json.Unmarshal([]byte(toolsettest.ResultText(t, res)), &out); err != nil || out.Cwd != l.Cwd {
					t.Errorf("the child ran in %q (%v), the line says %q", out.Cwd, err, l.Cwd)
				}
			}
		})
	}
}

func jsonArgs(v map[string]any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
