package danger

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestPatternHolds(t *testing.T) {
	sends, runs := Of(SendsCredentials), Of(RunsCode)
	writes, reads := Of(WritesFiles), Of(ReadsFiles)
	tests := []struct {
		name    string
		pattern string
		cs      Classes
		want    bool
	}{
		// docs/danger.md's examples.
		{"two hosts spelled out", `(db1|db2)\.internal\.example\.com`, sends, true},
		{"OWNER/REPO in one organization", `my-org/[A-Za-z0-9._-]+`, sends, true},
		{"a database name for psql -d", `[a-z][a-z0-9_]*`, sends, true},
		{"one S3 endpoint", `https://s3\.eu-west-1\.amazonaws\.com`, sends, true},
		{"a folder under build", `build/[A-Za-z0-9_-][A-Za-z0-9._-]*`, writes, true},
		{"a folder under build, read", `build/[A-Za-z0-9_-][A-Za-z0-9._-]*`, reads, true},
		{"an API path", `https://api\.example\.com/v1/[a-z/]*`, sends, true},
		// Too loose.
		{".*", `.*`, sends, false},
		{".+", `.+`, runs, false},
		{".* for files", `.*`, writes, false},
		{".* with no class", `.*`, nil, false},
		{"(?s).*", `(?s).*`, nil, false},
		{"a program then anything", `git-receive-pack.*`, runs, false},
		{"no semicolon", `[^;]*`, runs, false},
		{"any subdomain over https", `https://.*\.example\.com`, sends, false},
		{"any subdomain", `.*\.example\.com`, sends, false},
		{"a URL prefix", `https://example\.com.*`, sends, false},
		{"a host then anything", `db\.example\.com.*`, sends, false},
		// From the second review: a repeat in the middle takes what no
		// probe around the ends spells out.
		{"any folder between two paths", `/usr/.*/git-upload-pack`, runs, false},
		{"non-blanks between two paths", `/\S*/git-upload-pack`, runs, false},
		{"a path of words, dots and slashes", `[\w./-]+/git-upload-pack`, runs, false},
		{"any program in /usr/bin", `/usr/bin/[\w.-]+`, runs, false},
		{"any lower-case program in /usr/bin", `/usr/bin/[a-z0-9]+`, runs, false},
		{"a path that climbs out of /usr/bin", `/usr/bin/[\w./-]+`, runs, false},
		{"a host part that takes ? or #", `https://[^/]*\.mycorp\.com`, sends, false},
		{"a host part that takes ? or # before a path", `https://[^/@]*\.mycorp\.com(/.*)?`, sends, false},
		{"a file name under a folder that can climb out", `out/.*\.patch`, writes, false},
		{"one program, spelled out", `/usr/lib/git-core/git-upload-pack`, runs, true},
		{"any subdomain of one label", `[a-z]+\.example\.com`, sends, false},
		{"a host list", `([a-z.]+,)*db\.example\.com`, sends, false},
		{"a socket folder or a host", `/[a-z/]*|db\.example\.com`, sends, false},
		{"a connection string", `host=[a-z.]+ dbname=[a-z]+`, sends, false},
		{"a second branch loose at its end", `db1|x.*`, sends, false},
		{"a second branch loose at its start", `db1|.*x`, runs, false},
		{"a path anywhere", `/.*`, reads, false},
		{"anything under build", `build/.*`, writes, false},
		{"a name with dots and slashes", `[A-Za-z0-9./_-]+`, reads, false},
		{"a relative path", `[a-z./]+`, writes, false},
		{"a home folder", `~/[a-z._/]+`, reads, false},
		{"a command and its arguments", `[a-z]+( [a-z-]+)*`, runs, false},
		{"any word runs any program, sh included", `[a-z]+`, runs, false},
		{"two pagers spelled out", `less|more`, runs, true},
		{"a word for a host flag", `[a-z]+`, sends, true},
		{"an alternation of words", `json|text|table|yaml`, nil, true},
		// prints-credentials: nothing holds it.
		{"prints-credentials, a literal", `token`, Of(PrintsCredentials), false},
		{"prints-credentials with another class", `x`, Of(SendsCredentials, PrintsCredentials), false},
		// The empty string is no probe.
		{"only the empty string", ``, sends, true},
		{"an optional word", `([a-z]+)?`, sends, true},
		// Hostile patterns.
		{"does not compile", `(`, sends, false},
		{"does not compile, no class", `[a-`, nil, false},
		{"closes the group and widens it", `x)|(.*`, sends, false},
		{"closes the group, anchored again", `x)$|^(.*`, nil, false},
		{"a control character", "db\x00", sends, true},
		{"a newline lets the rest through", "db\n.*", nil, false},
		{"a bidi override literal", "\u202edb", sends, true},
		{"invalid UTF-8 does not compile", "db\xff", sends, false},
		{"matches nothing", `[^\x00-\x{10FFFF}]`, sends, false},
		{"a literal longer than the shortest value is built", strings.Repeat("a", 5000), sends, false},
		{"a long literal", strings.Repeat("a", 4000), sends, true},
		{"a repeat beyond the bound", `(a{1000}){10}`, sends, false},
		{"a case-folded word", `(?i)db`, sends, true},
		{"word boundaries", `\bdb\b`, sends, true},
		{"an = form", `--host=db`, sends, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PatternHolds(tt.pattern, tt.cs); got != tt.want {
				t.Errorf("PatternHolds(%.60q, %v) = %v, want %v", tt.pattern, tt.cs, got, tt.want)
			}
		})
	}
}

