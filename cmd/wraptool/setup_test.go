package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wraptool/wraptool/actors"
)

// setupToken is the token the tests' token files hold: no form may print it.
const setupToken = "5e7a9c0ffee5e7a9c0ffee5e7a9c0ffee5e7a9c0ffee5e7a9c0ffee5e7a9c0ff"

// setupConfig writes a config listening on listen, with its token file,
// in a folder named dirName under a fresh temporary folder, and returns
// the config's path and the token file's.
func setupConfig(t *testing.T, dirName, listen string) (cfgPath, tokPath string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), dirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	tokPath = filepath.Join(dir, "mcp-token")
	if err := os.WriteFile(tokPath, []byte(setupToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath = filepath.Join(dir, "config.yaml")
	cfg := fmt.Sprintf("mcp:\n  listen: %q\n  auth_token_file: %q\n  request_log: %q\n",
		listen, tokPath, filepath.Join(dir, "requests.jsonl"))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgPath, tokPath
}

// jsonBlocks are the file forms in out: JSON whose braces start a line.
func jsonBlocks(t *testing.T, out string) []map[string]any {
	t.Helper()
	var blocks []map[string]any
	for _, m := range regexp.MustCompile(`(?ms)^(\{\n.*?\n\})$`).FindAllString(out, -1) {
		var v map[string]any
		if err := json.Unmarshal([]byte(m), &v); err != nil {
			t.Fatalf("a JSON block does not parse: %v\n%s", err, m)
		}
		blocks = append(blocks, v)
	}
	return blocks
}

// at walks v by keys; nil when a key is missing.
func at(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// setupWord is one word of a POSIX command line after quote removal,
// without expansion; expands says whether a $ in it stood outside single
// quotes (the shell would expand it).
type setupWord struct {
	text    string
	expands bool
}

// splitShell splits line into words as a POSIX shell does before
// expansion: single quotes keep everything, double quotes keep all but
// \" \\ \$ \` and a $(…) inside them (kept raw), a backslash outside
// quotes escapes the next character. A line the shell would not accept
// (an open quote) is an error.
func splitShell(line string) ([]setupWord, error) {
	var words []setupWord
	var cur strings.Builder
	var expands, inWord bool
	flush := func() {
		if inWord {
			words = append(words, setupWord{cur.String(), expands})
		}
		cur.Reset()
		expands, inWord = false, false
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
		case c == '\'':
			inWord = true
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("open single quote in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+end])
			i += end + 1
		case c == '"':
			inWord = true
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				switch {
				case line[i] == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`\n", line[i+1]) >= 0:
					i++
					cur.WriteByte(line[i])
				case strings.HasPrefix(line[i:], "$("):
					expands = true
					end, err := closeParen(line, i+2)
					if err != nil {
						return nil, err
					}
					cur.WriteString(line[i : end+1])
					i = end
				default:
					if line[i] == '$' {
						expands = true
					}
					cur.WriteByte(line[i])
				}
			}
			if i >= len(line) {
				return nil, fmt.Errorf("open double quote in %q", line)
			}
		case c == '\\' && i+1 < len(line):
			inWord = true
			i++
			cur.WriteByte(line[i])
		case c == ';' || c == '&' || c == '|' || c == '<' || c == '>' || c == '`' || c == '(' || c == ')':
			return nil, fmt.Errorf("unquoted %q in %q: the line is not one simple command", c, line)
		case strings.HasPrefix(line[i:], "$'"):
			inWord = true
			end, err := ansiC(line, i+2, &cur)
			if err != nil {
				return nil, err
			}
			i = end
		default:
			inWord = true
			if c == '$' {
				expands = true
			}
			cur.WriteByte(c)
		}
	}
	flush()
	return words, nil
}

// ansiC reads the body of a $'…' word from i into cur (\n \t \\ \' \xHH)
// and returns the index of its closing quote.
func ansiC(line string, i int, cur *strings.Builder) (int, error) {
	for ; i < len(line); i++ {
		switch c := line[i]; {
		case c == '\'':
			return i, nil
		case c == '\\' && i+1 < len(line):
			i++
			switch e := line[i]; e {
			case 'n':
				cur.WriteByte('\n')
			case 't':
				cur.WriteByte('\t')
			case '\\', '\'':
				cur.WriteByte(e)
			case 'x':
				var b byte
				if i+2 >= len(line) {
					return 0, fmt.Errorf("short \\x in %q", line)
				}
				if _, err := fmt.Sscanf(line[i+1:i+3], "%02x", &b); err != nil {
					return 0, fmt.Errorf("bad \\x in %q: %v", line, err)
				}
				cur.WriteByte(b)
				i += 2
			default:
				return 0, fmt.Errorf("escape \\%c the set-up never writes, in %q", e, line)
			}
		default:
			cur.WriteByte(c)
		}
	}
	return 0, fmt.Errorf("open $' in %q", line)
}

// closeParen finds the ) that ends a $( opened before i, honouring
// '…' and $'…' inside.
func closeParen(line string, i int) (int, error) {
	for ; i < len(line); i++ {
		if strings.HasPrefix(line[i:], "$'") {
			end, err := ansiC(line, i+2, new(strings.Builder))
			if err != nil {
				return 0, err
			}
			i = end
			continue
		}
		switch line[i] {
		case '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return 0, fmt.Errorf("open single quote in %q", line)
			}
			i += end + 1
		case ')':
			return i, nil
		}
	}
	return 0, fmt.Errorf("open $( in %q", line)
}

func texts(ws []setupWord) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.text
	}
	return out
}

