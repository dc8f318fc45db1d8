package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wraptool/wraptool/introspect"
	"github.com/wraptool/wraptool/introspect/helptext"
	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/edit"
	"github.com/wraptool/wraptool/policy/danger"
	"github.com/wraptool/wraptool/toolset/runner"
)

// The catalog's bounds: subcommands and their groups' commands, and no more
// help runs than this, whatever the tool lists.
const (
	catalogDepth   = 2
	catalogMaxRuns = 100
)

// addTool is `config add TOOL [--binary PATH]`: checks first (name,
// binary, the config loads and has no such tool), so a refusal runs
// nothing; then the tool's help is read and the tool written with its
// catalog as comments. A config scaffolded for the run is removed again
// when the run is refused.
func (a *app) addTool(ctx context.Context, args []string, binaryArg, presetArg string) (err error) {
	if len(args) != 1 {
		return usageErrorf("config add takes one TOOL, got %d arguments", len(args))
	}
	name := args[0]
	if err := config.CheckToolName(name); err != nil {
		return fmt.Errorf("config add: %w", err)
	}
	path, err := a.configPath()
	if err != nil {
		return err
	}
	created, err := edit.Scaffold(path, nil)
	if err != nil {
		return err
	}
	if created {
		info, lerr := os.Lstat(path)
		starter, rerr := os.ReadFile(path)
		fmt.Fprintf(a.stderr, "wrote the starter config %s\n", path)
		defer func() {
			if err == nil || lerr != nil || rerr != nil {
				return
			}
			if removed, uerr := edit.Unscaffold(path, starter, info); uerr != nil {
				a.log.Warn("the starter config written for this run is left behind", "path", path, "err", uerr)
			} else if removed {
				fmt.Fprintf(a.stderr, "removed the starter config %s again: nothing was written\n", path)
			}
		}()
	}
	data, err := config.ReadFile(path)
	if err != nil {
		return err
	}
	// An existing tool is the likelier mistake: say so before anything
	// about its binary.
	if err := config.CheckNewTool(path, data, name, a.configOptions()); err != nil {
		return err
	}
	binary, err := a.toolBinary(name, binaryArg)
	if err != nil {
		return err
	}
	nt := config.NewTool{Name: name, Binary: binary}
	if presetArg != "" {
		return a.addPreset(path, data, nt, presetArg)
	}
	if _, _, err := config.PlanAddTool(path, data, nt, a.configOptions()); err != nil {
		return err
	}

	sandbox, err := a.helpRunSandbox(ctx, path, binary)
	if err != nil {
		return err
	}
	start := time.Now()
	introspector := a.newIntrospector(nil, false)
	defer introspector.Close()
	tree := introspector.Explore(ctx, introspect.Tool{
		Name: name, Binary: binary, Env: runner.Environ(binary, a.getenv, nil, nil), Sandbox: sandbox,
	}, catalogDepth, catalogMaxRuns)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("config add: reading %s's help: %w; nothing was written", name, err)
	}
	a.log.Debug("catalog read", "tool", name, "paths", len(tree.Paths), "help_runs", tree.Runs,
		"unread", tree.Unread, "took", time.Since(start).Round(time.Millisecond))
	nt.Catalog = catalogRules(name, tree)
	bare := len(nt.Catalog) == 1 && len(nt.Catalog[0].Subcommand) == 0

	n, err := edit.AddTool(path, nt, a.configOptions())
	if err != nil {
		return err
	}
	if tree.Exhausted {
		fmt.Fprintf(a.stderr, "note: the budget of %d help runs ran out; %d subcommands are listed without their flags\n",
			catalogMaxRuns, tree.Unread)
	}
	listed := fmt.Sprintf("%d subcommands listed as comments", n)
	if bare && n == 1 {
		listed = fmt.Sprintf("no subcommands; the tool itself listed as one commented rule with its %d flags", len(nt.Catalog[0].Flags))
	}
	_, err = fmt.Fprintf(a.stdout, "added tool %s (%s): %s\n", name, binary, listed)
	return err
}

// addPreset writes nt with the reviewed preset named presetArg for its
// CLI (the binary's, else the key's), and runs nothing: the preset's rules
// say every value's type, so no help is needed to serve them.
func (a *app) addPreset(path string, data []byte, nt config.NewTool, presetArg string) error {
	cli := danger.CLI(nt.Name, nt.Binary)
	p, err := config.LookupPreset(cli, presetArg)
	if err != nil {
		return usageErrorf("config add --preset: %v", err)
	}
	nt.Preset = &p
	if _, _, err := config.PlanAddTool(path, data, nt, a.configOptions()); err != nil {
		return err
	}
	n, err := edit.AddTool(path, nt, a.configOptions())
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "added tool %s (%s): preset %s for %s, %d allow rules: %s\n",
		nt.Name, nt.Binary, p.Name, p.CLI, n, p.Summary)
	return err
}

// presetNames lists the presets as --preset's help names them.
func presetNames() string {
	var names []string
	for _, p := range config.Presets() {
		names = append(names, p.CLI+" "+p.Name)
	}
	return strings.Join(names, ", ")
}

