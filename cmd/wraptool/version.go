package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/peterbourgon/ff/v4"
)

// version is set at link time (-ldflags "-X main.version=v1.2.3"); when it is
// empty the module version from the build info is used.
var version string

func (a *app) versionCommand() *ff.Command {
	return &ff.Command{
		Name:      "version",
		Usage:     "wraptool version",
		ShortHelp: "print the version",
		LongHelp:  "Prints wraptool's version and the Go it was built with (as --version does).\n\nExample:\n  wraptool version",
		Flags:     ff.NewFlagSet("version").SetParent(a.flags),
		Exec:      noArgs("version", func(context.Context) error { return a.printVersion() }),
	}
}

// printVersion prints the version line of `version` and `--version`.
func (a *app) printVersion() error {
	_, err := fmt.Fprintf(a.stdout, "wraptool %s %s %s/%s\n", buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return err
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
