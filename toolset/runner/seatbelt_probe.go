package runner

import (
	"fmt"
	"maps"
	"path/filepath"
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
// inside Hidden in the profile). Seatbelt matches paths, so besides the
// resolved forms the items count as they were given, and each symlink on
// the way is held like a folder above (neither removed, renamed nor made
// anew): else a child could move ~/proj/.wraptool (a link to the real
// folder) aside and make a folder of its own at that name, whose
// config.yaml wraptool would then load.
func seatbeltRules(pl *plan) seatbelt.Rules {
	hidden, readOnly := maps.Clone(pl.hidden), maps.Clone(pl.readOnly)
	for path, ro := range pl.given {
		if ro {
			readOnly[path] = true
		} else {
			hidden[path] = true
		}
	}
	for path := range hidden {
		delete(readOnly, path) // hidden as well as read-only is hidden
	}
	return seatbelt.Rules{
		Hidden:   slices.Sorted(maps.Keys(hidden)),
		ReadOnly: append(slices.Sorted(maps.Keys(readOnly)), pl.runInside...),
		Above:    append(slices.Sorted(maps.Keys(pl.above)), pl.links...),
		Starts:   shadowStarts(pl),
	}
}

// shadowStarts are the name starts that shadowed matches, in each folder
// holding a hidden item outside a hidden folder: the temporary files of
// wraptool's atomic writes and editors' copies, which can become a hidden
// item by a rename, and rotated logs. Landlock needs none of this (such a
// folder takes no new entries from a confined child, and wraptool's own are
// given no rule); Seatbelt matches names, and these names are random, so
// a child could otherwise open one before the rename and write the config
// through it.
func shadowStarts(pl *plan) []string {
	var out []string
	for dir, names := range pl.shadows {
		if pl.insideHidden(dir) {
			continue // the hidden folder covers every name in it
		}
		out = append(out, filepath.Join(dir, ".wraptool-"))
		for _, b := range names {
			for _, start := range []string{"." + b + ".", b + ".", "#" + b, b + "~", ".#" + b} {
				out = append(out, filepath.Join(dir, start))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
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
