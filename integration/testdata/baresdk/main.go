// Command baresdk is the floor TestBenchReport measures wraptool against: a
// bare go-sdk Streamable HTTP server whose one tool runs /bin/echo with the
// call's arguments, as a wrapped tool does, but with no policy, environment,
// working-directory or capability handling, and no authentication. A second
// tool refuses every call with a fixed text, the floor of a denied call. It
// prints "listening ADDR" once it accepts connections, and answers GET
// /memstats with the bytes its heap has allocated so far, so the report can
// take the server's allocation per call from outside.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoArgs struct {
	Args []string `json:"args,omitempty"`
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	flag.Parse()
	s := mcp.NewServer(&mcp.Implementation{Name: "baresdk", Version: "v0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Run /bin/echo"}, func(ctx context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
		out, err := exec.CommandContext(ctx, "/bin/echo", in.Args...).Output()
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "refuse", Description: "Refuse every call"}, func(context.Context, *mcp.CallToolRequest, echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "DENIED: fixed"}}}, nil, nil
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	mux.HandleFunc("GET /memstats", func(w http.ResponseWriter, _ *http.Request) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		_ = json.NewEncoder(w).Encode(map[string]uint64{"total_alloc": m.TotalAlloc})
	})
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening %s\n", l.Addr())
	os.Stdout.Sync()
	log.Fatal(http.Serve(l, mux))
}
