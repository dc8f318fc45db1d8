package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/toolset/runner"
)

// The command Protected marks read-only for each mcp_servers entry and for
// the hook is the very file the runner starts: the same PATH (the server's,
// or one set in env_files or env; relative and empty entries dropped; the
// fallback when none is left) and the same rule for a name with a slash.
func TestProtectedFindsTheCommandTheRunnerStarts(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a/srv", "b/srv", "c/other", "a/hook"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "path.env"), []byte("PATH="+dir+"/c:"+dir+"/b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	serverPath := "rel:" + filepath.Join(dir, "a") + "::" + filepath.Join(dir, "b")
	getenv := func(k string) string {
		if k == "PATH" {
			return serverPath
		}
		return ""
	}
	yaml := "mcp:\n  listen: 127.0.0.1:1\n  on_request: [hook]\nmcp_servers:\n" +
		"  plain: {command: srv}\n" +
		"  envfile: {command: srv, env_files: [" + dir + "/path.env]}\n" +
		"  inline: {command: srv, env: {PATH: \"rel2:" + dir + "/b\"}}\n" +
		"  fallback: {command: sh, env: {PATH: \"only/relative\"}}\n"
	file := filepath.Join(dir, "config.yaml")
	o := &config.Options{Home: filepath.Join(dir, "home"), Getenv: getenv}
	c, err := config.Parse(file, []byte(yaml), o)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	readOnly := c.Protected("", o).ReadOnly
	for _, name := range []string{"plain", "envfile", "inline", "fallback"} {
		s := c.MCPServers[name]
		want, err := runner.LookPath(s.Command, runner.Environ("", getenv, s.FileEnv, s.Env))
		if err != nil {
			t.Fatalf("%s: the runner finds no command: %v", name, err)
		}
		if !slices.Contains(readOnly, want) {
			t.Errorf("%s: the runner starts %s, which ReadOnly does not hold:\n%q", name, want, readOnly)
		}
	}
	hook, err := runner.LookPath("hook", runner.Environ("", getenv, nil, nil))
	if err != nil || !slices.Contains(readOnly, hook) {
		t.Errorf("the hook runs as %s (%v), which ReadOnly does not hold:\n%q", hook, err, readOnly)
	}
}
