package toolset

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/requests"
)

// flagHelps lists, per "tool sub", the flags a subcommand's help lists.
type flagHelps map[string][]string

func (h flagHelps) Flag(tool string, sub []string, flag string) (policy.FlagHelp, bool) {
	for _, f := range h[strings.Join(append([]string{tool}, sub...), " ")] {
		if f == flag {
			return policy.FlagHelp{}, true
		}
	}
	return policy.FlagHelp{}, false
}
func (flagHelps) Description(string, []string) string  { return "" }
func (flagHelps) ShortHelpTaken(string, []string) bool { return false }
func (h flagHelps) Subcommands(tool string, sub []string) (map[string]string, bool) {
	_, ok := h[strings.Join(append([]string{tool}, sub...), " ")]
	return nil, ok
}

// Only a request a person can safely approve with one click is put to a
// client's user: never one with a flag the help does not list, and, failing
// closed, never one with any flag where the subcommand's help is unknown,
// exact calls included.
func TestElicitable(t *testing.T) {
	t.Parallel()
	p := newPolicy(t, policy.Tool{Name: "git", Binary: "/usr/bin/git",
		Allow: []*policy.AllowRule{{Subcommand: []string{"status"}}, {Subcommand: []string{"log"}}},
		Deny:  []*policy.DenyRule{{Subcommand: []string{"config"}}}},
		// A tool key the catalog does not know, for a binary it does.
		policy.Tool{Name: "db", Binary: "/usr/bin/psql", Allow: []*policy.AllowRule{{Subcommand: []string{"query"}}}},
		policy.Tool{Name: "aws", Binary: "/usr/local/bin/aws", Allow: []*policy.AllowRule{{Subcommand: []string{"s3", "ls"}}}},
		// A tool with no rules yet, under a key the catalog does not know.
		policy.Tool{Name: "store", Binary: "/usr/local/bin/aws"})
	helps := flagHelps{"git status": {"--short", "-s"}, "git push": {"--force"}, "store s3 ls": {"--debug"},
		"db query": {"-h", "--csv"}, "aws s3 ls": {"--endpoint-url", "--recursive"}}
	st := &State{Policy: p, Helps: helps, Preview: newRulePreview}
	// held is a config whose rule holds --endpoint-url's value by a pattern.
	held := &State{Policy: p, Helps: helps, Preview: func(_ string, sub, flags []string) (*policy.AllowRule, error) {
		rule, _ := newRulePreview("", sub, flags)
		rule.FlagConstraints = map[string]*policy.Constraint{"--endpoint-url": {Pattern: `https://s3\.internal\.example\.com`}}
		return rule, nil
	}}
	noHelps := &State{Policy: p, Preview: newRulePreview}
	noPreview := &State{Policy: p, Helps: helps}
	refused := &State{Policy: p, Helps: helps, Preview: func(string, []string, []string) (*policy.AllowRule, error) {
		return nil, errors.New("the merged config would not validate")
	}}
	// exact is an exact-call request for git sub run with no arguments,
	// naming flags: one a grant could allow, whatever its flags say.
	exact := func(sub string, flags ...string) requests.Request {
		command, ok := p.Command(policy.Call{Tool: "git", Subcommand: []string{sub}, Params: map[string]any{}})
		if !ok {
			t.Fatalf("no command for git %s", sub)
		}
		return requests.Request{Tool: "git", Subcommand: []string{sub}, Flags: flags,
			Call: &requests.Call{Tool: "git_" + sub, Arguments: []byte(`{}`), Command: command}}
	}
	for _, tc := range []struct {
		name string
		st   *State
		r    requests.Request
		want string
	}{
		{"a listed flag", st, requests.Request{Tool: "git", Subcommand: []string{"status"}, Flags: []string{"--short"}}, ""},
		{"no flags on a new subcommand", st, requests.Request{Tool: "git", Subcommand: []string{"fetch"}}, ""},
		{"a listed flag of another subcommand's help", st, requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force"}}, ""},
		{"an unknown tool", st, requests.Request{Tool: "gh", Subcommand: []string{"pr"}}, "the tool is not in the config"},
		{"an empty subcommand", st, requests.Request{Tool: "git", Flags: []string{"--short"}}, "the request names no subcommand"},
		{"a deny-covered subcommand", st, requests.Request{Tool: "git", Subcommand: []string{"config", "alias.x"}}, "a deny rule covers the subcommand"},
		{"a prefix of a listed flag", st, requests.Request{Tool: "git", Subcommand: []string{"status"}, Flags: []string{"--sho"}},
			"not listed in the help: --sho (NOT IN 'git status --help')"},
		{"a flag where the subcommand's help is unknown", st, requests.Request{Tool: "git", Subcommand: []string{"fetch"}, Flags: []string{"--all"}},
			"not listed in the help: --all (HELP UNKNOWN for 'git fetch')"},
		{"a flag the help would list where no help is known at all", noHelps,
			requests.Request{Tool: "git", Subcommand: []string{"status"}, Flags: []string{"--short"}},
			"not listed in the help: --short (HELP UNKNOWN for 'git status')"},
		{"an exact call whose flags the help lists", st, exact("status", "--short"), ""},
		{"an exact call with a flag the help does not list", st, exact("status", "--sho"),
			"not listed in the help: --sho (NOT IN 'git status --help')"},
		{"an exact call with a flag where the subcommand's help is unknown", st, exact("log", "--oneline"),
			"not listed in the help: --oneline (HELP UNKNOWN for 'git log')"},
		{"an exact call with no flags where the subcommand's help is unknown", st, exact("log"), ""},
		{"an exact call needs no preview", noPreview, exact("status", "--short"), ""},
		{"an exact call whose folder is too long to show whole", st, func() requests.Request {
			r := exact("status")
			r.Call.Cwd = "/srv/" + strings.Repeat("a", 210) + "/../../tmp/evil"
			return r
		}(), "a value is longer than the 200 characters a question shows whole"},
		{"a folder of 200 characters is shown whole", st, func() requests.Request {
			r := exact("status")
			r.Call.Cwd = "/" + strings.Repeat("a", 199)
			return r
		}(), ""},
		{"a flag that sends the credentials, no pattern holding it", st, requests.Request{Tool: "aws", Subcommand: []string{"s3", "ls"}, Flags: []string{"--recursive", "--endpoint-url"}},
			DangerReason + ": --endpoint-url (sends-credentials)"},
		{"the same flag held by the config's pattern", held, requests.Request{Tool: "aws", Subcommand: []string{"s3", "ls"}, Flags: []string{"--endpoint-url"}}, ""},
		{"a harmless flag of the same tool", st, requests.Request{Tool: "aws", Subcommand: []string{"s3", "ls"}, Flags: []string{"--recursive"}}, ""},
		{"the catalog knows a tool by its binary", st, requests.Request{Tool: "db", Subcommand: []string{"query"}, Flags: []string{"--csv", "-h"}},
			DangerReason + ": -h (sends-credentials)"},
		// aws --debug logs every request's headers, the session token
		// among them; no generic name catches it.
		{"the catalog knows a tool with no rules by its binary too", st, requests.Request{Tool: "store", Subcommand: []string{"s3", "ls"}, Flags: []string{"--debug"}},
			DangerReason + ": --debug (prints-credentials)"},
		{"an exact call that sends the credentials: its value is fixed, but a click cannot carry the confirmation", st, func() requests.Request {
			command, ok := p.Command(policy.Call{Tool: "aws", Subcommand: []string{"s3", "ls"}, Params: map[string]any{}})
			if !ok {
				t.Fatal("no command for aws s3 ls")
			}
			return requests.Request{Tool: "aws", Subcommand: []string{"s3", "ls"}, Flags: []string{"--endpoint-url"},
				Call: &requests.Call{Tool: "aws_s3_ls", Arguments: []byte(`{}`), Command: command}}
		}(), DangerReason + ": --endpoint-url (sends-credentials)"},
		{"a capability whose effect cannot be computed", noPreview, requests.Request{Tool: "git", Subcommand: []string{"status"}, Flags: []string{"--short"}},
			"what approving grants cannot be computed"},
		{"a capability whose grant would be refused", refused, requests.Request{Tool: "git", Subcommand: []string{"status"}, Flags: []string{"--short"}},
			"a grant would be refused: the merged config would not validate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, got := elicitable(tc.st, tc.r); got != tc.want {
				t.Errorf("elicitable = %q, want %q", got, tc.want)
			}
		})
	}
}

