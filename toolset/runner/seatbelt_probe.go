package runner

import (
	"fmt"
	"maps"
	"slices"

	"github.com/wraptool/wraptool/toolset/runner/seatbelt"
)

// sandboxExec is the program that applies a Seatbelt profile on macOS.
const sandboxExec = "/usr/bin/sandbox-exec"

// seatbeltSupport is macOS's Probe: Seatbelt through sandboxExec, which
// check (checkProgram for root alone) must find owned by root and
// writable by nobody else, folders up to "/" included, since whoever could
// replace it would choose what every confined child runs in. Every start
// goes through the launcher: the profile is a command prefix, and the
// checked directory is entered by its handle. Pure, so Linux tests it.
func seatbeltSupport(check func(path string) error) Support {
	if err := check(sandboxExec); err != nil {
		return Support{Err: fmt.Errorf("%w: %s cannot be trusted: %v", ErrNoConfinement, sandboxExec, err)}
	}
	return Support{Mechanism: "seatbelt", Launcher: true}
}

// seatbeltRules are what the profile keeps a child from, for pl.
// Executables kept inside a hidden folder stay runnable (ReadOnly wins
// inside Hidden in the profile).
func seatbeltRules(pl *plan) seatbelt.Rules {
	return seatbelt.Rules{
		Hidden:   slices.Sorted(maps.Keys(pl.hidden)),
		ReadOnly: append(slices.Sorted(maps.Keys(pl.readOnly)), pl.runInside...),
		Above:    slices.Sorted(maps.Keys(pl.above)),
	}
}

// seatbeltPrefix is the sandbox-exec command line that runs argv under
// rules, without argv: what the launcher puts before the program.
func seatbeltPrefix(rules seatbelt.Rules, argv []string) ([]string, error) {
	full, err := seatbelt.Command(sandboxExec, rules, argv)
	if err != nil {
		return nil, err
	}
	return full[:len(full)-len(argv)], nil
}
