package main

import (
	"context"
	"fmt"

	"github.com/peterbourgon/ff/v4"
)

func (a *app) configCommand() *ff.Command {
	validateFlags := ff.NewFlagSet("validate").SetParent(a.flags)
	validate := &ff.Command{
		Name:      "validate",
		Usage:     "wraptool config validate [PATH]",
		ShortHelp: "check a config; touches nothing",
		LongHelp: "Loads the config exactly as serve and a reload do (strict keys, defaults,\n" +
			"every semantic check) and prints the first problem in document order.\n" +
			"PATH defaults to --config, $WRAPTOOL_CONFIG, then ~/.config/wraptool/config.yaml.",
		Flags: validateFlags,
		Exec: func(ctx context.Context, args []string) error {
			rest, err := interspersed(validateFlags, args)
			if err != nil {
				return err
			}
			return a.validate(ctx, rest)
		},
	}
	return &ff.Command{
		Name:        "config",
		Usage:       "wraptool config SUBCOMMAND",
		ShortHelp:   "work with the config file",
		Flags:       ff.NewFlagSet("config").SetParent(a.flags),
		Subcommands: []*ff.Command{validate},
		Exec:        unknownCommand,
	}
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
	for _, w := range l.Warnings {
		fmt.Fprintf(a.stderr, "warning: %s\n", w)
	}
	c := l.Config
	_, err = fmt.Fprintf(a.stdout, "ok: %s (%d tools, %d allow rules, %d mcp_servers)\n",
		path, len(c.Tools), c.AllowRulesWritten, len(c.MCPServers))
	return err
}
