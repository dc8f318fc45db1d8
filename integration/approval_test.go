package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// decisionBound is the rule that a decision ends a wait within 1 s, with
// the headroom a shared machine needs.
const decisionBound = 3 * time.Second

// waitOutcome is what a waiting request call came back with, and when.
type waitOutcome struct {
	res *mcp.CallToolResult
	err error
	at  time.Time
}

// callWaiting starts a request-tool call with args on c in the background,
// bounded by ctx (and eventTimeout beyond its wait); the outcome arrives on
// the channel.
func callWaiting(ctx context.Context, c *mcpClient, args map[string]any, params func(*mcp.CallToolParams)) <-chan waitOutcome {
	out := make(chan waitOutcome, 1)
	go func() {
		p := &mcp.CallToolParams{Name: requestTool, Arguments: args}
		if params != nil {
			params(p)
		}
		res, err := c.CallTool(ctx, p)
		out <- waitOutcome{res: res, err: err, at: time.Now()}
	}()
	return out
}

// pendingFor polls `requests list --json` (bounded) until a pending request
// for subcommand sub is listed, and returns its id: the waiting call has
// filed it.
func pendingFor(t *testing.T, s *server, sub string) string {
	t.Helper()
	cli := operatorCLI(t, s)
	var id string
	// Each check runs the CLI: a steady pace spares the shared machine.
	waittest.Poll{Every: 50 * time.Millisecond}.Until(t, eventTimeout, func() error {
		out, stderr, code := cli("requests", "list", "--json")
		if code != 0 {
			t.Fatalf("requests list --json: exit %d, %s", code, stderr)
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var r struct {
				ID         string
				Subcommand []string
			}
			if line != "" && json.Unmarshal([]byte(line), &r) == nil && len(r.Subcommand) == 1 && r.Subcommand[0] == sub {
				id = r.ID
				return nil
			}
		}
		return fmt.Errorf("no pending request for %q:\n%s", sub, s.Log())
	})
	return id
}

// outcomeWithin waits (bounded) for a waiting call's outcome.
func outcomeWithin(t *testing.T, s *server, ch <-chan waitOutcome, within time.Duration) waitOutcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(within):
		t.Fatalf("the waiting call did not return within %v:\n%s", within, s.Log())
		return waitOutcome{}
	}
}

// waited is a waiting call's structuredContent.
type waited struct {
	ID      string
	Status  string
	Reason  *string
	Applied *bool
	Grant   *struct {
		Once  bool
		Until time.Time
	}
}

// adminPost posts body to the admin API path with the admin token.
func adminPost(t *testing.T, addr, token, path, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := (&http.Client{Timeout: eventTimeout}).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	res.Body.Close()
	return res.StatusCode
}

