package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/toolset/runner"
)

// confinementOffWarning is logged at every start of a server whose
// config turns confinement off, and printed by up.
const confinementOffWarning = config.ConfinementOffWarning

// confiner is the app's one Confiner, made on first use from what this
// kernel offers (Probe reads the test variable that simulates a kernel
// without Landlock).
func (a *app) confinerFor() *runner.Confiner {
	if a.confiner == nil {
		a.confiner = runner.NewConfiner(runner.Probe(a.getenv))
	}
	return a.confiner
}

// self is wraptool's own executable, resolved: every process wraptool
// starts may run it but never replace it. "" when it cannot be found.
func (a *app) self() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		return real
	}
	return exe
}

// sandboxFor is the sandbox the help runs of c's load run in: nil when c
// turns confinement off. Its set is worked out now, not taken from the
// snapshots' cache (actors.SandboxFor): the load itself makes folders (the
// introspection cache's) that change which folders hold only wraptool's
// files, and the snapshot built after it must see them.
func (a *app) sandboxFor(c *config.Config) *runner.Sandbox {
	if c.MCP.Confinement == config.ConfinementOff {
		return nil
	}
	p := c.Protected(a.self(), a.configOptions())
	return a.confinerFor().For(runner.Protected{Hidden: p.Hidden, ReadOnly: p.ReadOnly})
}

// checkConfinement is serve's and up's start-up check: with confinement
// required, a kernel that cannot confine is an error naming what is
// missing and the opt-out (returned before anything listens); with it off,
// a warning at every start. It returns the warning up prints, if any.
func checkConfinement(log *slog.Logger, c *config.Config, sup runner.Support, path string) (string, error) {
	if c.MCP.Confinement == config.ConfinementOff {
		log.Warn(confinementOffWarning, "config", path, "fix", "remove mcp.confinement: off, or set it to required")
		return confinementOffWarning + " (mcp.confinement: off in " + path + ")", nil
	}
	if !sup.OK() {
		return "", confinementRefusal(sup, path)
	}
	log.Info("confining every process wraptool starts", "mechanism", sup.Mechanism, "abi", sup.ABI)
	return "", nil
}

// confinementRefusal is the error of a config that requires confinement on
// a kernel that cannot give it.
func confinementRefusal(sup runner.Support, path string) error {
	return fmt.Errorf("%w; without it they could read wraptool's tokens and rewrite its config and logs. "+
		"To run without confinement (not recommended), set mcp.confinement: off in %s", sup.Err, path)
}
