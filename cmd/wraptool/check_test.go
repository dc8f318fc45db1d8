package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy/config/configtest"
)

// recorder stands in for every wrapped binary: a run leaves a line in
// $DIR/ran, so a test can prove check starts nothing (not even --help for
// introspection).
const recorder = "#!/bin/sh\necho \"$0 $*\" >> $DIR/ran\n"

// checkFixture is testdata/check/config.yaml (the policy tests' fixture
// as an operator writes it) with recording binaries.
type checkFixture struct {
	dir string
	env map[string]string
}

func newCheckFixture(t *testing.T) *checkFixture {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join("testdata", "check", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := configtest.NewFixture(t, map[string]string{"config.yaml": string(cfg)})
	for _, bin := range []string{"bin/git", "bin/gcloud"} {
		configtest.WriteFile(t, filepath.Join(dir, bin), configtest.Expand(recorder, dir), 0o755)
	}
	f := &checkFixture{dir: dir, env: map[string]string{"HOME": filepath.Join(dir, "home")}}
	t.Cleanup(func() {
		if data, err := os.ReadFile(filepath.Join(dir, "ran")); err == nil {
			t.Errorf("check ran a wrapped binary:\n%s", data)
		}
	})
	return f
}

func (f *checkFixture) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return run(t, f.env, append([]string{"--config", filepath.Join(f.dir, "config.yaml")}, args...)...)
}

// denial is the text of a denial; allowed is the "Allowed flags" list, "" for a
// reason that carries none.
func denial(command, reason, rule, allowed string) string {
	text := "DENIED: '" + command + "' is not permitted.\n\nPolicy: " + reason + ".\n"
	if allowed != "" {
		text += "Allowed flags for '" + rule + "': " + allowed + "\n"
	}
	return text + "\n" + nextStep(command, reason) + "\n"
}

// nextStep is the operator's next step check ends a denial with, by the
// kind of reason.
func nextStep(command, reason string) string {
	tool, _, _ := strings.Cut(command, " ")
	const review = "Next step: if the assistant asked for this, approve its request (wraptool requests list); else "
	switch {
	case strings.HasPrefix(reason, "tool "):
		return "Next step: add the tool with 'wraptool config add " + tool + "', then an allow rule for it."
	case strings.Contains(reason, " is denied for "):
		return "Next step: a deny rule in tools." + tool + " refuses this on purpose; change it only if this should run."
	case strings.HasSuffix(reason, " is not in the allowlist") && !strings.HasPrefix(reason, "flag "):
		return review + "add an allow rule for " + strings.TrimSuffix(reason, " is not in the allowlist") + " to tools." + tool + ".allow."
	case strings.HasPrefix(reason, "no rule matches; the closest is "):
		return review + "add an allow rule for '" + tool + "' to tools." + tool + ".allow."
	}
	return review + "change the rule in tools." + tool + ".allow."
}

