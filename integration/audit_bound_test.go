package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// auditBoundConfig wraps the fake CLI with a report rule that takes any
// positionals and one flag, so a denial quotes what the client sent.
const auditBoundConfig = `  fake:
    binary: $FAKECLI
    allow:
      - subcommand: [report]
        flags: ["--verbose"]
`

// connectAs opens a Streamable HTTP session on s as the client impl names.
func connectAs(t *testing.T, s *server, impl *mcp.Implementation) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	transport := &mcp.StreamableClientTransport{Endpoint: s.BaseURL() + "/mcp",
		HTTPClient: &http.Client{Transport: toolsettest.Bearer{Token: s.Token, Base: http.DefaultTransport}}}
	session, err := mcp.NewClient(impl, nil).Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connect as a client of %d bytes: %v\n%s", len(impl.Name), err, s.Log())
	}
	t.Cleanup(func() { session.Close() })
	return session
}

// rawAuditLines are the audit log's lines as bytes, newline included.
func rawAuditLines(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
}

// cutForm is how the audit log shows a value longer than 1 KiB: its first
// bytes and the original's length and sha256.
func cutForm(prefix, original string) string {
	sum := sha256.Sum256([]byte(original))
	return fmt.Sprintf("%s…(%d bytes, sha256 %s)", prefix, len(original), hex.EncodeToString(sum[:]))
}

// TestAuditLinesAreBounded shows, against the built binary, that no call
// can flush the audit trail by volume: a client whose clientInfo.name is
// 3 MB (with invalid UTF-8) and calls carrying a 3.9 MB argument or 3,500
// arguments of 1 KiB each write lines of at most 64 KiB, the long values
// cut with their length and hash, and a token-read line written before them
// is still in the file after they were.
func TestAuditLinesAreBounded(t *testing.T) {
	slow(t, "audit lines bounded against huge client input")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, auditBoundConfig))
	auditPath := filepath.Join(dir, "audit.jsonl")
	name := "huge-client-" + strings.Repeat("n", 3_000_000) + strings.Repeat("\xff", 1000)
	c := connectAs(t, s, &mcp.Implementation{Name: name, Version: "1"})
	call := func(args map[string]any) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
		defer cancel()
		if _, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "fake_report", Arguments: args}); err != nil {
			t.Fatalf("call: %v", err)
		}
	}
	call(map[string]any{"verbose": true, "args": []string{"marker-read-of-the-token"}})
	marker := waitAudit(t, s, "the marker call", func(l auditLine) bool { return slices.Contains(l.Argv, "marker-read-of-the-token") })
	// What the server received: the client's JSON wrote each invalid byte as \ufffd.
	received := "huge-client-" + strings.Repeat("n", 3_000_000) + strings.Repeat("\uFFFD", 1000) + "/1"
	if want := cutForm("huge-client-"+strings.Repeat("n", 256-len("huge-client-")), received); marker.Client != want {
		t.Errorf("client: got %.400q, want %q", marker.Client, want)
	}

	big := strings.Repeat("B", 3_900_000)
	for range 5 {
		call(map[string]any{"args": []string{big}, "nope": true})
	}
	many := make([]string, 3_500)
	for i := range many {
		many[i] = fmt.Sprintf("%04d", i) + strings.Repeat("a", 1020)
	}
	call(map[string]any{"args": many, "nope": true})
	last := waitAudit(t, s, "the many-arguments call", func(l auditLine) bool { return len(l.Argv) > 0 && strings.HasPrefix(l.Argv[len(l.Argv)-1], "…(") })
	bigs := 0
	for _, l := range readAudit(t, auditPath) {
		if l.Event == "call" && slices.Contains(l.Argv, cutForm(strings.Repeat("B", 256), big)) {
			bigs++
		}
	}
	if bigs != 5 {
		t.Errorf("%d lines show the 3.9 MB argument cut with its length and hash, want 5", bigs)
	}
	// The note for the arguments left out names how many, their bytes and hash.
	kept := len(last.Argv) - 1 - 3 // "fake", "report", "--nope" come first
	rest := many[kept:]
	h := sha256.New()
	n := 0
	for _, a := range rest {
		h.Write([]byte(a + "\x00"))
		n += len(a) + 1
	}
	if want := fmt.Sprintf("…(%d more arguments, %d bytes, sha256 %s)", len(rest), n, hex.EncodeToString(h.Sum(nil))); last.Argv[len(last.Argv)-1] != want {
		t.Errorf("argv note: got %q, want %q", last.Argv[len(last.Argv)-1], want)
	}
	if !slices.Equal(last.Argv[3:3+kept], many[:kept]) || kept == 0 {
		t.Errorf("the %d arguments kept are not the first ones", kept)
	}
	var total int
	for i, l := range rawAuditLines(t, auditPath) {
		total += len(l)
		if len(l) > 64<<10 {
			t.Errorf("audit line %d takes %d bytes, more than 64 KiB", i, len(l))
		}
	}
	t.Logf("the audit log takes %d bytes after 7 calls", total)
	if total > 8*64<<10 {
		t.Errorf("the audit log takes %d bytes after 7 calls", total)
	}
	if !slices.ContainsFunc(readAudit(t, auditPath), func(l auditLine) bool { return slices.Contains(l.Argv, "marker-read-of-the-token") }) {
		t.Errorf("the marker line is gone")
	}
}