// newRulePreview stands in for the served config's merge: a new rule for
// the subcommand with the requested flags and no positional arguments, as
// a grant on a subcommand the config lacks would stand.
func newRulePreview(_ string, sub, flags []string) (*policy.AllowRule, error) {
	zero := 0
	return &policy.AllowRule{Subcommand: sub, Flags: flags, ArgConstraints: policy.ArgConstraints{PositionalMax: &zero}}, nil
}

// describedHelps is a help that lists one flag of git push with its line.
type describedHelps struct{ flagHelps }

func (describedHelps) Flag(tool string, sub []string, flag string) (policy.FlagHelp, bool) {
	switch {
	case tool == "git" && strings.Join(sub, " ") == "push" && flag == "--exec":
		return policy.FlagHelp{Type: policy.TypeString, Description: "Same as --receive-pack=<git-receive-pack>."}, true
	case tool == "fetcher" && strings.Join(sub, " ") == "get" && flag == "--output":
		return policy.FlagHelp{Type: policy.TypeString, Description: "Write to file instead of stdout."}, true
	}
	return policy.FlagHelp{}, false
}

// The person asked in the client sees what one click grants, as `requests
// approve` prints it: each flag with its kind and help line, the positional
// limit; an exact call's command and folder. Without it a person saw only
// "'git push' with --exec: push to the mirror" and granted code execution.
func TestQuestionCarriesTheEffect(t *testing.T) {
	t.Parallel()
	p := newPolicy(t, policy.Tool{Name: "git", Binary: "/usr/bin/git",
		Allow: []*policy.AllowRule{{Subcommand: []string{"status"}}}},
		policy.Tool{Name: "fetcher", Binary: "/opt/bin/fetcher", Allow: []*policy.AllowRule{{Subcommand: []string{"list"}}}})
	st := &State{Policy: p, Helps: describedHelps{}, Preview: newRulePreview, PolicyHash: "hash"}
	// --exec runs a program: a click cannot approve it, so nobody is asked.
	r := requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--exec"}, Rationale: "push to the mirror"}
	if _, why := elicitable(st, r); why != DangerReason+": --exec (runs-code)" {
		t.Errorf("git push --exec: elicitable says %q, want it not asked, naming --exec (runs-code)", why)
	}
	r = requests.Request{Tool: "fetcher", Subcommand: []string{"get"}, Flags: []string{"--output"}, Rationale: "save the page"}
	effect, why := elicitable(st, r)
	if why != "" {
		t.Fatalf("not asked: %s", why)
	}
	got := question("Desk", r, st.Helps, effect).Message
	want := "Desk: the assistant asks to run 'fetcher get' with --output: save the page\n" +
		"Approving grants fetcher get, as the rule will stand:\n" +
		"  --output  takes any value  — Write to file instead of stdout.  ! writes-files: writes a file it names\n" +
		"  positional arguments: none (positional_max: 0; widen it by hand)\n" +
		"  plus -h and --help, each run alone"
	if got != want {
		t.Errorf("message:\n%s\nwant:\n%s", got, want)
	}

	command, ok := p.Command(policy.Call{Tool: "git", Subcommand: []string{"status"}, Params: map[string]any{}})
	if !ok {
		t.Fatal("no command for git status")
	}
	exact := requests.Request{Tool: "git", Subcommand: []string{"status"}, Rationale: "look",
		Call: &requests.Call{Tool: "git_status", Arguments: []byte(`{}`), Command: command, Cwd: "/srv/repo\u202e", Policy: "hash"}}
	effect, why = elicitable(st, exact)
	if why != "" {
		t.Fatalf("exact call not asked: %s", why)
	}
	got = question("Desk", exact, st.Helps, effect).Message
	want = "Desk: the assistant asks to run exactly 'git status': look\n" +
		"Approving allows exactly this call (git_status), and nothing like it:\n" +
		"  command: git status\n" +
		`  in:      /srv/repo\u202e`
	if got != want {
		t.Errorf("exact message:\n%s\nwant:\n%s", got, want)
	}
}

