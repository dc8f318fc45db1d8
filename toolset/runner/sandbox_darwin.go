//go:build darwin

package runner

import (
	"os/exec"

	"github.com/wraptool/wraptool/toolset/runner/seatbelt"
)

// Probe reports Seatbelt when /usr/bin/sandbox-exec can be trusted
// (seatbeltSupport). getenv is unused: nothing simulates its absence.
func Probe(getenv func(string) string) Support {
	return seatbeltSupport(func(path string) error { return checkProgram(path, 0) })
}

// ruleset is one Seatbelt rule set. Its paths are those newPlan found
// (symlinks on the way resolved), so it is built again for every start
// rather than kept: nothing watches those links change.
type ruleset struct {
	refs  int
	keep  bool
	rules seatbelt.Rules
}

func buildRuleset(pl *plan, _ Support) (*ruleset, error) {
	return &ruleset{rules: seatbeltRules(pl)}, nil
}

func (*ruleset) valid() bool { return false }
func (*ruleset) close()      {}

// start starts cmd through the launcher, which execs sandbox-exec with the
// profile in front of the program: always the launcher here, whatever
// viaLauncher says, since macOS has no other way to confine a child.
func (rs *ruleset) start(cmd *exec.Cmd, _ bool) error {
	if cmd.Err != nil {
		return cmd.Start()
	}
	argv := cmd.Args
	if len(argv) == 0 {
		argv = []string{cmd.Path}
	}
	prefix, err := seatbeltPrefix(rs.rules, append([]string{cmd.Path}, argv[1:]...))
	if err != nil {
		return confineError(err)
	}
	return startLaunched(cmd, -1, prefix)
}
