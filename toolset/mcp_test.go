package toolset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/toolset/runner"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

var discard = slog.New(slog.DiscardHandler)

func i64(n int64) *int64 { return &n }
func intp(n int) *int    { return &n }

// wire marshals v and decodes it again, as a client would see it.
func wire(t *testing.T, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s is not a JSON object: %v", data, err)
	}
	return m
}

func jsonString(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// newPolicy compiles tools, seeding -h and --help into every rule as config
// loading does.
func newPolicy(t *testing.T, tools ...policy.Tool) *policy.Policy {
	t.Helper()
	for _, tool := range tools {
		for _, r := range tool.Allow {
			policy.SeedHelpFlags(r)
		}
	}
	p, err := policy.New(tools, nil)
	if err != nil {
		t.Fatalf("policy.New: %v", err)
	}
	return p
}

// help lists a rule's flags as the operator writes them; newPolicy seeds
// the help flags.
func help(flags ...string) []string { return flags }

func definitionPolicy(t *testing.T) *policy.Policy {
	return newPolicy(t,
		policy.Tool{Name: "git", Binary: "/usr/bin/git", Allow: []*policy.AllowRule{
			{
				Subcommand: []string{"push"},
				Flags:      help("--set-upstream", "--depth", "--limit", "-m", "--project", "--quiet", "--force-with-lease"),
				DenyFlags:  []string{"--quiet"},
				FlagConstraints: map[string]*policy.Constraint{
					"--depth":            {Min: i64(1), Max: i64(50)},
					"--limit":            {Type: "integer", Min: i64(0)},
					"--project":          {Required: true, Pattern: "[a-z]+"},
					"--force-with-lease": {Type: "boolean"},
				},
				ArgConstraints: policy.ArgConstraints{PositionalMax: intp(2)},
			},
			{Subcommand: []string{"status"}, Flags: help(), ArgConstraints: policy.ArgConstraints{PositionalMax: intp(0)}},
			{Subcommand: []string{"log"}, Flags: help("--no-color")},
		}},
		policy.Tool{Name: "gcloud", Binary: "/usr/bin/gcloud", Allow: []*policy.AllowRule{
			{Subcommand: []string{"compute", "instances", "list"}, Flags: help("--format"),
				FlagConstraints: map[string]*policy.Constraint{"--format": {Required: true}}},
		}},
		policy.Tool{Name: "ls", Binary: "/bin/ls", Allow: []*policy.AllowRule{{Flags: help("-l")}}},
	)
}

func TestDefinition(t *testing.T) {
	t.Parallel()
	p := definitionPolicy(t)
	const cwd = `{"type":"string"}`
	cases := []struct {
		name     string
		rule     string
		command  string
		allowed  []string
		props    map[string]string // schema JSON without descriptions; "" means absent
		required []string
	}{
		{"every kind of flag becomes a typed property", "git_push", "git push",
			[]string{"--set-upstream", "--depth", "--limit", "-m", "--project", "--force-with-lease"},
			map[string]string{
				"h": `{"type":"boolean"}`, "help": `{"type":"boolean"}`,
				"set-upstream":     `{"type":"string"}`,
				"depth":            `{"maximum":50,"minimum":1,"type":"integer"}`,
				"limit":            `{"minimum":0,"type":"integer"}`,
				"m":                `{"type":"string"}`,
				"project":          `{"type":"string"}`,
				"force-with-lease": `{"type":"boolean"}`,
				"quiet":            "",
				"args":             `{"items":{"type":"string"},"maxItems":2,"type":"array"}`,
				"cwd":              cwd,
			},
			[]string{"project"}},
		{"positional_max 0 leaves args out", "git_status", "git status", nil,
			map[string]string{"h": `{"type":"boolean"}`, "help": `{"type":"boolean"}`, "args": "", "cwd": cwd},
			nil},
		{"no positional_max gives args without maxItems", "git_log", "git log", []string{"--no-color"},
			map[string]string{
				"h": `{"type":"boolean"}`, "help": `{"type":"boolean"}`, "no-color": `{"type":"boolean"}`,
				"args": `{"items":{"type":"string"},"type":"array"}`, "cwd": cwd,
			},
			nil},
		{"a long subcommand joins its tokens with underscores", "gcloud_compute_instances_list", "gcloud compute instances list", []string{"--format"},
			map[string]string{
				"h": `{"type":"boolean"}`, "help": `{"type":"boolean"}`, "format": `{"type":"string"}`,
				"args": `{"items":{"type":"string"},"type":"array"}`, "cwd": cwd,
			},
			[]string{"format"}},
		{"an empty subcommand is named by the tool alone", "ls", "ls", []string{"-l"},
			map[string]string{
				"h": `{"type":"boolean"}`, "help": `{"type":"boolean"}`, "l": `{"type":"string"}`,
				"args": `{"items":{"type":"string"},"type":"array"}`, "cwd": cwd,
			},
			nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, ok := p.Rule(tc.rule)
			if !ok {
				t.Fatalf("the policy has no rule %s", tc.rule)
			}
			def := Definition(r)
			if def.Name != tc.rule {
				t.Errorf("name %q, want %q", def.Name, tc.rule)
			}
			if !strings.Contains(def.Description, "'"+tc.command+"'") {
				t.Errorf("description %q does not name '%s'", def.Description, tc.command)
			}
			for _, f := range tc.allowed {
				if !strings.Contains(def.Description, f) {
					t.Errorf("description %q does not list %s", def.Description, f)
				}
			}
			if len(tc.allowed) == 0 && !strings.Contains(def.Description, "none") {
				t.Errorf("description %q does not say no flags are allowed", def.Description)
			}
			if strings.Contains(def.Description, "--help") {
				t.Errorf("description %q lists the seeded help flags", def.Description)
			}

			schema := wire(t, def.InputSchema)
			if schema["type"] != "object" {
				t.Errorf("inputSchema type %v, want object", schema["type"])
			}
			if ap, ok := schema["additionalProperties"]; ok && ap == false {
				t.Error("inputSchema has additionalProperties: false; unknown properties must reach the policy")
			}
			props, _ := schema["properties"].(map[string]any)
			var gotNames, wantNames []string
			for name := range props {
				gotNames = append(gotNames, name)
			}
			for name, want := range tc.props {
				if want != "" {
					wantNames = append(wantNames, name)
				}
			}
			slices.Sort(gotNames)
			slices.Sort(wantNames)
			if !slices.Equal(gotNames, wantNames) {
				t.Errorf("properties %q, want %q", gotNames, wantNames)
			}
			for name, want := range tc.props {
				prop, ok := props[name].(map[string]any)
				if !ok {
					continue
				}
				desc, _ := prop["description"].(string)
				if desc == "" {
					t.Errorf("property %s has no description", name)
				}
				delete(prop, "description")
				if got := jsonString(prop); got != want {
					t.Errorf("property %s = %s, want %s", name, got, want)
				}
			}
			var gotReq []string
			if req, ok := schema["required"].([]any); ok {
				for _, x := range req {
					gotReq = append(gotReq, fmt.Sprint(x))
				}
			} else if _, present := schema["required"]; present {
				t.Errorf("required = %v, want a list", schema["required"])
			}
			if !slices.Equal(gotReq, tc.required) {
				t.Errorf("required %q, want %q", gotReq, tc.required)
			}

			out := wire(t, def.OutputSchema)
			// A run's fields and a denial's, none required.
			wantOut := `{"properties":{"call_id":{"type":"string"},"command":{"items":{"type":"string"},"type":"array"},"denied":{"type":"boolean"},` +
				`"duration_ms":{"type":"integer"},"exit_code":{"type":"integer"},"reason":{"type":"string"},"stderr":{"type":"string"},"stdout":{"type":"string"},"truncated":{"type":"boolean"}},"type":"object"}`
			for _, v := range out["properties"].(map[string]any) {
				delete(v.(map[string]any), "description")
			}
			if got := jsonString(out); got != wantOut {
				t.Errorf("outputSchema:\n got %s\nwant %s", got, wantOut)
			}
		})
	}
}

