package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/peterbourgon/ff/v4"

	"github.com/wraptool/wraptool/policy/config"
)

func (a *app) configCommand() *ff.Command {
	validateFlags := ff.NewFlagSet("validate").SetParent(a.flags)
	validate := &ff.Command{
		Name:      "validate",
		Usage:     "wraptool config validate [PATH]",
		ShortHelp: "check a config; touches nothing",
		LongHelp: "Loads the config exactly as serve and a reload do (strict keys, defaults,\n" +
			"every semantic check) and prints the first problem in document order.\n" +
			"PATH defaults to --config, $WRAPTOOL_CONFIG, then ~/.config/wraptool/config.yaml.\n\n" +
			"Example:\n  wraptool config validate ~/.config/wraptool/config.yaml",
		Flags: validateFlags,
		Exec: func(ctx context.Context, args []string) error {
			rest, err := interspersed(validateFlags, args)
			if err != nil {
				return err
			}
			return a.validate(ctx, rest)
		},
	}
	var binaryArg, presetArg string
	addFlags := ff.NewFlagSet("add").SetParent(a.flags)
	stringFlag(addFlags, &binaryArg, "binary", "", "PATH", "the executable to wrap (else TOOL looked up on PATH)")
	stringFlag(addFlags, &presetArg, "preset", "", "NAME", "write the reviewed rule set NAME (read, push-to-branch) instead of the catalog")
	add := &ff.Command{
		Name:      "add",
		Usage:     "wraptool config add TOOL [--binary PATH] [--preset NAME]",
		ShortHelp: "add a tool with no rules and its catalog as comments, or a reviewed preset",
		LongHelp: "Adds tools.TOOL with its binary and no allow rules, so nothing new is exposed.\n" +
			"Its subcommands, read from its help (at most 100 help runs), are written under\n" +
			"allow: as commented-out rules: uncomment one to allow that subcommand alone;\n" +
			"a flag that can hand your credentials away is marked careful:.\n" +
			"Without --binary, TOOL is looked up on PATH and every candidate is listed.\n" +
			"--preset NAME writes a reviewed rule set instead, and runs nothing: every\n" +
			"positional and value held by a pattern, the subcommands that print\n" +
			"credentials denied. Presets: " + presetNames() + ".\n\n" +
			"Example:\n  wraptool config add gh --binary /usr/bin/gh --preset read",
		Flags: addFlags,
		Exec: func(ctx context.Context, args []string) error {
			rest, err := interspersed(addFlags, args)
			if err != nil {
				return err
			}
			return a.addTool(ctx, rest, binaryArg, presetArg)
		},
	}
	return &ff.Command{
		Name:        "config",
		Usage:       "wraptool config SUBCOMMAND",
		ShortHelp:   "work with the config file",
		Flags:       ff.NewFlagSet("config").SetParent(a.flags),
		Subcommands: []*ff.Command{validate, add},
		Exec:        unknownCommand,
	}
}

// loadResolvedConfig loads the config where --config, $WRAPTOOL_CONFIG or
// the platform default puts it (configPath), as loadConfig does, and
// returns its path with it: the commands that act on the operator's config
// rather than on one named as an argument.
func (a *app) loadResolvedConfig(ctx context.Context) (string, *config.Loaded, error) {
	path, err := a.configPath()
	if err != nil {
		return "", nil, err
	}
	l, err := a.loadConfig(ctx, path)
	if err != nil {
		return "", nil, err
	}
	return path, l, nil
}

// validate prints "ok: PATH (N tools, R allow rules, S mcp_servers)", or
// returns the first problem, whose message starts with PATH and the line.
func (a *app) validate(ctx context.Context, args []string) error {
	if len(args) > 1 {
		return usageErrorf("config validate takes at most one PATH, got %d arguments", len(args))
	}
	var path string
	if len(args) == 1 {
		path = args[0]
	} else {
		var err error
		if path, err = a.configPath(); err != nil {
			return err
		}
	}
	l, err := a.loadConfig(ctx, path)
	if err != nil {
		return err
	}
	warnings := slices.Concat(l.Warnings, l.Config.PositionalWarnings())
	slices.SortStableFunc(warnings, func(x, y config.Warning) int { return x.Line - y.Line })
	for _, w := range warnings {
		fmt.Fprintf(a.stderr, "warning: %s\n", w)
	}
	c := l.Config
	// Whether this kernel can confine what the config would start: a
	// config that requires it where it cannot be had would not serve.
	sup := a.confinerFor().Support()
	switch {
	case c.MCP.Confinement == config.ConfinementOff:
		fmt.Fprintf(a.stderr, "warning: %s (mcp.confinement: off)\n", confinementOffWarning)
	case !sup.OK():
		return confinementRefusal(sup, path)
	default:
		fmt.Fprintf(a.stderr, "confinement: required; this kernel confines with %s\n", sup)
	}
	_, err = fmt.Fprintf(a.stdout, "ok: %s (%d tools, %d allow rules, %d mcp_servers)\n",
		path, len(c.Tools), c.AllowRulesWritten, len(c.MCPServers))
	return err
}
