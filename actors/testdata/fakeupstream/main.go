// Command fakeupstream is a small stdio MCP server, built with the go-sdk,
// that wraptool's tests front as an mcp_servers entry. Its tools cover what
// a bridge must carry: plain and structured results, raw argument
// pass-through, progress, a slow call that notices cancellation, tool
// errors, a crash, a hang, its own tools/list_changed, and an attempt to
// reach the client behind wraptool (sampling, elicitation, roots).
//
// Flags:
//
//	-tools a,b        expose only these tools at start (default: all)
//	-marks FILE       append one line per event (start, cancelled) to FILE
//	-start-delay D    sleep D before serving (init_timeout tests)
//	-exit-at-start N  exit with status N before serving
//	-child            start `sleep 1000` in the process group and log its pid
//	-stderr-lines N   write N numbered lines to stderr at start
package main

//lint:file-ignore SA1019 the reach tool asks for sampling and roots, deprecated from protocol 2026-07-28 on but still spoken, to show wraptool refuses them

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var marks string

func mark(format string, args ...any) {
	if marks == "" {
		return
	}
	f, err := os.OpenFile(marks, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, format+"\n", args...)
}

func main() {
	tools := flag.String("tools", "", "comma-separated tools to expose at start (default all)")
	flag.StringVar(&marks, "marks", "", "file to append events to")
	delay := flag.Duration("start-delay", 0, "sleep before serving")
	exitAt := flag.Int("exit-at-start", -1, "exit with this status before serving")
	child := flag.Bool("child", false, "start a sleep child in the process group")
	stderrLines := flag.Int("stderr-lines", 0, "lines to write to stderr at start")
	flag.Parse()

	for i := 1; i <= *stderrLines; i++ {
		fmt.Fprintf(os.Stderr, "fakeupstream stderr line %d\n", i)
	}
	if *exitAt >= 0 {
		fmt.Fprintln(os.Stderr, "fakeupstream exiting at start as asked")
		os.Exit(*exitAt)
	}
	time.Sleep(*delay)
	mark("start pid=%d pgid=%d", os.Getpid(), syscall.Getpgrp())
	if *child {
		c := exec.Command("sleep", "1000")
		if err := c.Start(); err == nil {
			mark("child pid=%d", c.Process.Pid)
		}
	}

	server := mcp.NewServer(&mcp.Implementation{Name: "fakeupstream", Version: "1"}, nil)
	all := (&upstream{server: server}).tools()
	want := map[string]bool{}
	for _, name := range strings.Split(*tools, ",") {
		if name != "" {
			want[name] = true
		}
	}
	for name, add := range all {
		if len(want) == 0 || want[name] {
			add()
		}
	}
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "fakeupstream:", err)
		os.Exit(1)
	}
}