// A waiting request returns within a second of a decision, whoever makes
// it: the CLI approving once, the CLI denying with a reason, the admin API
// approving for an hour. Each answer carries the decision and its text.
func TestWaitEndsOnDecision(t *testing.T) {
	slow(t, "a waiting request ending on each kind of decision")
	t.Parallel()
	dir := t.TempDir()
	adminAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg := serverConfig(t, dir, grantConfig) + fmt.Sprintf("admin:\n  listen: %s\n  auth_token_file: %s\n", adminAddr, filepath.Join(dir, "admin-token"))
	s := startServerIn(t, dir, cfg)
	adminToken := strings.TrimSpace(string(configtest.ReadFile(t, filepath.Join(dir, "admin-token"))))
	cli := operatorCLI(t, s)
	c := s.Connect(t, "/mcp")

	for _, tc := range []struct {
		name, sub string
		decide    func(id string)
		wantText  string
		check     func(w waited) string
	}{
		{"a CLI approval once", "status", func(id string) {
			if _, stderr, code := cli("requests", "approve", id, "--once"); code != 0 {
				t.Fatalf("approve --once: %s", stderr)
			}
		}, "approved (once).", func(w waited) string {
			if w.Status != "approved" || w.Grant == nil || !w.Grant.Once {
				return "want approved with a once-grant"
			}
			return ""
		}},
		{"a CLI denial with its reason", "log", func(id string) {
			if _, stderr, code := cli("requests", "deny", id, "--reason", "use --depth 1 instead"); code != 0 {
				t.Fatalf("deny: %s", stderr)
			}
		}, "denied: use --depth 1 instead", func(w waited) string {
			if w.Status != "denied" || w.Reason == nil || *w.Reason != "use --depth 1 instead" {
				return "want denied with the reason"
			}
			return ""
		}},
		{"an admin-API approval for an hour", "show", func(id string) {
			// No rule names show, so its help is unknown and its flags
			// count as unlisted: the operator says so explicitly.
			if code := adminPost(t, adminAddr, adminToken, "/api/requests/"+id+"/approve", `{"for":"1h","unlisted_ok":true}`); code != http.StatusOK {
				t.Fatalf("admin approve: status %d\n%s", code, s.Log())
			}
		}, "approved until ", func(w waited) string {
			if w.Status != "approved" || w.Grant == nil || w.Grant.Once || time.Until(w.Grant.Until) < 50*time.Minute {
				return "want approved with an hour's grant"
			}
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*eventTimeout)
			defer cancel()
			args := askFor("fake", []string{tc.sub}, []string{"--depth"}, "wait for "+tc.name, "")
			args["wait_seconds"] = 60
			ch := callWaiting(ctx, c, args, nil)
			id := pendingFor(t, s, tc.sub)
			decided := time.Now()
			tc.decide(id)
			o := outcomeWithin(t, s, ch, eventTimeout)
			if o.err != nil {
				t.Fatalf("waiting call: %v", o.err)
			}
			took := o.at.Sub(decided)
			t.Logf("the call returned %v after the decision began (the CLI's or API's own time included)", took)
			if took > decisionBound {
				t.Errorf("the call returned %v after the decision, want within 1 s (asserted with headroom: %v)", took, decisionBound)
			}
			text := toolsettest.ResultText(t, o.res)
			if o.res.IsError || !strings.HasPrefix(text, "Request "+id+" ") || !strings.Contains(text, tc.wantText) {
				t.Errorf("text = %q, want %q in it", text, tc.wantText)
			}
			var w waited
			structured(t, o.res, &w)
			if w.ID != id {
				t.Errorf("id = %q, want %q", w.ID, id)
			}
			if why := tc.check(w); why != "" {
				t.Errorf("structuredContent %+v: %s", o.res.StructuredContent, why)
			}
		})
	}
}

// A wait nobody answers returns pending when it ends; a wait_seconds out of
// range is a tool error that records nothing; progress arrives every 5 s
// for a call with a progress token.
func TestWaitUnanswered(t *testing.T) {
	slow(t, "an unanswered wait, wait_seconds bounds and progress")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, grantConfig))
	c := s.Connect(t, "/mcp")

	t.Run("a 2 s wait returns pending", func(t *testing.T) {
		args := askFor("fake", []string{"status"}, []string{"--depth"}, "nobody answers", "")
		args["wait_seconds"] = 2
		start := time.Now()
		res := c.Call(t, requestTool, args)
		took := time.Since(start)
		text := toolsettest.ResultText(t, res)
		var w waited
		structured(t, res, &w)
		if res.IsError || w.Status != "pending" || !strings.Contains(text, "still pending after 2 s") {
			t.Errorf("got %q %+v, want pending after 2 s", text, w)
		}
		if took < 2*time.Second || took > 2*time.Second+decisionBound {
			t.Errorf("the call took %v, want 2 s (and not much more)", took)
		}
	})

	t.Run("out-of-range wait_seconds is a tool error", func(t *testing.T) {
		before := configtest.ReadFile(t, s.RequestLog)
		for _, wait := range []any{301, -1, 2.5, "abc", "", "1e2", true, "3000000000000000000000"} {
			args := askFor("fake", []string{"log"}, []string{"--depth"}, "bad wait", "")
			args["wait_seconds"] = wait
			res := c.Call(t, requestTool, args)
			if text := toolsettest.ResultText(t, res); !res.IsError || !strings.Contains(text, "wait_seconds") {
				t.Errorf("wait_seconds %#v: error %v, %q; want a tool error naming wait_seconds", wait, res.IsError, text)
			}
		}
		if !bytes.Equal(configtest.ReadFile(t, s.RequestLog), before) {
			t.Errorf("a refused wait recorded a request")
		}
	})

	t.Run("a string of digits is a wait", func(t *testing.T) {
		args := askFor("fake", []string{"show"}, []string{"--depth"}, "string wait", "")
		args["wait_seconds"] = "1"
		res := c.Call(t, requestTool, args)
		if text := toolsettest.ResultText(t, res); res.IsError || !strings.Contains(text, "still pending after 1 s") {
			t.Errorf("wait_seconds \"1\": %q", text)
		}
	})

	t.Run("progress every 5 s", func(t *testing.T) {
		var mu sync.Mutex
		var got []*mcp.ProgressNotificationParams
		client := mcp.NewClient(&mcp.Implementation{Name: "progress-test", Version: "1"}, &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
				mu.Lock()
				got = append(got, r.Params)
				mu.Unlock()
			},
		})
		session := connectWith(t, s, client, s.Token, "")
		args := askFor("fake", []string{"progress"}, []string{"--depth"}, "progress please", "")
		args["wait_seconds"] = 6
		ctx, cancel := context.WithTimeout(t.Context(), eventTimeout)
		defer cancel()
		p := &mcp.CallToolParams{Name: requestTool, Arguments: args}
		p.SetProgressToken("tok-1")
		res, err := session.CallTool(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if text := toolsettest.ResultText(t, res); !strings.Contains(text, "still pending after 6 s") {
			t.Errorf("text %q", text)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 1 || got[0].ProgressToken != "tok-1" || got[0].Progress < 4 || !strings.Contains(got[0].Message, "waiting for the operator") {
			t.Errorf("progress notifications: %+v, want one (at 5 s) with the call's token", got)
		}
	})
}