func TestCheckDecidesAsThePolicyDoes(t *testing.T) {
	t.Parallel()
	f := newCheckFixture(t)
	const pushFlags = "--set-upstream"
	const listFlags = "--format, --filter, --project, --limit"
	tests := []struct {
		name       string
		words      []string
		wantCode   int
		wantStdout string // exact; $DIR is the fixture folder
		wantNote   string // a substring of stderr; "" means stderr must be empty
	}{
		// Allowed.
		{
			name:       "an allowed command line prints the argv that would run and exits 0",
			words:      []string{"git", "push", "--set-upstream", "origin", "main"},
			wantStdout: "allowed by git_push: $DIR/bin/git push --set-upstream origin main\n",
		},
		{
			name:       "a bare rule allows a subcommand it takes as positional arguments",
			words:      []string{"gcloud", "compute", "instances"},
			wantStdout: "allowed by gcloud: $DIR/bin/gcloud compute instances\n",
		},
		{
			name:       "a shorter rule with positionals counts when the longer one refuses",
			words:      []string{"gcloud", "--verbosity=debug", "compute", "disks", "list"},
			wantStdout: "allowed by gcloud: $DIR/bin/gcloud --verbosity=debug compute disks list\n",
		},
		{
			name:       "a seeded help flag alone is allowed",
			words:      []string{"git", "push", "--help"},
			wantStdout: "allowed by git_push: $DIR/bin/git push --help\n",
		},
		{
			name:       "-h stays allowed where --help is denied",
			words:      []string{"git", "fetch", "-h"},
			wantStdout: "allowed by git_fetch: $DIR/bin/git fetch -h\n",
		},
		{
			name:       "a short flag's value is the next word",
			words:      []string{"git", "commit", "-m", "fix: it", "--amend"},
			wantStdout: "allowed by git_commit: $DIR/bin/git commit -m 'fix: it' --amend\n",
		},
		{
			name:       "a long flag's value may be the next word; the server writes it after '='",
			words:      []string{"git", "log", "--max-count", "5", "main"},
			wantStdout: "allowed by git_log: $DIR/bin/git log --max-count=5 main\n",
			wantNote:   "note: the server writes this call as: git log --max-count=5 main",
		},
		{
			name:       "flags after positional arguments are allowed, with the order the server writes noted",
			words:      []string{"git", "push", "origin", "--set-upstream"},
			wantStdout: "allowed by git_push: $DIR/bin/git push --set-upstream origin\n",
			wantNote:   "note: the server writes this call as: git push --set-upstream origin (flags in schema order",
		},

		// Flags not allowed or denied.
		{
			name:       "a flag missing from the allowlist gets the server's text and exits 3",
			words:      []string{"git", "push", "--force", "origin", "main"},
			wantCode:   exitDenied,
			wantStdout: denial("git push --force origin main", "flag '--force' is not in the allowlist for 'git push'", "git push", pushFlags),
		},
		{
			name:       "an unlisted short flag is a switch, its next word a positional",
			words:      []string{"git", "push", "-m", "x"},
			wantCode:   exitDenied,
			wantStdout: denial("git push -m x", "flag '-m' is not in the allowlist for 'git push'", "git push", pushFlags),
		},
		{
			name:       "bundled short flags are one unknown flag",
			words:      []string{"git", "push", "-rf"},
			wantCode:   exitDenied,
			wantStdout: denial("git push -rf", "flag '-rf' is not in the allowlist for 'git push'", "git push", pushFlags),
		},
		{
			name:       "a rule with no flags of its own lists (none)",
			words:      []string{"git", "pull", "--rebase"},
			wantCode:   exitDenied,
			wantStdout: denial("git pull --rebase", "flag '--rebase' is not in the allowlist for 'git pull'", "git pull", "(none)"),
		},
		{
			name:       "a flag in deny_flags is denied although it is also in flags",
			words:      []string{"gcloud", "compute", "instances", "list", "--project=p", "--quiet"},
			wantCode:   exitDenied,
			wantStdout: denial("gcloud compute instances list --project=p --quiet", "flag '--quiet' is denied for 'gcloud compute instances list'", "gcloud compute instances list", listFlags),
		},
		{
			name:       "a deny: true constraint denies a flag",
			words:      []string{"git", "fetch", "--prune"},
			wantCode:   exitDenied,
			wantStdout: denial("git fetch --prune", "flag '--prune' is denied for 'git fetch'", "git fetch", "--all"),
		},
		{
			name:       "a denied --help is refused",
			words:      []string{"git", "fetch", "--help"},
			wantCode:   exitDenied,
			wantStdout: denial("git fetch --help", "flag '--help' is denied for 'git fetch'", "git fetch", "--all"),
		},
		{
			name:       "a help flag with an argument is refused",
			words:      []string{"git", "push", "--help", "origin"},
			wantCode:   exitDenied,
			wantStdout: denial("git push --help origin", "help flag '--help' runs alone; pass no other flags or arguments", "", ""),
		},

		// Values.
		{
			name:       "a missing required flag is refused with the allowed flags",
			words:      []string{"gcloud", "compute", "instances", "list", "--format=json"},
			wantCode:   exitDenied,
			wantStdout: denial("gcloud compute instances list --format=json", "flag '--project' is required for 'gcloud compute instances list'", "gcloud compute instances list", listFlags),
		},
		{
			name:       "a required boolean left out is missing",
			words:      []string{"git", "tag"},
			wantCode:   exitDenied,
			wantStdout: denial("git tag", "flag '--annotate' is required for 'git tag'", "git tag", "--annotate"),
		},
		{
			name:       "a pattern must match the whole value",
			words:      []string{"gcloud", "compute", "instances", "list", "--project=p", "--filter=abc--x"},
			wantCode:   exitDenied,
			wantStdout: denial("gcloud compute instances list --filter=abc--x --project=p", "value of '--filter' does not match pattern '[a-z]+'", "", ""),
		},
		{
			name:       "a pattern is shown as written",
			words:      []string{"git", "clone", "--branch=Main"},
			wantCode:   exitDenied,
			wantStdout: denial("git clone --branch=Main", "value of '--branch' does not match pattern '^[a-z]+$'", "", ""),
		},
		{
			name:       "an integer flag refuses words",
			words:      []string{"git", "log", "--max-count=five"},
			wantCode:   exitDenied,
			wantStdout: denial("git log --max-count=five", "value of '--max-count' must be an integer", "", ""),
		},
		{
			name:       "an integer flag refuses a fraction",
			words:      []string{"git", "log", "--max-count=2.5"},
			wantCode:   exitDenied,
			wantStdout: denial("git log --max-count=2.5", "value of '--max-count' must be an integer", "", ""),
		},
		{
			name:       "an integer below min is refused",
			words:      []string{"git", "log", "--max-count=0"},
			wantCode:   exitDenied,
			wantStdout: denial("git log --max-count=0", "value of '--max-count' must be >= 1", "", ""),
		},
		{
			name:       "an integer above max is refused, its value given as the next word",
			words:      []string{"git", "log", "--max-count", "51"},
			wantCode:   exitDenied,
			wantStdout: denial("git log --max-count=51", "value of '--max-count' must be <= 50", "", ""),
		},
		{
			name:       "a boolean flag refuses other values",
			words:      []string{"git", "log", "--oneline=yes"},
			wantCode:   exitDenied,
			wantStdout: denial("git log --oneline=yes", "value of '--oneline' must be true or false", "", ""),
		},
		{
			name:       "a string flag written without its value is refused",
			words:      []string{"git", "log", "--format"},
			wantCode:   exitDenied,
			wantStdout: denial("git log --format=true", "value of '--format' must be a string", "", ""),
		},
		{
			name:       "a short flag's value must not begin with a dash",
			words:      []string{"git", "commit", "-m", "--amend"},
			wantCode:   exitDenied,
			wantStdout: denial("git commit -m --amend", "value of '-m' must not begin with '-'", "", ""),
		},
		{
			name:       "a short integer flag refuses a negative number",
			words:      []string{"git", "log", "-n", "-5"},
			wantCode:   exitDenied,
			wantStdout: denial("git log -n -5", "value of '-n' must not begin with '-'", "", ""),
		},

		// Positional arguments.
		{
			name:       "too many positional arguments are refused in the plural",
			words:      []string{"git", "log", "a", "b", "c"},
			wantCode:   exitDenied,
			wantStdout: denial("git log a b c", "at most 2 positional arguments are allowed for 'git log' (got 3)", "", ""),
		},
		{
			name:       "too many positional arguments are refused in the singular",
			words:      []string{"git", "show", "a", "b"},
			wantCode:   exitDenied,
			wantStdout: denial("git show a b", "at most 1 positional argument is allowed for 'git show' (got 2)", "", ""),
		},
		{
			name:       "positional_max 0 refuses any positional argument",
			words:      []string{"git", "status", "x"},
			wantCode:   exitDenied,
			wantStdout: denial("git status x", "at most 0 positional arguments are allowed for 'git status' (got 1)", "", ""),
		},
		{
			name:       "-- is a positional argument the server never writes",
			words:      []string{"git", "log", "main", "--"},
			wantCode:   exitDenied,
			wantStdout: denial("git log main --", "positional argument '--' looks like a flag; pass flags as named parameters", "", ""),
		},
		{
			name:       "a word after -- is a positional argument, never a flag",
			words:      []string{"git", "log", "--", "-rf"},
			wantCode:   exitDenied,
			wantStdout: denial("git log -- -rf", "positional argument '--' looks like a flag; pass flags as named parameters", "", ""),
		},
		{
			name:       "a lone dash is a positional argument that looks like a flag",
			words:      []string{"git", "show", "-"},
			wantCode:   exitDenied,
			wantStdout: denial("git show -", "positional argument '-' looks like a flag; pass flags as named parameters", "", ""),
		},
		{
			name:       "a positional argument with a NUL byte is refused",
			words:      []string{"git", "log", "main", "a\x00"},
			wantCode:   exitDenied,
			wantStdout: denial(`git log main "a\x00"`, `positional argument "a\x00" contains a NUL byte`, "", ""),
		},
		{
			name:       "a positional pattern applies to each argument",
			words:      []string{"git", "pull", "origin", "--rebase=x", "Main"},
			wantCode:   exitDenied,
			wantStdout: denial("git pull origin --rebase=x Main", "positional argument 'Main' does not match pattern '[a-z]+'", "", ""),
		},
		{
			name:       "a shorter rule without the pattern allows what the longer rule's pattern refuses",
			words:      []string{"git", "pull", "origin", "Main"},
			wantStdout: "allowed by git_pull: $DIR/bin/git pull origin Main\n",
		},

		// Deny rules, allow rules, tools.
		{
			name:       "a deny rule covers a longer subcommand by prefix",
			words:      []string{"gcloud", "auth", "login"},
			wantCode:   exitDenied,
			wantStdout: denial("gcloud auth login", "subcommand 'auth' is denied for 'gcloud'", "", ""),
		},
		{
			name:       "a two-token deny rule covers a subcommand followed by an argument",
			words:      []string{"git", "remote", "add", "origin", "https://example.com/r.git"},
			wantCode:   exitDenied,
			wantStdout: denial("git remote add origin https://example.com/r.git", "subcommand 'remote add' is denied for 'git'", "", ""),
		},
		{
			name:       "a deny rule refuses a subcommand that has an allow rule",
			words:      []string{"git", "config", "get", "user.name"},
			wantCode:   exitDenied,
			wantStdout: denial("git config get user.name", "subcommand 'config' is denied for 'git'", "", ""),
		},
		{
			name:       "a subcommand no rule starts is not in the allowlist",
			words:      []string{"git", "rebase", "main"},
			wantCode:   exitDenied,
			wantStdout: denial("git rebase main", "'git rebase' is not in the allowlist", "", ""),
		},
		{
			name:       "options before the subcommand name the rule that came closest",
			words:      []string{"git", "-c", "core.pager=sh", "log"},
			wantCode:   exitDenied,
			wantStdout: denial("git -c core.pager=sh log", "no rule matches; the closest is 'git log', whose subcommand must come first (no rule allows '-c' before it)", "", ""),
		},
		{
			name:       "a hostile word before the subcommand is Go-quoted in the closest-rule reason",
			words:      []string{"git", "-\x1b]0;pwned\a\n", "log"},
			wantCode:   exitDenied,
			wantStdout: denial(`git "-\x1b]0;pwned\a\n" log`, `no rule matches; the closest is 'git log', whose subcommand must come first (no rule allows "-\x1b]0;pwned\a\n" before it)`, "", ""),
		},
		{
			name:       "an unknown hostile tool is Go-quoted in the next step",
			words:      []string{"kube\x1b[2J"},
			wantCode:   exitDenied,
			wantStdout: "DENIED: '\"kube\\x1b[2J\"' is not permitted.\n\nPolicy: tool \"kube\\x1b[2J\" is not configured.\n\nNext step: add the tool with 'wraptool config add \"kube\\x1b[2J\"', then an allow rule for it.\n",
		},
		{
			name:       "an unknown tool is refused",
			words:      []string{"kubectl", "get", "pods", "-o", "yaml"},
			wantCode:   exitDenied,
			wantStdout: denial("kubectl get pods -o yaml", "tool 'kubectl' is not configured", "", ""),
		},

		// Words the server never writes (check's own reasons).
		{
			name:       "a repeated flag is refused: a call passes each flag once",
			words:      []string{"git", "log", "--max-count", "5", "--max-count=6"},
			wantCode:   exitDenied,
			wantStdout: denial("git log --max-count=5", "flag '--max-count' is given more than once; a call passes each flag once", "", ""),
		},
		{
			name:       "a short flag with its value attached is refused where the server separates them",
			words:      []string{"git", "commit", "-mfix"},
			wantCode:   exitDenied,
			wantStdout: denial("git commit -m fix", "the server writes flag '-m' with its value as the next argument, never attached", "", ""),
		},
		{
			name:       "a boolean flag given a value is refused although true would pass the policy",
			words:      []string{"git", "log", "--oneline=true"},
			wantCode:   exitDenied,
			wantStdout: denial("git log --oneline", "the server writes flag '--oneline' alone, never with a value", "", ""),
		},
		{
			name:       "an integer written other than in decimal is refused",
			words:      []string{"git", "clone", "--depth=05"},
			wantCode:   exitDenied,
			wantStdout: denial("git clone --depth=5", "the server writes the value of '--depth' in plain decimal digits", "", ""),
		},

		// Redacted values stay hidden, as in the server's logs and denials.
		{
			name:       "an allowed line hides a redacted value",
			words:      []string{"gcloud", "secrets", "put", "--token=s3cret"},
			wantStdout: "allowed by gcloud_secrets_put: $DIR/bin/gcloud secrets put '--token=***'\n",
		},
		{
			name:       "a denied line hides a redacted value",
			words:      []string{"gcloud", "secrets", "put", "--token=s3cret", "extra"},
			wantCode:   exitDenied,
			wantStdout: denial("gcloud secrets put '--token=***' extra", "at most 0 positional arguments are allowed for 'gcloud secrets put' (got 1)", "", ""),
		},
		{
			name:       "an untyped short flag's value counts as a positional argument; its note hides a redacted value",
			words:      []string{"gcloud", "secrets", "put", "-p", "s3cret"},
			wantCode:   exitDenied,
			wantStdout: denial("gcloud secrets put -p '***'", "at most 0 positional arguments are allowed for 'gcloud secrets put' (got 1)", "", ""),
			wantNote:   "check read it as taking a value, so '***' is its value",
		},

		// Flags whose value-taking nothing settles.
		{
			name:       "a flag typed by the name heuristic alone is read as a switch, and said so",
			words:      []string{"git", "remote", "--verbose", "origin"},
			wantStdout: "allowed by git_remote: $DIR/bin/git remote --verbose origin\n",
			wantNote:   "note: whether '--verbose' takes a value is not known (no type in the config, not in the introspection cache); check read it as a switch, so 'origin' is a positional argument",
		},
		{
			name:       "an untyped short flag is read as taking a value, and said so",
			words:      []string{"git", "pull", "origin", "-X", "theirs", "main"},
			wantStdout: "allowed by git_pull_origin: $DIR/bin/git pull origin -X theirs main\n",
			wantNote:   "note: whether '-X' takes a value is not known (no type in the config, not in the introspection cache); check read it as taking a value, so 'theirs' is its value",
		},
		{
			name:       "an untyped short flag's value is held to the positional pattern",
			words:      []string{"git", "pull", "origin", "-X", "Theirs"},
			wantCode:   exitDenied,
			wantStdout: denial("git pull origin -X Theirs", "positional argument 'Theirs' does not match pattern '[a-z]+'", "", ""),
			wantNote:   "check read it as taking a value, so 'Theirs' is its value",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := f.run(t, append([]string{"check", "--"}, tt.words...)...)
			if code != tt.wantCode {
				t.Errorf("exit status = %d, want %d (stderr %q)", code, tt.wantCode, stderr)
			}
			if want := configtest.Expand(tt.wantStdout, f.dir); stdout != want {
				t.Errorf("stdout:\ngot  %q\nwant %q", stdout, want)
			}
			if strings.Contains(stdout+stderr, "s3cret") {
				t.Errorf("a redacted value is shown: stdout %q, stderr %q", stdout, stderr)
			}
			switch {
			case tt.wantNote == "" && stderr != "":
				t.Errorf("stderr = %q, want it empty", stderr)
			case !strings.Contains(stderr, tt.wantNote):
				t.Errorf("stderr = %q, want it to contain %q", stderr, tt.wantNote)
			}
		})
	}
}

