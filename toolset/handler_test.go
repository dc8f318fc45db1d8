package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/requests"
	"github.com/wraptool/wraptool/toolset/toolsettest"

	"github.com/wraptool/wraptool/integration/waittest"
)

// slotState is a State over two fakecli tools sharing slots: "hold" (a
// minute's timeout) and "quick" (timeout given).
func slotState(t *testing.T, dir string, slots *Slots, quick time.Duration) *State {
	t.Helper()
	rules := func() []*policy.AllowRule {
		return []*policy.AllowRule{
			{Subcommand: []string{"markwait"}, Flags: help(), ArgConstraints: policy.ArgConstraints{PositionalMax: intp(2)}},
			{Subcommand: []string{"report"}, Flags: help()},
		}
	}
	p := newPolicy(t,
		policy.Tool{Name: "hold", Binary: fakecli, Allow: rules()},
		policy.Tool{Name: "quick", Binary: fakecli, Allow: rules()},
	)
	return &State{Policy: p, Slots: slots, Runtimes: map[string]Runtime{
		"hold":  {WorkingDir: dir, Env: []string{}, Timeout: time.Minute},
		"quick": {WorkingDir: dir, Env: []string{}, Timeout: quick},
	}}
}

// callAsync calls a tool in the background; the result arrives on the
// returned channel (nil after a transport error, which fails the test).
func callAsync(t *testing.T, cs *mcp.ClientSession, name string, args any) <-chan *mcp.CallToolResult {
	t.Helper()
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Errorf("CallTool(%s): %v", name, err)
		}
		done <- res
	}()
	return done
}

func awaitResult(t *testing.T, c <-chan *mcp.CallToolResult) *mcp.CallToolResult {
	t.Helper()
	select {
	case res := <-c:
		if res == nil {
			t.FailNow()
		}
		return res
	case <-time.After(time.Minute):
		t.Fatal("the call did not return")
		return nil
	}
}

// started lists which of the calls' start markers exist.
func started(marks []string) []int {
	var out []int
	for i, m := range marks {
		if _, err := os.Stat(m); err == nil {
			out = append(out, i)
		}
	}
	return out
}

// pollUntil polls cond with a deadline.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waittest.Until(t, 30*time.Second, func() error {
		if !cond() {
			return fmt.Errorf("timed out waiting until %s", what)
		}
		return nil
	})
}