// A cancelled wait stops waiting and leaves the request pending; the
// session's waiting slot is free again.
func TestWaitCancelled(t *testing.T) {
	slow(t, "a cancelled wait freeing its slot")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, grantConfig))
	c := s.Connect(t, "/mcp")
	cli := operatorCLI(t, s)

	ctx, cancel := context.WithCancel(t.Context())
	args := askFor("fake", []string{"status"}, []string{"--depth"}, "cancel me", "")
	args["wait_seconds"] = 300
	ch := callWaiting(ctx, c, args, nil)
	id := pendingFor(t, s, "status")
	cancel()
	o := outcomeWithin(t, s, ch, eventTimeout)
	if o.err == nil || !errors.Is(o.err, context.Canceled) {
		t.Errorf("cancelled call: %v, want context.Canceled", o.err)
	}
	s.WaitLog(t, `msg="wait ended" id=`+id+` why=cancelled`, 1, eventTimeout)
	if got := listJSON(t, cli, id); got.Status != "pending" {
		t.Errorf("after the cancel the request is %s, want pending", got.Status)
	}
	// Four more waits fit in the session: the cancelled one was released.
	var chans []<-chan waitOutcome
	ctx2, cancel2 := context.WithTimeout(t.Context(), eventTimeout)
	defer cancel2()
	for i := range 4 {
		a := askFor("fake", []string{fmt.Sprintf("w%d", i)}, nil, "slot", "")
		a["wait_seconds"] = 1
		chans = append(chans, callWaiting(ctx2, c, a, nil))
	}
	for _, ch := range chans {
		o := outcomeWithin(t, s, ch, eventTimeout)
		if o.err != nil || o.res.IsError {
			t.Errorf("a wait after the cancel: %v %v", o.err, o.res)
		}
	}
}

// connectWith connects client to s's Streamable HTTP endpoint with token as
// the bearer token, speaking protocol (empty: the SDK's newest). The
// session is closed when the test ends.
func connectWith(t *testing.T, s *server, client *mcp.Client, token, protocol string) *mcp.ClientSession {
	t.Helper()
	transport := &mcp.StreamableClientTransport{Endpoint: s.BaseURL() + "/mcp",
		HTTPClient: &http.Client{Transport: toolsettest.Bearer{Token: token, Base: http.DefaultTransport}}}
	ctx, cancel := context.WithTimeout(t.Context(), eventTimeout)
	defer cancel()
	var opts *mcp.ClientSessionOptions
	if protocol != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: protocol}
	}
	session, err := client.Connect(ctx, transport, opts)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, s.Log())
	}
	t.Cleanup(func() { session.Close() })
	return session
}

// elicitConfig adds an elicitation client to a server config in dir.
func elicitConfig(t *testing.T, dir string) string {
	cfg := serverConfig(t, dir, grantConfig)
	return strings.Replace(cfg, "mcp:\n", "mcp:\n  elicit_clients:\n    - name: Test Desktop\n      token_file: "+filepath.Join(dir, "elicit-token")+"\n", 1)
}