// The question names the client first, escapes what the assistant wrote,
// and lists deny first; an exact call offers no hour.
func TestQuestion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		r        requests.Request
		wantMsg  string
		wantEnum string
	}{
		{"flags", requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force"}, Rationale: "rebased"},
			"Desk: the assistant asks to run 'git push' with --force: rebased", "deny,once,hour"},
		{"no flags", requests.Request{Tool: "git", Subcommand: []string{"fetch"}, Rationale: "sync\nnow"},
			"Desk: the assistant asks to run 'git fetch': sync now", "deny,once,hour"},
		{"a flag the help does not list is marked", requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force", "--rece"}, Rationale: "r"},
			"Desk: the assistant asks to run 'git push' with --force --rece (NOT IN 'git push --help'): r", "deny,once,hour"},
		{"a flag where the help is unknown is marked", requests.Request{Tool: "git", Subcommand: []string{"fetch"}, Flags: []string{"--all"}, Rationale: "r"},
			"Desk: the assistant asks to run 'git fetch' with --all (HELP UNKNOWN for 'git fetch'): r", "deny,once,hour"},
		{"an exact call's unlisted flag is marked", requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--rece"}, Rationale: "r",
			Call: &requests.Call{Command: []string{"git", "push", "--rece=x"}}},
			"Desk: the assistant asks to run exactly 'git push --rece=x' (--rece (NOT IN 'git push --help')): r", "deny,once"},
		{"an exact call", requests.Request{Tool: "git", Subcommand: []string{"push"}, Rationale: "once",
			Call: &requests.Call{Command: []string{"git", "push", "origin", "x'; rm -rf ~"}}},
			`Desk: the assistant asks to run exactly 'git push origin "x'; rm -rf ~"': once`, "deny,once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := question("Desk", tc.r, flagHelps{"git push": {"--force"}}, nil)
			if !strings.HasPrefix(q.Message, "Desk: the assistant asks to run ") {
				t.Errorf("message %q does not start with the client's name", q.Message)
			}
			if q.Message != tc.wantMsg {
				t.Errorf("message %q, want %q", q.Message, tc.wantMsg)
			}
			schema := q.RequestedSchema.(map[string]any)
			enum := schema["properties"].(map[string]any)["decision"].(map[string]any)["enum"].([]string)
			if got := strings.Join(enum, ","); got != tc.wantEnum {
				t.Errorf("choices %s, want %s", got, tc.wantEnum)
			}
		})
	}
}

