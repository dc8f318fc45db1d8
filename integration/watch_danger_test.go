package integration

import (
	"strings"
	"testing"
	"time"
)

// A request for a flag that sends the credentials to the host it names
// (the generic --endpoint* name: sends-credentials) shows its class beside
// the flag in watch's effect, offers no one-key approval, and is approved
// only after the word i-know, typed after reading it; its flag is one the
// help does not list, so the word unlisted follows, then a key after its
// own first second. The server then honours the grant.
func TestWatchAsksForIKnowInATerminal(t *testing.T) {
	slow(t, "requests watch confirming a flag that sends credentials in a terminal")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, grantConfig))
	c := s.Connect(t, "/mcp")
	w := startWatchProcess(t, s, true)
	w.waitFor(t, "waiting for requests", 1)

	id := request(t, c, askFor("fake", []string{"status"}, []string{"--endpoint-url"}, "use the staging endpoint", ""))
	const offered = "[d]eny  [s]kip, or type i-know⏎ to approve what can hand your credentials away"
	out := w.waitFor(t, offered, 1)
	shown := out[strings.LastIndex(out, "Request "+id):]
	if !strings.Contains(shown, "--endpoint-url  takes any value  (NOT IN 'fake status --help')  ! sends-credentials: sends your credentials to the host it names") {
		t.Errorf("the effect as shown lacks the flag's class:\n%s", shown)
	}
	pastGuard := func() { time.Sleep(watchKeyGuard + 300*time.Millisecond) } // the documented first second
	pastGuard()

	w.typeKeys(t, "h")
	w.waitFor(t, offered, 2)
	if d := watchDecision(t, s, id); d["status"] != "pending" {
		t.Fatalf("one key decided a request that sends credentials: %v", d)
	}

	w.typeKeys(t, "i-know\r")
	w.waitFor(t, "confirmed: approving hands the assistant what can send your credentials away, run code with them or print them, "+
		"and no pattern holds it: --endpoint-url (sends-credentials)", 1)
	w.waitFor(t, "[d]eny  [s]kip, or type unlisted⏎ to approve its unlisted flags", 1)
	pastGuard()
	w.typeKeys(t, "unlisted\r")
	w.waitFor(t, "approve with these unlisted flags: [o]nce  [h]our (Esc goes back)", 1)
	pastGuard()
	w.typeKeys(t, "o")
	w.waitFor(t, "approved "+id+" once (within 24h)", 1)

	d := watchDecision(t, s, id)
	grant, _ := d["grant"].(map[string]any)
	if d["status"] != "approved" || d["decided_by"] != "watch" || grant == nil || grant["once"] != true {
		t.Errorf("the decision watch recorded: %v", d)
	}
	w.typeKeys(t, "\x03")
	if code := w.exitCode(t); code != 0 {
		t.Errorf("exit status %d after Ctrl-C, want 0:\n%s", code, w.stderr)
	}
}

// requests approve in a terminal asks for i-know, not y, before granting a
// flag that sends the credentials with no pattern holding it: y leaves the
// request pending; i-know grants it.
func TestApproveAsksForIKnowInATerminal(t *testing.T) {
	slow(t, "requests approve confirming a flag that sends credentials in a terminal")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, grantConfig))
	c := s.Connect(t, "/mcp")
	id := request(t, c, askFor("fake", []string{"status"}, []string{"--endpoint-url"}, "use the staging endpoint", ""))
	const ask = "Type i-know to approve: "
	for _, tt := range []struct {
		answer, want, status string
		code                 int
	}{
		{"y\r", "not approved: " + id + " stays pending", "pending", 1},
		{"i-know\r", "approved " + id + " once (within 24h)", "approved", 0},
	} {
		p := startOperatorProcess(t, s, true, "requests", "approve", id, "--once", "--unlisted-ok")
		out := p.waitFor(t, ask, 1)
		if !strings.Contains(out, "! sends-credentials: sends your credentials to the host it names") ||
			!strings.Contains(out, "and no pattern holds it: --endpoint-url (sends-credentials).") || strings.Contains(out, "approve? [y/N]") {
			t.Errorf("before the question:\n%s", out)
		}
		p.typeKeys(t, tt.answer)
		if code := p.exitCode(t); code != tt.code {
			t.Errorf("answer %q: exit %d, want %d:\n%s%s", tt.answer, code, tt.code, p.out.String(), p.stderr)
		}
		if all := p.out.String() + p.stderr.String(); !strings.Contains(all, tt.want) {
			t.Errorf("answer %q: output lacks %q:\n%s", tt.answer, tt.want, all)
		}
		if d := watchDecision(t, s, id); d["status"] != tt.status {
			t.Errorf("answer %q: the request is %v, want %s", tt.answer, d["status"], tt.status)
		}
	}
}
