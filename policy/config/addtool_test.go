package config

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// hostile are descriptions a tool's help could print to break out of a
// comment: line breaks of every kind YAML knows, YAML syntax, escape
// sequences, very long lines, non-ASCII.
var hostile = []string{
	"plain description",
	"breaks\u2028out: true",
	"para\u2029graph- subcommand: [x]",
	"next\u0085line",
	"cr\rallow: [{subcommand: [x]}]",
	"crlf\r\n  - subcommand: [x]",
	"vt\vff\fnul\x00end",
	"# a comment # inside",
	"key: value",
	"---\n...\n--- !!map",
	"\x1b[2J\x1b[31mred\x1b]0;title\x07",
	"- subcommand: [evil]\n  flags: []",
	strings.Repeat("long ", 200),
	"caf\u00e9 na\u00efve \u202eevil\u202c \u200bzero \U0001F600",
	"\xff\xfe invalid utf-8",
	"'quote\" and `back` & *alias &anchor !tag %percent @at |pipe >gt {brace} [bracket]",
}

func addToolFixture(t testing.TB) (dir, path string, o *Options) {
	dir = fixture(t)
	return dir, filepath.Join(dir, "config.yaml"), &Options{Home: filepath.Join(dir, "home"), Getenv: func(string) string { return "" }}
}

const addBase = `# top comment
mcp:
  listen: 127.0.0.1:8717  # port
tools:
  first:
    binary: $T/bin/tool
    allow:
      - subcommand: [a]
`

func TestCommentTextIsOnePrintableASCIILine(t *testing.T) {
	t.Parallel()
	for _, s := range hostile {
		got := CommentText(s, MaxCatalogText)
		if len(got) > MaxCatalogText {
			t.Errorf("CommentText(%q) is %d bytes, want at most %d", s, len(got), MaxCatalogText)
		}
		for i := 0; i < len(got); i++ {
			if got[i] < 0x20 || got[i] > 0x7e {
				t.Errorf("CommentText(%q) = %q holds byte %#x", s, got, got[i])
			}
		}
	}
	if got, want := CommentText("  List\tpull\n requests  ", 120), "List pull requests"; got != want {
		t.Errorf("CommentText = %q, want %q", got, want)
	}
	if got, want := CommentText("one two three four", 12), "one two..."; got != want {
		t.Errorf("CommentText cut = %q, want %q", got, want)
	}
}

func TestHostileHelpTextStaysInComments(t *testing.T) {
	t.Parallel()
	dir, path, o := addToolFixture(t)
	data := []byte(strings.ReplaceAll(addBase, "$T", dir))
	for _, d := range hostile {
		nt := NewTool{Name: "gh", Binary: filepath.Join(dir, "bin/tool"), Catalog: []CatalogRule{
			{Subcommand: []string{"pr", "list"}, Description: d, Flags: []string{"--state", d, "--x: y"}},
			{Subcommand: []string{"evil: x"}, Description: d},
			{Subcommand: []string{"true"}, Description: d},
		}}
		out, n, err := PlanAddTool(path, data, nt, o)
		if err != nil {
			t.Fatalf("description %q: %v", d, err)
		}
		if n != 2 {
			t.Errorf("description %q: %d rules written, want 2 (the invalid token left out)", d, n)
		}
		if !bytes.HasPrefix(out, data) {
			t.Errorf("description %q: the original bytes are not kept", d)
		}
		assertNoRules(t, out, "gh")
		if bytes.Contains(out, []byte("evil: x")) && !bytes.Contains(out, []byte("# ")) {
			t.Errorf("an invalid token was written")
		}
	}
}

// assertNoRules parses out and checks tools.<name> has an empty allow and
// nothing but binary and allow.
func assertNoRules(t testing.TB, out []byte, name string) {
	t.Helper()
	var doc struct {
		Tools map[string]map[string]any `yaml:"tools"`
	}
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("the result does not parse: %v\n%s", err, out)
	}
	tool := doc.Tools[name]
	if len(tool) != 2 || tool["binary"] == nil {
		t.Fatalf("tools.%s = %v, want binary and allow only\n%s", name, tool, out)
	}
	if a, ok := tool["allow"]; !ok || a != nil && len(a.([]any)) != 0 {
		t.Fatalf("tools.%s.allow = %v, want empty\n%s", name, a, out)
	}
}

