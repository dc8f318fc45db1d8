package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/policy/requests"
)

// TestApproveLearnsOnlyWhatTheConfigLetsItRun shows approve's on-demand
// help runs: the assistant chose the subcommand, so a request the merge
// refuses (a subcommand a deny rule covers, a tool the config does not have)
// runs nothing, and one it accepts runs only the fixed help forms of that
// subcommand, never the subcommand itself.
func TestApproveLearnsOnlyWhatTheConfigLetsItRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		req     requests.Request
		learned string // the request's subcommand whose help is run; "" for none
	}{
		{"a subcommand a deny rule covers runs nothing", requests.Request{Tool: "git", Subcommand: []string{"config"}, Flags: []string{"--add"}}, ""},
		{"a two-token subcommand under the deny rule runs nothing", requests.Request{Tool: "git", Subcommand: []string{"config", "alias.x"}, Flags: []string{}}, ""},
		{"a tool the config does not have runs nothing", requests.Request{Tool: "sh", Subcommand: []string{"c"}, Flags: []string{"-c"}}, ""},
		{"an allowed subcommand runs only its help forms", requests.Request{Tool: "git", Subcommand: []string{"commit"}, Flags: []string{"-m"}},
			"commit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := configtest.NewFixture(t, map[string]string{"config.yaml": requestsConfig})
			argv := filepath.Join(t.TempDir(), "argv")
			// Prints nothing parseable, so every form runs; logs each argv.
			script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >>" + argv + "\n"
			if err := os.WriteFile(filepath.Join(dir, "bin", "git"), []byte(script), 0o700); err != nil {
				t.Fatal(err)
			}
			logPath := filepath.Join(dir, "requests.jsonl")
			tc.req.Rationale = "r"
			s, err := requests.Submit(t.Context(), logPath, tc.req, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			env := map[string]string{"HOME": filepath.Join(dir, "home")}
			run(t, env, "--config", filepath.Join(dir, "config.yaml"), "requests", "approve", s.ID, "--once")
			data, _ := os.ReadFile(argv)
			// The config's own rules (push) and the root are learned too,
			// the cache being empty; every run is a fixed help form.
			forms := map[string]bool{"--help": true, "-h": true, "push --help": true, "push -h": true, "help push": true}
			if tc.learned != "" {
				forms[tc.learned+" --help"], forms[tc.learned+" -h"], forms["help "+tc.learned] = true, true, true
			}
			ranLearned := false
			for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				if l != "" && !forms[l] {
					t.Errorf("ran git %s, which is not a help form of a subcommand it may learn", l)
				}
				ranLearned = ranLearned || (tc.learned != "" && strings.HasPrefix(l, tc.learned+" "))
			}
			if tc.learned != "" && !ranLearned {
				t.Errorf("the help of %s was not learned on demand; runs:\n%s", tc.learned, data)
			}
		})
	}
}