// asker is a go-sdk client whose user answers every elicitation with
// action (and decision, for accept), and which counts the questions.
type asker struct {
	mu       sync.Mutex
	asked    []*mcp.ElicitParams
	action   string
	decision string
}

func (a *asker) client(t *testing.T) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "elicit-test", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: a.answer})
}

func (a *asker) answer(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, r.Params)
	res := &mcp.ElicitResult{Action: a.action}
	if a.action == "accept" {
		res.Content = map[string]any{"decision": a.decision}
	}
	return res, nil
}

func (a *asker) questions() []*mcp.ElicitParams {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*mcp.ElicitParams(nil), a.asked...)
}

// enumOf is the decision field's choices in an elicitation's form.
func enumOf(t *testing.T, p *mcp.ElicitParams) []string {
	t.Helper()
	data, err := json.Marshal(p.RequestedSchema)
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Decision struct {
				Enum []string
			}
		}
		Required []string
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	if len(schema.Required) != 1 || schema.Required[0] != "decision" {
		t.Errorf("required = %v, want [decision]", schema.Required)
	}
	return schema.Properties.Decision.Enum
}

// Elicitation with the go-sdk client, on the newest protocol (the question
// travels in the result, multi-round-trip) and on 2025-11-25 (the server
// asks with elicitation/create during the call): accept once runs the call
// once; decline denies; a client without the capability, or one on the
// main MCP token, is never asked; nor is anyone for a flag the help does
// not list or a tool the config does not have.
func TestElicitationGoSDK(t *testing.T) {
	slow(t, "elicitation with the go-sdk client on both protocols")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, elicitConfig(t, dir))
	elicitToken := strings.TrimSpace(string(configtest.ReadFile(t, filepath.Join(dir, "elicit-token"))))
	if elicitToken == "" || elicitToken == s.Token {
		t.Fatalf("elicit token %q: want one of its own", elicitToken)
	}
	cli := operatorCLI(t, s)
	plain := s.Connect(t, "/mcp") // runs the granted calls, on the main token

	for _, protocol := range []string{"", "2025-06-18"} {
		name := protocol
		if name == "" {
			name = "newest, falling back"
		}
		t.Run(name+"/accept once runs the call once", func(t *testing.T) {
			a := &asker{action: "accept", decision: "once"}
			session := connectWith(t, s, a.client(t), elicitToken, protocol)
			// The Streamable HTTP endpoint keeps sessions, which the SDK
			// serves up to 2025-11-25: a newest-protocol client falls back.
			if want := map[string]string{"": "2025-11-25"}[protocol]; want != "" && session.InitializeResult().ProtocolVersion != want {
				t.Errorf("negotiated protocol %q, want %s", session.InitializeResult().ProtocolVersion, want)
			}
			sub := "status"
			res, err := session.CallTool(bounded(t), &mcp.CallToolParams{Name: requestTool,
				Arguments: askFor("fake", []string{sub}, []string{"--depth"}, "look at <three> 'commits'", "")})
			if err != nil {
				t.Fatal(err)
			}
			text := toolsettest.ResultText(t, res)
			var w waited
			structured(t, res, &w)
			if w.Status != "approved" || w.Grant == nil || !w.Grant.Once || !strings.Contains(text, "approved (once)") {
				t.Fatalf("result %q %+v, want approved once", text, w)
			}
			q := a.questions()
			if len(q) != 1 {
				t.Fatalf("asked %d times, want once", len(q))
			}
			// The request's line, then what one click grants, as
			// `requests approve` prints it.
			want := "Test Desktop: the assistant asks to run 'fake status' with --depth: look at <three> 'commits'\n" +
				"Approving grants fake status, as the rule will stand:\n" +
				"  --verbose  a switch  — say more\n" +
				"  --depth  takes any value  — limit to NUM commits\n" +
				"  positional arguments: any number, as they are\n" +
				"  plus -h and --help, each run alone"
			if q[0].Message != want {
				t.Errorf("message %q, want %q", q[0].Message, want)
			}
			if got := enumOf(t, q[0]); strings.Join(got, ",") != "deny,once,hour" {
				t.Errorf("choices %v, want deny, once, hour", got)
			}
			l := listJSON(t, cli, w.ID)
			if l.Status != "approved" || l.Grant == nil || !l.Grant.Once {
				t.Errorf("log: %+v", l)
			}
			assertDecidedBy(t, s, w.ID, "client", "Test Desktop")
			call := map[string]any{"depth": "3"}
			waitRuns(t, s, plain, "fake_status", call)
			if ran, text := runs(t, plain, "fake_status", call); ran {
				t.Errorf("a second call ran on the once-grant: %s", text)
			}
		})
		t.Run(name+"/a flag that writes files is asked, its class beside it", func(t *testing.T) {
			a := &asker{action: "decline"}
			session := connectWith(t, s, a.client(t), elicitToken, protocol)
			if _, err := session.CallTool(bounded(t), &mcp.CallToolParams{Name: requestTool,
				Arguments: askFor("fake", []string{"status"}, []string{"--output"}, "save the report "+name, "")}); err != nil {
				t.Fatal(err)
			}
			q := a.questions()
			if len(q) != 1 {
				t.Fatalf("asked %d times, want once", len(q))
			}
			if want := "  --output  takes any value  — write the report to FILE  ! writes-files: writes a file it names\n"; !strings.Contains(q[0].Message, want) {
				t.Errorf("message %q lacks %q", q[0].Message, want)
			}
		})
		t.Run(name+"/decline denies", func(t *testing.T) {
			a := &asker{action: "decline"}
			session := connectWith(t, s, a.client(t), elicitToken, protocol)
			res, err := session.CallTool(bounded(t), &mcp.CallToolParams{Name: requestTool,
				Arguments: askFor("fake", []string{"status"}, []string{map[string]string{"": "--color", "2025-06-18": "--verbose"}[protocol]}, "decline me "+name, "")})
			if err != nil {
				t.Fatal(err)
			}
			text := toolsettest.ResultText(t, res)
			var w waited
			structured(t, res, &w)
			if w.Status != "denied" || w.Reason == nil || *w.Reason != "declined in the client" || !strings.Contains(text, "denied: declined in the client") {
				t.Errorf("result %q %+v, want denied: declined in the client", text, w)
			}
			if len(a.questions()) != 1 {
				t.Errorf("asked %d times, want once", len(a.questions()))
			}
			assertDecidedBy(t, s, w.ID, "client", "Test Desktop")
		})
	}

	never := []struct {
		name   string
		token  string
		ask    map[string]any
		noCaps bool
	}{
		{"a client without the capability", elicitToken, askFor("fake", []string{"show"}, []string{"--depth"}, "no caps", ""), true},
		{"a client on the main MCP token", s.Token, askFor("fake", []string{"show"}, []string{"--verbose"}, "main token", ""), false},
		{"a flag the help does not list", elicitToken, askFor("fake", []string{"show"}, []string{"--no-such-flag"}, "unlisted", ""), false},
		{"a flag on a subcommand whose help cannot be learned", elicitToken, askFor("fake", []string{"nohelp"}, []string{"--depth"}, "help unknown", ""), false},
		{"a tool the config does not have", elicitToken, askFor("nosuch", []string{"show"}, nil, "unknown tool", ""), false},
		{"a subcommand a deny rule covers", elicitToken, askFor("fake", []string{"secret"}, nil, "denied sub", ""), false},
		// --exec runs a program (the generic --exec* name): a click cannot
		// carry the typed confirmation granting it needs.
		{"a flag that runs code", elicitToken, askFor("fake", []string{"show"}, []string{"--exec"}, "run it", ""), false},
		{"an empty subcommand", elicitToken, askFor("fake", []string{}, []string{"--depth"}, "empty sub", ""), false},
	}
	for _, tc := range never {
		t.Run("never asked/"+tc.name, func(t *testing.T) {
			a := &asker{action: "accept", decision: "hour"}
			client := a.client(t)
			if tc.noCaps {
				client = mcp.NewClient(&mcp.Implementation{Name: "no-caps", Version: "1"}, nil)
			}
			session := connectWith(t, s, client, tc.token, "")
			res, err := session.CallTool(bounded(t), &mcp.CallToolParams{Name: requestTool, Arguments: tc.ask})
			if err != nil {
				t.Fatal(err)
			}
			var w waited
			structured(t, res, &w)
			if res.IsError || w.Status != "pending" {
				t.Errorf("result %q, want recorded pending", toolsettest.ResultText(t, res))
			}
			if n := len(a.questions()); n != 0 {
				t.Errorf("asked %d times, want never", n)
			}
			if got := listJSON(t, cli, w.ID); got.Status != "pending" {
				t.Errorf("log: %+v, want pending", got)
			}
		})
	}
}