// With a limit of 2, three calls of a fixture that runs until the test
// releases it: two start, the third waits, and starts once one finishes.
func TestHandlerRunsAtMostTheSlotLimitAtOnce(t *testing.T) {
	t.Parallel()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	slots := NewSlots(2)
	st := slotState(t, dir, slots, time.Minute)
	cs := serve(t, st, func() *State { return st }, context.Background())

	var marks, releases []string
	var results []<-chan *mcp.CallToolResult
	for i := range 3 {
		marks = append(marks, filepath.Join(dir, "started-"+strconv.Itoa(i)))
		releases = append(releases, filepath.Join(dir, "release-"+strconv.Itoa(i)))
		results = append(results, callAsync(t, cs, "hold_markwait", map[string]any{"args": []string{marks[i], releases[i]}}))
	}
	t.Cleanup(func() {
		for _, r := range releases {
			os.WriteFile(r, nil, 0o600) // whatever happened, end every run
		}
	})
	pollUntil(t, "two calls run and one waits", func() bool { return len(started(marks)) == 2 && slots.waiting() == 1 })
	running := started(marks)
	if got := slots.Running(); got != 2 {
		t.Fatalf("%d slots held, want 2", got)
	}

	first := running[0]
	if err := os.WriteFile(releases[first], nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if res := awaitResult(t, results[first]); res.IsError {
		t.Fatalf("the released call failed: %s", toolsettest.ResultText(t, res))
	}
	pollUntil(t, "the third call starts", func() bool { return len(started(marks)) == 3 })
	if got := slots.Running(); got > 2 {
		t.Errorf("%d slots held, limit 2", got)
	}
	for i := range 3 {
		if i == first {
			continue
		}
		if err := os.WriteFile(releases[i], nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if res := awaitResult(t, results[i]); res.IsError {
			t.Errorf("call %d failed: %s", i, toolsettest.ResultText(t, res))
		}
	}
	if got := slots.Running(); got != 0 {
		t.Errorf("%d slots still held after every call returned", got)
	}
}

// A call whose timeout passes while it waits for a slot gets a timeout
// result, and nothing ran: its duration_ms is 0.
func TestHandlerTimesOutWaitingForASlot(t *testing.T) {
	t.Parallel()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	slots := NewSlots(1)
	st := slotState(t, dir, slots, 300*time.Millisecond)
	cs := serve(t, st, func() *State { return st }, context.Background())

	mark, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	held := callAsync(t, cs, "hold_markwait", map[string]any{"args": []string{mark, release}})
	t.Cleanup(func() { os.WriteFile(release, nil, 0o600) })
	pollUntil(t, "the holding call runs", func() bool { _, err := os.Stat(mark); return err == nil })

	res := call(t, cs, "quick_report", nil)
	text := toolsettest.ResultText(t, res)
	if !res.IsError || !strings.Contains(text, "--- wraptool: timed out after 300ms waiting for a free slot (1 running) ---") {
		t.Errorf("isError %v, text %q; want the wait's timeout", res.IsError, text)
	}
	if out := output(t, res); out.ExitCode != -1 || out.DurationMS != 0 || out.Stdout != "" {
		t.Errorf("structuredContent %+v; want exit_code -1, duration_ms 0 (nothing ran), no output", out)
	}

	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if res := awaitResult(t, held); res.IsError {
		t.Errorf("the holding call failed: %s", toolsettest.ResultText(t, res))
	}
	// The slot is free again.
	if res := call(t, cs, "quick_report", nil); res.IsError {
		t.Errorf("a call after the slot was freed failed: %s", toolsettest.ResultText(t, res))
	}
}

// A refused call takes no slot: it does not wait behind running calls.
func TestHandlerRefusesWithoutWaitingForASlot(t *testing.T) {
	t.Parallel()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	slots := NewSlots(1)
	st := slotState(t, dir, slots, time.Minute)
	cs := serve(t, st, func() *State { return st }, context.Background())
	mark, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	held := callAsync(t, cs, "hold_markwait", map[string]any{"args": []string{mark, release}})
	t.Cleanup(func() { os.WriteFile(release, nil, 0o600) })
	pollUntil(t, "the holding call runs", func() bool { _, err := os.Stat(mark); return err == nil })

	res := call(t, cs, "quick_report", map[string]any{"cwd": filepath.Join(dir, "missing")})
	if text := toolsettest.ResultText(t, res); !strings.Contains(text, "is not a directory") {
		t.Errorf("text %q, want the cwd refusal", text)
	}
	os.WriteFile(release, nil, 0o600)
	awaitResult(t, held)
}

// A denial quotes client input; the log keeps a bounded part of it, so a
// 3 MiB flag name (or tool name) does not cost 3 MiB of log per call.
func TestHandlerLogsABoundedDenial(t *testing.T) {
	t.Parallel()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	st := fakeState(t, dir, fakeRules()...)
	var buf lockedBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	handler := NewHandler("fake", []string{"report"}, func() *State { return st }, context.Background(), log)

	huge := strings.Repeat("é", 3<<20/2) // 3 MiB of two-byte characters: a cut can split one
	args, _ := json.Marshal(map[string]any{huge: true})
	for _, name := range []string{"fake_report", huge} {
		buf.Reset()
		res, err := handler(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name, Arguments: args}})
		if err != nil || !res.IsError {
			t.Fatalf("handler = %v, %v; want a denial", res, err)
		}
		logged := buf.String()
		if len(logged) > 4<<10 {
			t.Errorf("one denial logged %d bytes, want at most 4 KiB", len(logged))
		}
		if !strings.Contains(logged, "bytes cut)") {
			t.Errorf("the log does not say what it cut: %.300q", logged)
		}
		if !utf8.ValidString(logged) {
			t.Errorf("the log is not valid UTF-8 after the cut")
		}
	}
}

func TestBound(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", maxLogString-1) + "é" + strings.Repeat("b", 100)
	cases := []struct{ name, in, want string }{
		{"a short string is kept", "flag '--x'", "flag '--x'"},
		{"a string at the bound is kept", strings.Repeat("a", maxLogString), strings.Repeat("a", maxLogString)},
		{"a long string is cut at a character boundary", long,
			strings.Repeat("a", maxLogString-1) + "…(" + strconv.Itoa(len(long)-maxLogString+1) + " bytes cut)"},
		{"invalid UTF-8 is replaced", "a\xffb", "a\uFFFDb"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := bound(tc.in); got != tc.want {
				t.Errorf("bound(%.40q…) = %.80q…, want %.80q…", tc.in, got, tc.want)
			}
		})
	}
}