// A client's answer maps to a decision: accept once/hour approves, deny,
// decline and cancel deny; anything else decides nothing.
func TestRecordAnswer(t *testing.T) {
	t.Parallel()
	plain := requests.Request{Tool: "git", Subcommand: []string{"push"}}
	exact := requests.Request{Tool: "git", Subcommand: []string{"push"}, Call: &requests.Call{Command: []string{"git", "push"}}}
	for _, tc := range []struct {
		name   string
		r      requests.Request
		answer mcp.ElicitResult
		want   string // status, "once", "hour" or "" for nothing
	}{
		{"accept once", plain, mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}, "once"},
		{"accept hour", plain, mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "hour"}}, "hour"},
		{"accept deny", plain, mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "deny"}}, "denied"},
		{"decline", plain, mcp.ElicitResult{Action: "decline"}, "denied"},
		{"cancel", plain, mcp.ElicitResult{Action: "cancel"}, "denied"},
		{"hour on an exact call decides nothing", exact, mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "hour"}}, ""},
		{"once on an exact call", exact, mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}, "once"},
		{"an unknown choice decides nothing", plain, mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "forever"}}, ""},
		{"a choice of the wrong type decides nothing", plain, mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": 1}}, ""},
		{"an unknown action decides nothing", plain, mcp.ElicitResult{Action: "approve"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got *requests.Decision
			tool := &RequestTool{Decide: func(_ context.Context, _ string, d requests.Decision) error {
				got = &d
				return nil
			}}
			tool.init()
			res := tool.record(t.Context(), &State{ConfigPath: "/etc/wraptool/config.yaml"}, "req_0123abcd", "Desk", tc.r, &tc.answer)
			switch {
			case tc.want == "":
				if got != nil || res != nil {
					t.Errorf("decided %+v, want nothing", got)
				}
				return
			case got == nil:
				t.Fatalf("decided nothing, want %s", tc.want)
			case got.DecidedBy != "client" || got.Client != "Desk":
				t.Errorf("decided by %q %q, want client Desk", got.DecidedBy, got.Client)
			}
			switch tc.want {
			case "denied":
				if got.Status != requests.StatusDenied || got.Reason != "declined in the client" || got.Grant != nil {
					t.Errorf("decision %+v, want a denial declined in the client", got)
				}
			case "once":
				if got.Status != requests.StatusApproved || got.Grant == nil || !got.Grant.Once || got.Grant.Exact != (tc.r.Call != nil) {
					t.Errorf("decision %+v, want a once-grant", got)
				}
			case "hour":
				if got.Status != requests.StatusApproved || got.Grant == nil || got.Grant.Once || time.Until(got.Grant.Until) < 59*time.Minute {
					t.Errorf("decision %+v, want an hour's grant", got)
				}
			}
		})
	}
}

