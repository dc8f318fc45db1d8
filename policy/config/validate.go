package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/toolset/runner"
)

// This file is the validator: it runs every check, collects the problems
// and holds the checks the sections share (names, files, programs, exposed
// MCP tool names). validate_mcp.go checks the mcp: and admin: sections,
// validate_rules.go the tools: and mcp_servers: ones.

// Validate runs every semantic check on a loaded config and returns the
// first problem in document order as an *Error, or nil. It reads the
// filesystem (binaries, folders, env and token files) but writes nothing, and
// may be called again on a config Load returned.
func (c *Config) Validate() error {
	if errs := c.problems(); len(errs) > 0 {
		return first(errs)
	}
	return nil
}

// problems runs every check and returns all problems found, in no order.
func (c *Config) problems() []*Error {
	v := &validator{c: c}
	v.mcp()
	v.admin()
	for _, name := range sortedKeys(c.Tools) {
		v.tool(name, c.Tools[name])
	}
	for _, name := range sortedKeys(c.MCPServers) {
		v.server(name, c.MCPServers[name])
	}
	v.collisions()
	return v.errs
}

type validator struct {
	c    *Config
	errs []*Error
	// exposed collects every MCP tool name the config would produce, for
	// the collision check once all are known.
	exposed []exposedName
	// patterns memoizes each pattern's compile error: a large config
	// repeats a few patterns across thousands of rules, and compiling
	// each copy was most of a load's time and garbage.
	patterns map[string]error
}

type exposedName struct {
	name string
	path fieldPath
	at   pos // where path was written, looked up once for the sort
}

func (v *validator) fail(p fieldPath, format string, args ...any) {
	v.errs = append(v.errs, v.c.errorAt(p, format, args...))
}

// scripts checks each of args that names an existing regular file as a
// program (runner.CheckScripts: a relative one taken from dir, the process's
// working directory, "" for the server's own); at gives each one's field.
func (v *validator) scripts(args []string, dir string, at func(int) fieldPath) {
	if i, err := runner.CheckScripts(args, dir); err != nil {
		v.fail(at(i), "%v", err)
	}
}

// exists reports whether path names something on disk.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// program refuses a program others could change or replace.
func (v *validator) program(p fieldPath, path string) {
	if err := runner.CheckProgram(path); err != nil {
		v.fail(p, "%v", err)
	}
}

// private refuses a file that decides what runs when anyone but its owner
// may write (or, for a secret, read) it or replace it, or when another user
// owns it.
func (v *validator) private(p fieldPath, path string, kind fileKind) {
	if msg := checkFile(path, kind); msg != "" {
		v.fail(p, "%s", msg)
	}
}

// name checks a tool or server name: a valid token, not in wraptool's
// reserved namespace.
func (v *validator) name(p fieldPath, what, s string) {
	if !v.token(p, what, s) {
		return
	}
	if strings.HasPrefix(strings.ToLower(s), policy.ReservedPrefix) {
		v.fail(p, "%s %q starts with %q, which is reserved for wraptool's built-in tools", what, s, policy.ReservedPrefix)
	}
}

func (v *validator) token(p fieldPath, what, s string) bool {
	if policy.ValidToken(s) {
		return true
	}
	v.fail(p, "%s %q must match [A-Za-z0-9][A-Za-z0-9_-]*", what, s)
	return false
}

func (v *validator) flag(p fieldPath, f string) bool {
	if policy.ValidFlag(f) {
		return true
	}
	v.fail(p, "%q is not a flag: want -X (one letter or digit) or --name", f)
	return false
}

// expose records an MCP tool name for the length and collision checks.
func (v *validator) expose(p fieldPath, name string) {
	if len(name) > policy.MaxToolNameLen {
		v.fail(p, "the MCP tool name %q is %d characters; the limit is %d", name, len(name), policy.MaxToolNameLen)
		return
	}
	v.exposed = append(v.exposed, exposedName{name, p, v.c.lines.at(p)})
}

// collisions reports every exposed name after the first, in document order,
// that repeats an earlier one.
func (v *validator) collisions() {
	slices.SortStableFunc(v.exposed, func(a, b exposedName) int {
		pa, pb := a.at, b.at
		if pa.line != pb.line {
			return pa.line - pb.line
		}
		if pa.col != pb.col {
			return pa.col - pb.col
		}
		return strings.Compare(a.path.String(), b.path.String())
	})
	owner := map[string]fieldPath{}
	for _, e := range v.exposed {
		if prev, dup := owner[e.name]; dup {
			v.fail(e.path, "gives the MCP tool name %q, already given by %s", e.name, prev)
			continue
		}
		owner[e.name] = e.path
	}
}

func (v *validator) executable(p fieldPath, path string) {
	if msg := binaryProblem(path); msg != "" {
		v.fail(p, "%s", msg)
	}
}

// binaryProblem says why path may not be a tool's binary, or "": it must be
// an executable regular file that only its owner (the operator or root) may
// change, under folders up to "/" only they may write (runner.CheckProgram),
// and not wraptool itself.
func binaryProblem(path string) string {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s does not exist", path)
	case err != nil:
		return err.Error()
	case !info.Mode().IsRegular():
		return fmt.Sprintf("%s is not a regular file", path)
	case info.Mode().Perm()&0o111 == 0:
		return fmt.Sprintf("%s is not executable", path)
	case isSelf(path):
		return fmt.Sprintf("%s is wraptool itself; wrapping it would let the assistant act as the operator", path)
	}
	if err := runner.CheckProgram(path); err != nil {
		return err.Error()
	}
	return ""
}

func (v *validator) dir(p fieldPath, path string) {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		v.fail(p, "%s does not exist", path)
	case err != nil:
		v.fail(p, "%v", err)
	case !info.IsDir():
		v.fail(p, "%s is not a directory", path)
	}
}

func (v *validator) positive(p fieldPath, seconds float64) {
	if seconds <= 0 {
		v.fail(p, "must be a positive duration such as 30s")
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