func TestCheckJSON(t *testing.T) {
	t.Parallel()
	f := newCheckFixture(t)
	tests := []struct {
		name     string
		words    []string
		wantCode int
		want     checkResult
	}{
		{
			name:  "an allowed line gives the decision, the MCP tool and the argv that would run",
			words: []string{"git", "push", "--set-upstream", "origin"},
			want: checkResult{Decision: "allow", Tool: "git_push",
				Argv: []string{"$DIR/bin/git", "push", "--set-upstream", "origin"}},
		},
		{
			name:     "a denied line gives the words checked, the denial, its reason and kind",
			words:    []string{"git", "push", "--force"},
			wantCode: exitDenied,
			want: checkResult{Decision: "deny", Tool: "git_push", Argv: []string{"git", "push", "--force"},
				Denial: strings.TrimSuffix(denial("git push --force", "flag '--force' is not in the allowlist for 'git push'", "git push", "--set-upstream"), "\n"),
				Reason: "flag '--force' is not in the allowlist for 'git push'", Kind: "flag_not_allowed"},
		},
		{
			name:     "an unknown tool has no MCP tool",
			words:    []string{"kubectl"},
			wantCode: exitDenied,
			want: checkResult{Decision: "deny", Argv: []string{"kubectl"},
				Denial: strings.TrimSuffix(denial("kubectl", "tool 'kubectl' is not configured", "", ""), "\n"),
				Reason: "tool 'kubectl' is not configured", Kind: "unknown_tool"},
		},
		{
			name:     "a denied line's words hide a redacted value",
			words:    []string{"gcloud", "secrets", "put", "-p", "s3cret", "x"},
			wantCode: exitDenied,
			want: checkResult{Decision: "deny", Tool: "gcloud_secrets_put", Argv: []string{"gcloud", "secrets", "put", "-p", "***", "x"},
				Denial: strings.TrimSuffix(denial("gcloud secrets put -p '***' x", "at most 0 positional arguments are allowed for 'gcloud secrets put' (got 2)", "", ""), "\n"),
				Reason: "at most 0 positional arguments are allowed for 'gcloud secrets put' (got 2)", Kind: "arg_count",
				Notes: []string{"whether '-p' takes a value is not known (no type in the config, not in the introspection cache); check read it as taking a value, so '***' is its value (a flag_constraints type or an introspection override settles it)"}},
		},
		{
			name:  "notes come along",
			words: []string{"git", "remote", "--verbose", "origin"},
			want: checkResult{Decision: "allow", Tool: "git_remote", Argv: []string{"$DIR/bin/git", "remote", "--verbose", "origin"},
				Notes: []string{"whether '--verbose' takes a value is not known (no type in the config, not in the introspection cache); check read it as a switch, so 'origin' is a positional argument (a flag_constraints type or an introspection override settles it)"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := f.run(t, append([]string{"check", "--json", "--"}, tt.words...)...)
			if code != tt.wantCode {
				t.Errorf("exit status = %d, want %d (stderr %q)", code, tt.wantCode, stderr)
			}
			if strings.Count(stdout, "\n") != 1 || !strings.HasSuffix(stdout, "\n") {
				t.Errorf("stdout = %q, want one line", stdout)
			}
			var got checkResult
			dec := json.NewDecoder(strings.NewReader(stdout))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("decode %q: %v", stdout, err)
			}
			for i, a := range tt.want.Argv {
				tt.want.Argv[i] = configtest.Expand(a, f.dir)
			}
			if g, w := mustJSON(t, got), mustJSON(t, tt.want); g != w {
				t.Errorf("got  %s\nwant %s", g, w)
			}
			var raw map[string]any
			if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
				t.Fatal(err)
			}
			if _, ok := raw["argv"].([]any); !ok {
				t.Errorf("argv = %v, want an array, never null", raw["argv"])
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestCheckCommandLine(t *testing.T) {
	t.Parallel()
	f := newCheckFixture(t)
	configtest.WriteFile(t, filepath.Join(f.dir, "bad.yaml"), "mcp:\n  listen: 127.0.0.1:1\n  bogus: 1\n", 0o600)
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{name: "no command line is a usage error", args: []string{"check"}, wantCode: exitUsage, wantStderr: "wraptool: check needs a command line"},
		{name: "only -- is a usage error", args: []string{"check", "--"}, wantCode: exitUsage, wantStderr: "wraptool: check needs a command line"},
		{name: "--tests with a command line is a usage error", args: []string{"check", "--tests", "x.yaml", "--", "git"}, wantCode: exitUsage, wantStderr: "takes no command line"},
		{name: "--tests with --json is a usage error", args: []string{"check", "--json", "--tests", "x.yaml"}, wantCode: exitUsage, wantStderr: "does not combine with --json"},
		{name: "an unknown flag of check is a usage error", args: []string{"check", "--verbose", "--", "git"}, wantCode: exitUsage, wantStderr: `unknown flag "verbose"`},
		{name: "an invalid config exits 1 naming the file", args: []string{"--config", filepath.Join(f.dir, "bad.yaml"), "check", "--", "git", "status"}, wantCode: exitFailure, wantStderr: "bad.yaml:3"},
		{name: "an unreadable tests file exits 1", args: []string{"check", "--tests", filepath.Join(f.dir, "missing.yaml")}, wantCode: exitFailure, wantStderr: "check: read tests:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := f.run(t, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit status = %d, want %d (stderr %q)", code, tt.wantCode, stderr)
			}
			if !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr, tt.wantStderr)
			}
			if tt.wantCode == exitUsage && stdout != "" {
				t.Errorf("stdout = %q, want it empty", stdout)
			}
		})
	}
	t.Run("words without -- belong to the command line from the first non-flag", func(t *testing.T) {
		t.Parallel()
		stdout, _, code := f.run(t, "check", "git", "status", "--json")
		if code != exitDenied || !strings.Contains(stdout, "flag '--json' is not in the allowlist for 'git status'") {
			t.Errorf("exit %d, stdout %q: want git status's --json refused", code, stdout)
		}
	})
}