// Server.AddTool panics on a schema that is not an object; every definition
// must pass it, and a client must list them all.
func TestDefinitionsAreAcceptedByTheServer(t *testing.T) {
	t.Parallel()
	p := definitionPolicy(t)
	server := mcp.NewServer(&mcp.Implementation{Name: "wraptool-test", Version: "0"}, nil)
	defs := []*mcp.Tool{RequestDefinition()}
	for _, r := range p.Rules() {
		defs = append(defs, Definition(r))
	}
	var want []string
	for _, def := range defs {
		func() {
			defer func() {
				if v := recover(); v != nil {
					t.Errorf("AddTool(%s) panicked: %v", def.Name, v)
				}
			}()
			server.AddTool(def, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		}()
		want = append(want, def.Name)
	}
	cs := connect(t, server)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tool := range list.Tools {
		got = append(got, tool.Name)
		if typ := wire(t, tool.InputSchema)["type"]; typ != "object" {
			t.Errorf("the client sees %s's inputSchema type as %v", tool.Name, typ)
		}
		if tool.Description == "" {
			t.Errorf("the client sees no description for %s", tool.Name)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("listed tools %q, want %q", got, want)
	}
}

// connect starts a client session on server over in-memory transports.
func connect(t *testing.T, server *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverT, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "0"}, nil)
	cs, err := client.Connect(ctx, clientT, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// fakeState is a policy over fakecli and its runtime, working in dir.
func fakeState(t *testing.T, dir string, allow ...*policy.AllowRule) *State {
	t.Helper()
	p := newPolicy(t, policy.Tool{Name: "fake", Binary: fakecli, Allow: allow})
	return &State{Policy: p, Runtimes: map[string]Runtime{"fake": {WorkingDir: dir, Env: []string{}, Timeout: time.Minute}}}
}

func fakeRules() []*policy.AllowRule {
	return []*policy.AllowRule{
		{Subcommand: []string{"report"}, Flags: help("--force", "--depth", "-m"),
			FlagConstraints: map[string]*policy.Constraint{"--depth": {Min: i64(1), Max: i64(50)}}},
		{Subcommand: []string{"exit"}, Flags: help(), ArgConstraints: policy.ArgConstraints{PositionalMax: intp(1)}},
		{Subcommand: []string{"grandchild"}, Flags: help(), ArgConstraints: policy.ArgConstraints{PositionalMax: intp(1)}},
	}
}

// serve registers a handler for every rule of the first State current
// returns and connects a client.
func serve(t *testing.T, first *State, current func() *State, stop context.Context) *mcp.ClientSession {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "wraptool-test", Version: "0"}, nil)
	for _, r := range first.Policy.Rules() {
		server.AddTool(Definition(r), NewHandler(r.Tool(), r.Subcommand(), current, stop, discard))
	}
	return connect(t, server)
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s, %v): %v", name, args, err)
	}
	return res
}

