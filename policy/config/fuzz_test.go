package config

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/wraptool/wraptool/policy"
)

// FuzzParse checks properties of the loader on any input: it never panics;
// a rejection is an *Error placed in the given file; and anything accepted is
// complete (defaults set, help flags seeded, exposed names legal) and
// re-validates unchanged.
func FuzzParse(f *testing.F) {
	addParseSeeds(f)
	dir := fixture(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		data = bytes.ReplaceAll(data, []byte("$T"), []byte(dir))
		file := filepath.Join(dir, "fuzz.yaml")
		c, err := Parse(file, data, &Options{Home: filepath.Join(dir, "home"), Getenv: func(string) string { return "" }})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("rejection %v is %T, not *Error", err, err)
			}
			if !strings.HasPrefix(err.Error(), file+":") {
				t.Fatalf("rejection %q does not start with the file", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted config fails to re-validate: %v", err)
		}
		if c.MCP.Transport == "" || c.MCP.LogLevel == "" || c.MCP.RequestLog == "" || c.MCP.Listen == "" {
			t.Fatalf("defaults missing: %+v", c.MCP)
		}
		for name, tool := range c.Tools {
			if !policy.ValidToken(name) || tool.Timeout <= 0 || !filepath.IsAbs(tool.Binary) {
				t.Fatalf("accepted a bad tool %q: %+v", name, tool)
			}
			for _, r := range tool.Allow {
				if n := policy.ToolName(name, r.Subcommand); len(n) > policy.MaxToolNameLen || !policy.ValidToken(n) {
					t.Fatalf("accepted exposed name %q", n)
				}
				before := slices.Clone(r.Flags)
				for _, h := range []string{"-h", "--help"} {
					// A help flag is not seeded where another of the
					// rule's flags has its parameter name (an operator's
					// --h): one parameter cannot be two flags.
					taken := slices.ContainsFunc(append(slices.Clone(r.Flags), r.DenyFlags...), func(f string) bool {
						return f != h && policy.PropertyName(f) == policy.PropertyName(h)
					})
					if !r.Denies(h) && !slices.Contains(r.Flags, h) && !taken {
						t.Fatalf("rule %v lacks seeded %s", r.Subcommand, h)
					}
				}
				SeedHelpFlags(c)
				if !slices.Equal(before, r.Flags) {
					t.Fatalf("seeding is not idempotent: %q then %q", before, r.Flags)
				}
				for _, fl := range r.Flags {
					if !policy.ValidFlag(fl) {
						t.Fatalf("accepted flag %q", fl)
					}
				}
			}
		}
	})
}

// addParseSeeds gives a fuzz target of Parse the starter configs and a few
// documents each of which reaches a different check.
func addParseSeeds(f *testing.F) {
	seeds, _ := filepath.Glob("edit/testdata/*.yaml") // the starter configs
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"",
		base,
		base + "tools:\n  git:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: [pull]\n        flags: [--rebase, -v]\n        deny_flags: [--help]\n        flag_constraints:\n          \"--rebase\": {type: string, pattern: \"[a-z]+\"}\n        arg_constraints: {positional_max: 2}\n    deny:\n      - subcommand: [auth]\n",
		base + "mcp_servers:\n  fs:\n    command: x\n    allow: [{tool: read}]\n",
		"server:\n  web:\n    listen: x\n",
		"mcp: {listen: \"127.0.0.1:1\", auth_token_file: $T/tok/a}\nadmin: {listen: \"127.0.0.1:2\", auth_token_file: $T/tok/b}\n",
		"a: &x 1\nb: *x\n",
		"---\n---\n",
		"tools: {a: {allow: [~]}}\n",
	} {
		f.Add([]byte(s))
	}
}

// FuzzStrict holds the walker to yaml.v3's strict decoding: a config is
// decoded from its node tree, where yaml.v3 has no strict mode, so every
// document Parse accepts must also decode with KnownFields set, or a key the
// walker let through would be dropped without a word.
func FuzzStrict(f *testing.F) {
	addParseSeeds(f)
	for _, s := range []string{
		base + "tools:\n  git:\n    binary: $T/bin/tool\n    timeout: 5s\n    env: {A: x, B: ~, C: 1, D: !!binary Zm9v, E: \"\"}\n    env_files: []\n" +
			"    allow:\n      - subcommand: [pull, 'x']\n        flags: [--rebase, -v]\n        flag_constraints:\n          \"--rebase\": {type: string, pattern: \"[a-z]+\", min: 1, max: !!int \"5\", required: yes}\n" +
			"        arg_constraints: {positional_max: 0x10, patterns: [a, b]}\n    deny:\n      - subcommand: [auth]\n",
		base + "tools:\n  git:\n    binary: $T/bin/tool\n    allow:\n      - subcommand: [pull]\n        flag_constraint: {}\n",
		base + "mcp_servers:\n  fs:\n    command: x\n    args: ~\n    allow: [{tool: read}]\n    init_timeout: 1m\n    extra: 1\n",
		"mcp: !!map {listen: \"127.0.0.1:1\", auth_token_file: $T/tok/a, log_level: !!str debug}\ntools: !!null\n",
	} {
		f.Add([]byte(s))
	}
	dir := fixture(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		data = bytes.ReplaceAll(data, []byte("$T"), []byte(dir))
		file := filepath.Join(dir, "fuzz.yaml")
		if _, err := Parse(file, data, &Options{Home: filepath.Join(dir, "home"), Getenv: func(string) string { return "" }}); err != nil {
			return
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		var c Config
		if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
			t.Fatalf("Parse accepted a document yaml.v3's strict decoding refuses: %v\n%s", err, data)
		}
	})
}