func TestCheckTestsFile(t *testing.T) {
	t.Parallel()
	f := newCheckFixture(t)
	file := func(name string) string { return filepath.Join("testdata", "check", name) }
	t.Run("a file whose every entry matches exits 0", func(t *testing.T) {
		t.Parallel()
		stdout, stderr, code := f.run(t, "check", "--tests", file("pass.yaml"))
		if code != exitOK {
			t.Errorf("exit status = %d, want 0 (stdout %q, stderr %q)", code, stdout, stderr)
		}
		if want := "ok: " + file("pass.yaml") + " (6 tests)\n"; stdout != want {
			t.Errorf("stdout = %q, want %q", stdout, want)
		}
	})
	t.Run("a mismatch is listed with its line and decision, and exits 1", func(t *testing.T) {
		t.Parallel()
		stdout, stderr, code := f.run(t, "check", "--tests", file("mismatch.yaml"))
		if code != exitFailure || stderr != "" {
			t.Errorf("exit status = %d, stderr %q; want %d and nothing on stderr", code, stderr, exitFailure)
		}
		want := file("mismatch.yaml") + ":3: git push --force origin main: want allow, got deny\n" +
			"  DENIED: 'git push --force origin main' is not permitted.\n\n" +
			"  Policy: flag '--force' is not in the allowlist for 'git push'.\n" +
			"  Allowed flags for 'git push': --set-upstream\n\n" +
			"  Next step: if the assistant asked for this, approve its request (wraptool requests list); else change the rule in tools.git.allow.\n" +
			file("mismatch.yaml") + ":5: git status: want deny, got allow\n" +
			"  allowed by git_status: " + f.dir + "/bin/git status\n" +
			"FAIL: 2 of 3 tests in " + file("mismatch.yaml") + " do not match\n"
		if stdout != want {
			t.Errorf("stdout:\ngot  %q\nwant %q", stdout, want)
		}
	})
	t.Run("a malformed file exits 1 naming the entry's line", func(t *testing.T) {
		t.Parallel()
		stdout, stderr, code := f.run(t, "check", "--tests", file("malformed.yaml"))
		if code != exitFailure {
			t.Errorf("exit status = %d, want 1", code)
		}
		if want := file("malformed.yaml") + ":3: tests[1].cmd: unbalanced single quote\n"; stderr != want {
			t.Errorf("stderr = %q, want %q", stderr, want)
		}
		if stdout != "" {
			t.Errorf("stdout = %q, want nothing decided", stdout)
		}
	})
	t.Run("notes name the entry's line", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "t.yaml")
		configtest.WriteFile(t, path, "- cmd: git remote --verbose origin\n  want: allow\n", 0o600)
		_, stderr, code := f.run(t, "check", "--tests", path)
		if code != exitOK || !strings.HasPrefix(stderr, path+":1: note: whether '--verbose' takes a value is not known") {
			t.Errorf("exit %d, stderr %q: want 0 and a note at line 1", code, stderr)
		}
	})
}

