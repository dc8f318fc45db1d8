package integration

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/policy/config/configtest"
)

// TestHookShellQuotesTheSummary shows a shell hook, allowed now that no
// argument carries the assistant's words: it quotes "$WRAPTOOL_SUMMARY",
// gets the summary's exact text, and a rationale's $(…) and `…` stay text.
// The hook's own output file is waited for, so the markers' absence is
// checked after the hook has run, not before.
func TestHookShellQuotesTheSummary(t *testing.T) {
	slow(t, "a shell hook quoting the summary")
	t.Parallel()
	dir := t.TempDir()
	// A folder of its own: a confined hook cannot create entries directly
	// in the config's folder, and the markers must be files the hook could
	// have made.
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(work, "summary.out")
	pwned, pwned2 := filepath.Join(work, "PWNED"), filepath.Join(work, "PWNED2")
	// Written to a temporary name and renamed, so the file appears whole.
	script := `printf '%s' "$WRAPTOOL_SUMMARY" > "` + out + `.tmp" && mv "` + out + `.tmp" "` + out + `"`
	cfg := hookConfig(t, dir, "/bin/sh", "-c", script)
	s := startServerIn(t, dir, cfg)
	c := s.Connect(t, "/mcp")

	rationale := "rebased; $(touch " + pwned + ") and `touch " + pwned2 + "` \"quoted\" 'single'"
	request(t, c, askFor("fake", []string{"push"}, []string{"--force"}, rationale, ""))
	waittest.Until(t, eventTimeout, func() error {
		if _, err := os.Stat(out); err != nil {
			return fmt.Errorf("the hook's output %s: %v\n%s", out, err, s.Log())
		}
		return nil
	})
	s.WaitLog(t, `msg="on_request hook ran"`, 1, eventTimeout)

	want := "fake push --force: " + rationale
	if got := string(configtest.ReadFile(t, out)); got != want {
		t.Errorf("the hook got the summary\n%q\nwant exactly\n%q", got, want)
	}
	for _, marker := range []string{pwned, pwned2} {
		if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s exists (%v): the rationale's shell syntax was run", marker, err)
		}
	}
}

// TestHookSummaryPlaceholdersAreRefused shows `config validate` refusing the
// argument forms that once handed the assistant's words to a program that
// runs its arguments, naming the field and where the summary is instead.
func TestHookSummaryPlaceholdersAreRefused(t *testing.T) {
	slow(t, "refused hook summary placeholders")
	t.Parallel()
	cases := []struct {
		name  string
		argv  []string
		field string
	}{
		{"rbash -c", []string{"/usr/bin/rbash", "-c", "{summary}"}, "mcp.on_request[2]"},
		{"setpriv sh -c", []string{"/usr/bin/setpriv", "/bin/sh", "-c", "{summary}"}, "mcp.on_request[3]"},
		{"make -E", []string{"/usr/bin/make", "-f", "/dev/null", "-E", "{summary}"}, "mcp.on_request[4]"},
		{"summary_json to notify-send", []string{"notify-send", "{summary_json}"}, "mcp.on_request[1]"},
		{"inside a longer argument", []string{"/bin/sh", "-c", "notify-send {summary}"}, "mcp.on_request[2]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "config.yaml")
			if err := os.WriteFile(path, []byte(hookConfig(t, dir, tc.argv...)), 0o600); err != nil {
				t.Fatal(err)
			}
			_, stderr, code := runWraptool(t, nil, "config", "validate", path)
			if code != 1 {
				t.Fatalf("config validate exited %d, want 1 (stderr %q)", code, stderr)
			}
			for _, want := range []string{path + ":", tc.field + ":", "is not a placeholder", "WRAPTOOL_SUMMARY", "stdin"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr %q\nlacks %q", stderr, want)
				}
			}
		})
	}
}