type upstream struct{ server *mcp.Server }

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func object(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

var str = map[string]any{"type": "string"}

func (u *upstream) tools() map[string]func() {
	s := u.server
	return map[string]func(){
		"echo": func() {
			s.AddTool(&mcp.Tool{Name: "echo", Title: "Echo", Description: "Echo the text back, unchanged.",
				InputSchema: object(map[string]any{"text": str}, "text"),
				Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, Title: "Echo it"}},
				func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					var in struct{ Text string }
					if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
						return nil, err
					}
					return text(in.Text), nil
				})
		},
		"add": func() {
			s.AddTool(&mcp.Tool{Name: "add", Description: "Add two numbers.",
				InputSchema:  object(map[string]any{"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}}, "a", "b"),
				OutputSchema: object(map[string]any{"sum": map[string]any{"type": "number"}}, "sum")},
				func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					var in struct{ A, B float64 }
					if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
						return nil, err
					}
					res := text(fmt.Sprint(in.A + in.B))
					res.StructuredContent = map[string]any{"sum": in.A + in.B}
					return res, nil
				})
		},
		"args": func() {
			s.AddTool(&mcp.Tool{Name: "args", Description: "Return the arguments exactly as received.",
				InputSchema: map[string]any{"type": "object", "additionalProperties": true}},
				func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return text(string(req.Params.Arguments)), nil
				})
		},
		"slow": func() {
			s.AddTool(&mcp.Tool{Name: "slow", Description: "Wait ms milliseconds in steps, reporting progress.",
				InputSchema: object(map[string]any{"ms": map[string]any{"type": "integer"}, "steps": map[string]any{"type": "integer"}}, "ms")},
				func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					var in struct{ Ms, Steps int }
					if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
						return nil, err
					}
					if in.Steps <= 0 {
						in.Steps = 1
					}
					tok := req.Params.GetProgressToken()
					step := time.Duration(in.Ms) * time.Millisecond / time.Duration(in.Steps)
					// Each note comes before its step's wait, so the last one
					// is well ahead of the result: a client handles
					// notifications apart from responses.
					for i := 1; i <= in.Steps; i++ {
						if tok != nil {
							req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok,
								Progress: float64(i), Total: float64(in.Steps), Message: fmt.Sprintf("step %d", i)})
						}
						select {
						case <-ctx.Done():
							mark("cancelled slow")
							return nil, ctx.Err()
						case <-time.After(step):
						}
					}
					return text("done"), nil
				})
		},
		"crash": func() {
			s.AddTool(&mcp.Tool{Name: "crash", Description: "Exit the server process at once.", InputSchema: object(nil)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					mark("crash pid=%d", os.Getpid())
					os.Exit(3)
					return nil, nil
				})
		},
		"freeze": func() {
			s.AddTool(&mcp.Tool{Name: "freeze", Description: "Stop the server process (SIGSTOP): it answers nothing more.", InputSchema: object(nil)},
				func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					mark("freeze pid=%d", os.Getpid())
					syscall.Kill(os.Getpid(), syscall.SIGSTOP)
					// The signal stops the process a moment later; never
					// answer before it does.
					<-ctx.Done()
					return nil, ctx.Err()
				})
		},
		"fail": func() {
			s.AddTool(&mcp.Tool{Name: "fail", Description: "Answer with a tool error.", InputSchema: object(nil)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					res := text("failed on purpose")
					res.IsError = true
					return res, nil
				})
		},
		"secret": func() {
			s.AddTool(&mcp.Tool{Name: "secret", Description: "A tool the policy denies.", InputSchema: object(nil)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					mark("secret called")
					return text("the secret"), nil
				})
		},
		"hidden": func() {
			s.AddTool(&mcp.Tool{Name: "hidden", Description: "A tool the policy never names.", InputSchema: object(nil)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					mark("hidden called")
					return text("hidden"), nil
				})
		},
		"bad.name": func() {
			s.AddTool(&mcp.Tool{Name: "bad.name", Description: "A name wraptool cannot expose.", InputSchema: object(nil)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return text("bad"), nil
				})
		},
		"env": func() {
			s.AddTool(&mcp.Tool{Name: "env", Description: "Report the environment, working directory and process ids.", InputSchema: object(nil)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					cwd, _ := os.Getwd()
					data, _ := json.Marshal(map[string]any{"env": os.Environ(), "cwd": cwd, "pid": os.Getpid(), "pgid": syscall.Getpgrp()})
					return text(string(data)), nil
				})
		},
		"reach": func() {
			s.AddTool(&mcp.Tool{Name: "reach", Description: "Ask the client for input (elicitation, sampling, roots), as protocol 2026-07-28 does: in the result.", InputSchema: object(nil)},
				func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					if len(req.Params.InputResponses) > 0 {
						mark("reach answered")
						data, _ := json.Marshal(req.Params.InputResponses)
						return text("answered: " + string(data)), nil
					}
					return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
						"password": &mcp.ElicitParams{Message: "your password?", RequestedSchema: map[string]any{"type": "object"}},
						"sample": &mcp.CreateMessageParams{MaxTokens: 10,
							Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}},
						"roots": &mcp.ListRootsParams{},
					}}, nil
				})
		},
		"toggle": func() {
			s.AddTool(&mcp.Tool{Name: "toggle", Description: "Add (present: true) or remove a tool named name, which echoes.",
				InputSchema: object(map[string]any{"name": str, "present": map[string]any{"type": "boolean"}}, "name", "present")},
				func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					var in struct {
						Name    string
						Present bool
					}
					if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
						return nil, err
					}
					if in.Present {
						name := in.Name
						s.AddTool(&mcp.Tool{Name: name, Description: "Added at run time.", InputSchema: object(map[string]any{"text": str})},
							func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
								return text(name + ": " + string(req.Params.Arguments)), nil
							})
					} else {
						s.RemoveTools(in.Name)
					}
					return text("ok"), nil
				})
		},
	}
}