// catalogRules turns what Explore found into the rules written as
// comments: each path with the line its parent's help lists it with, and
// the flags its own help lists (the long form where there are both; the
// help flags left out, since every rule gets them anyway). A tool with no
// subcommands (curl, tar, psql) gets one bare rule with its root flags.
func catalogRules(name string, tree introspect.Tree) []config.CatalogRule {
	listings := map[string]map[string]string{}
	var rules []config.CatalogRule
	for _, p := range tree.Paths {
		parent := strings.Join(p[:len(p)-1], " ")
		if _, ok := listings[parent]; !ok {
			listings[parent], _ = tree.Catalog.Subcommands(name, p[:len(p)-1])
		}
		h, ok := tree.Catalog.Help(name, p)
		rules = append(rules, config.CatalogRule{
			Subcommand: p, Description: listings[parent][p[len(p)-1]], Flags: helpFlags(h), Unread: !ok,
		})
	}
	if len(rules) == 0 {
		if h, ok := tree.Catalog.Help(name, nil); ok {
			if flags := helpFlags(h); len(flags) > 0 {
				rules = append(rules, config.CatalogRule{Subcommand: []string{}, Flags: flags})
			}
		}
	}
	return rules
}

// helpFlags are the flags h lists, one spelling each (the long form where
// there are both), the help flags left out.
func helpFlags(h helptext.Help) []string {
	var out []string
	for _, f := range h.Flags {
		spelling := f.Long
		if spelling == "" {
			spelling = f.Short
		}
		if spelling != "" && !policy.IsHelpFlag(spelling) {
			out = append(out, spelling)
		}
	}
	return out
}

// toolBinary is --binary made absolute and checked, else name looked up on
// the absolute entries of PATH: every candidate is listed with its owner,
// and the first (the one a shell runs) is used only when validation would
// accept it; otherwise --binary must name one.
func (a *app) toolBinary(name, binaryArg string) (string, error) {
	if binaryArg != "" {
		abs, err := filepath.Abs(binaryArg)
		if err != nil {
			return "", fmt.Errorf("config add: --binary: %w", err)
		}
		if err := config.CheckBinary(abs); err != nil {
			return "", fmt.Errorf("config add: --binary: %w", err)
		}
		return abs, nil
	}
	cands := pathCandidates(name, a.getenv("PATH"))
	if len(cands) == 0 {
		return "", fmt.Errorf("config add: %s was not found on the absolute entries of PATH; name it with --binary PATH", name)
	}
	var list strings.Builder
	for i, c := range cands {
		fmt.Fprintf(&list, "  %s (owner %s)", c, owner(c))
		if i == 0 {
			list.WriteString("  <- first on PATH")
		}
		list.WriteString("\n")
	}
	if err := config.CheckBinary(cands[0]); err != nil {
		return "", fmt.Errorf("config add: %w\ncandidates for %s on PATH:\n%sname the one to wrap with --binary PATH (it must pass the same check)",
			err, name, list.String())
	}
	fmt.Fprintf(a.stderr, "candidates for %s on PATH:\n%s", name, list.String())
	return cands[0], nil
}

// pathCandidates lists the executable regular files named name in the
// absolute entries of pathList, in PATH order, a folder reached twice (/bin
// and /usr/bin on a merged /usr) once.
func pathCandidates(name, pathList string) []string {
	var out []string
	var seen []fs.FileInfo
	for _, dir := range filepath.SplitList(pathList) {
		if !filepath.IsAbs(dir) {
			continue
		}
		dinfo, err := os.Stat(dir)
		if err != nil || slices.ContainsFunc(seen, func(s fs.FileInfo) bool { return os.SameFile(s, dinfo) }) {
			continue
		}
		seen = append(seen, dinfo)
		p := filepath.Join(dir, name)
		if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
			out = append(out, p)
		}
	}
	return out
}

// owner names the user owning path (its uid when the name is unknown).
func owner(path string) string {
	info, err := os.Stat(path)
	if err != nil {
		return "unknown"
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return "unknown"
	}
	uid := strconv.FormatUint(uint64(st.Uid), 10)
	if u, err := user.LookupId(uid); err == nil {
		return u.Username
	}
	return "uid " + uid
}

// helpRunSandbox confines config add's help runs as the server would
// confine them: the config's protected set, and the new binary kept from
// being rewritten like every configured one. A config that requires
// confinement on a kernel that cannot give it runs nothing.
func (a *app) helpRunSandbox(ctx context.Context, path, binary string) (*runner.Sandbox, error) {
	l, err := a.loadConfig(ctx, path)
	if err != nil {
		return nil, err
	}
	c := l.Config
	if c.MCP.Confinement == config.ConfinementOff {
		fmt.Fprintf(a.stderr, "warning: %s (mcp.confinement: off in %s)\n", confinementOffWarning, path)
		return nil, nil
	}
	sup := a.confinerFor().Support()
	if !sup.OK() {
		return nil, fmt.Errorf("config add: %w; nothing was written", confinementRefusal(sup, path))
	}
	p := c.Protected(a.self(), a.configOptions())
	return runner.NewSandbox(runner.Protected{Hidden: p.Hidden, ReadOnly: append(p.ReadOnly, binary)}, sup), nil
}
