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

// TestReviewPageDangerInABrowser: a request for a flag that sends the
// operator's credentials to the host it names (--endpoint-url, by the
// catalog's generic name) shows its class beside the flag, marked in the
// warning colour without any script, and Approve once needs i-know typed:
// without it the page says why and the request stays pending; with it the
// grant is recorded.
func TestReviewPageDangerInABrowser(t *testing.T) {
	slow(t, "the danger marks and the typed confirmation in a headless browser")
	t.Parallel()
	browser := chromiumPath(t)
	dir := t.TempDir()
	cfg := serverConfig(t, dir, `  fake:
    binary: $FAKECLI
    allow:
      - subcommand: [status]
        flags: ["--verbose"]
`) + fmt.Sprintf("admin:\n  listen: 127.0.0.1:%d\n  auth_token_file: %s\n", freePort(t), filepath.Join(dir, "admin-token"))
	s := startServerIn(t, dir, cfg)
	c := s.Connect(t, "/mcp")
	id := request(t, c, askFor("fake", []string{"status"}, []string{"--endpoint-url"}, "use the staging endpoint", ""))

	uiURL := s.stderr.find(`msg="serving the review UI"`, "url=")
	token, err := os.ReadFile(filepath.Join(dir, "admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.WindowSize(1100, 1000),
		chromedp.Flag("disable-dev-shm-usage", true))...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	step := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, s.Log())
		}
	}
	eval := func(what, js string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	approve := `form.approve[action="/requests/` + id + `/decide"]`

	step("sign in", chromedp.Navigate(uiURL+"?token="+strings.TrimSpace(string(token))), chromedp.WaitVisible(approve))
	flag := eval("the flag's line", `document.querySelector("ul.flags li").textContent`)
	if want := "--endpoint-url"; !strings.HasPrefix(flag, want) || !strings.Contains(flag, "! sends-credentials: sends your credentials to the host it names") {
		t.Errorf("the flag's line does not show its class beside it: %q", flag)
	}
	if marked := eval("the mark's colour", `(() => { const m = document.querySelector("ul.flags li strong.danger.grave");
		return m ? String(getComputedStyle(m).color !== getComputedStyle(document.body).color) : "no mark" })()`); marked != "true" {
		t.Errorf("the class is not marked in a colour of its own: %s", marked)
	}
	if label := eval("the confirmation", `document.querySelector(`+"`"+approve+` label.iknow`+"`"+`).textContent`); !strings.Contains(label, "--endpoint-url (sends-credentials)") {
		t.Errorf("the confirmation's label does not name the flag and class: %q", label)
	}

	// The help of fake status does not list --endpoint-url: that box is
	// ticked each time, so only the missing i-know refuses.
	step("approve once without i-know", chromedp.Click(approve+` input[name="unlisted_ok"]`),
		chromedp.Click(approve+` button[value="once"]`), chromedp.WaitVisible(`p.flash`))
	if flash := eval("the refusal", `document.querySelector("p.flash").textContent`); !strings.Contains(flash, id+" stays pending") ||
		!strings.Contains(flash, "--endpoint-url (sends-credentials)") || !strings.Contains(flash, `"i-know" typed`) {
		t.Errorf("the page does not say why it refused: %q", flash)
	}
	if st := statusOf(t, c, id); st["status"] != "pending" {
		t.Fatalf("after a refused grant: %+v", st)
	}

	step("approve once with i-know", chromedp.WaitVisible(approve), chromedp.Click(approve+` input[name="unlisted_ok"]`),
		chromedp.SendKeys(approve+` input[name="i_know"]`, "i-know"),
		chromedp.Click(approve+` button[value="once"]`),
		chromedp.WaitVisible(chromedp.Search(`//section[contains(@class, "history")]//tr[contains(., "`+id+`")]`)))
	if flash := eval("the grant", `document.querySelector("p.flash").textContent`); !strings.Contains(flash, "approved "+id+" once (within 24h)") {
		t.Errorf("the page does not say the grant: %q", flash)
	}
	if st := statusOf(t, c, id); st["status"] != "approved" || st["grant"] == nil {
		t.Errorf("after Approve once with i-know: %+v", st)
	}
}