// shellLines are the command lines in out: lines indented by two spaces
// that start with one of the commands the set-up prints.
func shellLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		for _, cmd := range []string{"claude ", "codex ", "gemini ", "qwen ", "npx ", "export "} {
			if strings.HasPrefix(l, "  "+cmd) {
				lines = append(lines, strings.TrimPrefix(l, "  "))
			}
		}
	}
	return lines
}

// tomlTables parses the minimal TOML the set-up prints: [table] headers
// and key = "basic string" pairs, with \" \\ and \uXXXX escapes. Any other
// line inside a table ends it.
func tomlTables(t *testing.T, out string) map[string]map[string]string {
	t.Helper()
	tables := map[string]map[string]string{}
	var cur map[string]string
	pair := regexp.MustCompile(`^([A-Za-z0-9_]+) = "((?:[^"\\]|\\.)*)"$`)
	for _, l := range strings.Split(out, "\n") {
		if h, ok := strings.CutPrefix(l, "["); ok && strings.HasSuffix(h, "]") {
			cur = map[string]string{}
			tables[strings.TrimSuffix(h, "]")] = cur
			continue
		}
		if cur == nil {
			continue
		}
		m := pair.FindStringSubmatch(l)
		if m == nil {
			cur = nil
			continue
		}
		var v string
		if err := json.Unmarshal([]byte(`"`+m[2]+`"`), &v); err != nil {
			t.Fatalf("TOML value %q: %v", m[2], err)
		}
		cur[m[1]] = v
	}
	return tables
}

