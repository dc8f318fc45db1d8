package config

import (
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
