package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/policy/requests"
)

// TestApproveAsksForIKnow: a grant or an apply of a flag that can hand the
// credentials away with no pattern holding it is refused without --i-know,
// whatever --yes says; the effect shows the class beside the flag; a plain
// approval (which allows nothing) needs nothing more.
func TestApproveAsksForIKnow(t *testing.T) {
	t.Parallel()
	// git push --receive-pack names the program git runs on the remote
	// side of a push: runs-code. The stand-in git's push help lists it.
	req := requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--receive-pack"}, Rationale: "mirror"}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		status   string
		want     []string
	}{
		{name: "--yes alone is refused for a grant", args: []string{"--once", "--yes"}, wantCode: 1, status: "pending",
			want: []string{"  --receive-pack  takes any value  — receive pack program  ! runs-code: runs a program it names, with your credentials",
				"not approved, ID stays pending: it allows what can hand your credentials away, and no pattern holds it: " +
					"--receive-pack (runs-code); approve with --i-know if you mean it"}},
		{name: "without a terminal nothing can be typed: refused", args: []string{"--for", "1h"}, wantCode: 1, status: "pending",
			want: []string{"approve with --i-know"}},
		{name: "--apply needs it too, and the config is not touched", args: []string{"--apply", "--yes"}, wantCode: 1, status: "pending",
			want: []string{"approve with --i-know"}},
		{name: "--i-know grants it", args: []string{"--once", "--i-know"}, status: "approved", want: []string{"approved ID once"}},
		{name: "--i-know applies it", args: []string{"--apply", "--i-know", "--yes"}, status: "approved", want: []string{"added flags --receive-pack to git push"}},
		{name: "a plain approval allows nothing and needs nothing", args: []string{"--yes"}, status: "approved",
			want: []string{"approved ID (nothing is allowed until a rule exists"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newRequestsFixture(t, req)
			id := f.ids[0]
			before := string(configtest.ReadFile(t, f.config))
			stdout, stderr, code := f.run(t, append([]string{"requests", "approve", id}, tt.args...)...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout, stderr)
			}
			all := stdout + stderr
			for _, w := range tt.want {
				if w = strings.ReplaceAll(w, "ID", id); !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
			if got := f.record(t, id).Status; got != tt.status {
				t.Errorf("status %q, want %q", got, tt.status)
			}
			if tt.wantCode != 0 && string(configtest.ReadFile(t, f.config)) != before {
				t.Errorf("a refused approval changed the config")
			}
		})
	}
}

