package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture builds a folder the test configs point into with $T: an
// executable, a non-executable file, env files and token files.
func fixture(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]struct {
		body string
		mode os.FileMode
	}{
		"bin/tool":       {"#!/bin/sh\n", 0o755},
		"bin/plain":      {"not executable\n", 0o644},
		"env/good.env":   {"# comment\n\nA=1\nB= spaced value \nC=x=y\n", 0o600},
		"env/over.env":   {"A=2\nD=4\r\n", 0o600},
		"env/bad.env":    {"A=1\n\nexport B=2\n", 0o600},
		"env/badkey.env": {"1A=1\n", 0o600},
		"tok/a":          {"alpha-token\n", 0o600},
		"tok/b":          {"beta-token\n", 0o600},
		"tok/a-copy":     {"  alpha-token  \n", 0o600},
		"tok/empty":      {"\n", 0o600},
		"dir/.keep":      {"", 0o600},
		"home/.keep":     {"", 0o600},
	}
	for name, f := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.body), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// parseFixture parses yaml with $T replaced by the fixture folder, as a file
// named config.yaml inside it.
func parseFixture(t *testing.T, dir, yaml string) (*Config, error) {
	t.Helper()
	yaml = strings.ReplaceAll(yaml, "$T", dir)
	return Parse(filepath.Join(dir, "config.yaml"), []byte(yaml), &Options{Home: filepath.Join(dir, "home"), Getenv: func(string) string { return "" }})
}

// applyOptions are the options the apply fixture's configs load with: a
// home inside the fixture, no environment.
func applyOptions(dir string) *Options {
	return &Options{Home: filepath.Join(dir, "home"), Getenv: func(string) string { return "" }}
}

// mustParse parses a config that must be valid.
func mustParse(t *testing.T, dir, yaml string) *Config {
	t.Helper()
	c, err := parseFixture(t, dir, yaml)
	if err != nil {
		t.Fatalf("Parse: unexpected error:\n%v", err)
	}
	return c
}

// asConfigError unwraps an *Error or fails the test.
func asConfigError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *config.Error", err, err)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("errors.Is(err, ErrInvalid) = false for %v", err)
	}
	return e
}

// base is a minimal valid head for test configs.
const base = "mcp:\n  listen: 127.0.0.1:8717\n"
