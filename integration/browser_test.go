package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// chromiumPath is Debian's chromium, or the test is skipped with a message
// (under CI, where .ci/run installs it, its absence fails the test).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium: .ci/run installs Debian's chromium for this test")
	}
	t.Skip("no chromium browser on this machine (apt-get install chromium)")
	return ""
}

// TestAdminUIInABrowser signs in with ?token=, sees a pending request whose
// rationale holds <script> rendered as text, previews and confirms an apply
// (the config changes and the MCP client gets list_changed), then denies
// another request with a reason and finds it in the history, then approves
// a third once (a grant the server takes up: list_changed, one call runs)
// and finds "approved once", then "approved once, used", in the history,
// the config untouched. It takes the
// screenshots docs/approvals.md shows: with WRAPTOOL_UPDATE_SCREENSHOTS=1 they are written
// to docs/, else to a temporary folder.
func TestAdminUIInABrowser(t *testing.T) {
	slow(t, "the review UI in a headless browser")
	t.Parallel()
	browser := chromiumPath(t)
	dir := t.TempDir()
	cfg := serverConfig(t, dir, `  fake:
    binary: $FAKECLI
    allow:
      # what the team agreed to
      - subcommand: [status]
        flags: ["--verbose"]
`) + fmt.Sprintf("admin:\n  listen: 127.0.0.1:%d\n  auth_token_file: %s\n", freePort(t), filepath.Join(dir, "admin-token"))
	s := startServerIn(t, dir, cfg)
	c := s.Connect(t, "/mcp")
	idApply := request(t, c, askFor("fake", []string{"status"}, []string{"--depth"},
		"<script>alert(1)</script> limit the history to the last commits", "a shallow status"))
	idDeny := request(t, c, askFor("fake", []string{"status"}, []string{"--message"}, "label the status", ""))

	uiURL := s.stderr.find(`msg="serving the review UI"`, "url=")
	if !strings.HasPrefix(uiURL, "http://w-") || !strings.Contains(uiURL, ".localhost:") {
		t.Fatalf("no review UI URL in the log:\n%s", s.Log())
	}
	token, err := os.ReadFile(filepath.Join(dir, "admin-token"))
	if err != nil {
		t.Fatal(err)
	}

	shots := t.TempDir()
	if os.Getenv("WRAPTOOL_UPDATE_SCREENSHOTS") != "" {
		shots = filepath.Join("..", "docs")
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.WindowSize(1100, 1000),
		chromedp.Flag("disable-dev-shm-usage", true))...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()

	form := func(id, class string) string { return `form.` + class + `[action="/requests/` + id + `/decide"]` }
	step := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, s.Log())
		}
	}
	value := func(what string, a chromedp.Action[string]) string {
		t.Helper()
		v, err := chromedp.Run(bctx, a)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		writeShot(t, filepath.Join(shots, name), png)
	}

	step("sign in", chromedp.Navigate(uiURL+"?token="+strings.TrimSpace(string(token))), chromedp.WaitVisible(`section.pending`))
	if location := value("location", chromedp.Location()); strings.Contains(location, "token=") {
		t.Errorf("the token stayed in the URL: %s", location)
	}
	if article := value("the request", chromedp.Text(chromedp.Search(`//article[contains(., "`+idApply+`")]`))); !strings.Contains(article, "<script>alert(1)</script> limit the history") {
		t.Errorf("the rationale is not shown as text:\n%s", article)
	}
	if n := value("inline scripts", chromedp.Evaluate[string](`String(document.querySelectorAll("script:not([src])").length)`)); n != "0" {
		t.Errorf("%s inline scripts on the page: the rationale became markup", n)
	}
	// The review page's screenshots (wide and 420 px) are TestReviewPageLayoutAndGrants's.

	step("apply preview", chromedp.Click(form(idApply, "approve")+` button[value="apply"]`), chromedp.WaitVisible(`pre.diff`))
	if diff := value("the diff", chromedp.Text(`pre.diff`)); !strings.Contains(diff, "+") || !strings.Contains(diff, "--depth") {
		t.Errorf("the preview's diff does not add --depth:\n%s", diff)
	}
	shot("apply-preview.png")
	if data, _ := os.ReadFile(s.ConfigPath); strings.Contains(string(data), "--depth") {
		t.Fatalf("the preview wrote the config")
	}

	step("confirm apply", chromedp.Click(`form.confirm button`),
		chromedp.WaitVisible(chromedp.Search(`//section[contains(@class, "history")]//tr[contains(., "`+idApply+`")]`)))
	expectOneListChanged(t, s, c)
	if data, _ := os.ReadFile(s.ConfigPath); !strings.Contains(string(data), "--depth") || !strings.Contains(string(data), "# what the team agreed to") {
		t.Errorf("the config after Confirm apply:\n%s", data)
	}
	if st := statusOf(t, c, idApply); st["status"] != "approved" || st["applied"] != true {
		t.Errorf("status after the apply: %+v", st)
	}

	step("deny", chromedp.SendKeys(form(idDeny, "deny")+` input[name="reason"]`, "say it in the commit instead"),
		chromedp.Click(form(idDeny, "deny")+` button`),
		chromedp.WaitVisible(chromedp.Search(`//section[contains(@class, "history")]//tr[contains(., "`+idDeny+`")]`)))
	if history := value("history", chromedp.Text(`section.history`)); !strings.Contains(history, idDeny) || !strings.Contains(history, "say it in the commit instead") {
		t.Errorf("the history lacks the denial:\n%s", history)
	}
	if st := statusOf(t, c, idDeny); st["status"] != "denied" || st["reason"] != "say it in the commit instead" {
		t.Errorf("status after the denial: %+v", st)
	}

	// Approve once: a grant through the request log, which the server
	// takes up; the config is not touched.
	idOnce := request(t, c, askFor("fake", []string{"status"}, []string{"--message"}, "label the status, this once", ""))
	configBefore, err := os.ReadFile(s.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	onceRow := `//section[contains(@class, "history")]//tr[contains(., "` + idOnce + `")]`
	step("reload", chromedp.Navigate(uiURL), chromedp.WaitVisible(form(idOnce, "approve")))
	step("approve once", chromedp.Click(form(idOnce, "approve")+` button[value="once"]`), chromedp.WaitVisible(chromedp.Search(onceRow)))
	if flash := value("the result", chromedp.Text(`p.flash`)); !strings.Contains(flash, "approved "+idOnce+" once (within 24h)") {
		t.Errorf("the page does not say the grant: %q", flash)
	}
	if row := value("the granted request", chromedp.Text(chromedp.Search(onceRow))); !strings.Contains(row, "approved once") || strings.Contains(row, "used") {
		t.Errorf("the history does not show the grant as approved once:\n%s", row)
	}
	waitListChanged(t, s, c, "the once-grant came into force")
	res := c.Call(t, "fake_status", map[string]any{"message": "once"})
	if text := toolsettest.ResultText(t, res); res.IsError || !strings.Contains(text, `"--message=once"`) {
		t.Fatalf("the call the once-grant allows did not run: %s", text)
	}
	waitListChanged(t, s, c, "the used once-grant left")
	step("reload after the use", chromedp.Navigate(uiURL), chromedp.WaitVisible(chromedp.Search(onceRow)))
	if row := value("the used grant", chromedp.Text(chromedp.Search(onceRow))); !strings.Contains(row, "approved once, used") {
		t.Errorf("the history does not show the grant as used:\n%s", row)
	}
	if st := statusOf(t, c, idOnce); st["status"] != "approved" || st["grant"] == nil {
		t.Errorf("status after Approve once: %+v", st)
	}
	if data, _ := os.ReadFile(s.ConfigPath); string(data) != string(configBefore) {
		t.Errorf("Approve once changed the config:\n%s", data)
	}
}

func writeShot(t *testing.T, path string, png []byte) {
	t.Helper()
	if len(png) == 0 {
		t.Fatalf("empty screenshot for %s", path)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}
