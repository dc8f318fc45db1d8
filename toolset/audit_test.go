package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
)

// recorder is an Auditor that keeps the lines.
type recorder struct {
	mu    sync.Mutex
	lines []CallAudit
}

func (r *recorder) record(_ context.Context, c CallAudit) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, c)
}

// Every output of a call — the result the assistant reads (text and
// structuredContent), the server's log at debug, the audit line — hides a
// redacted value; only the child gets it (fakecli prints its argv).
func TestRedactionInEveryOutput(t *testing.T) {
	t.Parallel()
	const secret = "tok-9f8e7d-secret"
	dir := t.TempDir()
	p := newPolicy(t, policy.Tool{Name: "fake", Binary: fakecli, Allow: []*policy.AllowRule{{
		Subcommand: []string{"status"},
		Flags:      append([]string{"--token", "-k", "--name"}, help()...),
		FlagConstraints: map[string]*policy.Constraint{
			"--token": {Type: "string", Redact: true},
			"-k":      {Redact: true},
			"--name":  {Type: "string", Pattern: "[a-z]+"},
		},
		ArgConstraints: policy.ArgConstraints{Patterns: []string{"[a-z]+"}},
	}}})
	cases := []struct {
		name    string
		args    map[string]any
		allowed bool
		// audited is the argv the audit line must hold.
		audited []string
	}{
		{"an allowed call", map[string]any{"token": secret, "name": "bob"}, true,
			[]string{fakecli, "status", "--token=***", "--name=bob"}},
		{"an allowed call with a redacted short flag", map[string]any{"k": "abc"}, true,
			[]string{fakecli, "status", "-k", "***"}},
		{"a flag not in the allowlist", map[string]any{"token": secret, "force": true}, false,
			[]string{"fake", "status", "--token=***", "--force"}},
		{"a value failing its pattern", map[string]any{"token": secret, "name": "B4D"}, false,
			[]string{"fake", "status", "--token=***", "--name=B4D"}},
		{"a redacted value failing the positional rules", map[string]any{"k": "-" + secret}, false,
			[]string{"fake", "status", "-k", "***"}},
		{"a cwd refused after evaluation", map[string]any{"token": secret, "cwd": "/nonexistent-dir"}, false,
			[]string{"fake", "status", "--token=***"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			rec := &recorder{}
			st := &State{Policy: p, Runtimes: map[string]Runtime{"fake": {WorkingDir: dir, Env: []string{}, Timeout: time.Minute}},
				Audit: rec.record, AuditPolicy: "hash-1", Denials: NewDenials()}
			h := NewHandler("fake", []string{"status"}, func() *State { return st }, context.Background(), log)
			raw, _ := json.Marshal(tc.args)
			res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "fake_status", Arguments: raw}})
			if err != nil {
				t.Fatal(err)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			sc, _ := json.Marshal(res.StructuredContent)
			if tc.allowed {
				if res.IsError || !strings.Contains(text, `"status"`) {
					t.Fatalf("did not run: %s", text)
				}
			} else {
				if !strings.HasPrefix(text, "DENIED: ") {
					t.Fatalf("not denied: %s", text)
				}
				for _, where := range []struct{ name, s string }{{"denial text", text}, {"structuredContent", string(sc)}} {
					if strings.Contains(where.s, secret) {
						t.Errorf("%s shows the secret: %s", where.name, where.s)
					}
				}
				if bytes.Contains(sc, []byte(`"call_id"`)) && strings.Contains(string(raw), secret) {
					t.Errorf("a call with a redacted value got a call_id: %s", sc)
				}
			}
			if strings.Contains(logs.String(), secret) {
				t.Errorf("the debug log shows the secret:\n%s", logs.String())
			}
			if len(rec.lines) != 1 {
				t.Fatalf("got %d audit lines, want 1", len(rec.lines))
			}
			l := rec.lines[0]
			line, _ := json.Marshal(l)
			if bytes.Contains(line, []byte(secret)) {
				t.Errorf("the audit line shows the secret: %s", line)
			}
			want := map[bool]string{true: "allowed", false: "denied"}[tc.allowed]
			if l.Decision != want || strings.Join(l.Argv, " ") != strings.Join(tc.audited, " ") || l.Policy != "hash-1" || l.Tool != "fake_status" {
				t.Errorf("audit line: got %+v, want decision %s, argv %q", l, want, tc.audited)
			}
			if tc.allowed && (l.ExitCode == nil || *l.ExitCode != 0 || l.StdoutBytes == 0) {
				t.Errorf("allowed line lacks its outcome: %+v", l)
			}
			if !tc.allowed && (l.Reason == "" || l.ExitCode != nil) {
				t.Errorf("denied line: %+v", l)
			}
		})
	}
}

// A handler whose arguments are not an object is audited as denied too.
func TestAuditNonObjectArguments(t *testing.T) {
	t.Parallel()
	p := newPolicy(t, policy.Tool{Name: "fake", Binary: fakecli, Allow: []*policy.AllowRule{{Subcommand: []string{"status"}, Flags: help()}}})
	rec := &recorder{}
	st := &State{Policy: p, Audit: rec.record}
	h := NewHandler("fake", []string{"status"}, func() *State { return st }, context.Background(), slog.New(slog.DiscardHandler))
	h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "fake_status", Arguments: json.RawMessage(`[1]`)}})
	if len(rec.lines) != 1 || rec.lines[0].Decision != "denied" || rec.lines[0].Kind != "arguments" {
		t.Errorf("lines: %+v", rec.lines)
	}
}

// AuditPolicy is the policy hash alone without grants, and changes with
// the grant set whatever its order.
func TestAuditPolicy(t *testing.T) {
	t.Parallel()
	if got := AuditPolicy("h", nil); got != "h" {
		t.Errorf("no grants: %q", got)
	}
	a, b := AuditPolicy("h", []string{"req_1", "req_2"}), AuditPolicy("h", []string{"req_2", "req_1"})
	if a != b || a == "h" || a == AuditPolicy("h", []string{"req_1"}) {
		t.Errorf("grant sets: %q %q", a, b)
	}
}
