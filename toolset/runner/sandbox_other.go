//go:build !linux && !darwin

package runner

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
)

// Probe reports that this platform has no confinement wraptool can use
// yet, so a configuration that requires it refuses to start.
func Probe(getenv func(string) string) Support {
	return Support{Err: fmt.Errorf("%w: wraptool has no confinement for %s", ErrNoConfinement, runtime.GOOS)}
}

// ruleset is never built where Probe finds nothing.
type ruleset struct {
	refs int
	keep bool
}

func buildRuleset(*plan, Support) (*ruleset, error) {
	return nil, errors.New("no confinement on " + runtime.GOOS)
}

func (*ruleset) valid() bool                 { return false }
func (*ruleset) close()                      {}
func (*ruleset) start(*exec.Cmd, bool) error { return errors.New("no confinement on " + runtime.GOOS) }