// output decodes structuredContent as a run's Output, requiring exactly its
// five fields.
func output(t *testing.T, res *mcp.CallToolResult) Output {
	t.Helper()
	if res.StructuredContent == nil {
		t.Fatal("no structuredContent")
	}
	m := wire(t, res.StructuredContent)
	var got []string
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	if want := []string{"duration_ms", "exit_code", "stderr", "stdout", "truncated"}; !slices.Equal(got, want) {
		t.Errorf("structuredContent fields %q, want %q", got, want)
	}
	data, _ := json.Marshal(res.StructuredContent)
	var out Output
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("structuredContent %s: %v", data, err)
	}
	return out
}

const requestHint = "\n\nTo request this capability, call the 'wraptool_request_capability' tool."

func TestHandlerThroughAnMCPSession(t *testing.T) {
	t.Parallel()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	st := fakeState(t, dir, fakeRules()...)
	cs := serve(t, st, func() *State { return st }, context.Background())

	t.Run("an allowed call returns stdout as the one text item", func(t *testing.T) {
		t.Parallel()
		res := call(t, cs, "fake_report", map[string]any{"m": "msg", "depth": 3, "force": true, "args": []string{"a b"}})
		got := toolsettest.ResultText(t, res)
		if res.IsError {
			t.Fatalf("isError for an allowed call: %s", got)
		}
		var r toolsettest.Report
		if err := json.Unmarshal([]byte(got), &r); err != nil {
			t.Fatalf("text %q is not fakecli's report: %v", got, err)
		}
		if strings.Contains(got, "--- stderr ---") {
			t.Errorf("text %q has a stderr section, but nothing was written to stderr", got)
		}
		wantArgv := []string{fakecli, "report", "--force", "--depth=3", "-m", "msg", "a b"}
		if !slices.Equal(r.Argv, wantArgv) {
			t.Errorf("argv %q, want %q", r.Argv, wantArgv)
		}
		if r.Cwd != dir {
			t.Errorf("cwd %q, want the tool's working_dir %q", r.Cwd, dir)
		}
		out := output(t, res)
		if out.ExitCode != 0 || out.Stdout != got || out.Stderr != "" || out.Truncated || out.DurationMS < 0 {
			t.Errorf("structuredContent %+v, want exit 0 and stdout equal to the text", out)
		}
	})

	t.Run("a non-zero exit is an error carrying both streams", func(t *testing.T) {
		t.Parallel()
		res := call(t, cs, "fake_exit", map[string]any{"args": []string{"3"}})
		if got, want := toolsettest.ResultText(t, res), "to stdout\n--- stderr ---\nto stderr\n"; got != want {
			t.Errorf("text %q, want %q", got, want)
		}
		if !res.IsError {
			t.Error("isError is false for exit status 3")
		}
		out := output(t, res)
		out.DurationMS = 0
		if want := (Output{ExitCode: 3, Stdout: "to stdout\n", Stderr: "to stderr\n"}); out != want {
			t.Errorf("structuredContent %+v, want %+v", out, want)
		}
	})

	denials := []struct {
		name string
		args any
		want string
	}{
		{"a flag outside the allowlist is denied with the denial text",
			map[string]any{"force": true, "bogus": true, "args": []string{"x"}},
			"DENIED: 'fake report --force --bogus x' is not permitted.\n\n" +
				"Policy: flag '--bogus' is not in the allowlist for 'fake report'.\n" +
				"Allowed flags for 'fake report': --force, --depth, -m" + requestHint},
		{"a value out of bounds is denied",
			map[string]any{"depth": 99},
			"DENIED: 'fake report --depth=99' is not permitted.\n\nPolicy: value of '--depth' must be <= 50." + requestHint},
		{"a positional argument that looks like a flag is denied",
			map[string]any{"args": []string{"-rf"}},
			"DENIED: 'fake report -rf' is not permitted.\n\n" +
				"Policy: positional argument '-rf' looks like a flag; pass flags as named parameters." + requestHint},
		{"a cwd that does not exist is denied before anything runs",
			map[string]any{"cwd": "/nonexistent/wraptool-test"},
			"DENIED: 'fake report' is not permitted.\n\nPolicy: cwd '/nonexistent/wraptool-test' is not a directory." + requestHint},
	}
	for _, tc := range denials {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := call(t, cs, "fake_report", tc.args)
			if got := toolsettest.ResultText(t, res); got != tc.want {
				t.Errorf("text:\n%s\nwant:\n%s", got, tc.want)
			}
			if !res.IsError {
				t.Error("isError is false for a denial")
			}
			// The denial's structuredContent: denied, the Policy line's
			// reason, and the command as it would have run.
			sc, _ := res.StructuredContent.(map[string]any)
			reason, _ := sc["reason"].(string)
			if sc["denied"] != true || !strings.Contains(tc.want, "Policy: "+reason+".") || sc["command"] == nil {
				t.Errorf("structuredContent %v, want denied, the reason and the command", res.StructuredContent)
			}
		})
	}

	notObjects := []struct {
		name string
		args any
	}{
		{"an array of arguments is refused", []any{1}},
		{"a string of arguments is refused", "force"},
		{"a number of arguments is refused", 42},
		{"a boolean of arguments is refused", true},
	}
	for _, tc := range notObjects {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := call(t, cs, "fake_report", tc.args)
			got := toolsettest.ResultText(t, res)
			if !res.IsError || !strings.HasPrefix(got, "DENIED: the arguments must be a JSON object") {
				t.Errorf("isError %v, text %q; want an error saying the arguments must be an object", res.IsError, got)
			}
			if sc, _ := res.StructuredContent.(map[string]any); sc["denied"] != true || sc["call_id"] != nil {
				t.Errorf("structuredContent %v, want a denial with no call_id", res.StructuredContent)
			}
		})
	}

	t.Run("null arguments are no parameters", func(t *testing.T) {
		t.Parallel()
		res := call(t, cs, "fake_report", json.RawMessage("null"))
		if res.IsError {
			t.Errorf("isError for null arguments: %s", toolsettest.ResultText(t, res))
		}
	})
}

