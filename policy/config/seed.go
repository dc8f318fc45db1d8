package config

import (
	"github.com/wraptool/wraptool/policy"
)

// SeedHelpFlags adds -h and --help to every allow rule's flags, each on its
// own: a rule that denies one (in deny_flags or with a deny constraint) still
// gets the other, and deny keeps winning. A help flag whose schema property
// the operator already uses (a flag --h takes "h") is left out rather than
// reported as a clash with a flag nobody wrote. Seeding twice changes nothing.
func SeedHelpFlags(c *Config) {
	for _, t := range c.Tools {
		for _, r := range t.Allow {
			for _, h := range []string{policy.ShortHelpFlag, policy.LongHelpFlag} {
				if !r.Denies(h) && !usesProperty(r, policy.PropertyName(h)) {
					r.Flags = append(r.Flags, h)
				}
			}
		}
	}
}

// usesProperty reports whether a listed or denied flag maps to prop.
func usesProperty(r *policy.AllowRule, prop string) bool {
	for _, list := range [][]string{r.Flags, r.DenyFlags} {
		for _, f := range list {
			if policy.PropertyName(f) == prop {
				return true
			}
		}
	}
	return false
}