// Each client's forms have that client's documented shape: the JSON and
// TOML parse and hold the keys the client reads, the command lines split
// into the argv the client's documentation gives, and no form holds the
// token. The config lives in a folder whose name holds a space, quotes, a
// dollar sign and a newline, which every form must carry through intact.
func TestSetupFormsHaveEachClientsShape(t *testing.T) {
	t.Parallel()
	for _, dirName := range []string{"plain", "it's a \"dir\" $HOME `x`\nnext"} {
		cfgPath, tokPath := setupConfig(t, dirName, "127.0.0.1:8717")
		url := "http://127.0.0.1:8717/mcp"
		exe, _ := os.Executable()
		command, _ := stdioCommand(exe, func(string) string { return "" })
		connectArgv := []string{command, "--config", cfgPath, "connect"}
		stdioEntry := map[string]any{"command": command, "args": []any{"--config", cfgPath, "connect"}}
		header := "Authorization: Bearer ${WRAPTOOL_TOKEN}"

		for _, tc := range []struct {
			client string
			argv   [][]string // each command line, split; nil entries are not checked
			// expands says, per command line, whether the shell expands
			// the variable (the client then holds the token) or passes its
			// name (the client expands it).
			expands []bool
			json    []func(v map[string]any) bool
			toml    map[string]string
		}{
			{client: "claude-code",
				argv: [][]string{
					{"claude", "mcp", "add", "--scope", "user", "--transport", "http", "wraptool", url, "--header", header},
					append([]string{"claude", "mcp", "add", "--scope", "user", "wraptool", "--"}, connectArgv...),
				},
				expands: []bool{true, false},
				json: []func(map[string]any) bool{func(v map[string]any) bool {
					return at(v, "mcpServers", "wraptool", "type") == "http" && at(v, "mcpServers", "wraptool", "url") == url &&
						at(v, "mcpServers", "wraptool", "headers", "Authorization") == "Bearer ${WRAPTOOL_TOKEN}"
				}}},
			{client: "claude-desktop",
				json: []func(map[string]any) bool{func(v map[string]any) bool {
					return equalJSON(at(v, "mcpServers", "wraptool"), stdioEntry)
				}}},
			{client: "codex",
				argv:    [][]string{{"codex", "mcp", "add", "wraptool", "--url", url, "--bearer-token-env-var", "WRAPTOOL_TOKEN"}},
				expands: []bool{false},
				toml:    map[string]string{"url": url, "bearer_token_env_var": "WRAPTOOL_TOKEN"}},
			{client: "gemini",
				argv:    [][]string{{"gemini", "mcp", "add", "--scope", "user", "--transport", "http", "--header", header, "wraptool", url}},
				expands: []bool{false},
				json: []func(map[string]any) bool{func(v map[string]any) bool {
					return at(v, "mcpServers", "wraptool", "httpUrl") == url &&
						at(v, "mcpServers", "wraptool", "headers", "Authorization") == "Bearer ${WRAPTOOL_TOKEN}"
				}}},
			{client: "qwen",
				argv:    [][]string{{"qwen", "mcp", "add", "--scope", "user", "--transport", "http", "--header", header, "wraptool", url}},
				expands: []bool{false},
				json: []func(map[string]any) bool{func(v map[string]any) bool {
					return at(v, "mcpServers", "wraptool", "httpUrl") == url &&
						at(v, "mcpServers", "wraptool", "headers", "Authorization") == "Bearer ${WRAPTOOL_TOKEN}"
				}}},
			{client: "opencode",
				json: []func(map[string]any) bool{func(v map[string]any) bool {
					return v["$schema"] == "https://opencode.ai/config.json" &&
						at(v, "mcp", "wraptool", "type") == "remote" && at(v, "mcp", "wraptool", "url") == url &&
						at(v, "mcp", "wraptool", "enabled") == true &&
						at(v, "mcp", "wraptool", "headers", "Authorization") == "Bearer {env:WRAPTOOL_TOKEN}"
				}}},
			{client: "cursor",
				json: []func(map[string]any) bool{func(v map[string]any) bool {
					return at(v, "mcpServers", "wraptool", "url") == url &&
						at(v, "mcpServers", "wraptool", "headers", "Authorization") == "Bearer ${env:WRAPTOOL_TOKEN}"
				}}},
			{client: "vscode",
				json: []func(map[string]any) bool{func(v map[string]any) bool {
					inputs, _ := v["inputs"].([]any)
					return v["mcpServers"] == nil && at(v, "servers", "wraptool", "type") == "http" &&
						at(v, "servers", "wraptool", "url") == url &&
						at(v, "servers", "wraptool", "headers", "Authorization") == "Bearer ${input:wraptool-token}" &&
						len(inputs) == 1 && at(inputs[0], "type") == "promptString" && at(inputs[0], "id") == "wraptool-token" &&
						at(inputs[0], "password") == true && strings.Contains(at(inputs[0], "description").(string), tokPath)
				}}},
			{client: "inspector",
				argv: [][]string{
					{"npx", "@modelcontextprotocol/inspector", "--cli", url, "--transport", "http", "--header", header, "--method", "tools/list"},
					{"npx", "@modelcontextprotocol/inspector", "--cli", "--config", "wraptool-inspector.json", "--server", "wraptool", "--method", "tools/list"},
				},
				expands: []bool{true, false},
				json: []func(map[string]any) bool{func(v map[string]any) bool {
					return equalJSON(at(v, "mcpServers", "wraptool"), stdioEntry)
				}}},
			{client: "mcp-remote",
				json: []func(map[string]any) bool{func(v map[string]any) bool {
					return equalJSON(at(v, "mcpServers", "wraptool"), map[string]any{"command": "npx",
						"args": []any{"-y", "mcp-remote", url, "--header", "Authorization:Bearer ${WRAPTOOL_TOKEN}"}})
				}}},
		} {
			t.Run(tc.client+" in "+strconvQuote(dirName), func(t *testing.T) {
				t.Parallel()
				out, stderr, code := run(t, nil, "--config", cfgPath, "setup", tc.client)
				if code != exitOK {
					t.Fatalf("setup %s: exit %d, stderr %q", tc.client, code, stderr)
				}
				if strings.Contains(out, setupToken) || strings.Contains(stderr, setupToken) {
					t.Fatalf("the output holds the token:\n%s", out)
				}
				lines := shellLines(out)
				// The first line sets the variable from the token file,
				// without printing it: export NAME="$(cat 'FILE')".
				if len(lines) == 0 {
					t.Fatalf("no command lines:\n%s", out)
				}
				export, err := splitShell(lines[0])
				if err != nil || len(export) != 2 || export[0].text != "export" {
					t.Fatalf("export line %q: %q, %v", lines[0], texts(export), err)
				}
				sub, ok := strings.CutPrefix(export[1].text, "WRAPTOOL_TOKEN=$(cat ")
				inner, err := splitShell(strings.TrimSuffix(sub, ")"))
				if !ok || err != nil || len(inner) != 1 || inner[0].text != tokPath || inner[0].expands {
					t.Errorf("export line %q reads %q (%v), want cat of %q", lines[0], texts(inner), err, tokPath)
				}
				var got [][]string
				var gotExpands []bool
				for _, l := range lines[1:] {
					ws, err := splitShell(l)
					if err != nil {
						t.Fatalf("command line %q: %v", l, err)
					}
					got = append(got, texts(ws))
					e := false
					for _, w := range ws {
						e = e || w.expands
					}
					gotExpands = append(gotExpands, e)
				}
				if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.argv) {
					t.Errorf("command lines split into\n%q\nwant\n%q", got, tc.argv)
				}
				if fmt.Sprint(gotExpands) != fmt.Sprint(tc.expands) && len(tc.argv) > 0 {
					t.Errorf("lines the shell expands: %v, want %v", gotExpands, tc.expands)
				}
				blocks := jsonBlocks(t, out)
				if len(blocks) != len(tc.json) {
					t.Fatalf("%d JSON blocks, want %d:\n%s", len(blocks), len(tc.json), out)
				}
				for i, check := range tc.json {
					if !check(blocks[i]) {
						t.Errorf("JSON block %d lacks %s's shape: %v", i, tc.client, blocks[i])
					}
				}
				tables := tomlTables(t, out)
				if tc.toml != nil && fmt.Sprint(tables["mcp_servers.wraptool"]) != fmt.Sprint(tc.toml) {
					t.Errorf("[mcp_servers.wraptool] = %v, want %v", tables["mcp_servers.wraptool"], tc.toml)
				}
				if tc.toml == nil && len(tables) != 0 {
					t.Errorf("unexpected TOML %v", tables)
				}
			})
		}
	}
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", s) }