// TestAuditCwdIsResolved shows the audit line's cwd against the built
// binary: the tool's working_dir (given through a symlink) or the server's
// own directory when the client gives none, and a client cwd given
// through a symlink, each as the resolved directory the child ran in; a
// denial records where the call would have run.
func TestAuditCwdIsResolved(t *testing.T) {
	slow(t, "the audit line's resolved cwd")
	t.Parallel()
	dir := t.TempDir()
	for _, d := range []string{"work", "real"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{"worklink": "work", "link": "real"} {
		if err := os.Symlink(filepath.Join(dir, to), filepath.Join(dir, link)); err != nil {
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
	s := startServerIn(t, dir, serverConfig(t, dir, fmt.Sprintf(`  fake:
    binary: $FAKECLI
    working_dir: %s
    allow:
      - subcommand: [report]
        flags: ["--verbose"]
  other:
    binary: $FAKECLI
    allow:
      - subcommand: [report]
`, filepath.Join(dir, "worklink"))))
	c := s.Connect(t, "/mcp")
	for i, tc := range []struct {
		name, tool string
		args       map[string]any
		decision   string
		want       string
	}{
		{"no cwd: the tool's working_dir, resolved", "fake_report", map[string]any{"args": []string{"call-0"}}, "allowed", resolved(filepath.Join(dir, "work"))},
		{"no cwd and no working_dir: the first allowed_cwd_roots root, resolved", "other_report", map[string]any{"args": []string{"call-1"}}, "allowed", resolved(dir)},
		{"a client cwd through a symlink: its target", "fake_report", map[string]any{"args": []string{"call-2"}, "cwd": filepath.Join(dir, "link")}, "allowed", resolved(filepath.Join(dir, "real"))},
		{"a denied call: where it would have run", "fake_report", map[string]any{"args": []string{"call-3"}, "nope": true}, "denied", resolved(filepath.Join(dir, "work"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.Call(t, tc.tool, tc.args)
			tag := fmt.Sprintf("call-%d", i)
			l := waitAudit(t, s, tc.name, func(l auditLine) bool { return l.Event == "call" && slices.Contains(l.Argv, tag) })
			if l.Decision != tc.decision || l.Cwd != tc.want {
				t.Errorf("line: decision %q, cwd %q; want %q, %q", l.Decision, l.Cwd, tc.decision, tc.want)
			}
		})
	}
}

// TestAuditNamesTheGrantTheCallUsed shows, against the built binary, two
// timed grants on one rule: a call that uses only the second grant's flag
// names the second grant (it was recorded under the first before), and a
// call that needs a flag of each names the one approved last and lists
// both.
func TestAuditNamesTheGrantTheCallUsed(t *testing.T) {
	slow(t, "the audit line naming the grant a call used")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, `  fake:
    binary: $FAKECLI
    allow:
      - subcommand: [status]
        flags: ["--verbose"]
`))
	c := s.Connect(t, "/mcp")
	cli := operatorCLI(t, s)
	approve := func(flag string) string {
		t.Helper()
		id := request(t, c, askFor("fake", []string{"status"}, []string{flag}, "look closer", ""))
		if out, stderr, code := cli("requests", "approve", id, "--for", "1h"); code != 0 {
			t.Fatalf("approve --for 1h: exit %d\n%s\n%s", code, out, stderr)
		}
		waitListChanged(t, s, c, "the grant of "+flag+" came into force")
		return id
	}
	depth := approve("--depth")
	message := approve("--message")
	for _, tc := range []struct {
		name   string
		args   map[string]any
		grant  string
		grants []string
	}{
		{"only the second grant's flag", map[string]any{"verbose": true, "message": "second-only"}, message, nil},
		{"only the first grant's flag", map[string]any{"depth": "1"}, depth, nil},
		{"a flag of each", map[string]any{"depth": "2", "message": "both"}, message, []string{depth, message}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(readAudit(t, filepath.Join(dir, "audit.jsonl")))
			if ran, text := runs(t, c, "fake_status", tc.args); !ran {
				t.Fatalf("denied under the grants: %s", text)
			}
			l := nextAudit(t, filepath.Join(dir, "audit.jsonl"), before, tc.name, func(l auditLine) bool { return l.Event == "call" && l.Tool == "fake_status" })
			if l.Grant != tc.grant || !slices.Equal(l.Grants, tc.grants) {
				t.Errorf("line names grant %q and grants %v; want %q and %v", l.Grant, l.Grants, tc.grant, tc.grants)
			}
		})
	}
}