// lockedBuffer is a bytes.Buffer safe for the logger and the test at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedBuffer) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Reset()
}

// reportProgress's notes, in simulated time: one every CallProgress with
// the whole seconds run, the timeout as total, and the call's token; none
// after stop returns.
func TestReportProgress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		limit     time.Duration
		wantTotal float64
		wantMsg   string
	}{
		{"a call with a timeout reports it as the total", 30 * time.Second, 30, "fake_sleep has run for 5 s (timeout 30 s)"},
		{"a call without a timeout reports no total", 0, 0, "fake_sleep has run for 5 s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var notes []*mcp.ProgressNotificationParams
				notify := func(_ context.Context, p *mcp.ProgressNotificationParams) error {
					mu.Lock()
					defer mu.Unlock()
					notes = append(notes, p)
					return nil
				}
				stop := reportProgress(context.Background(), notify, "tok-7", "fake_sleep", tt.limit)
				time.Sleep(3*CallProgress + time.Second)
				stop()
				time.Sleep(time.Minute) // nothing more after stop
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				if len(notes) != 3 {
					t.Fatalf("%d notes in 16 s, want 3 (every %v)", len(notes), CallProgress)
				}
				for i, p := range notes {
					if want := float64(5 * (i + 1)); p.Progress != want || p.Total != tt.wantTotal || p.ProgressToken != "tok-7" {
						t.Errorf("note %d: progress %v, total %v, token %v; want %v, %v, tok-7", i, p.Progress, p.Total, p.ProgressToken, want, tt.wantTotal)
					}
				}
				if notes[0].Message != tt.wantMsg {
					t.Errorf("message %q, want %q", notes[0].Message, tt.wantMsg)
				}
			})
		})
	}
}

// Over an MCP session, a wrapped-tool call that runs past CallProgress
// sends notifications/progress with the token its request carried; a call
// without a token gets none. (Real time: the call runs a real child.)
func TestHandlerReportsProgressOnLongCalls(t *testing.T) {
	t.Parallel()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	st := fakeState(t, dir, &policy.AllowRule{Subcommand: []string{"sleep"}, Flags: help()})
	server := mcp.NewServer(&mcp.Implementation{Name: "wraptool-test", Version: "0"}, nil)
	for _, r := range st.Policy.Rules() {
		server.AddTool(Definition(r), NewHandler(r.Tool(), r.Subcommand(), func() *State { return st }, context.Background(), discard))
	}
	// What the server sent, by token: once a call's result is back this is
	// final (the reporter stops before the result goes out), so the client
	// side need only catch up with it.
	var sentMu sync.Mutex
	sent := map[any]int{}
	server.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.ProgressNotificationParams); ok && method == "notifications/progress" {
				sentMu.Lock()
				sent[p.ProgressToken]++
				sentMu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	for _, tt := range []struct {
		name  string
		token any
		want  int
	}{
		{"a call with a progress token hears how long it has run", "call-1", 1},
		{"a call without a progress token hears nothing", nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var got []*mcp.ProgressNotificationParams
			heard := func() []*mcp.ProgressNotificationParams {
				mu.Lock()
				defer mu.Unlock()
				return slices.Clone(got)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			serverT, clientT := mcp.NewInMemoryTransports()
			ss, err := server.Connect(ctx, serverT, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Wait()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "0"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
					mu.Lock()
					defer mu.Unlock()
					got = append(got, r.Params)
				},
			}).Connect(ctx, clientT, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			params := &mcp.CallToolParams{Name: "fake_sleep", Arguments: map[string]any{"args": []string{"5.8s"}}}
			if tt.token != nil {
				params.SetProgressToken(tt.token)
			}
			res, err := cs.CallTool(ctx, params)
			if err != nil || res.IsError {
				t.Fatalf("call: %v, %+v", err, res)
			}
			// The server sent all it will send before the result; the
			// client may handle a note just after it, so catch up.
			sentMu.Lock()
			n := sent[tt.token]
			sentMu.Unlock()
			if n != tt.want {
				t.Fatalf("the server sent %d progress notes for token %v, want %d", n, tt.token, tt.want)
			}
			pollUntil(t, "the progress notes arrive", func() bool { return len(heard()) >= n })
			notes := heard()
			if len(notes) != tt.want {
				t.Fatalf("%d progress notes, want %d: %+v", len(notes), tt.want, notes)
			}
			for _, p := range notes {
				if p.ProgressToken != tt.token || p.Progress != 5 || p.Total != 60 || p.Message != "fake_sleep has run for 5 s (timeout 60 s)" {
					t.Errorf("note %+v, want token %v, progress 5 of 60 and a message saying so", p, tt.token)
				}
			}
		})
	}
}

