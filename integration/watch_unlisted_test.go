package integration

import (
	"strings"
	"testing"
	"time"
)

// A request whose flag the help does not list cannot be approved in watch
// with one key: o is refused, naming the word that leads on; typing
// unlisted⏎ prints the warning approve --unlisted-ok's refusal gives, and
// only a key typed after a first second of its own approves, once, with
// decided_by "watch". The server then honours the grant.
func TestWatchApprovesUnlistedFlagsDeliberately(t *testing.T) {
	slow(t, "requests watch approving an unlisted flag in a terminal")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, grantConfig))
	c := s.Connect(t, "/mcp")
	w := startWatchProcess(t, s, true)
	w.waitFor(t, "waiting for requests", 1)

	// --rece is no flag fake status's help lists (a getopt tool could
	// read it as a prefix of another flag).
	id := request(t, c, askFor("fake", []string{"status"}, []string{"--rece"}, "try the prefix", ""))
	const offered = "[d]eny  [s]kip, or type unlisted⏎ to approve its unlisted flags"
	out := w.waitFor(t, offered, 1)
	if shown := out[strings.LastIndex(out, "Request "+id):]; !strings.Contains(shown, "--rece (NOT IN 'fake status --help')") {
		t.Errorf("the request as shown lacks the mark of its unlisted flag:\n%s", shown)
	}
	pastGuard := func() { time.Sleep(watchKeyGuard + 300*time.Millisecond) } // the documented first second
	pastGuard()

	// One key: refused, and the refusal says what to type instead.
	w.typeKeys(t, "o")
	w.waitFor(t, "approve with the word unlisted (type unlisted⏎, then o or h) if you are sure", 1)
	w.waitFor(t, offered, 2)
	if d := watchDecision(t, s, id); d["status"] != "pending" {
		t.Fatalf("one key decided the request with an unlisted flag: %v", d)
	}

	// The word, then the warning, then a key after its first second.
	w.typeKeys(t, "unlisted\r")
	warning := "warning: --rece (NOT IN 'fake status --help'): the help does not list it, and git and other getopt tools " +
		"accept unambiguous prefixes, so it could stand for another flag"
	w.waitFor(t, warning, 1)
	w.waitFor(t, "approve with these unlisted flags: [o]nce  [h]our (Esc goes back)", 1)
	w.typeKeys(t, "o") // within its first second: ignored
	pastGuard()
	if d := watchDecision(t, s, id); d["status"] != "pending" {
		t.Fatalf("a key typed in the first second after the warning decided the request: %v", d)
	}
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