// Calls at once from one session cannot all pass the per-session check
// before any is remembered: the eleventh in flight is refused, and a
// released slot lets the next one in.
func TestSessionLimitsCountCallsInFlight(t *testing.T) {
	t.Parallel()
	l := sessionLimits{waiting: map[*mcp.ServerSession]int{}, filed: map[*mcp.ServerSession][]string{}, inflight: map[*mcp.ServerSession]int{}}
	s := &mcp.ServerSession{}
	var releases []func()
	for i := range MaxPendingPerSession {
		res, release := l.pending(t.Context(), s, nil, requests.Request{Tool: "git", Subcommand: []string{"s" + strconv.Itoa(i)}})
		if res != nil {
			t.Fatalf("request %d refused: %v", i, res.Content)
		}
		releases = append(releases, release)
	}
	if res, _ := l.pending(t.Context(), s, nil, requests.Request{Tool: "git", Subcommand: []string{"one-more"}}); res == nil {
		t.Fatalf("an eleventh request in flight passed the limit")
	}
	releases[0]() // its submit failed: nothing filed
	res, release := l.pending(t.Context(), s, nil, requests.Request{Tool: "git", Subcommand: []string{"one-more"}})
	if res != nil {
		t.Fatalf("a freed slot was not given: %v", res.Content)
	}
	release()
	for _, r := range releases[1:] {
		r()
	}
	if len(l.inflight) != 0 {
		t.Errorf("slots left in flight: %v", l.inflight)
	}
}