// A reload swaps the State while a call runs: the call keeps the State it
// started with, and the next call sees the new one. Here the swap lands the
// moment the handler has taken its snapshot, so a handler that looked at the
// current State again (for the runtime, say) would see the new one.
func TestHandlerKeepsItsSnapshotThroughASwap(t *testing.T) {
	t.Parallel()
	dirA, _ := filepath.EvalSymlinks(t.TempDir())
	dirB, _ := filepath.EvalSymlinks(t.TempDir())
	stA := fakeState(t, dirA, fakeRules()...)
	stB := fakeState(t, dirB, &policy.AllowRule{Subcommand: []string{"exit"}, Flags: help()})
	var cur atomic.Pointer[State]
	cur.Store(stA)
	current := func() *State {
		s := cur.Load()
		cur.Store(stB) // the reload lands right after this call took its snapshot
		return s
	}
	cs := serve(t, stA, current, context.Background())

	res := call(t, cs, "fake_report", map[string]any{"force": true})
	got := toolsettest.ResultText(t, res)
	if res.IsError {
		t.Fatalf("the call that started under the old State was refused: %s", got)
	}
	var r toolsettest.Report
	if err := json.Unmarshal([]byte(got), &r); err != nil {
		t.Fatalf("text %q: %v", got, err)
	}
	if r.Cwd != dirA || !slices.Equal(r.Argv, []string{fakecli, "report", "--force"}) {
		t.Errorf("the call ran %q in %q, want the old State's: --force in %q", r.Argv, r.Cwd, dirA)
	}

	res = call(t, cs, "fake_report", map[string]any{"force": true})
	want := "DENIED: 'fake report --force' is not permitted.\n\nPolicy: 'fake report' is not in the allowlist." + requestHint
	if got := toolsettest.ResultText(t, res); !res.IsError || got != want {
		t.Errorf("the next call: isError %v, text:\n%s\nwant the new State's denial:\n%s", res.IsError, got, want)
	}
}