// An exact-call request is held to the same rule (failing closed): a refused
// call naming --verb, a prefix git-style tools would read as --verbose, is
// asked for by call_id on the elicitation token, and nobody is asked; the
// request stays pending.
func TestElicitationNeverAsksAboutAnExactCallsUnlistedFlag(t *testing.T) {
	slow(t, "elicitation refusing an exact call's unlisted flag")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, elicitConfig(t, dir))
	elicitToken := strings.TrimSpace(string(configtest.ReadFile(t, filepath.Join(dir, "elicit-token"))))
	cli := operatorCLI(t, s)
	a := &asker{action: "accept", decision: "once"}
	session := connectWith(t, s, a.client(t), elicitToken, "")
	denied, err := session.CallTool(bounded(t), &mcp.CallToolParams{Name: "fake_status", Arguments: map[string]any{"verb": true}})
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		CallID string `json:"call_id"`
	}
	structured(t, denied, &d)
	if !denied.IsError || d.CallID == "" {
		t.Fatalf("fake_status --verb: %q, want a denial with a call_id", toolsettest.ResultText(t, denied))
	}
	res, err := session.CallTool(bounded(t), &mcp.CallToolParams{Name: requestTool,
		Arguments: map[string]any{"call_id": d.CallID, "rationale": "just once"}})
	if err != nil {
		t.Fatal(err)
	}
	var w waited
	structured(t, res, &w)
	if res.IsError || w.Status != "pending" {
		t.Fatalf("result %q, want recorded pending", toolsettest.ResultText(t, res))
	}
	if n := len(a.questions()); n != 0 {
		t.Errorf("asked %d times about an exact call naming an unlisted flag, want never", n)
	}
	if got := listJSON(t, cli, w.ID); got.Status != "pending" || got.Call == nil {
		t.Errorf("log: %+v, want a pending exact-call request", got)
	}
	s.WaitLog(t, `msg="not asking the client"`, 1, eventTimeout)
}