// At the limit, the session's filed requests are checked with the
// request-log writer: decided ones free their slots, and a request
// identical to a pending one passes (its submit files nothing).
func TestSessionLimitsAskTheWriter(t *testing.T) {
	t.Parallel()
	l := sessionLimits{waiting: map[*mcp.ServerSession]int{}, filed: map[*mcp.ServerSession][]string{}, inflight: map[*mcp.ServerSession]int{}}
	s := &mcp.ServerSession{}
	for i := range MaxPendingPerSession {
		l.remember(s, "req_"+strconv.Itoa(i))
	}
	var asked []string
	stillAll := func(_ context.Context, ids []string, r requests.Request) ([]string, bool, error) {
		asked = ids
		return ids, r.Subcommand[0] == "same", nil
	}
	if res, _ := l.pending(t.Context(), s, stillAll, requests.Request{Tool: "git", Subcommand: []string{"new"}}); res == nil {
		t.Fatalf("a session with 10 pending passed the limit")
	}
	if len(asked) != MaxPendingPerSession {
		t.Errorf("the writer was asked about %v, want the 10 filed ids", asked)
	}
	res, release := l.pending(t.Context(), s, stillAll, requests.Request{Tool: "git", Subcommand: []string{"same"}})
	if res != nil {
		t.Fatalf("a request identical to a pending one was refused")
	}
	release()
	oneDecided := func(_ context.Context, ids []string, _ requests.Request) ([]string, bool, error) {
		return ids[1:], false, nil
	}
	res, release = l.pending(t.Context(), s, oneDecided, requests.Request{Tool: "git", Subcommand: []string{"new"}})
	if res != nil {
		t.Fatalf("a decided request did not free its slot")
	}
	release()
	if got := len(l.filed[s]); got != MaxPendingPerSession-1 {
		t.Errorf("%d filed ids kept, want %d (the decided one forgotten)", got, MaxPendingPerSession-1)
	}
}

