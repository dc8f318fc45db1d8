package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/messages"
)

// wait bounds every wait of these tests.
const wait = 10 * time.Second

// receive takes the value ch carries, failing the test after wait.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	return waittest.Receive(t, ch, wait, what)
}

// resultText is r's text content, joined, and whether it is a tool error.
func resultText(t *testing.T, r *mcp.CallToolResult) (string, bool) {
	t.Helper()
	if r == nil {
		t.Fatal("result is nil")
	}
	var texts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return strings.Join(texts, "\n"), r.IsError
}

func TestUpstreamOutcome(t *testing.T) {
	t.Parallel()
	wire := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad arguments"}
	ok := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fine"}}}
	tests := []struct {
		name string
		in   messages.UpstreamResult
		// wantResult, when set, is the very result wanted back.
		wantResult *mcp.CallToolResult
		// wantWire is the protocol error wanted back.
		wantWire *jsonrpc.Error
		// wantText is a text the tool error must hold ("" for no tool error).
		wantText string
	}{
		{name: "a result passes through as it is", in: messages.UpstreamResult{Result: ok}, wantResult: ok},
		{name: "no result and no error is an empty result", in: messages.UpstreamResult{}},
		{name: "a JSON-RPC error passes through as the same protocol error", in: messages.UpstreamResult{Err: wire}, wantWire: wire},
		{name: "a wrapped JSON-RPC error passes through too", in: messages.UpstreamResult{Err: fmt.Errorf("calling tool: %w", wire)}, wantWire: wire},
		{name: "an upstream client between runs says why the upstream is not available",
			in:       messages.UpstreamResult{Err: Down{"it is restarting"}},
			wantText: `upstream server "up" is not available: it is restarting; try again in a moment`},
		{name: "the end of the upstream's output says it stopped", in: messages.UpstreamResult{Err: io.EOF},
			wantText: `upstream server "up" stopped while handling the call`},
		{name: "an output cut short says it stopped", in: messages.UpstreamResult{Err: io.ErrUnexpectedEOF},
			wantText: `upstream server "up" stopped while handling the call`},
		{name: "a closed connection says it stopped", in: messages.UpstreamResult{Err: fmt.Errorf("calling tool: %w", mcp.ErrConnectionClosed)},
			wantText: `upstream server "up" stopped while handling the call`},
		{name: "any other error is a tool error naming it", in: messages.UpstreamResult{Err: errors.New("boom")},
			wantText: `upstream server "up" failed the call: boom`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := Outcome("up", tt.in)
			if tt.wantWire != nil {
				var got *jsonrpc.Error
				if !errors.As(err, &got) || got != tt.wantWire {
					t.Fatalf("Outcome = %v, %v; want the protocol error %v", res, err, tt.wantWire)
				}
				if res != nil {
					t.Errorf("result = %v with a protocol error, want nil", res)
				}
				return
			}
			if err != nil {
				t.Fatalf("Outcome error = %v, want nil (a result for the client)", err)
			}
			if tt.wantResult != nil {
				if res != tt.wantResult {
					t.Errorf("result = %v, want the upstream's own %v", res, tt.wantResult)
				}
				return
			}
			text, isError := resultText(t, res)
			if tt.wantText == "" {
				if isError || res.Content == nil || len(res.Content) != 0 {
					t.Errorf("result = %+v, want an empty, non-nil content and no error", res)
				}
				return
			}
			if !isError || !strings.Contains(text, tt.wantText) {
				t.Errorf("result = %q (IsError %v), want a tool error holding %q", text, isError, tt.wantText)
			}
		})
	}
}

