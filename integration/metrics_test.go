package integration

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy/config/configtest"
)

// /metrics on the admin listener, scraped after a few calls and one
// reload, shows the counts; it answers 401 without the
// admin token and with the MCP token.
func TestMetricsAfterCallsAndAReload(t *testing.T) {
	slow(t, "/metrics after calls and a reload")
	t.Parallel()
	dir := t.TempDir()
	adminAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	base := serverConfig(t, dir, toolsPull)
	admin := fmt.Sprintf("admin:\n  listen: %s\n  auth_token_file: %s\n", adminAddr, filepath.Join(dir, "admin-token"))
	s := startServerIn(t, dir, base+admin)
	adminToken := strings.TrimSpace(string(configtest.ReadFile(t, filepath.Join(dir, "admin-token"))))
	c := s.Connect(t, "/mcp")

	for range 2 {
		if ran, text := runs(t, c, "fake_pull", map[string]any{"args": []any{"origin"}}); !ran {
			t.Fatalf("fake_pull did not run: %s", text)
		}
	}
	if ran, _ := runs(t, c, "fake_pull", map[string]any{"force": true}); ran {
		t.Fatal("an unlisted flag ran")
	}
	request(t, c, askFor("fake", []string{"push"}, nil, "count me", ""))
	writeInPlace(t, s.ConfigPath, withTools(base, toolsPullPush)+admin)
	waitListChanged(t, s, c, "the reload that adds fake_push")

	scrape := func(token string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("GET", "http://"+adminAddr+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := (&http.Client{Timeout: eventTimeout}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	code, body := scrape(adminToken)
	if code != 200 {
		t.Fatalf("scrape with the admin token: %d\n%s", code, body)
	}
	for _, want := range []string{
		`wraptool_calls_total{decision="allowed",tool="fake_pull"} 2`,
		`wraptool_calls_total{decision="denied",tool="fake_pull"} 1`,
		`wraptool_calls_total{decision="allowed",tool="wraptool_request_capability"} 1`,
		`wraptool_call_duration_seconds_count{tool="fake_pull"} 3`,
		`wraptool_reloads_total{outcome="ok"} 1`,
		`wraptool_reloads_total{outcome="rejected"} 0`,
		`wraptool_last_reload_success_timestamp_seconds `,
		`wraptool_pending_requests 1`,
		`wraptool_active_grants 0`,
		`wraptool_sessions 1`,
		`wraptool_audit_queue_waits_total 0`,
		`wraptool_audit_lines_lost_total 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the scrape lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", body)
	}
	// A rejected reload counts as such; the config in service stays.
	writeInPlace(t, s.ConfigPath, base+admin+"tools_typo: {}\n")
	s.WaitLog(t, `msg="config rejected"`, 1, eventTimeout)
	if _, body := scrape(adminToken); !strings.Contains(body, `wraptool_reloads_total{outcome="rejected"} 1`) ||
		!strings.Contains(body, `wraptool_reloads_total{outcome="ok"} 1`) {
		t.Errorf("after a rejected reload the scrape reads:\n%s", body)
	}
	for _, tc := range []struct{ name, token string }{{"no token", ""}, {"the MCP token", s.Token}, {"a wrong token", "nope"}} {
		if code, body := scrape(tc.token); code != 401 || strings.Contains(body, "wraptool_calls_total") {
			t.Errorf("scrape with %s: %d, want 401 and no metrics", tc.name, code)
		}
	}
}