// TestValidateWarnsOfWhatCanHandCredentialsAway: config validate names each
// allowed flag that can send the credentials elsewhere, run code or read a
// file the assistant names, with no pattern holding it; file, line and
// field first, then the class, its effect and the fix. Held by a pattern,
// the same flags draw no warning.
func TestValidateWarnsOfWhatCanHandCredentialsAway(t *testing.T) {
	t.Parallel()
	const cfg = `mcp:
  listen: 127.0.0.1:8717
  request_log: $DIR/requests.jsonl
tools:
  psql:
    binary: $DIR/bin/psql
    allow:
      - subcommand: []
        flags: [-d]
  aws:
    binary: $DIR/bin/aws
    allow:
      - subcommand: [s3, ls]
        flags: [--endpoint-url]
        arg_constraints: { positional_max: 0 }
  gh:
    binary: $DIR/bin/gh
    allow:
      - subcommand: [pr, list]
        flags: [--hostname]
        arg_constraints: { positional_max: 0 }
  git:
    binary: $DIR/bin/git
    allow:
      - subcommand: []
        flags: [-c]
        arg_constraints: { positional_max: 0 }
  gcloud:
    binary: $DIR/bin/gcloud
    allow:
      - subcommand: [compute, instances, list]
        flags: [--flags-file]
        arg_constraints: { positional_max: 0 }
`
	held := strings.NewReplacer(
		"flags: [-d]\n", "flags: [-d]\n        flag_constraints: { -d: { pattern: 'app' } }\n        arg_constraints: { positional_max: 0 }\n",
		"flags: [--endpoint-url]\n", "flags: [--endpoint-url]\n        flag_constraints: { --endpoint-url: { pattern: 'https://s3\\.internal\\.example\\.com' } }\n",
		"flags: [--hostname]\n", "flags: [--hostname]\n        flag_constraints: { --hostname: { pattern: 'github\\.com' } }\n",
		"flags: [-c]\n", "flags: [-c]\n        flag_constraints: { -c: { type: string, pattern: 'color\\.ui=(true|false)' } }\n",
		"flags: [--flags-file]\n", "flags: [--flags-file]\n        flag_constraints: { --flags-file: { pattern: 'flags\\.yaml' } }\n",
	).Replace(cfg)
	for _, tt := range []struct {
		name, cfg string
		want      []string
	}{
		{"without patterns, one warning each", cfg, []string{
			"config.yaml:9: tools.psql.allow[0].flags[0]: -d is sends-credentials",
			"config.yaml:14: tools.aws.allow[0].flags[0]: --endpoint-url is sends-credentials: it sends your credentials to the host it names, and nothing holds its value; constrain it with flag_constraints[\"--endpoint-url\"].pattern",
			"config.yaml:20: tools.gh.allow[0].flags[0]: --hostname is sends-credentials",
			"config.yaml:26: tools.git.allow[0].flags[0]: -c is sends-credentials, runs-code",
			"config.yaml:32: tools.gcloud.allow[0].flags[0]: --flags-file is sends-credentials, runs-code, reads-files",
		}},
		{"held by patterns, none", held, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := configtest.NewFixture(t, map[string]string{"config.yaml": tt.cfg})
			for _, b := range []string{"psql", "aws", "gh", "git", "gcloud"} {
				configtest.WriteFile(t, filepath.Join(dir, "bin", b), configtest.Expand(recorder, dir), 0o755)
			}
			cfgPath := filepath.Join(dir, "config.yaml")
			stdout, stderr, code := run(t, map[string]string{"HOME": filepath.Join(dir, "home")}, "--config", cfgPath, "config", "validate")
			if code != 0 || !strings.HasPrefix(stdout, "ok: ") {
				t.Fatalf("exit %d\nstdout %q\nstderr:\n%s", code, stdout, stderr)
			}
			var danger []string
			for l := range strings.Lines(stderr) {
				if dangerWarning.MatchString(l) {
					danger = append(danger, l)
				}
			}
			if len(danger) != len(tt.want) {
				t.Errorf("%d danger warnings, want %d:\n%s", len(danger), len(tt.want), stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, "warning: "+cfgPath[:len(cfgPath)-len("config.yaml")]+w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// dangerWarning matches config validate's warnings of the danger catalog's
// classes.
var dangerWarning = regexp.MustCompile(`^warning: .* is (sends-credentials|runs-code|prints-credentials|writes-files|reads-files)\b`)

// TestExactGrantsOfWhatCanHandCredentialsAway: an exact-call grant fixes
// the call's values, but a grant of one that runs a program still takes
// --i-know; and one whose value is longer than the screen shows whole
// (a long --receive-pack value can end in "; id") is refused whatever is
// confirmed.
func TestExactGrantsOfWhatCanHandCredentialsAway(t *testing.T) {
	t.Parallel()
	exact := func(f *requestsFixture, value string) requests.Request {
		r := f.exactPush(t)
		l, err := config.LoadFile(t.Context(), f.config, &config.LoadOptions{Paths: &config.Options{Getenv: func(k string) string { return f.env[k] }}})
		if err != nil {
			t.Fatal(err)
		}
		command, ok := l.Policy.Command(policy.Call{Tool: "git", Subcommand: []string{"push"}, Params: map[string]any{"receive-pack": value}})
		if !ok {
			t.Fatal("no command")
		}
		raw, _ := json.Marshal(map[string]string{"receive-pack": value})
		args, err := requests.CanonicalArguments(raw)
		if err != nil {
			t.Fatal(err)
		}
		r.Flags, r.Call.Arguments, r.Call.Command = []string{"--receive-pack"}, args, command
		return r
	}
	long := "git-receive-pack" + strings.Repeat("_", 300) + "; id > /tmp/PWNED"
	tests := []struct {
		name, value string
		args        []string
		wantCode    int
		want        string
		status      string
	}{
		{"--yes alone is refused", "git-receive-pack", []string{"--once", "--yes"}, 1,
			"it allows what can hand your credentials away, and no pattern holds it: --receive-pack (runs-code); approve with --i-know", "pending"},
		{"--i-know grants it", "git-receive-pack", []string{"--once", "--i-know"}, 0, "approved ID once", "approved"},
		{"a value too long to show whole is refused, --i-know or not", long, []string{"--once", "--i-know"}, 1,
			"not granted, ID stays pending: it allows what can hand your credentials away (--receive-pack (runs-code)), and a word of its command is longer than the 200 characters shown whole", "pending"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newRequestsFixture(t)
			s, err := requests.Submit(t.Context(), f.log, exact(f, tt.value), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			stdout, stderr, code := f.run(t, append([]string{"requests", "approve", s.ID}, tt.args...)...)
			if code != tt.wantCode || !strings.Contains(stdout+stderr, strings.ReplaceAll(tt.want, "ID", s.ID)) {
				t.Errorf("exit %d (want %d)\nstdout:\n%s\nstderr:\n%s\nwant %q", code, tt.wantCode, stdout, stderr, tt.want)
			}
			if got := f.record(t, s.ID).Status; got != tt.status {
				t.Errorf("status %q, want %q", got, tt.status)
			}
		})
	}
}
