package helptext

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.json from the parser's output")

// goldenHelp is Help as the golden files show it: kinds and types by name,
// so a diff reads without a table of constants.
type goldenHelp struct {
	Style       string
	Description string       `json:",omitempty"`
	HelpCommand bool         `json:",omitempty"`
	Subcommands []Subcommand `json:",omitempty"`
	Flags       []goldenFlag `json:",omitempty"`
}

type goldenFlag struct {
	Short       string `json:",omitempty"`
	Long        string `json:",omitempty"`
	Value       string
	Placeholder string `json:",omitempty"`
	Type        string
	Default     string `json:",omitempty"`
	Negatable   bool   `json:",omitempty"`
	Description string `json:",omitempty"`
}

func toGolden(h Help) goldenHelp {
	g := goldenHelp{Style: h.Style, Description: h.Description, HelpCommand: h.HelpCommand, Subcommands: h.Subcommands}
	for _, f := range h.Flags {
		g.Flags = append(g.Flags, goldenFlag{
			Short: f.Short, Long: f.Long, Value: f.Value.String(), Placeholder: f.Placeholder,
			Type: f.Type.String(), Default: f.Default, Negatable: f.Negatable, Description: f.Description,
		})
	}
	return g
}

// TestGolden parses every captured help text and compares the whole result
// with testdata/golden/<name>.json; run with -update to rewrite them after a
// deliberate change, and read the diff.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txt")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h, ok := Parse(readTestdata(t, file))
			if !ok {
				t.Fatalf("Parse(%s): ok = false, want true", file)
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false) // placeholders are full of <>
			enc.SetIndent("", "  ")
			if err := enc.Encode(toGolden(h)); err != nil {
				t.Fatal(err)
			}
			got := buf.Bytes()
			path := filepath.Join("testdata", "golden", name+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden (run go test -update to create it): %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Parse(%s) differs from %s (run go test -run TestGolden -update and review the diff):\n%s", file, path, lineDiff(string(want), string(got)))
			}
		})
	}
}

func readTestdata(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lineDiff shows the first lines where want and got differ, enough to see
// what changed without a diff library.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 20; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("line " + strconv.Itoa(i+1) + ":\n  - " + wl + "\n  + " + gl + "\n")
			shown++
		}
	}
	return b.String()
}
