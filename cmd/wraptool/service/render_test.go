package service

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// hostile is a path holding everything the formats give meaning to:
// spaces, both quotes, a backslash, a specifier, a variable, markup.
const hostile = `/home/o'brien/my "tools"/a\b/100% $HOME <x> & y`

var specs = []struct {
	name string
	spec Spec
}{
	{"plain", Spec{Binary: "/home/you/go/bin/wraptool", Config: "/home/you/.config/wraptool/config.yaml",
		Env: []Var{{"HOME", "/home/you"}, {"PATH", "/home/you/go/bin:/usr/bin:/bin"}}, Log: "/home/you/Library/Logs/wraptool.log"}},
	{"hostile", Spec{Binary: "/opt/my tools/100% <x> & y/wraptool", Config: hostile + "/config.yaml",
		Env: []Var{{"HOME", hostile}}, Log: hostile + "/wraptool.log"}},
	{"no environment and no log", Spec{Binary: "/usr/local/bin/wraptool", Config: "/etc/wraptool.yaml"}},
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

func goldenName(name, ext string) string { return strings.ReplaceAll(name, " ", "-") + ext }

// Both renderers match their golden files, for plain and hostile paths.
func TestRenderGolden(t *testing.T) {
	for _, tc := range specs {
		t.Run(tc.name, func(t *testing.T) {
			unit, err := SystemdUnit(tc.spec)
			if err != nil {
				t.Fatalf("SystemdUnit: %v", err)
			}
			golden(t, goldenName(tc.name, ".service"), unit)
			plist, err := LaunchdPlist(tc.spec)
			if err != nil {
				t.Fatalf("LaunchdPlist: %v", err)
			}
			golden(t, goldenName(tc.name, ".plist"), plist)
		})
	}
}

// The plist is well-formed XML, and what launchd will run, read back
// with encoding/xml, is exactly the binary, --config, the config and
// serve: no path, however hostile, adds or splits an argument.
func TestPlistParsesAsXMLToTheSameArguments(t *testing.T) {
	t.Parallel()
	for _, tc := range specs {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			plist, err := LaunchdPlist(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			d := xml.NewDecoder(strings.NewReader(plist))
			d.Strict = true
			for {
				_, err := d.Token()
				if err != nil {
					if err.Error() != "EOF" {
						t.Fatalf("the plist is not well-formed XML: %v\n%s", err, plist)
					}
					break
				}
			}
			got, err := ProgramArguments([]byte(plist))
			if err != nil {
				t.Fatal(err)
			}
			want := []string{tc.spec.Binary, "--config", tc.spec.Config, "serve"}
			if !slices.Equal(got, want) {
				t.Errorf("ProgramArguments = %q, want %q", got, want)
			}
			if c, ok := ConfigOfPlist([]byte(plist)); !ok || c != tc.spec.Config {
				t.Errorf("ConfigOfPlist = %q, %v; want %q, true", c, ok, tc.spec.Config)
			}
			if !IsOurs([]byte(plist)) {
				t.Error("IsOurs(plist) = false, want true")
			}
		})
	}
}

// The unit's ExecStart, split as systemd splits it (quotes, backslash
// escapes, %% and $$), gives back exactly the four arguments.
func TestUnitExecStartSplitsToTheSameArguments(t *testing.T) {
	t.Parallel()
	for _, tc := range specs {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			unit, err := SystemdUnit(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			var exec string
			for _, line := range strings.Split(unit, "\n") {
				if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
					exec = v
				}
			}
			got := splitSystemd(t, exec)
			want := []string{tc.spec.Binary, "--config", tc.spec.Config, "serve"}
			if !slices.Equal(got, want) {
				t.Errorf("ExecStart splits to %q, want %q", got, want)
			}
			if c, ok := ConfigOfUnit([]byte(unit)); !ok || c != tc.spec.Config {
				t.Errorf("ConfigOfUnit = %q, %v; want %q, true", c, ok, tc.spec.Config)
			}
		})
	}
}