func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// setup with no client prints every client's section, in order, each once,
// and still no token.
func TestSetupPrintsEveryClient(t *testing.T) {
	t.Parallel()
	cfgPath, _ := setupConfig(t, "all", "127.0.0.1:8717")
	out, stderr, code := run(t, nil, "--config", cfgPath, "setup")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var got []string
	for _, m := range regexp.MustCompile(`(?m)^== .* \(wraptool setup ([a-z-]+)\) ==$`).FindAllStringSubmatch(out, -1) {
		got = append(got, m[1])
	}
	if strings.Join(got, " ") != strings.Join(setupClientNames(), " ") {
		t.Errorf("sections %q, want %q", got, setupClientNames())
	}
	if strings.Contains(out, setupToken) {
		t.Errorf("the output holds the token")
	}
}

// A mistyped or unknown client is a usage error that suggests the closest
// name and lists them all; hostile typing is quoted.
func TestSetupUnknownClient(t *testing.T) {
	t.Parallel()
	cfgPath, _ := setupConfig(t, "unknown", "127.0.0.1:8717")
	list := "; the clients are: " + strings.Join(setupClientNames(), ", ")
	for _, tc := range []struct {
		name, arg, want string
	}{
		{"a typo gets the closest name", "codx", `wraptool: setup: unknown client "codx" (did you mean "codex"?)` + list},
		{"a prefix gets the client it starts", "claude", `wraptool: setup: unknown client "claude" (did you mean "claude-code"?)` + list},
		{"nothing close gets the list alone", "emacs", `wraptool: setup: unknown client "emacs"` + list},
		{"an escape sequence is quoted", "vs\x1b[2Jcode", `wraptool: setup: unknown client "vs\x1b[2Jcode"` + list},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, stderr, code := run(t, nil, "--config", cfgPath, "setup", tc.arg)
			if code != exitUsage || out != "" || firstLine(stderr) != tc.want {
				t.Errorf("exit %d, stdout %q, first line of stderr %q; want exit 2, no stdout, %q", code, out, firstLine(stderr), tc.want)
			}
		})
	}
	if _, stderr, code := run(t, nil, "--config", cfgPath, "setup", "codex", "cursor"); code != exitUsage {
		t.Errorf("two clients: exit %d (%q), want 2", code, firstLine(stderr))
	}
}

