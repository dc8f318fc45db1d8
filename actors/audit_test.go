package actors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/toolset"
)

// auditFiles reads path and its rotated files, failing on a broken line,
// and returns every line.
func auditFiles(t *testing.T, path string) []toolset.CallAudit {
	t.Helper()
	var out []toolset.CallAudit
	for i := 50; i >= 0; i-- {
		name := path
		if i > 0 {
			name += "." + strconv.Itoa(i)
		}
		data, err := os.ReadFile(name)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
			var c toolset.CallAudit
			if err := json.Unmarshal(l, &c); err != nil {
				t.Fatalf("%s: broken line %q: %v", name, l, err)
			}
			out = append(out, c)
		}
	}
	return out
}

// runAudit runs a until the test ends, and returns a stop that ends Run
// and waits for it (writing what is queued).
func runAudit(t *testing.T, a *Audit) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// 64 callers record at once through a short queue and a small rotation
// limit: every line is written, whole, exactly once, and the callers that
// found the queue full waited (and were counted) rather than drop a line.
func TestAuditLosesNothingUnder64Callers(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	a := newAudit(AuditOptions{MaxBytes: 16 << 10, Keep: 50}, 8)
	stop := runAudit(t, a.Audit)
	record := a.For(path)
	const callers, each = 64, 50
	var wg sync.WaitGroup
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				record(context.Background(), toolset.CallAudit{Tool: fmt.Sprintf("c%d_%d", c, i), Decision: "allowed"})
			}
		}()
	}
	wg.Wait()
	stop()
	lines := auditFiles(t, path)
	seen := map[string]bool{}
	for _, l := range lines {
		if l.Event != "call" || seen[l.Tool] {
			t.Fatalf("line %+v: wrong event or written twice", l)
		}
		seen[l.Tool] = true
	}
	if len(seen) != callers*each || a.Lost() != 0 {
		t.Fatalf("got %d lines (%d lost), want %d", len(seen), a.Lost(), callers*each)
	}
	if a.Waited() == 0 {
		t.Errorf("no caller waited on a queue of 8 under 64 callers; Waited is not counting")
	}
	if _, err := os.Stat(path + ".1"); err != nil {
		t.Errorf("the log never rotated at 16 KiB: %v", err)
	}
}

// With the writer not running, a full queue makes the caller wait (and
// counts it) until there is room; a caller whose context ends first gives
// up, counted as lost, and never hangs.
func TestAuditFullQueueWaitsAndCounts(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	a := newAudit(AuditOptions{}, 2)
	record := a.For(path)
	record(context.Background(), toolset.CallAudit{Tool: "one"})
	record(context.Background(), toolset.CallAudit{Tool: "two"})
	if a.Waited() != 0 {
		t.Fatalf("Waited = %d with room in the queue", a.Waited())
	}
	queued := make(chan struct{})
	go func() {
		record(context.Background(), toolset.CallAudit{Tool: "three"})
		close(queued)
	}()
	select {
	case <-queued:
		t.Fatal("a caller did not wait on a full queue")
	case <-time.After(50 * time.Millisecond): // waiting for the absence of an event
	}
	if a.Waited() != 1 {
		t.Errorf("Waited = %d, want 1", a.Waited())
	}
	stop := runAudit(t, a.Audit)
	<-queued // the writer made room
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stop()
	// The writer has stopped: a late line is lost at once, never waited on.
	record(ctx, toolset.CallAudit{Tool: "late"})
	if a.Lost() != 1 {
		t.Errorf("Lost = %d, want 1", a.Lost())
	}
	var tools []string
	for _, l := range auditFiles(t, path) {
		tools = append(tools, l.Tool)
	}
	if want := []string{"one", "two", "three"}; !slices.Equal(tools, want) {
		t.Errorf("lines: got %v, want %v (in order)", tools, want)
	}
}

// A caller waiting on a full queue gives up when its context ends.
func TestAuditWaitEndsWithContext(t *testing.T) {
	t.Parallel()
	a := newAudit(AuditOptions{}, 1)
	record := a.For(filepath.Join(t.TempDir(), "audit.jsonl"))
	record(context.Background(), toolset.CallAudit{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	record(ctx, toolset.CallAudit{})
	if a.Waited() != 1 || a.Lost() != 1 {
		t.Errorf("Waited %d, Lost %d; want 1 and 1", a.Waited(), a.Lost())
	}
}

// Lines go to the file their snapshot named, in order, even when two
// paths interleave.
func TestAuditWritesEachLineToItsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := newAudit(AuditOptions{}, 0)
	stop := runAudit(t, a.Audit)
	x, y := filepath.Join(dir, "x.jsonl"), filepath.Join(dir, "y.jsonl")
	for i := range 6 {
		path := x
		if i%2 == 1 {
			path = y
		}
		a.For(path)(context.Background(), toolset.CallAudit{Tool: strconv.Itoa(i)})
	}
	a.Policy(context.Background(), x, PolicyAudit{Cause: "file", Old: "a", New: "b"})
	stop()
	for path, want := range map[string]string{x: "0 2 4 ", y: "1 3 5 "} {
		var got string
		for _, l := range auditFiles(t, path) {
			if l.Event == "call" {
				got += l.Tool + " "
			}
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", path, got, want)
		}
	}
	data, _ := os.ReadFile(x)
	if !bytes.Contains(data, []byte(`"event":"policy","time":`)) || !bytes.Contains(data, []byte(`"cause":"file"`)) {
		t.Errorf("no policy line in %s", data)
	}
	if info, err := os.Stat(x); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("mode: %v %v", info, err)
	}
}

