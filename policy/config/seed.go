package config

import (
	"slices"

	"github.com/wraptool/wraptool/policy"
)

// SeedHelpFlags seeds -h and --help into every allow rule (see
// policy.SeedHelpFlags): any approved subcommand can show its help, and a
// rule that denies one still gets the other. Seeding twice changes nothing.
func SeedHelpFlags(c *Config) {
	for _, t := range c.Tools {
		for _, r := range t.Allow {
			policy.SeedHelpFlags(r)
		}
	}
}

// unseedShortHelp takes a seeded -h back out of every rule whose tool uses
// -h for something else (psql's -h HOST): there a "help" switch would be a
// host option in disguise. --help stays seeded.
func unseedShortHelp(c *Config, helps policy.Helps) {
	if helps == nil {
		return
	}
	for name, t := range c.Tools {
		for _, r := range t.Allow {
			if slices.Contains(r.Seeded, policy.ShortHelpFlag) && helps.ShortHelpTaken(name, r.Subcommand) {
				r.Flags = slices.DeleteFunc(r.Flags, func(f string) bool { return f == policy.ShortHelpFlag })
				r.Seeded = slices.DeleteFunc(r.Seeded, func(f string) bool { return f == policy.ShortHelpFlag })
			}
		}
	}
}