// bounded is a context that ends with the test or after eventTimeout.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), eventTimeout)
	t.Cleanup(cancel)
	return ctx
}

// assertDecidedBy checks the decision line of id in s's request log.
func assertDecidedBy(t *testing.T, s *server, id, by, client string) {
	t.Helper()
	for _, obj := range logObjects(t, configtest.ReadFile(t, s.RequestLog)) {
		var lineID, status, decidedBy, name string
		json.Unmarshal(obj["id"], &lineID)
		json.Unmarshal(obj["status"], &status)
		if lineID != id || status == "pending" {
			continue
		}
		json.Unmarshal(obj["decided_by"], &decidedBy)
		json.Unmarshal(obj["client"], &name)
		if decidedBy != by || name != client {
			t.Errorf("decision on %s: decided_by %q client %q, want %q %q", id, decidedBy, name, by, client)
		}
		return
	}
	t.Errorf("no decision line for %s", id)
}

// waitRuns calls tool until it runs (bounded): a grant decided through a
// client reaches the policy through the log watcher.
func waitRuns(t *testing.T, s *server, c *mcpClient, tool string, args map[string]any) {
	t.Helper()
	// A list_changed says the grant came into force; without one, retry
	// each second.
	waittest.Poll{Every: time.Second, Wake: c.ListChanged}.Until(t, eventTimeout, func() error {
		if ran, text := runs(t, c, tool, args); !ran {
			return fmt.Errorf("%s never ran: %s\n%s", tool, text, s.Log())
		}
		return nil
	})
}

