package policy

import (
	"slices"
	"strings"
	"testing"
)

// redactTools has one rule whose secrets come in every form a value can
// take: a long string flag, a short flag taking a value, an attached-free
// unproven short flag (held to the positional rules), a denied flag, and
// a deny rule the secret can trigger.
func redactTools() []Tool {
	return seedAll([]Tool{{
		Name:   "db",
		Binary: "/usr/bin/db",
		Allow: []*AllowRule{{
			Subcommand: []string{"query"},
			Flags:      own("--password", "-p", "-k", "--user", "--limit"),
			DenyFlags:  []string{"--secret"},
			FlagConstraints: map[string]*Constraint{
				"--password": {Type: "string", Redact: true, Pattern: "[a-z0-9-]+"},
				"-p":         {Type: "string", Redact: true},
				"-k":         {Redact: true}, // unproven: its value is held to the positional rules
				"--secret":   {Redact: true},
				"--user":     {Type: "string", Required: false},
				"--limit":    {Type: "integer", Redact: true, Max: ptr[int64](10)},
			},
			ArgConstraints: ArgConstraints{PositionalMax: ptr(2), Patterns: []string{"[a-z]+"}},
		}},
		Deny: []*DenyRule{{Subcommand: []string{"query", "drop"}}},
	}})
}

// Every path a refused or allowed call is shown by hides a redacted value:
// the denial text (command and Policy: line), Shown argv, ShownCommand,
// and a protected-path subject; Argv keeps the real value for the child.
func TestRedactedValuesNeverShow(t *testing.T) {
	t.Parallel()
	p := newPolicy(t, redactTools(), nil)
	const secret = "hunter2-secret"
	cases := []struct {
		name      string
		params    map[string]any
		allowed   bool
		wantShown string // the denial's command, or Shown for an allowed call
	}{
		{"allowed: long and short values are masked in Shown",
			map[string]any{"password": secret, "p": secret, "user": "bob"}, true,
			"/usr/bin/db query --password=*** -p *** --user=bob"},
		{"allowed: an integer can be redacted too",
			map[string]any{"limit": 7}, true, "/usr/bin/db query --limit=***"},
		{"denied by the allowlist: the command masks the value",
			map[string]any{"password": secret, "force": true}, false, "db query '--password=***' --force"},
		{"denied by a pattern: the value is not in the Policy: line",
			map[string]any{"password": "UPPER" + secret}, false, "db query '--password=***'"},
		{"denied by a bound: the integer is masked",
			map[string]any{"limit": 99}, false, "db query '--limit=***'"},
		{"denied flag with redact: its value is masked",
			map[string]any{"secret": secret}, false, "db query '--secret=***'"},
		{"a dashed spelling of a redacted flag is masked",
			map[string]any{"--password": secret}, false, "db query '--password=***'"},
		{"an unproven short value that looks like a flag is masked in the reason",
			map[string]any{"k": "-" + secret}, false, "db query -k '***'"},
		{"an unproven short value failing the positional pattern is masked",
			map[string]any{"k": secret}, false, "db query -k '***'"},
		{"a secret tripping a deny rule is masked",
			map[string]any{"k": "drop"}, false, "db query -k '***'"},
		{"too many positionals: the secret still hidden",
			map[string]any{"k": "abc", "args": []any{"a", "b"}}, false, "db query -k '***' a b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := Call{Tool: "db", Subcommand: []string{"query"}, Params: tc.params}
			d := p.Evaluate(c)
			if d.Allowed() != tc.allowed {
				t.Fatalf("allowed: got %v, want %v (%+v)", d.Allowed(), tc.allowed, d.Refusal)
			}
			if tc.allowed {
				if got := strings.Join(d.Shown(), " "); got != tc.wantShown {
					t.Errorf("Shown: got %q, want %q", got, tc.wantShown)
				}
				if !slices.ContainsFunc(d.Argv, func(s string) bool { return strings.Contains(s, secret) || s == "--limit=7" }) {
					t.Errorf("Argv lost the real value: %q", d.Argv)
				}
				// A cwd or protected-path refusal found later is shown
				// from Shown, not Argv.
				r := d.Refuse(KindCwd, "cwd '/x' is outside the allowed roots")
				if strings.Contains(r.Refusal.Text, secret) || !strings.Contains(r.Refusal.Text, "***") {
					t.Errorf("Refuse shows the value: %s", r.Refusal.Text)
				}
			} else {
				if strings.Contains(d.Refusal.Text, secret) || strings.Contains(d.Refusal.Reason, secret) {
					t.Errorf("denial shows the secret:\n%s", d.Refusal.Text)
				}
				if want := "DENIED: '" + tc.wantShown + "' is not permitted."; !strings.HasPrefix(d.Refusal.Text, want) {
					t.Errorf("denial:\n%s\nwant it to start %q", d.Refusal.Text, want)
				}
			}
			shown, hidden, ok := p.ShownCommand(c)
			if !ok || !hidden || strings.Contains(strings.Join(shown, " "), secret) {
				t.Errorf("ShownCommand: %q hidden=%v ok=%v", shown, hidden, ok)
			}
			if full, _ := p.Command(c); slices.Equal(full, shown) {
				t.Errorf("Command is masked too: %q", full)
			}
		})
	}
}

// A call without redacted values is shown as it is, and ShownCommand says
// nothing was hidden (so an exact-call request may name it).
func TestNothingRedactedShowsAsIs(t *testing.T) {
	t.Parallel()
	p := newPolicy(t, redactTools(), nil)
	c := Call{Tool: "db", Subcommand: []string{"query"}, Params: map[string]any{"user": "bob"}}
	d := p.Evaluate(c)
	if !d.Allowed() || d.Redacted() || !slices.Equal(d.Shown(), d.Argv) {
		t.Fatalf("got %+v", d)
	}
	if _, hidden, _ := p.ShownCommand(c); hidden {
		t.Errorf("ShownCommand hid something")
	}
	pa := PathArg{Value: "x", Redact: true}
	if got := pa.Subject(); got != "positional argument '***'" {
		t.Errorf("Subject: %q", got)
	}
}
