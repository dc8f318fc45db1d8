package requests

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxSummaryRationale is how many characters of a rationale, as Text
// renders it, a Summary keeps; the rest is cut and marked with "…".
const MaxSummaryRationale = 200

// Summary is a request in one line for a notification (the operator's
// hook's WRAPTOOL_SUMMARY): "git push --force: <rationale>". The
// tool, subcommand and flags are rendered as Token, Subcommand and Flags
// render them (every flag, never cut: a request must not hide one), or for
// an exact-call request the command as Command renders it; then ": " and
// the rationale as Text renders it, cut to MaxSummaryRationale characters
// (an escape is never split) and marked with "…" when cut. Nothing in it
// can break the line or repaint a screen.
func Summary(r Record) string {
	var head string
	if r.Call != nil {
		head = Command(r.Call.Command)
	} else {
		head = Token(r.Tool) + " " + Subcommand(r.Subcommand)
		if len(r.Flags) > 0 {
			head += " " + Flags(r.Flags)
		}
	}
	return head + ": " + cutText(r.Rationale, MaxSummaryRationale)
}

// SummaryJSON is Summary as a JSON string, quotes included; HTML characters
// are left as they are, as in the log.
func SummaryJSON(r Record) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(Summary(r)); err != nil {
		// A string always encodes: Summary's output is valid UTF-8.
		panic("requests: encode summary: " + err.Error())
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// cutText renders s as Text does, keeping at most limit characters of the
// rendering: an escape ("\u202e") is kept whole or not at all, and a cut
// is marked with "…".
func cutText(s string, limit int) string {
	if out := Text(s); utf8.RuneCountInString(out) <= limit {
		return out
	}
	collapsed := strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
	var b strings.Builder
	n := 0
	for i := 0; i < len(collapsed); {
		_, size := utf8.DecodeRuneInString(collapsed[i:])
		piece := escape(collapsed[i:i+size], false)
		k := utf8.RuneCountInString(piece)
		if n+k > limit {
			break
		}
		b.WriteString(piece)
		n += k
		i += size
	}
	return strings.TrimRight(b.String(), " ") + "…"
}