// Elicitation with the official TypeScript SDK client (which asks with
// elicitation/create during the call): accept once runs the call once,
// decline denies, and without the capability it is never asked.
func TestElicitationNodeClient(t *testing.T) {
	slow(t, "elicitation with the TypeScript SDK client")
	t.Parallel()
	node, ndir := nodeSetup(t)
	dir := t.TempDir()
	s := startServerIn(t, dir, elicitConfig(t, dir))
	elicitToken := strings.TrimSpace(string(configtest.ReadFile(t, filepath.Join(dir, "elicit-token"))))
	plain := s.Connect(t, "/mcp")

	run := func(t *testing.T, answer, sub, flag string) map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), nodeRunTimeout)
		defer cancel()
		args, _ := json.Marshal(askFor("fake", []string{sub}, []string{flag}, "node asks "+answer, ""))
		cmd := exec.CommandContext(ctx, node, "elicit.mjs", "--url", s.URL, "--answer", answer, "--args", string(args))
		cmd.Dir = ndir
		cmd.Env = append(os.Environ(), "WRAPTOOL_TOKEN="+elicitToken)
		cmd.WaitDelay = 5 * time.Second
		var stderr logBuffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("elicit.mjs: %v\n%s\n%s\n%s", err, out, stderr.String(), s.Log())
		}
		var ev map[string]any
		if err := json.Unmarshal(bytes.TrimSpace(out), &ev); err != nil {
			t.Fatalf("elicit.mjs printed %q: %v", out, err)
		}
		return ev
	}

	t.Run("accept once runs the call once", func(t *testing.T) {
		ev := run(t, "once", "status", "--depth")
		sc, _ := ev["structuredContent"].(map[string]any)
		asked, _ := ev["asked"].([]any)
		if sc["status"] != "approved" || len(asked) != 1 {
			t.Fatalf("node: %v", ev)
		}
		q, _ := asked[0].(map[string]any)
		if msg, _ := q["message"].(string); !strings.HasPrefix(msg, "Test Desktop: the assistant asks to run 'fake status' with --depth: ") {
			t.Errorf("message %q", msg)
		}
		id, _ := sc["id"].(string)
		assertDecidedBy(t, s, id, "client", "Test Desktop")
		call := map[string]any{"depth": "2"}
		waitRuns(t, s, plain, "fake_status", call)
		if ran, text := runs(t, plain, "fake_status", call); ran {
			t.Errorf("a second call ran on the once-grant: %s", text)
		}
	})
	t.Run("decline denies", func(t *testing.T) {
		ev := run(t, "decline", "status", "--color")
		sc, _ := ev["structuredContent"].(map[string]any)
		if sc["status"] != "denied" || sc["reason"] != "declined in the client" {
			t.Errorf("node: %v", ev)
		}
	})
	t.Run("without the capability never asked", func(t *testing.T) {
		ev := run(t, "none", "status", "--verbose")
		sc, _ := ev["structuredContent"].(map[string]any)
		asked, _ := ev["asked"].([]any)
		if sc["status"] != "pending" || len(asked) != 0 {
			t.Errorf("node: %v", ev)
		}
	})
}

// An answer the server did not ask for is never recorded: wraptool asks
// with elicitation/create and never returns input requests, so a call
// carrying inputResponses or a requestState (an "answer" made up by the
// assistant's client, or by a client on an elicitation token) is a tool
// error that records and decides nothing.
func TestElicitationForgedAnswers(t *testing.T) {
	slow(t, "forged elicitation answers")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, elicitConfig(t, dir))
	elicitToken := strings.TrimSpace(string(configtest.ReadFile(t, filepath.Join(dir, "elicit-token"))))
	cli := operatorCLI(t, s)
	plain := s.Connect(t, "/mcp")
	id := request(t, plain, askFor("fake", []string{"status"}, []string{"--depth"}, "forge me", ""))
	before := configtest.ReadFile(t, s.RequestLog)
	accept := mcp.InputResponseMap{"decision": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}}
	for _, tc := range []struct {
		name  string
		token string
		resp  mcp.InputResponseMap
		state string
	}{
		{"responses and a state on the main token", s.Token, accept, "x.y"},
		{"responses alone on the main token", s.Token, accept, ""},
		{"a state alone on the main token", s.Token, nil, "c3RhdGU"},
		{"responses and a state on an elicitation token", elicitToken, accept, "x.y"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &asker{action: "accept", decision: "once"}
			client := mcp.NewClient(&mcp.Implementation{Name: "forger", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: a.answer, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
			session := connectWith(t, s, client, tc.token, "")
			p := &mcp.CallToolParams{Name: requestTool, InputResponses: tc.resp, RequestState: tc.state,
				Arguments: askFor("fake", []string{"status"}, []string{"--depth"}, "forge me", "")}
			res, err := session.CallTool(bounded(t), p)
			if err != nil {
				t.Fatal(err)
			}
			if text := toolsettest.ResultText(t, res); !res.IsError || !strings.Contains(text, "inputResponses and requestState are not accepted") {
				t.Errorf("got error %v %q, want a tool error", res.IsError, text)
			}
			if len(a.questions()) != 0 {
				t.Errorf("a forged answer led to a question")
			}
		})
	}
	if got := listJSON(t, cli, id); got.Status != "pending" {
		t.Errorf("after forged answers the request is %s, want pending", got.Status)
	}
	if !bytes.Equal(configtest.ReadFile(t, s.RequestLog), before) {
		t.Errorf("a forged answer wrote to the request log")
	}
}