// A session on an elicitation client's token, whose client declared the
// capability, is asked at once about a request whose flags the help lists;
// never about one with a flag the help does not list or where the help is
// unknown (failing closed), exact calls included: that request stays
// pending, and no question reaches the client.
func TestElicitationIsNotSentWhereAFlagIsNotListed(t *testing.T) {
	t.Parallel()
	p := newPolicy(t, policy.Tool{Name: "git", Binary: "/usr/bin/git",
		Allow: []*policy.AllowRule{{Subcommand: []string{"status"}}, {Subcommand: []string{"log"}}}})
	helps := flagHelps{"git status": {"--short", "--exec-path", "--output"}}
	for _, tc := range []struct {
		name  string
		helps policy.Helps
		exact bool // ask for exactly a refused call naming the flag
		sub   string
		flag  string
		asked bool
		// learns: the server learns the subcommand's help when asked
		// (git log's lists --oneline), as the policy holder does.
		learns bool
		// shows is in the question asked, when asked.
		shows string
	}{
		{"a flag the help lists is asked about", helps, false, "status", "--short", true, false, ""},
		{"a prefix of a listed flag is not asked about", helps, false, "status", "--sho", false, false, ""},
		{"a flag of a subcommand whose help is unknown is not asked about", helps, false, "log", "--oneline", false, false, ""},
		{"a flag where no help is known at all is not asked about", nil, false, "status", "--short", false, false, ""},
		{"an exact call whose flag the help lists is asked about", helps, true, "status", "--short", true, false, ""},
		{"an exact call with a prefix of a listed flag is not asked about", helps, true, "status", "--sho", false, false, ""},
		{"an exact call with a flag of a subcommand whose help is unknown is not asked about", helps, true, "log", "--oneline", false, false, ""},
		{"an exact call with a flag where no help is known at all is not asked about", nil, true, "status", "--short", false, false, ""},
		{"a flag of a subcommand whose help is learned first is asked about", helps, false, "log", "--oneline", true, true, ""},
		{"an exact call whose subcommand's help is learned first is asked about", helps, true, "log", "--oneline", true, true, ""},
		{"a flag the learned help does not list is not asked about", helps, false, "log", "--onel", false, true, ""},
		{"a flag that runs a program, with no pattern on its value, is not asked about", helps, false, "status", "--exec-path", false, false, ""},
		{"a flag that writes a file is asked about, its class shown", helps, false, "status", "--output", true, false,
			"  --output  takes any value  ! writes-files: writes a file it names"},
		// Its value is fixed, but granting it takes the typed confirmation
		// a click cannot carry.
		{"an exact call with a flag that runs a program is not asked about", helps, true, "status", "--exec-path", false, false, ""},
		{"an exact call with a flag that writes a file is asked about, its class shown", helps, true, "status", "--output", true, false,
			"  ! --output: writes-files: writes a file it names"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			log := filepath.Join(t.TempDir(), "requests.jsonl")
			args := map[string]any{"tool": "git", "subcommand": []string{tc.sub}, "flags": []string{tc.flag}, "rationale": "look"}
			denials := NewDenials()
			if tc.exact {
				// A refused call a grant could allow (run with no
				// arguments), remembered as naming the flag.
				command, ok := p.Command(policy.Call{Tool: "git", Subcommand: []string{tc.sub}, Params: map[string]any{}})
				if !ok {
					t.Fatalf("no command for git %s", tc.sub)
				}
				id, err := denials.Add(DeniedCall{Tool: "git", Subcommand: []string{tc.sub}, Flags: []string{tc.flag}, At: time.Now(),
					Call: requests.Call{Tool: "git_" + tc.sub, Arguments: []byte(`{}`), Command: command, Cwd: "/", Dir: "1:2", Policy: "hash"}})
				if err != nil {
					t.Fatal(err)
				}
				args = map[string]any{"call_id": id, "rationale": "look"}
			}
			var current atomic.Pointer[State]
			current.Store(&State{Policy: p, PolicyHash: "hash", Helps: tc.helps, Preview: newRulePreview,
				ElicitTokens: map[string]string{"elicit-token": "Desk"}})
			var learner Learner
			if tc.learns {
				learner = func(_ context.Context, specs []config.GrantSpec) error {
					if len(specs) != 1 || specs[0].Tool != "git" || !slices.Equal(specs[0].Subcommand, []string{tc.sub}) {
						t.Errorf("asked to learn %+v, want git %s", specs, tc.sub)
					}
					learned := *current.Load()
					learned.Helps = flagHelps{"git status": {"--short"}, "git log": {"--oneline"}}
					current.Store(&learned)
					return nil
				}
			}
			tool := &RequestTool{
				Denials: denials,
				Learn:   learner,
				Submit: func(ctx context.Context, r requests.Request) (requests.Submitted, error) {
					return requests.Submit(ctx, log, r, time.Now())
				},
				Decide: func(ctx context.Context, id string, d requests.Decision) error {
					return requests.Decide(ctx, log, id, d, time.Now())
				},
				State: current.Load,
			}
			def, handler := tool.DefinitionAndHandler()
			server := mcp.NewServer(&mcp.Implementation{Name: "wraptool", Version: "0"}, nil)
			// In memory there is no HTTP request: give the call the header
			// a Streamable HTTP session on the client's token carries.
			server.AddTool(def, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				req.Extra = &mcp.RequestExtra{Header: http.Header{"Authorization": {"Bearer elicit-token"}}}
				return handler(ctx, req)
			})
			var mu sync.Mutex
			var asked []string
			client := mcp.NewClient(&mcp.Implementation{Name: "desk", Version: "0"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					defer mu.Unlock()
					asked = append(asked, r.Params.Message)
					return &mcp.ElicitResult{Action: "decline"}, nil
				}})
			serverT, clientT := mcp.NewInMemoryTransports()
			ss, err := server.Connect(ctx, serverT, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Sessions over Streamable HTTP are served up to 2025-11-25,
			// where a server may ask during a call.
			cs, err := client.Connect(ctx, clientT, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { cs.Close(); ss.Wait() }()

			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: def.Name, Arguments: args})
			if err != nil || res.IsError {
				t.Fatalf("request: %v %s", err, res.Content[0].(*mcp.TextContent).Text)
			}
			mu.Lock()
			n := len(asked)
			mu.Unlock()
			recs, _, err := requests.Read(log)
			if err != nil || len(recs) != 1 {
				t.Fatalf("log: %d records, %v", len(recs), err)
			}
			want := map[bool]string{true: requests.StatusDenied, false: requests.StatusPending}[tc.asked]
			if (n == 1) != tc.asked || n > 1 || recs[0].Status != want {
				t.Errorf("asked %d times (%q), request %s; want asked %v, %s", n, asked, recs[0].Status, tc.asked, want)
			}
			if tc.shows != "" && (n != 1 || !slices.Contains(strings.Split(asked[0], "\n"), tc.shows)) {
				t.Errorf("asked %q, want a line %q", asked, tc.shows)
			}
		})
	}
}