func TestUpstreamHandler(t *testing.T) {
	t.Parallel()
	echoed := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echoed"}}}
	type fixture struct {
		calls        chan messages.UpstreamCall
		gone         chan struct{}
		abort        context.CancelFunc
		cancelCaller context.CancelFunc
		// doneSeen is closed by a fake upstream client that saw the call's Done.
		doneSeen chan struct{}
	}
	tests := []struct {
		name    string
		timeout time.Duration
		// upstream client plays the upstream client, in its own goroutine.
		client   func(t *testing.T, f *fixture)
		wantText string
		wantErr  error
		// wantResult is the very result wanted back.
		wantResult *mcp.CallToolResult
		// wantDone says the upstream client must have seen the call's Done closed.
		wantDone bool
	}{
		{
			name:    "an answer reaches the client as the upstream sent it",
			timeout: wait,
			client: func(t *testing.T, f *fixture) {
				c := <-f.calls
				if c.Tool != "echo" || string(c.Arguments) != `{"text":"hi"}` || c.Progress != nil {
					t.Errorf("call = %q %s (progress %v), want echo {\"text\":\"hi\"} with no progress", c.Tool, c.Arguments, c.Progress)
				}
				c.Reply <- messages.UpstreamResult{Result: echoed}
			},
			wantResult: echoed,
		},
		{
			name:    "an upstream error becomes the outcome's tool error",
			timeout: wait,
			client: func(t *testing.T, f *fixture) {
				c := <-f.calls
				c.Reply <- messages.UpstreamResult{Err: Down{"it is starting"}}
			},
			wantText: `upstream server "up" is not available: it is starting`,
		},
		{
			name:    "no answer within the timeout cancels the call and says so",
			timeout: 50 * time.Millisecond,
			client: func(t *testing.T, f *fixture) {
				c := <-f.calls
				select {
				case <-c.Done:
					close(f.doneSeen)
				case <-time.After(wait):
				}
			},
			wantText: `upstream server "up" did not answer echo within its timeout (50ms); the call was cancelled`,
			wantDone: true,
		},
		{
			name:     "an upstream client that never takes the call times out the same way",
			timeout:  50 * time.Millisecond,
			client:   func(*testing.T, *fixture) {},
			wantText: `did not answer echo within its timeout (50ms)`,
		},
		{
			name:     "an upstream client that is gone says it was stopped",
			timeout:  wait,
			client:   func(_ *testing.T, f *fixture) { close(f.gone) },
			wantText: `upstream server "up" was stopped (its config entry was removed or changed); list the tools again`,
		},
		{
			name:    "a shutdown ends the call and says so",
			timeout: wait,
			client: func(t *testing.T, f *fixture) {
				c := <-f.calls
				f.abort()
				select {
				case <-c.Done:
					close(f.doneSeen)
				case <-time.After(wait):
				}
			},
			wantText: `the call to upstream server "up" was stopped: wraptool is shutting down`,
			wantDone: true,
		},
		{
			name:    "a client that gives up gets its own context's error",
			timeout: wait,
			client: func(t *testing.T, f *fixture) {
				c := <-f.calls
				f.cancelCaller()
				select {
				case <-c.Done:
					close(f.doneSeen)
				case <-time.After(wait):
				}
			},
			wantErr:  context.Canceled,
			wantDone: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			abort, cancelAbort := context.WithCancel(context.Background())
			defer cancelAbort()
			caller, cancelCaller := context.WithCancel(context.Background())
			defer cancelCaller()
			f := &fixture{calls: make(chan messages.UpstreamCall), gone: make(chan struct{}), abort: cancelAbort,
				cancelCaller: cancelCaller, doneSeen: make(chan struct{})}
			offer := messages.UpstreamTools{Server: "up", Generation: 1, Calls: f.calls, Gone: f.gone}
			h := Handler("up", "echo", offer, func() time.Duration { return tt.timeout }, abort)
			bridged := make(chan struct{})
			go func() {
				defer close(bridged)
				tt.client(t, f)
			}()
			req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "up_echo", Arguments: json.RawMessage(`{"text":"hi"}`)}}
			res, err := h(caller, req)
			receive(t, bridged, "the fake upstream client's end")
			if tt.wantDone {
				select {
				case <-f.doneSeen:
				default:
					t.Errorf("the upstream client did not see the call's Done closed")
				}
			}
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("handler = %v, %v; want error %v", res, err, tt.wantErr)
				}
				return
			case err != nil:
				t.Fatalf("handler error = %v, want a result", err)
			case tt.wantResult != nil:
				if res != tt.wantResult {
					t.Errorf("result = %v, want the upstream client's %v", res, tt.wantResult)
				}
				return
			}
			text, isError := resultText(t, res)
			if !isError || !strings.Contains(text, tt.wantText) {
				t.Errorf("result = %q (IsError %v), want a tool error holding %q", text, isError, tt.wantText)
			}
		})
	}
}
