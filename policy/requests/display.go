package requests

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/wraptool/wraptool/policy"
)

// MaxTokenDisplay is how many characters of one token an operator's screen
// shows; the rest is cut with "…(N bytes)". Flag lists are never cut: each
// flag is a token of its own.
const MaxTokenDisplay = 200

// Token renders a token the assistant chose (a tool, a subcommand token, a
// flag, an exact call's value) for an operator's terminal or page: every
// character strconv.Quote would escape is written as its escape, and so is
// every non-ASCII character ("gіthub" with a Cyrillic і shows as
// g\u0456thub) and the backslash itself (so a typed "\u0456" cannot pass for
// an escaped one). A request can then neither repaint the screen, hide its
// own flags, nor pass for another request.
func Token(s string) string {
	return cutToken(escape(s, true))
}

// Text renders free text the assistant wrote (a rationale, what approval
// enables) for an operator: runs of whitespace, line breaks included,
// collapse to one space, and everything strconv.Quote would escape is written
// as its escape (printable non-ASCII text stays readable).
func Text(s string) string {
	return escape(strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " "), false)
}

// Flags renders a flag list, each flag as a Token, space-separated; "" for
// none.
func Flags(flags []string) string {
	return strings.Join(Tokens(flags), " ")
}

// escape writes s with escapes for what must not reach a screen raw
// (policy.Escape), the backslash included; asciiOnly escapes every
// non-ASCII character too.
func escape(s string, asciiOnly bool) string {
	return policy.Escape(s, func(r rune) bool {
		return r != '\\' && strconv.IsPrint(r) && (!asciiOnly || r < utf8.RuneSelf)
	})
}

// cutToken cuts a rendered token longer than MaxTokenDisplay characters.
func cutToken(s string) string {
	if utf8.RuneCountInString(s) <= MaxTokenDisplay {
		return s
	}
	kept := []rune(s)[:MaxTokenDisplay]
	return string(kept) + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// Whole reports whether every screen shows t whole: neither Token nor
// Command cuts it. A person asked to decide with one click must see every
// byte they allow; where a value is cut, the decision is left to the
// operator's own tools (`requests list --json` prints it whole).
func Whole(t string) bool {
	return utf8.RuneCountInString(escape(t, true)) <= MaxTokenDisplay &&
		utf8.RuneCountInString(commandWord(t)) <= MaxTokenDisplay
}

// Subcommand renders a request's subcommand tokens; a request for no
// subcommand shows as "<ANY SUBCOMMAND>".
func Subcommand(sub []string) string {
	if len(sub) == 0 {
		return "<ANY SUBCOMMAND>"
	}
	return strings.Join(Tokens(sub), " ")
}

// Mark is the mark beside a requested flag its subcommand's help does not
// list (policy.ListingOf), the same on every screen: "(NOT IN 'git push
// --help')" where the help is known, "(HELP UNKNOWN for 'git push')" where
// it is not, "" for a listed flag. An empty sub names the tool's own help
// ("(NOT IN 'gh --help')"), which a bare rule's flags belong to.
func Mark(tool string, sub []string, l policy.Listing) string {
	command := strings.Join(append([]string{Token(tool)}, Tokens(sub)...), " ")
	switch l {
	case policy.Listed:
		return ""
	case policy.NotListed:
		return "(NOT IN '" + command + " --help')"
	}
	return "(HELP UNKNOWN for '" + command + "')"
}

// MarkedFlags renders a request's flags as Flags does, each one its
// subcommand's help does not list followed by its Mark: "--tags --rece
// (NOT IN 'git push --help')".
func MarkedFlags(helps policy.Helps, tool string, sub []string, flags []string) string {
	out := make([]string, len(flags))
	for i, f := range flags {
		out[i] = Token(f)
		if m := Mark(tool, sub, policy.ListingOf(helps, tool, sub, f)); m != "" {
			out[i] += " " + m
		}
	}
	return strings.Join(out, " ")
}

// Unlisted returns the flags of a request for tool's subcommand sub that
// its help does not list, spelled exactly, and how: NotListed, or
// HelpUnknown where that help is unknown (then every flag is returned);
// Listed when the help lists them all. An approval takes unlisted flags
// only when the operator says so.
func Unlisted(helps policy.Helps, tool string, sub []string, flags []string) (unlisted []string, l policy.Listing) {
	l = policy.Listed
	for _, f := range flags {
		fl := policy.ListingOf(helps, tool, sub, f)
		if fl == policy.Listed {
			continue
		}
		if l == policy.Listed || fl == policy.HelpUnknown {
			l = fl
		}
		unlisted = append(unlisted, f)
	}
	return unlisted, l
}

// UnlistedRefusal is why approving request id is refused until the operator
// confirms with option ("--unlisted-ok", "unlisted_ok"): its unlisted
// flags (Unlisted), marked, and why a flag the help does not list may be
// another flag.
func UnlistedRefusal(id, tool string, sub, unlisted []string, l policy.Listing, option string) string {
	return "not approved, " + Token(id) + " stays pending: " + UnlistedWarning(tool, sub, unlisted, l) + "; approve with " +
		option + " if you are sure"
}

// DangerRefusal is why granting or applying request id is refused until
// the operator confirms with option ("--i-know", "i_know"): what it hands
// the assistant with nothing to hold it (Effect.Unconfirmed's display
// strings, each flag with its classes).
func DangerRefusal(id string, unconfirmed []string, option string) string {
	return "not approved, " + Token(id) + " stays pending: it allows what can hand your credentials away, and no pattern holds it: " +
		strings.Join(unconfirmed, ", ") + "; approve with " + option + " if you mean it"
}

// UnlistedWarning is the warning every way of approving unlisted flags
// gives: the flags (Unlisted), marked, and why a flag the help does not
// list may be another flag.
func UnlistedWarning(tool string, sub, unlisted []string, l policy.Listing) string {
	why := "the help does not list it"
	if l == policy.HelpUnknown {
		why = "the subcommand's help is not known, so no flag counts as listed"
	}
	return Flags(unlisted) + " " + Mark(tool, sub, l) + ": " + why +
		", and git and other getopt tools accept unambiguous prefixes, so it could stand for another flag"
}

// Age is how long before now t was, in one unit: 45s, 3m, 2h, 5d.
func Age(now, t time.Time) string {
	d := max(now.Sub(t), 0)
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d.Hours())) + "h"
	}
	return strconv.Itoa(int(d.Hours()/24)) + "d"
}

