package config

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/wraptool/wraptool/policy/config/configtest"
)

// writeLargeConfig writes a config of configtest.LargeTools (tools × rules,
// 500 × 10 for the README's performance figures) into dir, with a token file
// and one shared executable and env file, and returns the config's path.
func writeLargeConfig(tb testing.TB, dir string, tools, rules int) string {
	tb.Helper()
	mustWrite := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			tb.Fatal(err)
		}
		return p
	}
	bin := mustWrite("bin/tool", "#!/bin/sh\n", 0o755)
	env := mustWrite("env/tool.env", "A=1\n", 0o600)
	tok := mustWrite("tok/mcp", "mcp-token\n", 0o600)
	head := fmt.Sprintf("mcp:\n  listen: 127.0.0.1:8717\n  auth_token_file: %s\ntools:\n", tok)
	return mustWrite("config.yaml", head+configtest.LargeTools(tools, rules, bin, env), 0o600)
}

// BenchmarkLoad500x10 is the load of a large config, 5,000 rules as 500
// tools × 10: read, parsed, validated and compiled, without introspection.
// It is the README's config-load figure.
func BenchmarkLoad500x10(b *testing.B) {
	path := writeLargeConfig(b, b.TempDir(), 500, 10)
	o := &LoadOptions{Tokens: TokensOptional, Paths: &Options{Home: b.TempDir(), Getenv: func(string) string { return "" }}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadFile(context.Background(), path, o); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLargeConfigLoads keeps the benchmark's config valid: a generator
// drifting out of the schema would otherwise benchmark an error path.
func TestLargeConfigLoads(t *testing.T) {
	path := writeLargeConfig(t, t.TempDir(), 20, 10)
	l, err := LoadFile(context.Background(), path, &LoadOptions{Tokens: TokensOptional, Paths: &Options{Home: t.TempDir(), Getenv: func(string) string { return "" }}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(l.Policy.Rules()), 20*10; got != want {
		t.Errorf("exposed rules = %d, want %d", got, want)
	}
}

// BenchmarkYAMLFloor500x10 is the part of BenchmarkLoad500x10 no change of
// ours can remove: yaml.v3 parsing the same bytes into a node tree, which
// every load needs for line numbers and strict keys.
func BenchmarkYAMLFloor500x10(b *testing.B) {
	data, err := os.ReadFile(writeLargeConfig(b, b.TempDir(), 500, 10))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var n yaml.Node
		if err := yaml.Unmarshal(data, &n); err != nil {
			b.Fatal(err)
		}
	}
}