// Without a running server setup still prints, and says the server does
// not answer; with one it says where it serves. Port 0 cannot be known and
// is an error saying so; a missing config says to run up.
func TestSetupWithAndWithoutAServer(t *testing.T) {
	t.Parallel()
	serve := func(h http.HandlerFunc) string {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.Listener.Addr().String()
	}
	// proving answers the proof as a server holding setupToken does, so
	// each case below is refused for what it shows, not for lacking it.
	proving := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != actors.ProofPath {
				h(w, r)
				return
			}
			var req actors.ProofRequest
			json.NewDecoder(r.Body).Decode(&req)
			addr := r.Context().Value(http.LocalAddrContextKey).(net.Addr).String()
			json.NewEncoder(w).Encode(actors.ProofAnswer{Proof: hex.EncodeToString(actors.ConnectProof(setupToken, req.Nonce, addr))})
		}
	}
	healthzWith := func(body string, wrap func(http.HandlerFunc) http.HandlerFunc) string {
		return serve(wrap(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/healthz" {
				fmt.Fprint(w, body)
			}
		}))
	}
	healthz := func(body string) string { return healthzWith(body, proving) }
	// An impostor answers /healthz like a wraptool but cannot prove it
	// holds the token.
	impostor := healthzWith("ok\nconfinement: off\n", func(h http.HandlerFunc) http.HandlerFunc { return h })
	// A listener that never answers: the probe gives up after 2 s. It
	// reads the body first (the proof request has one), so the server sees
	// the probe hang up and the handler ends.
	hang := serve(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	})
	// A redirect to a wraptool's answer is not followed.
	var redirect string
	redirect = serve(proving(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			http.Redirect(w, r, "http://"+redirect+"/real", http.StatusFound)
			return
		}
		fmt.Fprint(w, "ok\nconfinement: off\n")
	}))
	// An answer far over the probe's 256 bytes is cut, and then is no
	// wraptool's.
	huge := healthz("ok\n" + strings.Repeat("x", 1<<20))
	closed := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}
	for _, tc := range []struct {
		name, listen, wantFirst string
		wantCode                int
	}{
		{"a running wraptool", healthz("ok\nconfinement: off\n"), "wraptool is serving MCP at http://%s", exitOK},
		{"no server", closed(), "wraptool is not answering at http://%s now", exitOK},
		{"another program answering", healthz("hello"), "wraptool is not answering at http://%s now", exitOK},
		{"a program of this user answering like a wraptool without the proof", impostor, "wraptool is not answering at http://%s now", exitOK},
		{"a listener that never answers", hang, "wraptool is not answering at http://%s now", exitOK},
		{"a redirect", redirect, "wraptool is not answering at http://%s now", exitOK},
		{"a huge answer", huge, "wraptool is not answering at http://%s now", exitOK},
		{"every interface is reached through loopback", "0.0.0.0:8718", "wraptool is not answering at http://127.0.0.1:8718 now", exitOK},
		{"port 0", "127.0.0.1:0", "port 0 is chosen anew at each start", exitFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfgPath, _ := setupConfig(t, "s", tc.listen)
			out, stderr, code := run(t, nil, "--config", cfgPath, "setup", "codex")
			want := tc.wantFirst
			if strings.Contains(want, "%s") {
				want = fmt.Sprintf(want, tc.listen)
			}
			got := firstLine(out)
			if code != exitOK {
				got = stderr
			}
			if code != tc.wantCode || !strings.Contains(got, want) {
				t.Errorf("exit %d, first line %q; want exit %d and %q", code, got, tc.wantCode, want)
			}
		})
	}
	missing := filepath.Join(t.TempDir(), "config.yaml")
	if _, stderr, code := run(t, nil, "--config", missing, "setup"); code != exitFailure || !strings.Contains(stderr, "run `wraptool up` first") {
		t.Errorf("missing config: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("setup wrote a config")
	}
}

