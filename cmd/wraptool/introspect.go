package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wraptool/wraptool/introspect"
	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/toolset/runner"
)

// newIntrospector is the server's one introspector: its cache folder under
// the platform cache dir, its runs tracked by the reaper. cacheOnly makes it
// run nothing (config validate never runs a tool).
func (a *app) newIntrospector(reaper *runner.Reaper, cacheOnly bool) *introspect.Introspector {
	o := &introspect.Options{CacheOnly: cacheOnly, Reaper: reaper, Log: a.log} // introspect adds its component
	if dir, err := config.CacheDir(a.configOptions()); err == nil {
		o.CacheDir = filepath.Join(dir, "introspection")
	} else {
		a.log.Warn("no cache folder for introspection; help is learned anew at each start", "error", err)
	}
	return introspect.New(o)
}

// introspection is the load path's introspect step (config.Introspect) on
// in: for every tool, its root help and the help of each allow rule's
// subcommand (and of each multi-token rule's parent, for discovery), under
// the tool's own isolated environment. Nothing an MCP client sent reaches
// these runs: they are built from the config alone.
func (a *app) introspection(in *introspect.Introspector) config.Introspect {
	return func(ctx context.Context, c *config.Config, forced bool) (policy.Helps, error) {
		var tools []introspect.Tool
		// A cache-only introspector runs nothing, so it needs no sandbox.
		var sandbox *runner.Sandbox
		if !in.CacheOnly() {
			sandbox = a.sandboxFor(c)
		}
		for _, name := range sortedTools(c) {
			t := c.Tools[name]
			tool := introspect.Tool{
				Name: name, Binary: t.Binary, CacheTTL: t.Introspection.CacheTTL,
				Env:     runner.Environ(t.Binary, a.getenv, t.FileEnv, t.Env),
				Sandbox: sandbox,
			}
			data, err := c.ReadOverrides(name)
			if err != nil {
				return nil, err
			}
			if data != nil {
				if tool.Overrides, err = introspect.ParseOverrides(t.Introspection.OverridesFile, data); err != nil {
					return nil, fmt.Errorf("%s: tools.%s.introspection.overrides_file: %w", c.File, name, err)
				}
			}
			seen := map[string]bool{}
			add := func(sub []string) {
				if key := strings.Join(sub, " "); !seen[key] {
					seen[key] = true
					tool.Subcommands = append(tool.Subcommands, slices.Clone(sub))
				}
			}
			for _, r := range t.Allow {
				add(r.Subcommand)
				if len(r.Subcommand) >= 2 {
					add(r.Subcommand[:len(r.Subcommand)-1])
				}
			}
			tools = append(tools, tool)
		}
		return in.Learn(ctx, tools, forced), nil
	}
}

func sortedTools(c *config.Config) []string {
	names := make([]string, 0, len(c.Tools))
	for name := range c.Tools {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
