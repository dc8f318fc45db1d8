//go:build !linux

package launch

import (
	"errors"
	"runtime"
)

// restrict refuses: only Linux hands the launcher a ruleset to restrict
// itself with; elsewhere the confinement is a command prefix.
func restrict(int) error { return errors.New("no Landlock on " + runtime.GOOS) }
