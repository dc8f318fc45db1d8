package integration

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy/config/configtest"
)

// The review UI decides and applies through the server's own writers: an
// apply from the admin API is written by the config editor, and the
// decision by the request-log writer (each says so in the server's log),
// not by the UI beside them.
func TestReviewUIDecidesThroughTheServersWriters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	adminAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg := serverConfig(t, dir, grantConfig) + fmt.Sprintf("admin:\n  listen: %s\n  auth_token_file: %s\n", adminAddr, filepath.Join(dir, "admin-token"))
	s := startServerIn(t, dir, cfg)
	adminToken := strings.TrimSpace(string(configtest.ReadFile(t, filepath.Join(dir, "admin-token"))))
	c := s.Connect(t, "/mcp")

	for i, tc := range []struct {
		sub, body, want string
	}{
		{"log", `{"apply":true,"unlisted_ok":true}`, "config edited"},
		{"show", `{"once":true,"unlisted_ok":true}`, "request decided"},
	} {
		if _, err := c.CallTool(t.Context(), &mcp.CallToolParams{Name: requestTool,
			Arguments: askFor("fake", []string{tc.sub}, []string{"--depth"}, "through the writers", "")}); err != nil {
			t.Fatal(err)
		}
		id := pendingFor(t, s, tc.sub)
		if code := adminPost(t, adminAddr, adminToken, "/api/requests/"+id+"/approve", tc.body); code != http.StatusOK {
			t.Fatalf("admin approve %s: status %d\n%s", tc.body, code, s.Log())
		}
		log := s.WaitLog(t, "request decided", i+1, eventTimeout)
		var decided, edited bool
		for _, line := range strings.Split(log, "\n") {
			decided = decided || strings.Contains(line, "component=requestlog") && strings.Contains(line, "request decided") &&
				strings.Contains(line, "id="+id) && strings.Contains(line, "decided_by=admin")
			edited = edited || strings.Contains(line, "component=configeditor") && strings.Contains(line, "config edited") &&
				strings.Contains(line, "fake "+tc.sub)
		}
		if !decided {
			t.Errorf("%s: no line from the request-log writer recording the admin's decision:\n%s", tc.body, log)
		}
		if wantEdit := tc.want == "config edited"; edited != wantEdit {
			t.Errorf("%s: a line from the config editor = %v, want %v:\n%s", tc.body, edited, wantEdit, log)
		}
	}
}
