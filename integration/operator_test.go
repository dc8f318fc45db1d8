package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wraptool/wraptool/toolset"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// statusOf asks wraptool_request_status about id.
func statusOf(t *testing.T, c *mcpClient, id string) map[string]any {
	t.Helper()
	res := c.Call(t, "wraptool_request_status", map[string]any{"id": id})
	if res.IsError {
		t.Fatalf("status of %s: %s", id, toolsettest.ResultText(t, res))
	}
	var out struct {
		Requests []map[string]any `json:"requests"`
	}
	structured(t, res, &out)
	if len(out.Requests) != 1 {
		t.Fatalf("status of %s: %+v", id, out)
	}
	return out.Requests[0]
}

// The whole loop on the built binary: a denied call, the request, the
// operator's list and approve --apply, the client's list_changed, the call
// now running, and the assistant told; then a denial whose reason the
// assistant reads back, and a flag the help does not list.
func TestOperatorLoop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, `  fake:
    binary: $FAKECLI
    allow:
      # what the team agreed to
      - subcommand: [status]
        flags: ["--verbose"]
`))
	c := s.Connect(t, "/mcp")
	cli := func(args ...string) (string, string, int) {
		t.Helper()
		return runWraptool(t, []string{"HOME=" + filepath.Join(dir, "home")}, append([]string{"--config", s.ConfigPath}, args...)...)
	}

	res := c.Call(t, "fake_status", map[string]any{"depth": "3"})
	if text := toolsettest.ResultText(t, res); !res.IsError || !strings.Contains(text, "flag '--depth' is not in the allowlist") {
		t.Fatalf("before approval: %s", text)
	}
	id := request(t, c, askFor("fake", []string{"status"}, []string{"--depth"}, "limit the history", "shallow status"))

	out, stderr, code := cli("requests", "list")
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "--depth") {
		t.Fatalf("requests list: exit %d, %q, %q", code, out, stderr)
	}
	out, stderr, code = cli("requests", "approve", id, "--apply")
	if code != 0 || !strings.Contains(out, "added flags --depth to fake status") || !strings.Contains(out, "--depth  takes a value") && !strings.Contains(out, "--depth  takes any value") {
		t.Fatalf("requests approve --apply: exit %d:\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "limit to NUM commits") {
		t.Errorf("the approval does not show the flag's help line:\n%s", out)
	}
	expectOneListChanged(t, s, c)
	res = c.Call(t, "fake_status", map[string]any{"depth": "3"})
	if text := toolsettest.ResultText(t, res); res.IsError || !strings.Contains(text, `"--depth=3"`) {
		t.Fatalf("after approval: %s", text)
	}
	if st := statusOf(t, c, id); st["status"] != "approved" || st["applied"] != true {
		t.Errorf("status after approval: %+v", st)
	}

	// A denial: the assistant reads the operator's reason back.
	id2 := request(t, c, askFor("fake", []string{"status"}, []string{"--message"}, "label it", ""))
	if _, stderr, code := cli("requests", "deny", "--reason", "say it in the commit instead", id2); code != 0 {
		t.Fatalf("deny: exit %d, %q", code, stderr)
	}
	if st := statusOf(t, c, id2); st["status"] != "denied" || st["reason"] != "say it in the commit instead" || st["applied"] != false {
		t.Errorf("status after denial: %+v", st)
	}

	// A flag the help does not list, spelled exactly: marked, and refused
	// without --unlisted-ok (a getopt tool would take --dept for --depth).
	id3 := request(t, c, askFor("fake", []string{"status"}, []string{"--dept"}, "typo?", ""))
	if out, _, _ := cli("requests", "list"); !strings.Contains(out, "--dept (NOT IN 'fake status --help')") {
		t.Errorf("list does not mark the unlisted flag:\n%s", out)
	}
	if _, stderr, code := cli("requests", "approve", id3); code != 1 || !strings.Contains(stderr, "--unlisted-ok") {
		t.Errorf("approving an unlisted flag: exit %d, %q", code, stderr)
	}
	if out, stderr, code := cli("requests", "approve", id3, "--unlisted-ok"); code != 0 || !strings.Contains(out, "approved "+id3) {
		t.Errorf("with --unlisted-ok: exit %d, %q, %q", code, out, stderr)
	}
}

// The server and two CLI processes write at once: a thousand requests and
// hundreds of decisions; every line parses, none is lost or interleaved.
func TestRequestLogWritersAtOnce(t *testing.T) {
	slow(t, "the server and two CLIs writing the request log at once")
	t.Parallel()
	const requestsWanted, decisionsPerCLI, workers = 1000, 100, 8
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, ""))
	env := []string{"HOME=" + filepath.Join(dir, "home")}

	var wg sync.WaitGroup
	errs := make(chan error, requestsWanted+2*decisionsPerCLI)
	ids := make(chan string, requestsWanted)
	for w := range workers {
		// One session may have only so many pending: each worker spreads
		// its requests over enough sessions.
		var clients []*mcpClient
		for range (requestsWanted/workers)/toolset.MaxPendingPerSession + 1 {
			clients = append(clients, s.Connect(t, "/mcp"))
		}
		wg.Go(func() {
			for n, i := 0, w; i < requestsWanted; n, i = n+1, i+workers {
				c := clients[n/toolset.MaxPendingPerSession]
				args := askFor("tool", []string{fmt.Sprintf("s%04d", i)}, nil, "concurrency", "")
				res := c.Call(t, requestTool, args)
				if res.IsError {
					errs <- fmt.Errorf("request %d: %s", i, toolsettest.ResultText(t, res))
					continue
				}
				var out struct{ ID string }
				structured(t, res, &out)
				ids <- out.ID
			}
		})
	}
	decided := make(chan string, 2*decisionsPerCLI)
	for cliN := range 2 {
		wg.Go(func() {
			for n := 0; n < decisionsPerCLI; {
				id := <-ids
				// Two CLIs racing for one id must not both decide it: the
				// other one finds it decided.
				_, stderr, code := runWraptool(t, env, "--config", s.ConfigPath, "requests", "deny", id, "--reason", fmt.Sprintf("cli %d", cliN))
				if code != 0 {
					errs <- fmt.Errorf("cli %d: deny %s: %s", cliN, id, stderr)
					continue
				}
				decided <- id
				n++
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	f, err := os.Open(s.RequestLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reqs, decs := map[string]bool{}, map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %d is not one JSON object: %q", n, sc.Text())
		}
		id, _ := line["id"].(string)
		switch line["status"] {
		case "pending":
			if reqs[id] {
				t.Errorf("request %s written twice", id)
			}
			reqs[id] = true
		case "denied":
			decs[id]++
		}
	}
	if len(reqs) != requestsWanted {
		t.Errorf("%d requests in the log, want %d", len(reqs), requestsWanted)
	}
	close(decided)
	for id := range decided {
		if decs[id] != 1 {
			t.Errorf("%s has %d decision lines, want 1", id, decs[id])
		}
	}
	if total := len(decs); total != 2*decisionsPerCLI {
		t.Errorf("%d decided requests, want %d", total, 2*decisionsPerCLI)
	}
}
