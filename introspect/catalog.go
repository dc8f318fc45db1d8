package introspect

import (
	"slices"
	"strings"

	"github.com/wraptool/wraptool/introspect/helptext"
	"github.com/wraptool/wraptool/policy"
)

// Catalog is what Learn found out about a set of tools: each learned help,
// with the tool's overrides on top. It implements policy.Helps, so compiling a policy and building schemas can ask it
// about flags and subcommands without knowing where the answers come from.
//
// A Catalog is immutable and safe for concurrent use. A nil *Catalog knows
// nothing: every answer is "unknown", so a caller that has not introspected
// falls back to the rules' own types and the name heuristic.
type Catalog struct {
	tools map[string]*toolHelps
}

var _ policy.Helps = (*Catalog)(nil)

// toolHelps is one tool's learned helps, keyed by subKey, and its overrides.
type toolHelps struct {
	helps     map[string]helptext.Help
	overrides *Overrides
}

// subKey keys a subcommand path: its tokens joined with single spaces, as the
// overrides file writes them ("" for the tool itself). Tokens hold no spaces,
// so the key is unambiguous.
func subKey(sub []string) string { return strings.Join(sub, " ") }

func (c *Catalog) tool(name string) *toolHelps {
	if c == nil {
		return nil
	}
	return c.tools[name]
}

// Help returns sub's parsed help as learned (overrides not applied), for
// callers that need more than the policy.Helps answers (config add lists a
// subcommand's flags); ok is false when it is not known. The result is a
// copy.
func (c *Catalog) Help(tool string, sub []string) (h helptext.Help, ok bool) {
	t := c.tool(tool)
	if t == nil {
		return helptext.Help{}, false
	}
	h, ok = t.helps[subKey(sub)]
	h.Subcommands = slices.Clone(h.Subcommands)
	h.Flags = slices.Clone(h.Flags)
	return h, ok
}

// Flag describes flag of tool's subcommand sub: the override when the
// overrides file names it (by its key or its short form), on top of what the
// help says of it; else what the help says. ok is false when neither knows
// the flag.
func (c *Catalog) Flag(tool string, sub []string, flag string) (policy.FlagHelp, bool) {
	t := c.tool(tool)
	if t == nil {
		return policy.FlagHelp{}, false
	}
	key := subKey(sub)
	h, known := t.helps[key]
	if fo, long, ok := t.overrides.flag(key, flag); ok {
		fh := policy.FlagHelp{Type: policy.TypeUnknown}
		if known {
			base, found := exactFlag(h, long)
			if !found && fo.short != "" {
				base, found = exactFlag(h, fo.short)
			}
			if found {
				fh = flagHelp(base)
			}
		}
		if fo.typ != policy.TypeUnknown {
			fh.Type, fh.OptionalValue = fo.typ, false
		}
		if fo.description != "" {
			fh.Description = textLine(fo.description, maxDescriptionLen)
		}
		return fh, true
	}
	if !known {
		return policy.FlagHelp{}, false
	}
	f, ok := exactFlag(h, flag)
	if !ok {
		// Help.Flag also finds --no-verify for a negatable --verify.
		if f, ok = h.Flag(flag); !ok {
			return policy.FlagHelp{}, false
		}
	}
	return flagHelp(f), true
}

// flagHelp maps what the help says of a flag's value to the policy's terms.
// A flag whose value is optional (--rebase[=<mode>]) is a switch unless the
// rule gives it a type, so it is boolean with OptionalValue set. A required
// value of no guessable kind is a string: the flag certainly takes one.
func flagHelp(f helptext.Flag) policy.FlagHelp {
	fh := policy.FlagHelp{Description: textLine(f.Description, maxDescriptionLen)}
	switch f.Value {
	case helptext.ValueNone:
		fh.Type = policy.TypeBoolean
	case helptext.ValueRequired:
		fh.Type = f.Type
		if fh.Type != policy.TypeInteger {
			fh.Type = policy.TypeString
		}
	case helptext.ValueOptional:
		fh.Type, fh.OptionalValue = policy.TypeBoolean, true
	default:
		fh.Type = policy.TypeUnknown
	}
	return fh
}

// exactFlag finds the flag spelled exactly so, short or long, and never by a
// negated or abbreviated form: an override or a flag listed under its own name
// must win over a --no- reading of another.
func exactFlag(h helptext.Help, spelling string) (helptext.Flag, bool) {
	for _, f := range h.Flags {
		if f.Short == spelling || f.Long == spelling {
			return f, true
		}
	}
	return helptext.Flag{}, false
}

// Description is sub's one-line description: the override's; else the line
// its parent's help lists it with (written to be one line); else the first
// paragraph of its own help's description. "" when none is known. An empty
// sub describes the tool.
func (c *Catalog) Description(tool string, sub []string) string {
	t := c.tool(tool)
	if t == nil {
		return ""
	}
	key := subKey(sub)
	if s := t.overrides.sub(key); s != nil && s.description != "" {
		return textLine(s.description, maxDescriptionLen)
	}
	if len(sub) > 0 {
		if parent, ok := t.helps[subKey(sub[:len(sub)-1])]; ok {
			name := sub[len(sub)-1]
			for _, s := range parent.Subcommands {
				if s.Name == name {
					if d := textLine(s.Description, maxDescriptionLen); d != "" {
						return d
					}
					break
				}
			}
		}
	}
	if h, ok := t.helps[key]; ok {
		return textLine(firstParagraph(h.Description), maxDescriptionLen)
	}
	return ""
}

// ShortHelpTaken reports whether -h means something other than help for
// sub: its own help (or its override) lists -h as anything but a help
// switch; or it does not list -h at all and the root help does (psql's -h
// HOST, ls's -h for --human-readable). Unknown helps take nothing, so -h is
// seeded as usual.
func (c *Catalog) ShortHelpTaken(tool string, sub []string) bool {
	t := c.tool(tool)
	if t == nil {
		return false
	}
	if listed, taken := t.shortHelp(subKey(sub)); listed || len(sub) == 0 {
		return taken
	}
	_, taken := t.shortHelp("")
	return taken
}

// shortHelp reports whether the help keyed key lists -h, and whether as
// anything but a help switch (a value such as psql's host, or another
// switch such as ls's --human-readable): an override naming -h decides
// first.
func (t *toolHelps) shortHelp(key string) (listed, taken bool) {
	if _, long, ok := t.overrides.flag(key, "-h"); ok {
		return true, long != "--help"
	}
	h, ok := t.helps[key]
	if !ok {
		return false, false
	}
	_, listed = exactFlag(h, "-h")
	return listed, h.ShortHelpReused()
}

// Subcommands lists what sub's help advertises below it: valid tokens only
// (a name that could be a flag or a path is left out) and never help, each
// with a description cut to one line of printable ASCII of at most 120
// characters, because the assistant and the operator's config read them. ok
// is false when sub's help is not known. The map is the caller's.
func (c *Catalog) Subcommands(tool string, sub []string) (map[string]string, bool) {
	t := c.tool(tool)
	if t == nil {
		return nil, false
	}
	h, ok := t.helps[subKey(sub)]
	if !ok {
		return nil, false
	}
	out := map[string]string{}
	for _, s := range h.Subcommands {
		if s.Name == "help" || !policy.ValidToken(s.Name) {
			continue
		}
		d := asciiLine(s.Description, maxListingLen)
		if prev, dup := out[s.Name]; dup && prev != "" {
			continue // listed twice (an alias section): keep the first
		}
		out[s.Name] = d
	}
	return out, true
}
