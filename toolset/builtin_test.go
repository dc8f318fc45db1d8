package toolset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/requests"

	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// requestJSON builds a request tool input from a valid one, with fields
// changed or (for a nil value) removed.
func requestJSON(changes map[string]any) string {
	in := map[string]any{
		"tool":       "git",
		"subcommand": []string{"push"},
		"flags":      []string{"--force-with-lease"},
		"rationale":  "I rebased the branch",
		"enables":    "push the rebased branch",
	}
	for k, v := range changes {
		if v == nil {
			delete(in, k)
		} else {
			in[k] = v
		}
	}
	data, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	return string(data)
}

func TestParseRequest(t *testing.T) {
	t.Parallel()
	manyFlags := make([]string, 65)
	for i := range manyFlags {
		manyFlags[i] = "--f" + strconv.Itoa(i)
	}
	cases := []struct {
		name string
		in   string
		want requests.Request
		err  string // a substring of the error; "" for success
	}{
		{"a complete request is accepted", requestJSON(nil),
			requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force-with-lease"},
				Rationale: "I rebased the branch", Enables: "push the rebased branch"}, ""},
		{"flags and enables are optional", requestJSON(map[string]any{"flags": nil, "enables": nil}),
			requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{}, Rationale: "I rebased the branch"}, ""},
		{"an empty subcommand asks for the bare tool", requestJSON(map[string]any{"subcommand": []string{}}),
			requests.Request{Tool: "git", Subcommand: []string{}, Flags: []string{"--force-with-lease"},
				Rationale: "I rebased the branch", Enables: "push the rebased branch"}, ""},
		{"duplicate flags are dropped, first order kept",
			requestJSON(map[string]any{"flags": []string{"-f", "--all", "-f", "--all", "--tags"}}),
			requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"-f", "--all", "--tags"},
				Rationale: "I rebased the branch", Enables: "push the rebased branch"}, ""},
		{"short, digit and dotted long flags are accepted",
			requestJSON(map[string]any{"flags": []string{"-1", "--x.y_z-w", "--9"}}),
			requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"-1", "--x.y_z-w", "--9"},
				Rationale: "I rebased the branch", Enables: "push the rebased branch"}, ""},
		{"newlines and tabs in the rationale are fine", requestJSON(map[string]any{"rationale": "first\n\tsecond"}),
			requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force-with-lease"},
				Rationale: "first\n\tsecond", Enables: "push the rebased branch"}, ""},
		{"a rationale of exactly 4 KiB is accepted", requestJSON(map[string]any{"rationale": strings.Repeat("r", 4096)}),
			requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force-with-lease"},
				Rationale: strings.Repeat("r", 4096), Enables: "push the rebased branch"}, ""},

		{"a missing tool is refused", requestJSON(map[string]any{"tool": nil}), requests.Request{}, "tool is required"},
		{"an empty tool is refused", requestJSON(map[string]any{"tool": ""}), requests.Request{}, "tool is required"},
		{"a missing subcommand is refused", requestJSON(map[string]any{"subcommand": nil}), requests.Request{}, "subcommand is required"},
		{"a null subcommand is refused", `{"tool":"git","subcommand":null,"rationale":"r"}`, requests.Request{}, "subcommand is required"},
		{"a missing rationale is refused", requestJSON(map[string]any{"rationale": nil}), requests.Request{}, "rationale is required"},
		{"an empty rationale is refused", requestJSON(map[string]any{"rationale": ""}), requests.Request{}, "rationale is required"},
		{"a blank rationale is refused", requestJSON(map[string]any{"rationale": " \t\n "}), requests.Request{}, "rationale is required"},
		{"a tool with a space is refused", requestJSON(map[string]any{"tool": "git push"}), requests.Request{}, `tool "git push"`},
		{"a tool that is a path is refused", requestJSON(map[string]any{"tool": "../bin/sh"}), requests.Request{}, `tool "../bin/sh"`},
		{"a tool starting with a dash is refused", requestJSON(map[string]any{"tool": "-git"}), requests.Request{}, `tool "-git"`},
		{"a tool over 64 characters is refused", requestJSON(map[string]any{"tool": strings.Repeat("g", 65)}), requests.Request{}, "at most 64"},
		{"the tool wraptool is refused", requestJSON(map[string]any{"tool": "wraptool"}), requests.Request{}, "wraptool's own"},
		{"a tool starting with wraptool in any case is refused", requestJSON(map[string]any{"tool": "WrapTool_x"}), requests.Request{}, "wraptool's own"},
		{"a subcommand token with shell syntax is refused", requestJSON(map[string]any{"subcommand": []string{"push;rm"}}), requests.Request{}, `token "push;rm"`},
		{"a subcommand token that is a flag is refused", requestJSON(map[string]any{"subcommand": []string{"-rf"}}), requests.Request{}, `token "-rf"`},
		{"an empty subcommand token is refused", requestJSON(map[string]any{"subcommand": []string{""}}), requests.Request{}, `token ""`},
		{"a subcommand of 17 tokens is refused", requestJSON(map[string]any{"subcommand": strings.Fields(strings.Repeat("a ", 17))}), requests.Request{}, "at most 16"},
		{"a subcommand that is not a list is refused", requestJSON(map[string]any{"subcommand": "push"}), requests.Request{}, "subcommand must be an array of strings"},
		{"a flag without dashes is refused", requestJSON(map[string]any{"flags": []string{"force"}}), requests.Request{}, `flag "force"`},
		{"a flag with a space is refused", requestJSON(map[string]any{"flags": []string{"--a b"}}), requests.Request{}, `flag "--a b"`},
		{"bundled short flags are refused", requestJSON(map[string]any{"flags": []string{"-rf"}}), requests.Request{}, `flag "-rf"`},
		{"a flag with a value is refused", requestJSON(map[string]any{"flags": []string{"--x=1"}}), requests.Request{}, `flag "--x=1"`},
		{"a flag with three dashes is refused", requestJSON(map[string]any{"flags": []string{"---x"}}), requests.Request{}, `flag "---x"`},
		{"a lone dash is refused", requestJSON(map[string]any{"flags": []string{"-"}}), requests.Request{}, `flag "-"`},
		{"a lone double dash is refused", requestJSON(map[string]any{"flags": []string{"--"}}), requests.Request{}, `flag "--"`},
		{"a flag over 128 characters is refused", requestJSON(map[string]any{"flags": []string{"--" + strings.Repeat("x", 127)}}), requests.Request{}, "must be -X or --name"},
		{"65 flags are refused", requestJSON(map[string]any{"flags": manyFlags}), requests.Request{}, "at most 64"},
		{"a rationale over 4 KiB is refused", requestJSON(map[string]any{"rationale": strings.Repeat("r", 4097)}), requests.Request{}, "rationale is 4097 bytes"},
		{"an enables over 4 KiB is refused", requestJSON(map[string]any{"enables": strings.Repeat("e", 4097)}), requests.Request{}, "enables is 4097 bytes"},
		{"a NUL in the rationale is refused", requestJSON(map[string]any{"rationale": "a\x00b"}), requests.Request{}, "control characters"},
		{"a NUL in enables is refused", requestJSON(map[string]any{"enables": "a\x00b"}), requests.Request{}, "control characters"},
		{"a terminal escape in the rationale is refused", requestJSON(map[string]any{"rationale": "ok\x1b[2Jfake"}), requests.Request{}, "rationale must not contain control characters"},
		{"a carriage return in enables is refused", requestJSON(map[string]any{"enables": "real\rfake"}), requests.Request{}, "enables must not contain control characters"},
		{"a bidirectional override in the rationale is refused", requestJSON(map[string]any{"rationale": "abc\u202edcba"}), requests.Request{}, "control characters"},
		{"a line separator in the rationale is refused, as denials escape it", requestJSON(map[string]any{"rationale": "ok\u2028fake"}), requests.Request{}, "control characters"},
		{"a zero-width space in enables is refused", requestJSON(map[string]any{"enables": "git\u200bhub"}), requests.Request{}, "enables must not contain control characters"},
		{"a C1 control in the rationale is refused", requestJSON(map[string]any{"rationale": "a\u009bb"}), requests.Request{}, "control characters"},
		{"an unknown field is refused", requestJSON(map[string]any{"force": true}), requests.Request{}, `unknown field "force"; the fields are tool, subcommand, flags, call_id, rationale, enables, wait_seconds`},
		{"a field in another case is unknown", requestJSON(map[string]any{"Tool": "git"}), requests.Request{}, `unknown field "Tool"`},
		{"an array is refused", `[1]`, requests.Request{}, "must be an object"},
		{"a string is refused", `"git push"`, requests.Request{}, "must be an object"},
		{"empty input is refused", ``, requests.Request{}, "must be an object"},
		{"every problem is reported at once", `{"tool":"wraptoolx","subcommand":["a b"],"flags":["force"],"rationale":""}`,
			requests.Request{}, `tool "wraptoolx" is one of wraptool's own; subcommand token "a b"`},

		{"a call_id with a rationale is an exact-call request", `{"call_id":"call_0a1b2c3d","rationale":"r","enables":"e"}`,
			requests.Request{Rationale: "r", Enables: "e"}, ""},
		{"a call_id with a tool is refused", `{"call_id":"call_0a1b2c3d","tool":"git","rationale":"r"}`, requests.Request{}, "not both"},
		{"a call_id with a subcommand is refused", `{"call_id":"call_0a1b2c3d","subcommand":[],"rationale":"r"}`, requests.Request{}, "not both"},
		{"a call_id with flags is refused", `{"call_id":"call_0a1b2c3d","flags":[],"rationale":"r"}`, requests.Request{}, "not both"},
		{"a malformed call_id is refused", `{"call_id":"call_0A1B2C3D","rationale":"r"}`, requests.Request{}, "is not one wraptool issues"},
		{"a call_id still needs a rationale", `{"call_id":"call_0a1b2c3d"}`, requests.Request{}, "rationale is required"},

		{"wait_seconds as an integer is accepted", requestJSON(map[string]any{"wait_seconds": 300}),
			requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force-with-lease"},
				Rationale: "I rebased the branch", Enables: "push the rebased branch"}, ""},
		{"wait_seconds as a string of digits is accepted", requestJSON(map[string]any{"wait_seconds": "0"}),
			requests.Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force-with-lease"},
				Rationale: "I rebased the branch", Enables: "push the rebased branch"}, ""},
		{"wait_seconds over 300 is refused", requestJSON(map[string]any{"wait_seconds": 301}), requests.Request{}, "wait_seconds must be an integer from 0 to 300"},
		{"a negative wait_seconds is refused", requestJSON(map[string]any{"wait_seconds": -1}), requests.Request{}, "wait_seconds must be an integer from 0 to 300"},
		{"a fractional wait_seconds is refused", requestJSON(map[string]any{"wait_seconds": 1.5}), requests.Request{}, "wait_seconds must be an integer from 0 to 300"},
		{"a wait_seconds string that is not digits is refused", requestJSON(map[string]any{"wait_seconds": "10s"}), requests.Request{}, "wait_seconds must be an integer"},
		{"a boolean wait_seconds is refused", requestJSON(map[string]any{"wait_seconds": true}), requests.Request{}, "wait_seconds must be an integer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			parsed, err := ParseRequest(json.RawMessage(tc.in))
			if err != nil && goInternal(err.Error()) {
				t.Errorf("err %q speaks of Go's decoder, not of the tool's input", err)
			}
			got, callID := parsed.Request, parsed.CallID
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("err %v, want none", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %#v\nwant %#v", got, tc.want)
			}
			if wantID := strings.Contains(tc.in, `"call_id"`); (callID != "") != wantID {
				t.Errorf("call_id %q, want one: %v", callID, wantID)
			}
		})
	}
}