// Arguments of the wrong type, for every tool wraptool serves itself, are
// answered in the tool's words: what the property must be, or what the
// whole arguments must be, never the Go decoder's message.
func TestToolErrorsNeverSpeakOfGoTypes(t *testing.T) {
	t.Parallel()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	st := fakeState(t, dir, fakeRules()...)
	st.RequestLog = filepath.Join(dir, "requests.jsonl")
	current := func() *State { return st }
	wrapped := NewHandler("fake", []string{"report"}, current, context.Background(), discard)
	request := NewRequestHandler((&fakeSubmitter{out: requests.Submitted{ID: "req_0123abcd"}}).submit, nil, discard)
	tests := []struct {
		name    string
		handler mcp.ToolHandler
		tool    string
		args    string
		want    string
	}{
		{"the request tool's subcommand as a string", request, policy.RequestTool,
			`{"tool":"git","subcommand":"push","rationale":"r"}`, "The request was not recorded: subcommand must be an array of strings."},
		{"the request tool's flags as a string", request, policy.RequestTool,
			`{"tool":"git","subcommand":["push"],"flags":"--force","rationale":"r"}`, "flags must be an array of strings"},
		{"the request tool's tool as a number", request, policy.RequestTool,
			`{"tool":7,"subcommand":["push"],"rationale":"r"}`, "tool must be a string"},
		{"the request tool's call_id as a number", request, policy.RequestTool, `{"call_id":7,"rationale":"r"}`, "call_id must be a string"},
		{"the request tool's rationale as an object", request, policy.RequestTool,
			`{"tool":"git","subcommand":["push"],"rationale":{"why":"x"}}`, "rationale must be a string"},
		{"the request tool's enables as a boolean", request, policy.RequestTool,
			`{"tool":"git","subcommand":["push"],"rationale":"r","enables":true}`, "enables must be a string"},
		{"the request tool's wait_seconds as an array", request, policy.RequestTool,
			`{"tool":"git","subcommand":["push"],"rationale":"r","wait_seconds":[5]}`, "wait_seconds must be an integer from 0 to 300"},
		{"the request tool's arguments as an array", request, policy.RequestTool, `[1]`, "the arguments must be an object"},
		{"the status tool's id as a number", NewStatusHandler(current), StatusTool, `{"id":5}`,
			"wraptool_request_status takes an optional id (a string) and nothing else."},
		{"the status tool's arguments as an array", NewStatusHandler(current), StatusTool, `["req_0123abcd"]`,
			"wraptool_request_status takes an optional id (a string) and nothing else."},
		{"the discover tool's tool as an array", NewDiscoverHandler(current), DiscoverTool, `{"tool":["fake"]}`,
			"wraptool_discover takes an optional tool (a string) and nothing else."},
		{"a wrapped tool's arguments as an array", wrapped, "fake_report", `["--force"]`,
			"DENIED: the arguments must be a JSON object of named parameters (got an array)."},
		{"a wrapped tool's arguments as a string", wrapped, "fake_report", `"--force"`,
			"DENIED: the arguments must be a JSON object of named parameters (got a string)."},
		{"a wrapped tool's args as a string", wrapped, "fake_report", `{"args":"origin"}`, "value of 'args' must be an array of strings"},
		{"a wrapped tool's integer flag as a word", wrapped, "fake_report", `{"depth":"deep"}`, "value of '--depth' must be an integer"},
		{"a wrapped tool's switch as a word", wrapped, "fake_report", `{"force":"yes"}`, "value of '--force' must be true or false"},
		{"a wrapped tool's cwd as a number", wrapped, "fake_report", `{"cwd":5}`, "cwd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := tt.handler(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{
				Name: tt.tool, Arguments: json.RawMessage(tt.args)}})
			if err != nil {
				t.Fatalf("handler error %v; bad input must be a tool error", err)
			}
			text := toolsettest.ResultText(t, res)
			if !res.IsError || !strings.Contains(text, tt.want) {
				t.Errorf("isError %v, text %q; want an error containing %q", res.IsError, text, tt.want)
			}
			if goInternal(text) {
				t.Errorf("text %q speaks of Go's decoder", text)
			}
		})
	}
}