func TestCheckExplain(t *testing.T) {
	t.Parallel()
	f := newCheckFixture(t)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string // lines stdout must hold, in order
		not      []string
	}{
		{
			name:     "a denied line lists the catalogued flag, its classes and whether a pattern holds it",
			args:     []string{"check", "--explain", "--", "gcloud", "compute", "instances", "list", "--project", "p", "--flags-file=/tmp/f.yaml"},
			wantCode: exitDenied,
			want: []string{"DENIED: ",
				"explain: what this command line touches that can hand your credentials away:",
				"  --flags-file  sends-credentials, runs-code, reads-files: sends your credentials to the host it names; " +
					"runs a program it names, with your credentials; reads a file it names (no pattern holds its value)",
				"    reads any flags from the file it names"},
		},
		{
			name:     "a global option before any subcommand",
			args:     []string{"check", "--explain", "--", "git", "-c", "core.sshCommand=touch /tmp/x", "log"},
			wantCode: exitDenied,
			want:     []string{"  -c  sends-credentials, runs-code: ", "    sets any config value for the run"},
		},
		{
			name: "an allowed flag a pattern holds says so",
			args: []string{"check", "--explain", "--", "git", "ls-remote", "--upload-pack=git-upload-pack"},
			want: []string{"allowed by git_ls-remote: ", "  --upload-pack  runs-code: runs a program it names, with your credentials (a pattern holds its value)"},
		},
		{
			name:     "positionals that complete a catalogued subcommand are that subcommand (a bare rule given auth print-access-token)",
			args:     []string{"check", "--explain", "--", "gcloud", "auth", "print-access-token"},
			wantCode: exitDenied,
			want:     []string{"  the subcommand 'auth print-access-token'  prints-credentials: prints your credentials to the assistant"},
		},
		{
			name: "an allowed line that touches nothing says so",
			args: []string{"check", "--explain", "--", "git", "log", "--oneline"},
			want: []string{"allowed by git_log: ", "explain: nothing in this command line is in the danger catalog"},
		},
		{
			name:     "a look-alike of a catalogued name is no flag a tool reads as it, and is never printed raw",
			args:     []string{"check", "--explain", "--", "git", "log", "--endpoint\u202e-url=1"},
			wantCode: exitDenied,
			want:     []string{`"--endpoint\u202e-url"`, "explain: nothing in this command line is in the danger catalog"},
			not:      []string{"\u202e"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := f.run(t, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit status = %d, want %d (stderr %q)", code, tt.wantCode, stderr)
			}
			rest := stdout
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("stdout lacks %q (in order):\n%s", w, stdout)
				}
				rest = rest[i+len(w):]
			}
			for _, n := range tt.not {
				if strings.Contains(stdout, n) {
					t.Errorf("stdout holds %q:\n%s", n, stdout)
				}
			}
		})
	}

	t.Run("json", func(t *testing.T) {
		t.Parallel()
		stdout, _, code := f.run(t, "check", "--json", "--explain", "--", "git", "-c", "x=y", "log")
		if code != exitDenied {
			t.Fatalf("exit status = %d", code)
		}
		var got checkResult
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatal(err)
		}
		if got.Touches == nil {
			t.Fatalf("no touches in %s", stdout)
		}
		if ts := *got.Touches; len(ts) != 1 || ts[0].Flag != "-c" || strings.Join(ts[0].Classes, ",") != "sends-credentials,runs-code" || ts[0].Held {
			t.Errorf("touches = %+v", ts)
		}
		stdout, _, _ = f.run(t, "check", "--json", "--explain", "--", "git", "log")
		if !strings.Contains(stdout, `"touches":[]`) {
			t.Errorf("no touches: %s, want \"touches\":[]", stdout)
		}
	})
	t.Run("not with --tests", func(t *testing.T) {
		t.Parallel()
		if _, stderr, code := f.run(t, "check", "--explain", "--tests", "x.yaml"); code != 2 || !strings.Contains(stderr, "--explain") {
			t.Errorf("exit %d, stderr %q; want a usage error naming --explain", code, stderr)
		}
	})
}