// goInternal reports whether an error text leaks the Go JSON decoder's
// words (its "json: cannot unmarshal … into Go struct field …"), which name
// Go types the assistant has never seen instead of the tool's properties.
func goInternal(text string) bool {
	return strings.Contains(text, "json:") || strings.Contains(text, "Go struct") ||
		strings.Contains(text, "Go value") || strings.Contains(text, "unmarshal")
}

// A property of the wrong type is named with the type the tool's schema
// gives it, exactly once, and no "is required" follows for it; the Go
// decoder's message never reaches the assistant.
func TestParseRequestNamesWrongTypesInTheToolsWords(t *testing.T) {
	t.Parallel()
	wrongs := []struct {
		name string
		val  any
	}{{"a string", "x"}, {"a number", 3}, {"a boolean", true}, {"an object", map[string]any{"a": 1}},
		{"an array of numbers", []int{1}}, {"an array of arrays", [][]string{{"a"}}}, {"an array", []string{"a"}}}
	fields := []struct {
		field, want string
		accepts     func(v any) bool // the values of the right type, skipped
	}{
		{"tool", "tool must be a string", isString},
		{"subcommand", "subcommand must be an array of strings", isStrings},
		{"flags", "flags must be an array of strings", isStrings},
		{"rationale", "rationale must be a string", isString},
		{"enables", "enables must be a string", isString},
		{"wait_seconds", "wait_seconds must be an integer from 0 to 300", func(v any) bool { _, ok := v.(int); return ok }},
	}
	for _, f := range fields {
		for _, w := range wrongs {
			if f.accepts(w.val) {
				continue
			}
			t.Run(f.field+" given "+w.name+" says what it must be", func(t *testing.T) {
				t.Parallel()
				_, err := ParseRequest(json.RawMessage(requestJSON(map[string]any{f.field: w.val})))
				if err == nil {
					t.Fatal("accepted")
				}
				if got := err.Error(); !strings.HasPrefix(got, f.want) || strings.Count(got, f.field) != 1 || goInternal(got) {
					t.Errorf("err %q, want %q alone", got, f.want)
				}
			})
		}
	}
	exact := []struct{ name, in, want string }{
		{"call_id given a number says it must be a string", `{"call_id":12,"rationale":"r"}`, "call_id must be a string"},
		{"call_id given an array says it must be a string", `{"call_id":["call_0a1b2c3d"],"rationale":"r"}`, "call_id must be a string"},
		{"call_id of the wrong type with a tool still says not both",
			`{"call_id":1,"tool":"git","subcommand":[],"rationale":"r"}`, "call_id must be a string; give tool and subcommand, or call_id, not both"},
		{"a rationale of the wrong type with call_id says only that", `{"call_id":"call_0a1b2c3d","rationale":5}`, "rationale must be a string"},
		{"several wrong types are reported together", `{"tool":1,"subcommand":"push","rationale":[]}`,
			"tool must be a string; subcommand must be an array of strings; rationale must be a string"},
		{"a huge wait_seconds is not echoed", requestJSON(map[string]any{"wait_seconds": strings.Repeat("9", 4096)}),
			"wait_seconds must be an integer from 0 to 300"},
	}
	for _, tc := range exact {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseRequest(json.RawMessage(tc.in))
			if err == nil || err.Error() != tc.want {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func isString(v any) bool { _, ok := v.(string); return ok }

func isStrings(v any) bool { _, ok := v.([]string); return ok }

func TestRequestDefinition(t *testing.T) {
	t.Parallel()
	def := RequestDefinition()
	if def.Name != "wraptool_request_capability" || def.Description == "" {
		t.Errorf("name %q, description %q", def.Name, def.Description)
	}
	in := wire(t, def.InputSchema)
	if in["type"] != "object" {
		t.Errorf("inputSchema type %v, want object", in["type"])
	}
	// rationale is the only property the schema requires:
	// tool and subcommand, or call_id.
	if got, want := jsonString(in["required"]), `["rationale"]`; got != want {
		t.Errorf("required %s, want %s", got, want)
	}
	props, _ := in["properties"].(map[string]any)
	want := map[string]string{"tool": "string", "subcommand": "array", "flags": "array", "call_id": "string", "rationale": "string", "enables": "string", "wait_seconds": "integer"}
	if len(props) != len(want) {
		t.Errorf("properties %v, want %v", props, want)
	}
	for name, typ := range want {
		p, _ := props[name].(map[string]any)
		if p["type"] != typ {
			t.Errorf("property %s type %v, want %s", name, p["type"], typ)
		}
	}
}

// fakeSubmitter records its calls and answers with a fixed outcome.
type fakeSubmitter struct {
	mu    sync.Mutex
	calls []requests.Request
	out   requests.Submitted
	err   error
}

func (f *fakeSubmitter) submit(_ context.Context, r requests.Request) (requests.Submitted, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, r)
	return f.out, f.err
}

func TestRequestHandler(t *testing.T) {
	t.Parallel()
	const id = "req_0123abcd"
	valid := requestJSON(nil)
	p, err := ParseRequest(json.RawMessage(valid))
	parsed := p.Request
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		in         string
		out        requests.Submitted
		err        error
		submitted  bool
		isError    bool
		textPrefix string
		textHas    string
	}{
		{"a new request is recorded as pending", valid, requests.Submitted{ID: id}, nil,
			true, false, "Request " + id + " recorded (pending).", ""},
		{"an identical pending request answers with its id", valid, requests.Submitted{ID: id, Existing: true}, nil,
			true, false, "Request " + id + " recorded (pending).", "already pending"},
		{"the pending limit is an error saying so", valid, requests.Submitted{},
			fmt.Errorf("%w: 1000 requests await a decision", requests.ErrPendingLimit),
			true, true, "The request was not recorded: ", "pending limit"},
		{"another failure is an error that keeps the server's paths to the log", valid, requests.Submitted{}, errors.New("request log: open /home/op/x: disk full"),
			true, true, "The request was not recorded: ", "could not write its request log"},
		{"bad input is an error and nothing is submitted", requestJSON(map[string]any{"flags": []string{"force"}}),
			requests.Submitted{ID: id}, nil, false, true, "The request was not recorded: ", `flag "force"`},
		{"arguments that are not an object are an error and nothing is submitted", `[1]`,
			requests.Submitted{ID: id}, nil, false, true, "The request was not recorded: ", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := &fakeSubmitter{out: tc.out, err: tc.err}
			h := NewRequestHandler(fake.submit, nil, discard)
			res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{
				Name: policy.RequestTool, Arguments: json.RawMessage(tc.in),
			}})
			if err != nil {
				t.Fatalf("handler error %v; failures must be tool errors", err)
			}
			got := toolsettest.ResultText(t, res)
			if res.IsError != tc.isError {
				t.Errorf("isError %v, want %v (text %q)", res.IsError, tc.isError, got)
			}
			if !strings.HasPrefix(got, tc.textPrefix) || !strings.Contains(got, tc.textHas) {
				t.Errorf("text %q, want it to start with %q and contain %q", got, tc.textPrefix, tc.textHas)
			}
			if tc.submitted {
				if len(fake.calls) != 1 || !reflect.DeepEqual(fake.calls[0], parsed) {
					t.Errorf("submitted %#v, want exactly %#v", fake.calls, parsed)
				}
			} else if len(fake.calls) != 0 {
				t.Errorf("submitted %#v, want nothing", fake.calls)
			}
			if tc.isError {
				if res.StructuredContent != nil {
					t.Errorf("an error carries structuredContent %v", res.StructuredContent)
				}
				return
			}
			if got, want := jsonString(res.StructuredContent), `{"id":"`+id+`","status":"pending"}`; got != want {
				t.Errorf("structuredContent %s, want %s", got, want)
			}
		})
	}
}