// Command renders a command line so that it splits back into its tokens
// unambiguously: a token Token would leave as it is and that holds no space
// or character a shell reads specially stays as it is; any other (empty,
// spaced, shell syntax, or one Token escapes) is Go-quoted with every
// non-ASCII character escaped: `git commit -m "two words"`,
// `git push "g\u0456thub"`. Long tokens are cut as Token cuts them.
func Command(tokens []string) string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i] = cutToken(commandWord(t))
	}
	return strings.Join(out, " ")
}

// commandWord is one word of Command before any cut: plain where a shell
// would read it as written, else Go-quoted in ASCII.
func commandWord(t string) string {
	if escape(t, true) == t && t != "" && !strings.ContainsAny(t, " \t'\"\\$`;&|<>()*?[]{}~#!") {
		return t
	}
	return strconv.QuoteToASCII(t)
}

// Tokens renders each of ss as a Token.
func Tokens(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Token(s)
	}
	return out
}

// GrantStatus is a record's status as `requests list` shows it: for a
// grant, "approved once", "approved once, used", "approved once, expired",
// "approved until 18:30Z" or "approved until 18:30Z, expired" (the date
// too, "2006-01-02 15:04Z", when until is more than 24 hours from now);
// otherwise the plain status.
func GrantStatus(r *Record, now time.Time) string {
	g := r.Grant
	if g == nil || r.Status != StatusApproved {
		return r.Status
	}
	s := "approved once"
	if !g.Once {
		s = "approved until " + untilText(g.Until, now)
	}
	switch {
	case g.Once && g.UsedAt != nil:
		s += ", used"
	case !now.Before(g.Until):
		s += ", expired"
	}
	return s
}

// untilText is t in UTC to the minute, with its date unless it lies within
// 24 hours of now.
func untilText(t, now time.Time) string {
	t = t.UTC()
	if d := t.Sub(now); d <= 24*time.Hour && d >= -24*time.Hour {
		return t.Format("15:04Z")
	}
	return t.Format("2006-01-02 15:04Z")
}