// TestPatternHoldsTakesNoProbe checks the probes against the regexp
// itself: a pattern that holds takes none of its classes' escapes.
func TestPatternHoldsTakesNoProbe(t *testing.T) {
	for _, c := range []Class{SendsCredentials, RunsCode, WritesFiles, ReadsFiles} {
		for _, v := range escapes[c].values {
			quoted := regexp.QuoteMeta(v)
			if PatternHolds(quoted, Of(c)) {
				t.Errorf("%s: %q, which takes only the probe %q, holds", c, quoted, v)
			}
		}
	}
	if PatternHolds(regexp.QuoteMeta(looseProbe), nil) {
		t.Errorf("a pattern taking only the loose probe holds")
	}
}

// presetLine finds a flag_constraints pattern in a preset: the flag and
// the single-quoted pattern.
var presetLine = regexp.MustCompile(`^\s+"?(-[^":\s]+)"?:\s*\{.*\bpattern:\s*'((?:[^']|'')*)'`)

// presetRule finds an allow rule's subcommand.
var presetRule = regexp.MustCompile(`^\s*-\s*subcommand:\s*\[([^\]]*)\]`)

// presetArgs finds the positional patterns of a rule.
var presetArgs = regexp.MustCompile(`\bpatterns:\s*\[(.*)\]`)

// presetQuoted is one single-quoted YAML string.
var presetQuoted = regexp.MustCompile(`'((?:[^']|'')*)'`)

// presetLoose are the preset patterns that take nearly anything, on a
// flag or argument the catalog says nothing about: a search query and a
// revision are free text by design. A new one fails the test.
var presetLoose = map[string]bool{
	`[A-Za-z0-9@][A-Za-z0-9 :@._/-]{0,199}`:                       true,
	`[A-Za-z0-9_@]([A-Za-z0-9_/@^~{}:-]|\.[A-Za-z0-9_/@^~{}:-])*`: true,
}

// TestPresetPatternsHold checks every pattern the presets ship: each
// flag's pattern holds that flag's classes in the catalog, and every
// other pattern (a flag with no class, a positional argument) is not too
// loose, unless presetLoose names it.
func TestPresetPatternsHold(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "config", "presets", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no presets found")
	}
	checked := 0
	check := func(where, pattern string, cs Classes) {
		t.Helper()
		checked++
		if PatternHolds(pattern, cs) {
			return
		}
		if len(cs) == 0 && presetLoose[pattern] {
			return
		}
		t.Errorf("%s: pattern %q does not hold %v", where, pattern, cs)
	}
	for _, f := range files {
		if strings.HasSuffix(f, ".tests.yaml") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cli, _, _ := strings.Cut(filepath.Base(f), "-")
		var sub []string
		for i, line := range strings.Split(string(data), "\n") {
			if m := presetRule.FindStringSubmatch(line); m != nil {
				sub = strings.Fields(strings.ReplaceAll(m[1], ",", " "))
			}
			if m := presetLine.FindStringSubmatch(line); m != nil {
				where := fmt.Sprintf("%s:%d: %s %s %s", f, i+1, cli, strings.Join(sub, " "), m[1])
				check(where, strings.ReplaceAll(m[2], "''", "'"), Flag(cli, sub, m[1]))
			}
			if m := presetArgs.FindStringSubmatch(line); m != nil {
				for _, q := range presetQuoted.FindAllStringSubmatch(m[1], -1) {
					check(fmt.Sprintf("%s:%d: positional", f, i+1), strings.ReplaceAll(q[1], "''", "'"), nil)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no preset patterns found")
	}
}

// FuzzPatternHolds checks that no pattern panics, that one that does not
// compile never holds, that nothing holds prints-credentials, and that a
// pattern that holds takes neither the loose probe nor its classes'
// probe values.
func FuzzPatternHolds(f *testing.F) {
	for _, s := range []string{
		``, `.*`, `.+`, `(`, `[a-`, `x)|(.*`, `(db1|db2)\.internal\.example\.com`,
		`my-org/[A-Za-z0-9._-]+`, `[a-z][a-z0-9_]*`, `git-receive-pack.*`, `[^;]*`,
		`(a{1000}){1000}`, `\b`, `(?i)X`, "\x00", "\u202e", `\pL+`, `[[:alpha:]]`,
		`^$`, `$^`, `a*?`, `(?U)a+`,
	} {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, pattern string, mask uint8) {
		if len(pattern) > 1000 {
			return
		}
		var cs Classes
		for i, c := range All() {
			if mask&(1<<i) != 0 {
				cs = append(cs, c)
			}
		}
		cs = Of(cs...)
		holds := PatternHolds(pattern, cs)
		if !holds {
			return
		}
		re, err := regexp.Compile("^(?:" + pattern + ")$")
		if err != nil {
			t.Fatalf("%q does not compile but holds", pattern)
		}
		for _, c := range cs {
			if c == PrintsCredentials {
				t.Fatalf("%q holds prints-credentials", pattern)
			}
			for _, v := range escapes[c].values {
				if re.MatchString(v) {
					t.Fatalf("%q holds %s but takes %q", pattern, c, v)
				}
			}
		}
		if re.MatchString(looseProbe) {
			t.Fatalf("%q holds but takes the loose probe", pattern)
		}
	})
}
