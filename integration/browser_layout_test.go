package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wraptool/wraptool/integration/waittest"
)

// layoutChecks is a script run on the review page: it returns "" when the
// page fits the viewport (nothing wider than the window, every deciding
// button inside it) and no request id or command token in the history
// breaks across lines, else what is wrong.
const layoutChecks = `(() => {
  const bad = [];
  const w = window.innerWidth;
  if (document.documentElement.scrollWidth > w) bad.push("the page is " + document.documentElement.scrollWidth + " px wide in a " + w + " px window");
  for (const b of document.querySelectorAll("section.pending button")) {
    const r = b.getBoundingClientRect();
    if (r.left < 0 || r.right > w) bad.push("button " + b.textContent + " lies outside the window (" + r.left + ".." + r.right + ")");
  }
  // Each id, and each token of each command, in the history, measured
  // alone whatever the markup: one box means it did not break.
  let seen = 0;
  for (const code of document.querySelectorAll("section.history td code")) {
    const walk = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    for (let text = walk.nextNode(); text; text = walk.nextNode()) {
      let at = 0;
      for (const tok of text.textContent.split(" ")) {
        if (tok !== "") {
          const range = document.createRange();
          range.setStart(text, at);
          range.setEnd(text, at + tok.length);
          const boxes = Array.from(range.getClientRects()).filter(r => r.width > 0);
          if (boxes.length > 1) bad.push("the token " + tok + " breaks across " + boxes.length + " lines");
          seen++;
        }
        at += tok.length + 1;
      }
    }
  }
  if (seen === 0) bad.push("the history shows no ids or tokens");
  return bad.join("; ");
})()`

// TestReviewPageLayoutAndGrants drives the review page in headless
// Chromium at 1100 and 420 px wide: the buttons come in the order once,
// 1 hour, 8 hours, Apply to config, Mark approved; "Policy in service"
// marks the flag a timed grant adds, with the grant's id and expiry; after
// Confirm apply the page refreshes itself until the applied flag is in
// service; ids and command tokens in the history never break, and the page
// fits 420 px. It takes the screenshots docs/approvals.md shows of the review page (wide
// and 420 px): with WRAPTOOL_UPDATE_SCREENSHOTS=1 they are written to
// docs/, else to a temporary folder.
func TestReviewPageLayoutAndGrants(t *testing.T) {
	slow(t, "the review page's layout in a headless browser")
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
	cli := operatorCLI(t, s)

	// History: a denial of a long command line, and a timed grant, which
	// "Policy in service" must mark.
	long := request(t, c, askFor("fake", []string{"status"}, []string{"--author", "--since", "--until", "--message",
		"--a-flag-name-long-enough-to-be-wider-than-a-phone-column-on-its-own"}, "look at everything at once", ""))
	if _, stderr, code := cli("requests", "deny", long, "--reason", "one question at a time"); code != 0 {
		t.Fatalf("deny: exit %d, %s", code, stderr)
	}
	granted := request(t, c, askFor("fake", []string{"status"}, []string{"--message"}, "label the status for a while", ""))
	if _, stderr, code := cli("requests", "approve", granted, "--for", "2h"); code != 0 {
		t.Fatalf("approve --for: exit %d, %s", code, stderr)
	}
	waitListChanged(t, s, c, "the timed grant came into force")
	pending := request(t, c, askFor("fake", []string{"status"}, []string{"--depth"},
		"limit the history to the last few commits, so the status stays short on a slow disk", "a shallow status"))

	uiURL := s.stderr.find(`msg="serving the review UI"`, "url=")
	token, err := os.ReadFile(filepath.Join(dir, "admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	shots := t.TempDir()
	if os.Getenv("WRAPTOOL_UPDATE_SCREENSHOTS") != "" {
		shots = filepath.Join("..", "docs")
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

	step("sign in", chromedp.Navigate(uiURL+"?token="+strings.TrimSpace(string(token))), chromedp.WaitVisible(`section.pending`))

	order := eval("the buttons", `Array.from(document.querySelectorAll("form.approve button:not([disabled])")).map(b => b.textContent).join(", ")`)
	if want := "Approve once, 1 hour, 8 hours, Apply to config, Mark approved"; order != want {
		t.Errorf("buttons %q, want %q", order, want)
	}
	if note := eval("Mark approved's note", `document.querySelector("form.approve .record").textContent`); !strings.Contains(note, "records the decision only") {
		t.Errorf("Mark approved is not described as recording the decision only: %q", note)
	}
	policy := eval("the policy", `document.querySelector("section.policy").textContent`)
	if want := "--message (grant " + granted + " until "; !strings.Contains(policy, want) {
		t.Errorf("the policy in service does not mark the granted flag (%q):\n%s", want, policy)
	}
	if strings.Contains(policy, "--verbose (grant") {
		t.Errorf("the config's own flag is marked as granted:\n%s", policy)
	}

	for _, width := range []int64{1100, 420} {
		step(fmt.Sprintf("a %d px window", width), chromedp.EmulateViewport(width, 1000), chromedp.Navigate(uiURL), chromedp.WaitVisible(`section.history`))
		if bad := eval("the layout", layoutChecks); bad != "" {
			t.Errorf("at %d px: %s", width, bad)
		}
		name := "review.png"
		if width == 420 {
			name = "review-420.png"
		}
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		writeShot(t, filepath.Join(shots, name), png)
	}

	// Apply at 420 px: the preview, Confirm, then the page refreshes itself
	// until the applied flag is in service.
	step("apply preview", chromedp.Click(`form.approve[action="/requests/`+pending+`/decide"] button[value="apply"]`), chromedp.WaitVisible(`pre.diff`))
	step("confirm apply", chromedp.Click(`form.confirm button`))
	waittest.Until(t, 20*time.Second, func() error {
		// The page may be reloading itself: an error is one more try.
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](`(document.querySelector("section.policy") || {textContent: ""}).textContent`))
		if err != nil {
			return err
		}
		if !strings.Contains(v, "--depth") {
			return errors.New("the policy in service does not show the applied --depth yet:\n" + v)
		}
		return nil
	})
	if data, _ := os.ReadFile(s.ConfigPath); !strings.Contains(string(data), "--depth") {
		t.Errorf("the config after Confirm apply:\n%s", data)
	}
}
