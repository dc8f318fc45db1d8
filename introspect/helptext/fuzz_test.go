package helptext

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fuzzSeeds are small texts exercising each option-line form, added to the
// captured help texts.
var fuzzSeeds = []string{
	"",
	"usage: git x\n\n    -v, --[no-]verbose    be loud\n    -r, --rebase[=(false|true)]\n                          rebase\n",
	"Usage:\n  x [flags]\n\nAvailable Commands:\n  a   A\n\nFlags:\n  -o, --output string   Output\n      --n int   N\n",
	"Options:\n    -A, --all=false:\n\tAll.\n\n    --size=500:\n\tSize.\n",
	"  -a, --all      all\n      --color[=WHEN]   color\n  -T, --tabsize=COLS\n                 tabs\n",
	" -d, --data <data>   HTTP POST data\n     --aws <a[:b[:c]]> AWS\n",
	"NAME\n       x - y\n\nOPTIONS\n       -q, --quiet, --no-quiet\n           Quiet.\n",
	"-x  do x\n--file=PATH  read\n--level <n> set\n",
	"  -a <, -b <, -c [, -d (, -e <\n",
	"  --x=\"unterminated\n  -S[<keyid  \n  --y[=<<<]\n",
	"\x1b[1m--bold\x1b[0m  b\n_\bu_\bn  u\n",
	"NAME\n       git-log - Show\n\nDIFF FORMATTING\n       --stat[=<width>[,<name-width>[,<count>]]]\n           Stat.\n" +
		"       -L<start>,<end>:<file>, -L:<funcname>:<file>\n           Trace.\n           --numstat, --dirstat,\n" +
		"       -<number>, -n <number>, --max-count=<number>\n           Limit.\n       [--] <path>...\n           Paths.\n",
}

// seedChunk is the most a seed holds. The captured texts are cut into
// pieces of whole lines this long: the fuzz engine minimizes every new
// interesting input (for up to a minute by default), and minimizing a 47 KiB
// man page stalls a 30 s run; pieces keep the engine fuzzing.
const seedChunk = 2048

// addSeeds seeds f with every captured help text, in pieces, and
// fuzzSeeds.
func addSeeds(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		for _, piece := range chunks(readTestdata(f, file), seedChunk) {
			f.Add(piece)
		}
	}
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
}

// chunks cuts text into pieces of at most n bytes, at line ends where it
// can.
func chunks(text string, n int) []string {
	var out []string
	for len(text) > n {
		cut := strings.LastIndexByte(text[:n], '\n') + 1
		if cut == 0 {
			cut = n
		}
		out = append(out, text[:cut])
		text = text[cut:]
	}
	if text != "" {
		out = append(out, text)
	}
	return out
}

// FuzzParse: Parse never panics; ok means something was found, and what
// was found satisfies checkInvariants (valid spellings, Value and Type
// consistent, valid subcommand tokens, no duplicates, one-line
// descriptions); each flag is found again by its own spellings.
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, text string) {
		h, ok := Parse(text)
		if !ok {
			if len(h.Flags) != 0 || len(h.Subcommands) != 0 || h.Style != "" {
				t.Fatalf("Parse: ok = false with a non-zero Help %+v", h)
			}
			return
		}
		if h.Empty() {
			t.Fatalf("Parse: ok = true with no flags and no subcommands")
		}
		checkInvariants(t, h)
		for _, fl := range h.Flags {
			if fl.Long != "" {
				if got, found := h.Flag(fl.Long); !found || got.Long != fl.Long {
					t.Errorf("Flag(%q) = %+v, %v; want the flag listed", fl.Long, got, found)
				}
			}
			if fl.Short != "" {
				if got, found := h.Flag(fl.Short); !found || got.Short != fl.Short {
					t.Errorf("Flag(%q) = %+v, %v; want a flag with that short form", fl.Short, got, found)
				}
			}
			if fl.Negatable {
				neg := "--no-" + strings.TrimPrefix(fl.Long, "--")
				if got, found := h.Flag(neg); !found || got.Long != neg {
					t.Errorf("Flag(%q) for negatable %q = %+v, %v", neg, fl.Long, got, found)
				}
			}
		}
		for _, s := range h.Subcommands {
			if !h.HasSubcommand(s.Name) {
				t.Errorf("HasSubcommand(%q) = false for a listed subcommand", s.Name)
			}
		}
		if h.ShortHelpTaken() && !h.ShortHelpReused() {
			t.Errorf("ShortHelpTaken without ShortHelpReused")
		}
	})
}

