package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy"
)

// FuzzParse checks properties of the loader on any input: it never panics;
// a rejection is an *Error placed in the given file; and anything accepted is
// complete (defaults set, help flags seeded, exposed names legal) and
// re-validates unchanged.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.yaml")
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

// FuzzDecode holds the walker's decoder to yaml.v3's: on any document the
// walker accepts, it either gives what root.Decode gives, field for field
// (nil or empty, and a list's capacity, which decides whether seeding the
// help flags copies it), or declines and leaves the config untouched.
func FuzzDecode(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.yaml")
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		base + "tools:\n  git:\n    binary: /bin/git\n    timeout: 5s\n    env: {A: x, B: ~, C: 1, D: !!binary Zm9v, E: \"\"}\n    env_files: []\n" +
			"    allow:\n      - subcommand: [pull, ~, 'x']\n        flags: [--rebase, -v]\n        flag_constraints:\n          \"--rebase\": {type: string, pattern: \"[a-z]+\", min: 1, max: !!int \"5\", required: yes}\n" +
			"          -v: ~\n        arg_constraints: {positional_max: 0x10, patterns: [a, ~]}\n    deny:\n      - subcommand: [auth]\n",
		base + "mcp_servers:\n  fs:\n    command: x\n    args: ~\n    allow: [{tool: read}]\n    init_timeout: 1m\n",
		"mcp: {listen: x, allowed_cwd_roots: [a, b], max_concurrent_calls: 3, elicit_clients: [{name: a, token_file: b}], on_request: [\"x\", !!str 1]}\nadmin: ~\n",
		"mcp:\n  listen: !!str 1\n  log_level: !custom debug\ntools: {123: {binary: x}, true: {binary: y}}\n",
		"mcp: !!map {listen: x}\ntools: !!null\n",
		"tools:\n  a:\n    env: {! <<: x}\n",
		"tools:\n  \"\": {binary: x}\n  a: {binary: !!null ~}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		root, err := parseDocument("fuzz.yaml", data)
		if err != nil || root == nil {
			return
		}
		lines := newLineIndex(countFields(root))
		w := &walker{file: "fuzz.yaml", lines: &lines}
		w.walk(root, reflect.TypeOf(Config{}), 0)
		if len(w.errs) > 0 {
			return
		}
		var got, want Config
		decoded := w.decode(root, &got)
		err = root.Decode(&want)
		switch {
		case !decoded:
			if diff := sameValue(reflect.ValueOf(got), reflect.ValueOf(Config{}), ""); diff != "" {
				t.Fatalf("a declined decode left the config changed: %s", diff)
			}
		case err != nil:
			t.Fatalf("decoded a document yaml.v3 refuses (%v)", err)
		default:
			if diff := sameValue(reflect.ValueOf(got), reflect.ValueOf(want), ""); diff != "" {
				t.Fatalf("decode differs from yaml.v3's: %s", diff)
			}
		}
	})
}

// sameValue compares two decoded values as reflect.DeepEqual does (the YAML
// fields only), and slices' capacities too; it returns where they differ.
func sameValue(got, want reflect.Value, at string) string {
	switch got.Kind() {
	case reflect.Pointer:
		if got.IsNil() || want.IsNil() {
			if got.IsNil() != want.IsNil() {
				return fmt.Sprintf("%s: got nil %v, want nil %v", at, got.IsNil(), want.IsNil())
			}
			return ""
		}
		return sameValue(got.Elem(), want.Elem(), at)
	case reflect.Slice:
		if got.IsNil() != want.IsNil() || got.Len() != want.Len() || got.Cap() != want.Cap() {
			return fmt.Sprintf("%s: got %#v (nil %v, cap %d), want %#v (nil %v, cap %d)", at, got, got.IsNil(), got.Cap(), want, want.IsNil(), want.Cap())
		}
		for i := 0; i < got.Len(); i++ {
			if d := sameValue(got.Index(i), want.Index(i), fmt.Sprintf("%s[%d]", at, i)); d != "" {
				return d
			}
		}
	case reflect.Map:
		if got.IsNil() != want.IsNil() || got.Len() != want.Len() {
			return fmt.Sprintf("%s: got %#v, want %#v", at, got, want)
		}
		for _, k := range want.MapKeys() {
			g := got.MapIndex(k)
			if !g.IsValid() {
				return fmt.Sprintf("%s: key %v missing", at, k)
			}
			if d := sameValue(g, want.MapIndex(k), fmt.Sprintf("%s[%v]", at, k)); d != "" {
				return d
			}
		}
	case reflect.Struct:
		for i := 0; i < got.NumField(); i++ {
			f := got.Type().Field(i)
			if tag := f.Tag.Get("yaml"); tag == "" || tag == "-" || !f.IsExported() {
				continue
			}
			if d := sameValue(got.Field(i), want.Field(i), at+"."+f.Name); d != "" {
				return d
			}
		}
	default:
		if !reflect.DeepEqual(got.Interface(), want.Interface()) {
			return fmt.Sprintf("%s: got %#v, want %#v", at, got, want)
		}
	}
	return ""
}