// Quoting holds for any string: every shellQuote splits back into itself
// as one word the shell does not expand, and every tomlString parses back.
func TestSetupQuoting(t *testing.T) {
	t.Parallel()
	// Bytes that are not UTF-8 (no TOML string holds them) come back too.
	if ws, err := splitShell(shellQuote("bad\xff\x9bbyte")); err != nil || len(ws) != 1 || ws[0].text != "bad\xff\x9bbyte" {
		t.Errorf("shellQuote of bytes that are not UTF-8 = %s splits into %q (%v)", shellQuote("bad\xff\x9bbyte"), texts(ws), err)
	}
	for _, s := range []string{"", "plain/path", "a b", "it's", `"q"`, "$HOME", "`x`", "a\nb", "\\", "'", "''", "ü ☃", "-x", "a;b|c&d>e<f(g)",
		"esc\x1b[2J", "tab\tand'quote\\", "\x7f\x01\n", "csi\u009b31m", "nel\u0085end"} {
		if q := shellQuote(s); strings.ContainsFunc(q, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) }) {
			t.Errorf("shellQuote(%q) = %q holds a raw control character", s, q)
		}
		ws, err := splitShell(shellQuote(s))
		if err != nil || len(ws) != 1 || ws[0].text != s || ws[0].expands {
			t.Errorf("shellQuote(%q) = %s splits into %q (%v), want the one word back", s, shellQuote(s), texts(ws), err)
		}
		var back string
		if err := json.Unmarshal([]byte(tomlString(s)), &back); err != nil || back != s {
			t.Errorf("tomlString(%q) = %s parses to %q (%v)", s, tomlString(s), back, err)
		}
	}
}

// A real shell agrees with the splitter: bash, given the printed export
// line and the stdio entry's words, reads the token file of a folder with
// a hostile name and passes the config path through as one argument.
func TestSetupLinesRunInBash(t *testing.T) {
	t.Parallel()
	bash, err := osexec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	cfgPath, _ := setupConfig(t, "it's a \"dir\" $HOME `x` (y)\nnext\x1b[2J", "127.0.0.1:8717")
	out, stderr, code := run(t, nil, "--config", cfgPath, "setup", "claude-code")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var script strings.Builder
	for _, l := range shellLines(out) {
		if rest, ok := strings.CutPrefix(l, "claude mcp add --scope user wraptool -- "); ok {
			script.WriteString(`printf '<%s>\n' ` + rest + "\n")
		} else if strings.HasPrefix(l, "export ") {
			script.WriteString(l + "\n")
		}
	}
	script.WriteString(`printf '[%s]\n' "$WRAPTOOL_TOKEN"` + "\n")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := osexec.CommandContext(ctx, bash, "--norc", "--noprofile", "-c", script.String())
	cmd.Env = []string{"HOME=/nonexistent", "PATH=" + os.Getenv("PATH")}
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s\nscript:\n%s", err, got, script.String())
	}
	exe, _ := os.Executable()
	command, _ := stdioCommand(exe, func(string) string { return "" })
	want := "<" + command + ">\n<--config>\n<" + cfgPath + ">\n<connect>\n[" + setupToken + "]\n"
	if string(got) != want {
		t.Errorf("bash printed\n%q\nwant\n%q", got, want)
	}
}

// With mcp.transport unix no client can reach the socket over HTTP: every
// client's form starts `wraptool connect`, and no URL is printed.
func TestSetupOnAUnixSocket(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	socket := filepath.Join(dir, "mcp.sock")
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg := fmt.Sprintf("mcp:\n  transport: unix\n  listen: %q\n  request_log: %q\n", socket, filepath.Join(dir, "requests.jsonl"))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := run(t, nil, "--config", cfgPath, "setup")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "unix socket "+socket) || strings.Contains(out, "http://") {
		t.Errorf("want the socket and no URL:\n%s", out)
	}
	blocks := jsonBlocks(t, out)
	if len(blocks) != len(setupClients)-2 { // claude-code and codex print a command line instead
		t.Errorf("%d JSON blocks, want %d", len(blocks), len(setupClients)-2)
	}
	for _, b := range blocks {
		if args, _ := at(b, "mcpServers", "wraptool", "args").([]any); fmt.Sprint(args) != fmt.Sprint([]any{"--config", cfgPath, "connect"}) {
			t.Errorf("block %v does not start connect", b)
		}
	}
}