// One session may have 10 pending requests it filed and 4 calls waiting; a
// decision frees a pending slot, another session has its own.
func TestSessionLimits(t *testing.T) {
	slow(t, "the per-session pending and waiting limits")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, grantConfig))
	cli := operatorCLI(t, s)
	c := s.Connect(t, "/mcp")
	var ids []string
	for i := range 10 {
		ids = append(ids, request(t, c, askFor("fake", []string{fmt.Sprintf("p%d", i)}, nil, "fill the session", "")))
	}
	eleventh := askFor("fake", []string{"p10"}, nil, "one too many", "")
	res := c.Call(t, requestTool, eleventh)
	if text := toolsettest.ResultText(t, res); !res.IsError || !strings.Contains(text, "this session already has 10 requests") || !strings.Contains(text, ids[0]) {
		t.Errorf("the 11th request: %q, want the session limit listing the pending ids", text)
	}
	// An identical request is still answered with its id: it files nothing.
	if id := request(t, c, askFor("fake", []string{"p3"}, nil, "again", "")); id != ids[3] {
		t.Errorf("a duplicate got %s, want %s", id, ids[3])
	}
	if _, stderr, code := cli("requests", "deny", ids[0], "--reason", "no"); code != 0 {
		t.Fatal(stderr)
	}
	request(t, c, eleventh)
	request(t, s.Connect(t, "/mcp"), askFor("fake", []string{"other"}, nil, "another session", ""))

	w := s.Connect(t, "/mcp")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for i := range 4 {
		a := askFor("fake", []string{fmt.Sprintf("w%d", i)}, nil, "wait", "")
		a["wait_seconds"] = 300
		callWaiting(ctx, w, a, nil)
	}
	s.WaitLog(t, `msg="waiting for a decision"`, 4, eventTimeout)
	a := askFor("fake", []string{"w4"}, nil, "a fifth wait", "")
	a["wait_seconds"] = 300
	res = w.Call(t, requestTool, a)
	if text := toolsettest.ResultText(t, res); !res.IsError || !strings.Contains(text, "already has 4 calls waiting") {
		t.Errorf("a fifth wait: %q", text)
	}
}

// A call waiting for a decision does not hold shutdown up: SIGTERM ends
// the wait at once with the request still pending, and serve exits 0 long
// before its grace period (10 s) is over.
func TestWaitEndsAtShutdown(t *testing.T) {
	slow(t, "a waiting call ended by SIGTERM")
	t.Parallel()
	dir := t.TempDir()
	s := startServerIn(t, dir, serverConfig(t, dir, grantConfig))
	c := s.Connect(t, "/mcp")
	args := askFor("fake", []string{"status"}, []string{"--depth"}, "still waiting at shutdown", "")
	args["wait_seconds"] = 300
	ch := callWaiting(bounded(t), c, args, nil)
	s.WaitLog(t, `msg="waiting for a decision"`, 1, eventTimeout)
	start := time.Now()
	s.Signal(t, syscall.SIGTERM)
	o := outcomeWithin(t, s, ch, eventTimeout)
	if o.err != nil {
		t.Fatalf("the waiting call: %v", o.err)
	}
	if text := toolsettest.ResultText(t, o.res); o.res.IsError || !strings.Contains(text, "still pending") {
		t.Errorf("the waiting call answered %q, want still pending", text)
	}
	if err := s.Wait(t, eventTimeout); err != nil {
		t.Errorf("serve exited with %v, want 0", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("serve took %v to stop with a call waiting; the grace period is 10 s and the wait should end at once", took)
	}
	s.WaitLog(t, `msg="wait ended"`, 1, time.Second)
	if !strings.Contains(s.Log(), "why=stopping") {
		t.Errorf("no wait ended why=stopping in the log:\n%s", s.Log())
	}
}
