package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/toolset/toolsettest"
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
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling files and counters: no event to wait on
	}
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