// One target per style parser: each reads any text as its style and must
// keep the invariants and its style name.
func FuzzParseGit(f *testing.F)      { fuzzStyle(f, parseGit, StyleGit) }
func FuzzParseCobra(f *testing.F)    { fuzzStyle(f, parseCobra, StyleCobra) }
func FuzzParseGNU(f *testing.F)      { fuzzStyle(f, parseGNU, StyleGNU) }
func FuzzParseMan(f *testing.F)      { fuzzStyle(f, parseMan, StyleGNU) }
func FuzzParseFallback(f *testing.F) { fuzzStyle(f, parseFallback, StyleFallback) }

func fuzzStyle(f *testing.F, parse func(string) Help, style string) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, text string) {
		h := parse(text)
		if h.Style != style {
			t.Fatalf("Style = %q, want %q", h.Style, style)
		}
		checkInvariants(t, h)
		if style == StyleFallback && len(h.Subcommands) > 0 {
			t.Errorf("the fallback listed subcommands %v", subNames(h))
		}
	})
}

// FuzzParseLarge: Parse of the input repeated past 1 MiB finishes. A
// quadratic path shows up as the fuzz engine's own timeout (or a collapse
// in executions per second), not as an assertion on time.
//
// Its seed corpus is small (each seed costs two 1 MiB parses in every go
// test run): fuzzSeeds and the first piece of a few captured texts.
func FuzzParseLarge(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	for _, name := range []string{"git_pull_help_man.txt", "kubectl_get_help.txt", "ls_help.txt", "gcloud_help.txt"} {
		f.Add(chunks(readTestdata(f, filepath.Join("testdata", name)), seedChunk)[0])
	}
	f.Fuzz(func(t *testing.T, text string) {
		if text == "" {
			return
		}
		big := strings.Repeat(text, (1<<20)/len(text)+1)
		h, ok := Parse(big)
		if ok {
			checkInvariants(t, h)
		}
		// One line of the whole input: the worst case for per-line work.
		if h, ok := Parse(strings.ReplaceAll(big, "\n", " ")); ok {
			checkInvariants(t, h)
		}
	})
}

// TestParseLargeInputs runs hostile 1 MiB shapes through Parse as plain
// tests (the fuzz seeds only run FuzzParseLarge on small texts repeated).
func TestParseLargeInputs(t *testing.T) {
	const size = 1 << 20
	fill := func(unit string) string { return strings.Repeat(unit, size/len(unit)+1) }
	cases := map[string]string{
		"one line of commas and open brackets": "  " + fill("-a <, "),
		"one line of nested brackets":          "  --x[=" + fill("[<("),
		"one long flag name":                   "  --" + fill("a"),
		"a million option lines":               fill("  -a, --all   x\n"),
		"deep continuation":                    "  -a   x\n" + fill("                 more words\n"),
		"quotes that never close":              "  --x='" + fill("a, "),
		"usage lines everywhere":               fill("usage: git help help\n"),
		"backspaces":                           fill("a\b"),
		"escape sequences":                     fill("\x1b[1m"),
		"man headings":                         fill("OPTIONS\n       -q\n"),
		"command lists":                        fill("Commands:\n  a   b\n"),
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if h, ok := Parse(text); ok {
				checkInvariants(t, h)
			}
		})
	}
}

// BenchmarkParse shows Parse's cost growing linearly with input size: the
// ns/op of the 1 MiB case should be about four times the 256 KiB one.
func BenchmarkParse(b *testing.B) {
	base := readTestdata(b, filepath.Join("testdata", "tar_help.txt")) +
		readTestdata(b, filepath.Join("testdata", "kubectl_get_help.txt")) +
		readTestdata(b, filepath.Join("testdata", "git_pull_help_man.txt"))
	for _, size := range []int{64 << 10, 256 << 10, 1 << 20} {
		text := strings.Repeat(base, size/len(base)+1)[:size]
		b.Run(strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				Parse(text)
			}
		})
	}
}
