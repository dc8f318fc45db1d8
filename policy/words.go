package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// WordsSource is what ReadWords reads a command line against: the rule it
// is a call of and what types that rule's flags.
type WordsSource struct {
	// Tool is the tool key ("git").
	Tool string
	// Subcommand is the subcommand the words follow ([push]).
	Subcommand []string
	// Rule is the rule the words are a call of; nil when no rule matches,
	// and then every flag is refused as the flag it is.
	Rule *Rule
	// Written is Rule as the config writes it, for the flag constraints a
	// compiled rule does not expose (whether a flag's type is proven); nil
	// counts every type as proven, so no note is made.
	Written *AllowRule
	// Helps is the introspection cache; nil when nothing is known (a flag
	// the rule does not list is then read as a switch).
	Helps Helps
}

// Words is a command line read back as a call: what ReadWords returns.
type Words struct {
	// Call is the call the words stand for; Command renders it back to the
	// words when the server would write them as typed (Mismatch is "").
	Call Call
	// Shown are the words with the values of redact: true flags replaced
	// by Redacted, for showing the line as the server shows calls.
	Shown []string
	// Mismatch is why the server could not write these words as typed (a
	// repeated flag, a flag spelled another way); "" when it could.
	Mismatch string
	// Notes say what the reading rests on that neither the config nor the
	// introspection cache settles (a flag of unknown value-taking).
	Notes []string
}

// ReadWords maps the shell words after a subcommand back to the parameters
// of a tool call, as an assistant would send them: the inverse of Command,
// which `wraptool check` uses to decide a typed command line as the server
// would decide the call.
//
//   - a word that starts with '-' is a flag, matched by its exact spelling
//     (a rule's -m is not --m); "--x=v" gives x its value v; a valued flag
//     written alone takes the next word, whatever it is, as getopt does;
//     a short valued flag may carry its value attached ("-mfix") only
//     where the server writes it so (an optional value typed by the rule);
//   - a flag the rule does not list keeps its dashes as its parameter name,
//     so Evaluate refuses it as that flag; it takes a value only when
//     written "--x=v" or when the introspection cache says it takes one;
//   - "--" ends the flags, and is itself a positional argument, as is every
//     other word: the server never writes "--", so Evaluate refuses it.
func ReadWords(src WordsSource, words []string) Words {
	tool, sub, r := src.Tool, src.Subcommand, src.Rule
	m := Words{
		Call:  Call{Tool: tool, Subcommand: sub, Params: map[string]any{}},
		Shown: slices.Clone(words),
	}
	params := m.Call.Params
	// hide replaces words[at] as shown: a redacted value, kept out of
	// what is shown as the server keeps it out of its logs and denials.
	hide := func(at int, prefix string) { m.Shown[at] = prefix + Redacted }
	ruleFlags := map[string]Flag{}
	var written *AllowRule
	if r != nil {
		for _, f := range r.Flags() {
			ruleFlags[f.Flag] = f
		}
		written = src.Written
	}
	mismatch := func(format string, args ...any) {
		if m.Mismatch == "" {
			m.Mismatch = fmt.Sprintf(format, args...)
		}
	}
	var args []string
	seen := map[string]bool{}
	flagsDone := false
	for i := 0; i < len(words); i++ {
		w := words[i]
		if flagsDone || len(w) < 2 || w[0] != '-' {
			args = append(args, w)
			continue
		}
		if w == "--" {
			args = append(args, w)
			flagsDone = true
			continue
		}
		hasNext, next := i+1 < len(words), ""
		if hasNext {
			next = words[i+1]
		}
		name, val, withValue := w, "", false
		if strings.HasPrefix(w, "--") {
			name, val, withValue = strings.Cut(w, "=")
		} else if f, ok := ruleFlags[w[:2]]; ok && len(w) > 2 && f.Type != TypeBoolean {
			// "-mfix": -m with the value attached. Bundled switches
			// ("-rf") stay one unknown flag, as Evaluate names them.
			name, val, withValue = w[:2], w[2:], true
		}

		f, listed := ruleFlags[name]
		if !listed {
			key := name // dashed: Evaluate refuses it as this very flag
			// Refused whatever it takes, so no note: its value-taking
			// shapes only how the denial quotes the line.
			valued := strayTakesValue(src.Helps, tool, sub, name)
			var v any = true
			switch {
			case withValue:
				v = val
				if r.Redacts(name) {
					hide(i, w[:len(w)-len(val)])
				}
			case valued && hasNext:
				i++
				v = next
				if r.Redacts(name) {
					hide(i, "")
				}
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			params[key] = v
			continue
		}

		proven := f.Help || written == nil
		if !proven {
			_, proven = TypeOf(written.FlagConstraints[f.Flag], src.Helps, tool, sub, f.Flag)
		}
		var v any
		switch {
		case f.Type == TypeBoolean && withValue:
			v = val // "true" is allowed by the policy, but the server writes the bare flag
			mismatch("the server writes flag %s alone, never with a value", Quote(f.Flag))
		case f.Type == TypeBoolean:
			v = true
			if !proven && hasNext {
				m.Notes = append(m.Notes, unknownTaking(f.Flag, false, next))
			}
		case withValue:
			v = val
			if f.Redact {
				hide(i, w[:len(w)-len(val)])
			}
			if IsShortFlag(f.Flag) && !f.Attached {
				mismatch("the server writes flag %s with its value as the next argument, never attached", Quote(f.Flag))
			}
		case f.Attached || !hasNext:
			// Written alone, the flag has no value the server could pass
			// (an optional value is passed attached): true is what such a
			// call carries, and Evaluate refuses it as a missing value.
			v = true
		default:
			i++
			v = next
			if f.Redact {
				hide(i, "")
			}
			if !proven {
				shownNext := next
				if f.Redact {
					shownNext = Redacted
				}
				m.Notes = append(m.Notes, unknownTaking(f.Flag, true, shownNext))
			}
		}
		if s, ok := v.(string); ok && f.Type == TypeInteger {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				v = n // a sign is allowed here, as a JSON number carries one
				if strconv.FormatInt(n, 10) != s {
					mismatch("the server writes the value of %s in plain decimal digits", Quote(f.Flag))
				}
			}
		}
		if seen[f.Property] {
			mismatch("flag %s is given more than once; a call passes each flag once", Quote(f.Flag))
			continue
		}
		seen[f.Property] = true
		params[f.Property] = v
	}
	if len(args) > 0 {
		params[ArgsProperty] = args
	}
	return m
}

// unknownTaking is the note for a flag whose value-taking nothing settles.
func unknownTaking(flag string, valued bool, next string) string {
	read := "a switch, so " + Quote(next) + " is a positional argument"
	if valued {
		read = "taking a value, so " + Quote(next) + " is its value"
	}
	return "whether " + Quote(flag) + " takes a value is not known (no type in the config, not in the introspection cache); check read it as " + read +
		" (a flag_constraints type or an introspection override settles it)"
}

// strayTakesValue says whether a flag the rule does not list takes a value,
// by the introspection cache; one the cache does not know is read as a
// switch.
func strayTakesValue(helps Helps, tool string, sub []string, flag string) bool {
	if helps == nil {
		return false
	}
	h, ok := helps.Flag(tool, sub, flag)
	return ok && h.Type != TypeUnknown && h.Type != TypeBoolean && !h.OptionalValue
}
