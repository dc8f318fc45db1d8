package configtest

import (
	"fmt"
	"strings"
)

// LargeTools is the tools: section of a large config: tools × rules allow
// rules of binary (500 × 10, 5,000 rules, is the one docs/performance.md's
// figures quote).
// Every rule has flags, typed and patterned flag constraints, a denied flag
// and positional patterns; every tool has a deny rule covering none of its
// allow rules, so all tools × rules are exposed. envFile, when not empty,
// is every tool's env_files entry. policy/config's load benchmark and the
// bench report's served config are this one text, so their figures are of
// the same config.
func LargeTools(tools, rules int, binary, envFile string) string {
	var b strings.Builder
	for i := range tools {
		fmt.Fprintf(&b, "  tool%03d:\n    binary: %s\n", i, binary)
		if envFile != "" {
			fmt.Fprintf(&b, "    env_files: [%s]\n", envFile)
		}
		b.WriteString("    allow:\n")
		for j := range rules {
			fmt.Fprintf(&b, `      - subcommand: [sub%02d, leaf]
        flags: ["--depth", "--ref", "--force", "-v", "--name%d"]
        deny_flags: ["--exec"]
        flag_constraints:
          "--depth": { type: integer, min: 1, max: 100 }
          "--ref": { pattern: "[A-Za-z0-9._/-]+" }
          "--force": { type: boolean }
          "-v": { type: boolean }
          "--name%d": { pattern: "name-%d-[a-z]+", required: true }
        arg_constraints:
          positional_max: 3
          patterns: ["origin", "[A-Za-z0-9][A-Za-z0-9._/-]*"]
`, j, j, j, j)
		}
		b.WriteString("    deny:\n      - subcommand: [config]\n")
	}
	return b.String()
}
