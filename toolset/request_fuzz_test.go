package toolset

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzParseRequest feeds the request tool's parser what an assistant could
// send. Whatever it is, the parser does not panic, and what it accepts is
// in bounds: a wait of 0 to MaxWaitSeconds whole seconds, a call_id or a
// tool (never both), a non-empty rationale of at most 4 KiB without
// control characters, and flags spelled -X or --name. What it refuses, it
// refuses in the tool's words: no error speaks of Go's JSON decoder.
func FuzzParseRequest(f *testing.F) {
	for _, seed := range []string{
		requestJSON(nil),
		requestJSON(map[string]any{"wait_seconds": 300}),
		requestJSON(map[string]any{"wait_seconds": "60"}),
		requestJSON(map[string]any{"wait_seconds": "0300"}),
		requestJSON(map[string]any{"wait_seconds": 301}),
		requestJSON(map[string]any{"wait_seconds": math.Copysign(0, -1)}), // JSON -0
		`{"tool":"git","subcommand":[],"rationale":"r","wait_seconds":-0.0}`,
		requestJSON(map[string]any{"wait_seconds": 1e2}),
		requestJSON(map[string]any{"wait_seconds": "99999999999999999999"}),
		requestJSON(map[string]any{"wait_seconds": nil}),
		`{"call_id":"call_0123abcd","rationale":"once","wait_seconds":5}`,
		`{"call_id":"call_0123abcd","tool":"git","rationale":"both"}`,
		`{"tool":"git","subcommand":["push"],"flags":["-rf"],"rationale":"x\u001b[2J"}`,
		`{"tool":"git","subcommand":[],"rationale":"r","wait_seconds":" 5"}`,
		`[]`, `null`, `{"rationale":""}`,
		`{"tool":"git","subcommand":"push","rationale":"r"}`,
		`{"tool":1,"flags":[1],"call_id":{},"rationale":[],"enables":false}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := ParseRequest(json.RawMessage(raw))
		if err != nil {
			if err.Error() == "" {
				t.Errorf("an error with no text for %q", raw)
			}
			if goInternal(err.Error()) {
				t.Errorf("error %q for %q speaks of Go's decoder, not of the tool's input", err, raw)
			}
			return
		}
		if p.Wait < 0 || p.Wait > MaxWaitSeconds*time.Second || p.Wait%time.Second != 0 {
			t.Errorf("wait %v accepted from %q", p.Wait, raw)
		}
		r := p.Request
		if (p.CallID != "") == (r.Tool != "") {
			t.Errorf("call_id %q and tool %q from %q: want exactly one", p.CallID, r.Tool, raw)
		}
		if r.Rationale == "" || len(r.Rationale) > 4096 || !utf8.ValidString(r.Rationale) {
			t.Errorf("rationale %q accepted from %q", r.Rationale, raw)
		}
		for _, c := range r.Rationale + r.Enables {
			if c != '\n' && c != '\t' && !strconv.IsPrint(c) && c != ' ' {
				t.Errorf("character %U accepted in free text from %q", c, raw)
			}
		}
		for _, fl := range r.Flags {
			if !strings.HasPrefix(fl, "-") || strings.ContainsAny(fl, " =\x00") {
				t.Errorf("flag %q accepted from %q", fl, raw)
			}
		}
	})
}
