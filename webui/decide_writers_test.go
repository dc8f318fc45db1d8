package webui

import (
	"context"
	"testing"

	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/requests"
)

// Once the UI has handed a decision or an apply to the server's writer, the
// answer waits for the writer's outcome even when the browser has gone: a
// request's ended context must not reach the writer, or the UI could say
// "stays pending" about a decision recorded meanwhile.
func TestADecisionHandedOnOutlivesTheBrowser(t *testing.T) {
	t.Parallel()
	var decideCtx, applyCtx context.Context
	u := New(Options{
		Decide: func(ctx context.Context, _ string, _ requests.Decision) error { decideCtx = ctx; return nil },
		Apply: func(ctx context.Context, _, _ string, _, _ []string, _ *config.Options) (string, error) {
			applyCtx = ctx
			return "added flags --x to git push", nil
		},
	})
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if err := u.decide(gone, "req_0123abcd", requests.Decision{Status: requests.StatusDenied}); err != nil {
		t.Fatal(err)
	}
	if _, err := u.apply(gone, "config.yaml", "git", []string{"push"}, []string{"--x"}, nil); err != nil {
		t.Fatal(err)
	}
	for name, ctx := range map[string]context.Context{"the decision": decideCtx, "the apply": applyCtx} {
		if ctx == nil || ctx.Err() != nil {
			t.Errorf("%s reached the writer with the browser's ended context (%v)", name, ctx)
		}
	}
}