// splitSystemd is systemd's reading of an ExecStart line for the forms the
// renderer writes: double-quoted words, \\ and \" escapes, %% and $$.
func splitSystemd(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	rs := []rune(line)
	for i := 0; i < len(rs); {
		if rs[i] == ' ' {
			i++
			continue
		}
		if rs[i] != '"' {
			t.Fatalf("unquoted word at %d of %q", i, line)
		}
		var w strings.Builder
		i++
		for ; i < len(rs) && rs[i] != '"'; i++ {
			switch {
			case rs[i] == '\\' && i+1 < len(rs):
				i++
				w.WriteRune(rs[i])
			case (rs[i] == '%' || rs[i] == '$') && i+1 < len(rs) && rs[i+1] == rs[i]:
				i++
				w.WriteRune(rs[i])
			case rs[i] == '%' || rs[i] == '$':
				t.Fatalf("a lone %c (a specifier or variable) at %d of %q", rs[i], i, line)
			default:
				w.WriteRune(rs[i])
			}
		}
		if i >= len(rs) {
			t.Fatalf("unbalanced quote in %q", line)
		}
		i++
		words = append(words, w.String())
	}
	return words
}

// What no quoting can carry is refused with ErrUnsafe and a message that
// names the value: newlines (a second unit line), NUL, other controls,
// invalid UTF-8, relative or unclean paths, bad variable names, and a `$`
// in the unit's program path.
func TestRenderRefusesWhatItCannotQuote(t *testing.T) {
	t.Parallel()
	ok := Spec{Binary: "/bin/wraptool", Config: "/c.yaml"}
	with := func(f func(*Spec)) Spec { s := ok; f(&s); return s }
	for _, tc := range []struct {
		name      string
		spec      Spec
		unitOnly  bool
		wantInErr string
	}{
		{"a newline in the config would start a new unit line", with(func(s *Spec) { s.Config = "/c.yaml\nExecStartPre=/bin/evil" }), false, `config "/c.yaml\nExecStartPre=/bin/evil"`},
		{"a carriage return in the binary", with(func(s *Spec) { s.Binary = "/bin/wrap\rtool" }), false, "control character"},
		{"a NUL in the log path", with(func(s *Spec) { s.Log = "/log\x00x" }), false, "control character"},
		{"an escape sequence in HOME", with(func(s *Spec) { s.Env = []Var{{"HOME", "/home/\x1b[2J"}} }), false, "control character"},
		{"a line separator", with(func(s *Spec) { s.Config = "/a\u2028b" }), false, "U+2028"},
		{"invalid UTF-8", with(func(s *Spec) { s.Config = "/a\xffb" }), false, "UTF-8"},
		{"a relative config", with(func(s *Spec) { s.Config = "config.yaml" }), false, "absolute"},
		{"an unclean binary path", with(func(s *Spec) { s.Binary = "/bin/../tmp/wraptool" }), false, "absolute"},
		{"an empty binary", with(func(s *Spec) { s.Binary = "" }), false, "absolute"},
		{"a variable name with =", with(func(s *Spec) { s.Env = []Var{{"A=B", "x"}} }), false, "variable name"},
		{"a variable name with a newline", with(func(s *Spec) { s.Env = []Var{{"A\nB", "x"}} }), false, "variable name"},
		{"a $ in the program path of a unit", with(func(s *Spec) { s.Binary = "/opt/$HOME/wraptool" }), true, `holds "$"`},
		{"a quote in the program path of a unit", with(func(s *Spec) { s.Binary = `/opt/"x"/wraptool` }), true, `holds "\""`},
		{"an apostrophe in the program path of a unit", with(func(s *Spec) { s.Binary = "/home/o'brien/wraptool" }), true, `holds "'"`},
		{"a backslash in the program path of a unit", with(func(s *Spec) { s.Binary = `/opt/a\b/wraptool` }), true, `holds "\\"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, uerr := SystemdUnit(tc.spec)
			_, perr := LaunchdPlist(tc.spec)
			if !errors.Is(uerr, ErrUnsafe) || !strings.Contains(uerr.Error(), tc.wantInErr) {
				t.Errorf("SystemdUnit error = %v, want ErrUnsafe naming %q", uerr, tc.wantInErr)
			}
			if tc.unitOnly {
				if perr != nil {
					t.Errorf("LaunchdPlist error = %v, want none (a plist holds `$` as text)", perr)
				}
			} else if !errors.Is(perr, ErrUnsafe) || !strings.Contains(perr.Error(), tc.wantInErr) {
				t.Errorf("LaunchdPlist error = %v, want ErrUnsafe naming %q", perr, tc.wantInErr)
			}
		})
	}
}

// A file the operator wrote is not ours: no marker, a marker further
// down, or a plist with a different first comment.
func TestIsOurs(t *testing.T) {
	t.Parallel()
	unit, _ := SystemdUnit(specs[0].spec)
	plist, _ := LaunchdPlist(specs[0].spec)
	for _, tc := range []struct {
		name    string
		content string
		want    bool
	}{
		{"our unit", unit, true},
		{"our plist", plist, true},
		{"an operator's unit", "[Unit]\nDescription=mine\n", false},
		{"the marker below the first line", "[Unit]\n# " + Marker + "\n", false},
		{"an operator's plist", "<?xml version=\"1.0\"?>\n<plist/>\n", false},
		{"an empty file", "", false},
		{"a plist marker in a unit", "<?xml\n", false},
		{"an XML declaration and nothing after it", "<?xml", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := IsOurs([]byte(tc.content)); got != tc.want {
				t.Errorf("IsOurs = %v, want %v", got, tc.want)
			}
		})
	}
	if _, ok := ConfigOfUnit([]byte("[Unit]\n# config: \"/x\"\n")); ok {
		t.Error("ConfigOfUnit read a config from a unit wraptool did not write")
	}
}

// systemd-analyze verify accepts the rendered unit, hostile paths
// included, where the tool exists; the binary must exist for it, so it
// is a script at a hostile path.
func TestUnitPassesSystemdAnalyzeVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed, so the unit is checked only by its golden file and the split test")
	}
	// The program's folder holds what a unit's program path may (space,
	// %, &, <); the config's folder what only an argument may (quotes,
	// backslash, $).
	bindir := filepath.Join(t.TempDir(), "my tools 100% & <dir>")
	dir := filepath.Join(t.TempDir(), `it's "a" 100% \ & $HOME <dir>`)
	for _, d := range []string{bindir, dir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(bindir, "wrap tool")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	unit, err := SystemdUnit(Spec{Binary: bin, Config: filepath.Join(dir, "con$fig.yaml"), Env: []Var{{"HOME", dir}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), Unit)
	if err := os.WriteFile(file, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), analyze, "verify", file).CombinedOutput()
	if err != nil || bytes.Contains(out, []byte(Unit)) {
		t.Errorf("systemd-analyze verify: %v\n%s\nunit:\n%s", err, out, unit)
	}
}

// Whatever the paths, a rendering either is refused or reads back, as
// systemd and launchd read it, as exactly the four arguments: no path can
// add an argument, a line or an element.
func FuzzRenderReadsBackTheSameArguments(f *testing.F) {
	f.Add("/opt/wraptool", hostile+"/config.yaml", "/home/you")
	f.Add("/a b/w", "/c\nExecStartPre=/x", "/h")
	f.Add("/w", "/c]]></string><string>evil", "/h<!--")
	f.Fuzz(func(t *testing.T, bin, config, home string) {
		spec := Spec{Binary: bin, Config: config, Env: []Var{{"HOME", home}}, Log: home}
		want := []string{bin, "--config", config, "serve"}
		if unit, err := SystemdUnit(spec); err == nil {
			lines := strings.Split(unit, "\n")
			var execs []string
			for _, l := range lines {
				if v, ok := strings.CutPrefix(l, "ExecStart="); ok {
					execs = append(execs, v)
				}
			}
			if len(execs) != 1 || len(lines) != 19 {
				t.Fatalf("the unit has %d ExecStart lines and %d lines:\n%s", len(execs), len(lines), unit)
			}
			if got := splitSystemd(t, execs[0]); !slices.Equal(got, want) {
				t.Fatalf("ExecStart splits to %q, want %q", got, want)
			}
		}
		if plist, err := LaunchdPlist(spec); err == nil {
			got, err := ProgramArguments([]byte(plist))
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("ProgramArguments = %q, %v; want %q\n%s", got, err, want, plist)
			}
		}
	})
}
