package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// TestScreensLearnARequestedSubcommandsHelp shows the server's own screens
// learn the help of a subcommand a request names and no rule does, as
// `requests approve` and `watch` do, against the real binary: the review
// page shows the flag's help line, the admin API approves a flag that help
// lists without unlisted_ok, and an elicitation client is asked, with the
// effect the help proves (`--depth  takes any value`), and its once-grant
// runs. Before, each said HELP UNKNOWN: the page marked the flag, the API
// answered 422, and the client was never asked.
func TestScreensLearnARequestedSubcommandsHelp(t *testing.T) {
	slow(t, "the server learning a requested subcommand's help")
	t.Parallel()
	dir := t.TempDir()
	adminAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg := elicitConfig(t, dir) + fmt.Sprintf("admin:\n  listen: %s\n  auth_token_file: %s\n", adminAddr, filepath.Join(dir, "admin-token"))
	s := startServerIn(t, dir, cfg)
	adminToken := strings.TrimSpace(string(configtest.ReadFile(t, filepath.Join(dir, "admin-token"))))
	elicitToken := strings.TrimSpace(string(configtest.ReadFile(t, filepath.Join(dir, "elicit-token"))))
	c := s.Connect(t, "/mcp")

	t.Run("the review page", func(t *testing.T) {
		request(t, c, askFor("fake", []string{"log"}, []string{"--depth"}, "a short history", ""))
		page := reviewPage(t, s, adminAddr, adminToken)
		if !strings.Contains(page, "limit to NUM commits") {
			t.Errorf("the review page lacks --depth's help line:\n%s", page)
		}
		if strings.Contains(page, "HELP UNKNOWN for &#39;fake log&#39;") {
			t.Errorf("the review page marks fake log's flags HELP UNKNOWN:\n%s", page)
		}
	})
	t.Run("the admin API", func(t *testing.T) {
		id := request(t, c, askFor("fake", []string{"show"}, []string{"--message"}, "label it", ""))
		if code := adminPost(t, adminAddr, adminToken, "/api/requests/"+id+"/approve", `{"once":true}`); code != http.StatusOK {
			t.Fatalf("admin approve once of fake show --message: status %d, want 200\n%s", code, s.Log())
		}
	})
	t.Run("elicitation", func(t *testing.T) {
		a := &asker{action: "accept", decision: "once"}
		session := connectWith(t, s, a.client(t), elicitToken, "")
		res, err := session.CallTool(bounded(t), &mcp.CallToolParams{Name: requestTool,
			Arguments: askFor("fake", []string{"diff"}, []string{"--depth"}, "a short diff", "")})
		if err != nil {
			t.Fatal(err)
		}
		var w waited
		structured(t, res, &w)
		if w.Status != "approved" || w.Grant == nil || !w.Grant.Once {
			t.Fatalf("result %q %+v, want approved once\n%s", toolsettest.ResultText(t, res), w, s.Log())
		}
		q := a.questions()
		if len(q) != 1 {
			t.Fatalf("asked %d times, want once", len(q))
		}
		want := "Test Desktop: the assistant asks to run 'fake diff' with --depth: a short diff\n" +
			"Approving grants fake diff, as the rule will stand:\n" +
			"  --depth  takes any value  — limit to NUM commits\n"
		if !strings.HasPrefix(q[0].Message, want) {
			t.Errorf("message %q, want it to begin %q", q[0].Message, want)
		}
		// The once-grants of fake show (the API's) and fake diff come
		// into force as tools of their own.
		waitTools(t, s, c, []string{"fake_diff", "fake_show", "fake_status"})
		waitRuns(t, s, c, "fake_diff", map[string]any{"depth": "3"})
	})
}

// reviewPage signs in to the review UI at addr with token, as a browser
// does (?token=, then the session cookie), and returns the review page.
func reviewPage(t *testing.T, s *server, addr, token string) string {
	t.Helper()
	uiURL := s.stderr.find(`msg="serving the review UI"`, "url=")
	u, err := url.Parse(uiURL)
	if err != nil || !strings.HasSuffix(u.Hostname(), ".localhost") {
		t.Fatalf("no review UI URL in the log (%q, %v):\n%s", uiURL, err, s.Log())
	}
	client := &http.Client{
		Timeout: eventTimeout,
		// The UI's host name is w-<label>.localhost: dial the listener,
		// as a browser resolving *.localhost to loopback does.
		Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	res, err := client.Get(uiURL + "?token=" + url.QueryEscape(token))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var cookie *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "wraptool_session" {
			cookie = c
		}
	}
	if res.StatusCode != http.StatusSeeOther || cookie == nil {
		t.Fatalf("sign in: status %d, cookie %v", res.StatusCode, cookie)
	}
	req, err := http.NewRequest(http.MethodGet, uiURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(cookie)
	res, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("review page: status %d, %v", res.StatusCode, err)
	}
	return string(body)
}