func TestRequestToolThroughAnMCPSession(t *testing.T) {
	t.Parallel()
	fake := &fakeSubmitter{out: requests.Submitted{ID: "req_89abcdef"}}
	server := mcp.NewServer(&mcp.Implementation{Name: "wraptool-test", Version: "0"}, nil)
	server.AddTool(RequestDefinition(), NewRequestHandler(fake.submit, nil, discard))
	cs := connect(t, server)

	res := call(t, cs, policy.RequestTool, map[string]any{
		"tool": "git", "subcommand": []string{"push"}, "flags": []string{"--force", "--force"}, "rationale": "why",
	})
	if got := toolsettest.ResultText(t, res); res.IsError || !strings.HasPrefix(got, "Request req_89abcdef recorded (pending).") {
		t.Errorf("isError %v, text %q", res.IsError, got)
	}
	if got, want := jsonString(res.StructuredContent), `{"id":"req_89abcdef","status":"pending"}`; got != want {
		t.Errorf("structuredContent %s, want %s", got, want)
	}
	want := []requests.Request{{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force"}, Rationale: "why"}}
	if !reflect.DeepEqual(fake.calls, want) {
		t.Errorf("submitted %#v, want %#v", fake.calls, want)
	}

	res = call(t, cs, policy.RequestTool, map[string]any{"tool": "git", "subcommand": []string{"push"}})
	if got := toolsettest.ResultText(t, res); !res.IsError || !strings.Contains(got, "rationale is required") {
		t.Errorf("isError %v, text %q; want an error asking for a rationale", res.IsError, got)
	}
	if len(fake.calls) != 1 {
		t.Errorf("bad input reached the submitter: %d calls", len(fake.calls))
	}
}