func TestAddToolLayouts(t *testing.T) {
	t.Parallel()
	dir, path, o := addToolFixture(t)
	rules := []CatalogRule{{Subcommand: []string{"pr"}, Description: "Manage pull requests", Flags: []string{"--state"}}}
	for _, tt := range []struct {
		name, in, want string
	}{
		{"an empty tools: {} becomes a block mapping",
			"mcp:\n  listen: 127.0.0.1:8717\ntools: {}   # none yet\n# trailer\n",
			"mcp:\n  listen: 127.0.0.1:8717\ntools:   # none yet\n  gh:\n    binary: BIN\n    # Uncomment what the assistant may run (from `gh --help`).\n    allow:\n      # - subcommand: [pr]              # Manage pull requests\n      #   flags: []                     # has --state\n      #   arg_constraints: { positional_max: 0 }\n# trailer\n"},
		{"a null tools: gets the tool",
			"mcp:\n  listen: 127.0.0.1:8717\ntools:\n",
			"mcp:\n  listen: 127.0.0.1:8717\ntools:\n  gh:\n    binary: BIN\n    # Uncomment what the assistant may run (from `gh --help`).\n    allow:\n      # - subcommand: [pr]              # Manage pull requests\n      #   flags: []                     # has --state\n      #   arg_constraints: { positional_max: 0 }\n"},
		{"no tools: key gets one at the end, with no final newline kept",
			"mcp:\n    listen: 127.0.0.1:8717",
			"mcp:\n    listen: 127.0.0.1:8717\ntools:\n    gh:\n        binary: BIN\n        # Uncomment what the assistant may run (from `gh --help`).\n        allow:\n            # - subcommand: [pr]              # Manage pull requests\n            #   flags: []                     # has --state\n            #   arg_constraints: { positional_max: 0 }"},
		{"CRLF line endings are kept",
			"mcp:\r\n  listen: 127.0.0.1:8717\r\ntools:\r\n  a:\r\n    binary: BIN\r\n",
			"mcp:\r\n  listen: 127.0.0.1:8717\r\ntools:\r\n  a:\r\n    binary: BIN\r\n  gh:\r\n    binary: BIN\r\n    # Uncomment what the assistant may run (from `gh --help`).\r\n    allow:\r\n      # - subcommand: [pr]              # Manage pull requests\r\n      #   flags: []                     # has --state\r\n      #   arg_constraints: { positional_max: 0 }\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bin := filepath.Join(dir, "bin/tool")
			in := strings.ReplaceAll(tt.in, "BIN", bin)
			out, _, err := PlanAddTool(path, []byte(in), NewTool{Name: "gh", Binary: bin, Catalog: rules}, o)
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.ReplaceAll(tt.want, "BIN", bin); string(out) != want {
				t.Errorf("got:\n%q\nwant:\n%q", out, want)
			}
		})
	}
}

func TestAddToolRefusals(t *testing.T) {
	t.Parallel()
	dir, path, o := addToolFixture(t)
	data := []byte(strings.ReplaceAll(addBase, "$T", dir))
	for _, tt := range []struct {
		name string
		nt   NewTool
		in   string
		want error
	}{
		{"an existing key", NewTool{Name: "first", Binary: filepath.Join(dir, "bin/tool")}, "", ErrToolExists},
		{"a bad name", NewTool{Name: "a b", Binary: filepath.Join(dir, "bin/tool")}, "", ErrInvalidToolName},
		{"a reserved name", NewTool{Name: "wraptoolx", Binary: filepath.Join(dir, "bin/tool")}, "", ErrInvalidToolName},
		{"a flow tools mapping", NewTool{Name: "gh", Binary: filepath.Join(dir, "bin/tool")},
			"mcp:\n  listen: 127.0.0.1:8717\ntools: {first: {binary: " + filepath.Join(dir, "bin/tool") + "}}\n", ErrUnsupportedLayout},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := data
			if tt.in != "" {
				in = []byte(tt.in)
			}
			if _, _, err := PlanAddTool(path, in, tt.nt, o); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if err := CheckBinary(filepath.Join(dir, "bin/plain")); !errors.Is(err, ErrBadBinary) {
		t.Errorf("CheckBinary(not executable) = %v, want ErrBadBinary", err)
	}
	if err := CheckBinary("bin/tool"); !errors.Is(err, ErrBadBinary) {
		t.Errorf("CheckBinary(relative) = %v, want ErrBadBinary", err)
	}
}

// FuzzCatalogComment: whatever a help text says of a subcommand or a flag,
// the config written holds the new tool with an empty allow and keeps the
// original bytes. The seeds (run by go test) are the hostile descriptions.
func FuzzCatalogComment(f *testing.F) {
	for _, s := range hostile {
		f.Add(s, "--flag", "sub")
	}
	dir, path, o := addToolFixture(f)
	data := []byte(strings.ReplaceAll(addBase, "$T", dir))
	f.Fuzz(func(t *testing.T, desc, flag, tok string) {
		nt := NewTool{Name: "gh", Binary: filepath.Join(dir, "bin/tool"), Catalog: []CatalogRule{
			{Subcommand: []string{"pr", tok}, Description: desc, Flags: []string{flag, "--ok"}},
			{Subcommand: []string{"x"}, Description: desc + flag + tok},
		}}
		out, _, err := PlanAddTool(path, data, nt, o)
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		if !bytes.HasPrefix(out, data) {
			t.Fatalf("the original bytes are not kept")
		}
		assertNoRules(t, out, "gh")
		c, err := Parse(path, out, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Tools["gh"].Allow) != 0 {
			t.Fatalf("the new tool has rules")
		}
	})
}