func TestHandlerStopKillsARunningCall(t *testing.T) {
	t.Parallel()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	st := fakeState(t, dir, fakeRules()...)
	stop, stopNow := context.WithCancel(context.Background())
	defer stopNow()
	cs := serve(t, st, func() *State { return st }, stop)

	// fakecli's grandchild mode sleeps for an hour once its grandchild has
	// written a pidfile, which tells the test the run is under way.
	pidfile := filepath.Join(t.TempDir(), "grandchild.pid")
	done := make(chan *mcp.CallToolResult, 1)
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fake_grandchild", Arguments: map[string]any{"args": []string{pidfile}}})
		if err != nil {
			errc <- err
			return
		}
		done <- res
	}()
	pid := toolsettest.WaitForPID(t, pidfile)
	stopNow()
	select {
	case res := <-done:
		out := output(t, res)
		if out.ExitCode != -1 || !res.IsError {
			t.Errorf("exit_code %d, isError %v; want -1 and true", out.ExitCode, res.IsError)
		}
		if got := toolsettest.ResultText(t, res); !strings.Contains(got, "--- wraptool: cancelled") {
			t.Errorf("text %q does not say the run was cancelled", got)
		}
	case err := <-errc:
		t.Fatalf("CallTool: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not end after stop was cancelled")
	}
	waittest.Gone(t, 10*time.Second, pid)
}

func TestRunResult(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		res     runner.Result
		text    string
		isError bool
	}{
		{"stdout alone is the text", runner.Result{Stdout: "out\n"}, "out\n", false},
		{"nothing at all is an empty text", runner.Result{}, "", false},
		{"stderr alone follows its header", runner.Result{Stderr: "err\n", ExitCode: 1}, "--- stderr ---\nerr\n", true},
		{"stderr follows stdout under its header", runner.Result{Stdout: "out\n", Stderr: "err\n"}, "out\n--- stderr ---\nerr\n", false},
		{"stdout without a final newline gets one before the header",
			runner.Result{Stdout: "out", Stderr: "err"}, "out\n--- stderr ---\nerr", false},
		{"a timeout adds wraptool's note",
			runner.Result{ExitCode: -1, TimedOut: true, Stdout: "partial", Err: errors.New("timed out after 30s")},
			"partial\n--- wraptool: timed out after 30s ---\n", true},
		{"a timeout after both streams puts the note last",
			runner.Result{ExitCode: -1, TimedOut: true, Stdout: "out\n", Stderr: "err", Err: errors.New("timed out after 1s")},
			"out\n--- stderr ---\nerr\n--- wraptool: timed out after 1s ---\n", true},
		{"a failure to start is an error with only the note",
			runner.Result{ExitCode: -1, Err: errors.New("failed to start: no such file")},
			"--- wraptool: failed to start: no such file ---\n", true},
		{"a non-zero exit is an error", runner.Result{ExitCode: 2, Stdout: "out\n"}, "out\n", true},
		{"a zero exit with stderr is not an error", runner.Result{Stderr: "warning\n"}, "--- stderr ---\nwarning\n", false},
		{"an outright failure with exit 0 is still an error",
			runner.Result{Stdout: "out\n", Err: errors.New("exec: WaitDelay expired")},
			"out\n--- wraptool: exec: WaitDelay expired ---\n", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.res.Duration = 1500 * time.Millisecond
			tc.res.Truncated = tc.isError
			got := RunResult(tc.res)
			if s := toolsettest.ResultText(t, got); s != tc.text {
				t.Errorf("text %q, want %q", s, tc.text)
			}
			if got.IsError != tc.isError {
				t.Errorf("isError %v, want %v", got.IsError, tc.isError)
			}
			out := output(t, got)
			want := Output{ExitCode: tc.res.ExitCode, Stdout: tc.res.Stdout, Stderr: tc.res.Stderr, DurationMS: 1500, Truncated: tc.res.Truncated}
			if out != want {
				t.Errorf("structuredContent %+v, want %+v", out, want)
			}
		})
	}
}