// BenchmarkAuditCall measures a denied call (evaluation and the denial,
// no child) through the real handler, without an audit log and with one
// (the enqueue path, the writer draining to a file in the background):
// the difference is what auditing costs a call.
func BenchmarkAuditCall(b *testing.B) {
	p, err := policy.New([]policy.Tool{{Name: "git", Binary: "/usr/bin/git",
		Allow: []*policy.AllowRule{{Subcommand: []string{"push"}, Flags: []string{"--set-upstream", "--token"},
			FlagConstraints: map[string]*policy.Constraint{"--token": {Type: "string", Redact: true}}}}}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "git_push",
		Arguments: json.RawMessage(`{"token":"secret","force":true,"args":["origin","main"]}`)}}
	for _, withAudit := range []bool{false, true} {
		b.Run(fmt.Sprintf("audit=%v", withAudit), func(b *testing.B) {
			st := &toolset.State{Policy: p, PolicyHash: "h", AuditPolicy: "h"}
			if withAudit {
				a := newAudit(AuditOptions{}, 0)
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { a.Run(ctx); close(done) }()
				defer func() { cancel(); <-done }()
				st.Audit = a.For(filepath.Join(b.TempDir(), "audit.jsonl"))
			}
			h := toolset.NewHandler("git", []string{"push"}, func() *toolset.State { return st }, context.Background(), slog.New(slog.DiscardHandler))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res, err := h(context.Background(), req)
				if err != nil || !res.IsError {
					b.Fatalf("not denied: %v %v", res, err)
				}
			}
		})
	}
}

// The policy holder writes a policy line at start, for a reload that
// changes the policy (with the flags it changed), for a change of grants,
// and for a rejected reload; a reload of the same bytes writes none.
func TestPolicyHolderAuditsChanges(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	getenv := func(string) string { return "" }
	a := newAudit(AuditOptions{}, 0)
	stopAudit := runAudit(t, a.Audit)
	shared := Shared{Audit: a.AuditSender}
	in := make(chan messages.ConfigLoaded)
	grants := make(chan messages.GrantsChanged)
	rejected := make(chan messages.ConfigRejected)
	swapped := make(messages.Doorbell, 1)
	h := NewPolicyHolder(PolicyHolderOptions{Initial: NewSnapshot(f.load(t), nil, shared, getenv), Shared: shared, Getenv: getenv,
		Loaded: in, Rejected: rejected, Grants: grants, ToolsetChanged: swapped, WatchSetChanged: make(messages.Doorbell, 1)})
	stop := start(t, h)
	first := h.Current().AuditPolicy

	in <- messages.ConfigLoaded{Loaded: f.load(t), Cause: "SIGHUP"} // the same bytes
	receive(t, swapped, "the first swap")
	f.writeConfig(t, "info", "--short, --long")
	in <- messages.ConfigLoaded{Loaded: f.load(t), Cause: "SIGHUP"}
	receive(t, swapped, "the second swap")
	second := h.Current().AuditPolicy
	rejected <- messages.ConfigRejected{Cause: "file", Err: errors.New("config.yaml:3: bad")}
	grants <- messages.GrantsChanged{Cause: "grant_expired"} // no grants before or after: no line
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	stopAudit()

	data, err := os.ReadFile(filepath.Join(f.dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var got []PolicyAudit
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var p PolicyAudit
		if err := json.Unmarshal(l, &p); err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
	}
	if len(got) != 3 {
		t.Fatalf("got %d policy lines, want 3 (start, the change, the rejection):\n%s", len(got), data)
	}
	if got[0].Cause != "start" || got[0].Old != "" || got[0].New != first || !slices.Equal(got[0].ToolsAdded, []string{"fake_status"}) {
		t.Errorf("start line: %+v", got[0])
	}
	if c := got[1]; c.Cause != "sighup" || c.Outcome != "applied" || c.Old != first || c.New != second || first == second ||
		!slices.Equal(c.FlagsAdded["fake_status"], []string{"--long"}) || len(c.ToolsAdded) != 0 {
		t.Errorf("change line: %+v", c)
	}
	if r := got[2]; r.Cause != "file" || r.Outcome != "rejected" || r.Old != second || r.New != "" || r.Error != "config.yaml:3: bad" {
		t.Errorf("rejected line: %+v", r)
	}
}

// auditPair is an audit writer and the sender end its callers hold, wired
// as serve wires them.
type auditPair struct {
	*Audit
	*AuditSender
	*AuditCounts
}

// newAudit builds a writer whose queue holds queue lines (AuditQueue for
// 0), and its sender.
func newAudit(o AuditOptions, queue int) auditPair {
	if queue <= 0 {
		queue = AuditQueue
	}
	lines, stopped, counts := make(chan messages.AuditLine, queue), make(chan struct{}), &AuditCounts{}
	o.Lines, o.Stopped, o.Counts = lines, stopped, counts
	return auditPair{NewAudit(o), &AuditSender{Lines: lines, Stopped: stopped, Counts: counts}, counts}
}
