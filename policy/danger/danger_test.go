package danger

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// squash makes runs of white space one blank, so a quote survives the
// help's line wrapping and tabs.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

func TestEveryEntryQuotesItsSource(t *testing.T) {
	texts := map[string]string{}
	for _, e := range Entries() {
		name := e.CLI + " " + strings.Join(e.Subcommand, " ") + " " + e.Flag
		t.Run(squash(name), func(t *testing.T) {
			text, ok := texts[e.Source]
			if !ok {
				data, err := os.ReadFile(filepath.Join("testdata", e.Source))
				if err != nil {
					t.Fatalf("source: %v", err)
				}
				text = squash(string(data))
				texts[e.Source] = text
			}
			if e.Quote == "" || !strings.Contains(text, squash(e.Quote)) {
				t.Errorf("testdata/%s does not contain the quote %q", e.Source, e.Quote)
			}
			switch {
			case e.Flag != "" && !containsFlag(e.Quote, e.Flag):
				t.Errorf("the quote %q does not name %s", e.Quote, e.Flag)
			case e.Flag == "" && !strings.Contains(e.Quote, e.Subcommand[len(e.Subcommand)-1]):
				t.Errorf("the quote %q does not name the subcommand %q", e.Quote, e.Subcommand)
			}
			if e.Why == "" || strings.ContainsAny(e.Why, "\n\t") {
				t.Errorf("Why %q: want one line", e.Why)
			}
			if e.Flag == "" && len(e.Subcommand) == 0 {
				t.Errorf("an entry names a flag or a subcommand")
			}
			if e.Root && len(e.Subcommand) > 0 {
				t.Errorf("a Root entry has no subcommand")
			}
		})
	}
}

// containsFlag reports whether text names flag as a whole word (-c is not
// found in --config).
func containsFlag(text, flag string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], flag)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(flag)
		before := j == 0 || !isFlagChar(text[j-1])
		after := end == len(text) || !isFlagChar(text[end])
		if before && after {
			return true
		}
		i = j + 1
	}
}

func isFlagChar(c byte) bool {
	return c == '-' || c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func TestLookupFlag(t *testing.T) {
	tests := []struct {
		cli  string
		sub  []string
		flag string
		want Classes
	}{
		{"psql", nil, "-h", Of(SendsCredentials)},
		{"psql", nil, "-d", Of(SendsCredentials)},
		{"psql", nil, "--dbname=postgresql://u@evil/db", Of(SendsCredentials)},
		{"aws", []string{"s3", "ls"}, "--endpoint-url", Of(SendsCredentials)},
		{"git", nil, "-c", Of(SendsCredentials, RunsCode)},
		{"git", []string{"log"}, "-c", nil}, // combined diff, not a config value
		{"gcloud", []string{"compute", "instances", "list"}, "--flags-file", Of(SendsCredentials, RunsCode, ReadsFiles)},
		// Generic names, for any CLI.
		{"mytool", nil, "--host", Of(SendsCredentials)},
		{"mytool", []string{"x"}, "--endpoint", Of(SendsCredentials)},
		{"mytool", []string{"x"}, "--endpoint-url=https://evil", Of(SendsCredentials)},
		{"mytool", nil, "--exec-path", Of(RunsCode)},
		{"mytool", nil, "--token-file", Of(ReadsFiles)},
		{"mytool", nil, "--kubeconfig", Of(SendsCredentials, ReadsFiles)},
		{"mytool", nil, "-o", Of(WritesFiles)},
		{"mytool", nil, "--file", nil}, // "--*-file" needs a name before -file
		{"mytool", nil, "--hosts", nil},
		{"mytool", nil, "--verbose", nil},
		{"mytool", nil, "", nil},
	}
	for _, tt := range tests {
		if got := Flag(tt.cli, tt.sub, tt.flag); !slices.Equal(got, tt.want) {
			t.Errorf("Flag(%q, %q, %q) = %v, want %v", tt.cli, tt.sub, tt.flag, got, tt.want)
		}
	}
}

func TestCLI(t *testing.T) {
	tests := []struct{ key, binary, want string }{
		{"git", "/usr/bin/git", "git"},
		{"mygit", "/usr/bin/git", "git"},
		{"git", "/opt/wrapped-git", "git"},
		{"fake", "/opt/fake", "fake"},
		{"fake", "", "fake"},
	}
	for _, tt := range tests {
		if got := CLI(tt.key, tt.binary); got != tt.want {
			t.Errorf("CLI(%q, %q) = %q, want %q", tt.key, tt.binary, got, tt.want)
		}
	}
}

func TestClasses(t *testing.T) {
	cs := Of(ReadsFiles, SendsCredentials, ReadsFiles)
	if got := cs.String(); got != "sends-credentials, reads-files" {
		t.Errorf("String = %q", got)
	}
	if got := cs.Effect(); got != "sends your credentials to the host it names; reads a file it names" {
		t.Errorf("Effect = %q", got)
	}
	if !cs.Grave() || Of(WritesFiles, ReadsFiles).Grave() {
		t.Errorf("Grave: sends-credentials is grave, files alone are not")
	}
	for _, c := range All() {
		if c.Effect() == string(c) || c.Fix() == "" {
			t.Errorf("%s: no effect or fix text", c)
		}
	}
}

func TestExplain(t *testing.T) {
	got := Explain("git", nil, []string{"-c", "--verbose", "-c", "--exec-path=/tmp/x"})
	var flags []string
	for _, tc := range got {
		flags = append(flags, tc.Flag)
	}
	if !slices.Equal(flags, []string{"-c", "--exec-path"}) {
		t.Errorf("Explain flags = %q", flags)
	}
}
