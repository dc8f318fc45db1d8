package toolset

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy"
)

func TestExecute(t *testing.T) {
	t.Parallel()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	p, err := policy.New([]policy.Tool{{
		Name: "fake", Binary: fakecli,
		Allow: []*policy.AllowRule{{Subcommand: []string{"pull"}, Flags: []string{"-h", "--help"}}},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := func(cwd string) policy.Decision {
		params := map[string]any{"args": []any{"origin"}}
		if cwd != "" {
			params["cwd"] = cwd
		}
		return p.Evaluate(policy.Call{Tool: "fake", Subcommand: []string{"pull"}, Params: params})
	}
	rt := Runtime{WorkingDir: root, Env: []string{}, Roots: []string{root}}

	t.Run("an allowed call runs in the default directory", func(t *testing.T) {
		t.Parallel()
		res, d := Execute(context.Background(), call(""), rt)
		if !d.Allowed() || res.ExitCode != 0 {
			t.Fatalf("refusal %v, result %+v", d.Refusal, res)
		}
		var r report
		json.Unmarshal([]byte(res.Stdout), &r)
		if r.Cwd != root || len(r.Argv) != 3 || r.Argv[1] != "pull" || r.Argv[2] != "origin" {
			t.Errorf("child saw %+v", r)
		}
	})
	t.Run("a cwd outside the roots is refused with the policy's text and nothing runs", func(t *testing.T) {
		t.Parallel()
		res, d := Execute(context.Background(), call(outside), rt)
		if d.Allowed() {
			t.Fatalf("allowed; result %+v", res)
		}
		want := "DENIED: 'fake pull origin' is not permitted.\n\nPolicy: cwd '" + outside + "' is outside the allowed roots.\n\nTo request this capability, call the 'wraptool_request_capability' tool."
		if d.Refusal.Text != want || d.Refusal.Kind != policy.KindCwd {
			t.Errorf("refusal %v:\n%s\nwant:\n%s", d.Refusal.Kind, d.Refusal.Text, want)
		}
		if res.Stdout != "" || res.ExitCode != -1 {
			t.Errorf("something ran: %+v", res)
		}
	})
	t.Run("a missing cwd is refused", func(t *testing.T) {
		t.Parallel()
		_, d := Execute(context.Background(), call(filepath.Join(root, "nope")), rt)
		if d.Allowed() || d.Refusal.Reason != "cwd '"+filepath.Join(root, "nope")+"' is not a directory" {
			t.Errorf("refusal %+v", d.Refusal)
		}
	})
	t.Run("a missing working_dir is a failure to start, not a denial", func(t *testing.T) {
		t.Parallel()
		missing := filepath.Join(root, "gone")
		res, d := Execute(context.Background(), call(""), Runtime{WorkingDir: missing, Env: []string{}})
		if !d.Allowed() {
			t.Fatalf("refused: %s", d.Refusal.Reason)
		}
		if res.ExitCode != -1 || res.Err == nil || !strings.HasPrefix(res.Err.Error(), "failed to start: working directory "+missing) {
			t.Errorf("exit %d, err %v; want a failure to start naming %s", res.ExitCode, res.Err, missing)
		}
	})
	t.Run("a refused decision is passed through", func(t *testing.T) {
		t.Parallel()
		d := p.Evaluate(policy.Call{Tool: "fake", Subcommand: []string{"push"}})
		res, got := Execute(context.Background(), d, rt)
		if got.Allowed() || got.Refusal != d.Refusal || res.ExitCode != -1 {
			t.Errorf("got %+v, %+v", res, got.Refusal)
		}
	})
}
