package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/peterbourgon/ff/v4"

	"github.com/wraptool/wraptool/cmd/wraptool/connect"
	"github.com/wraptool/wraptool/policy/config"
)

// tokenVar is the environment variable every printed form reads the MCP
// token from, so the token itself is never printed, never lands in a file
// a client shares, and never on a command line where the client can avoid
// it.
const tokenVar = "WRAPTOOL_TOKEN"

// setupClient is one client `setup` knows how to connect: its name on the
// command line, the title printed above its forms, and the forms.
type setupClient struct {
	name, title string
	print       func(p *setupPrinter)
}

// setupClients is every client, in the order `setup` prints them. The
// docs/clients.md says which documentation each form
// follows.
var setupClients = []setupClient{
	{"claude-code", "Claude Code", (*setupPrinter).claudeCode},
	{"claude-desktop", "Claude Desktop", (*setupPrinter).claudeDesktop},
	{"codex", "Codex CLI", (*setupPrinter).codex},
	{"gemini", "Gemini CLI", func(p *setupPrinter) { p.geminiLike("gemini", "~/.gemini/settings.json", "Gemini CLI") }},
	{"qwen", "Qwen Code", func(p *setupPrinter) { p.geminiLike("qwen", "~/.qwen/settings.json", "Qwen Code") }},
	{"opencode", "opencode", (*setupPrinter).opencode},
	{"cursor", "Cursor", (*setupPrinter).cursor},
	{"vscode", "VS Code", (*setupPrinter).vscode},
	{"inspector", "MCP Inspector", (*setupPrinter).inspector},
	{"mcp-remote", "mcp-remote", (*setupPrinter).mcpRemote},
}

func setupClientNames() []string {
	names := make([]string, len(setupClients))
	for i, c := range setupClients {
		names[i] = c.name
	}
	return names
}

func (a *app) setupCommand() *ff.Command {
	return &ff.Command{
		Name:      "setup",
		Usage:     "wraptool setup [CLIENT]",
		ShortHelp: "print client set-up: every client, or the one named (with or without a running server)",
		LongHelp: "Prints how to connect each MCP client to this config's server, or only the client named:\n" +
			strings.Join(setupClientNames(), ", ") + ".\n" +
			"It reads the config (the URL comes from mcp.listen) and works whether the server runs or\n" +
			"not. No form holds the token: each reads it from the " + tokenVar + " variable (set from the\n" +
			"token file without printing it), and says so where a client must keep it in its own file.\n\n" +
			"Example:\n  wraptool setup codex",
		Flags: ff.NewFlagSet("setup").SetParent(a.flags),
		Exec:  a.runSetup,
	}
}

// runSetup is `setup [CLIENT]`: it touches nothing (no token file is
// created, no tool is run) and never prints the token.
func (a *app) runSetup(ctx context.Context, args []string) error {
	if len(args) > 1 {
		return usageErrorf("setup takes at most one client (got %d arguments)", len(args))
	}
	clients := setupClients
	if len(args) == 1 {
		c, err := findSetupClient(args[0])
		if err != nil {
			return err
		}
		clients = []setupClient{c}
	}
	path, err := a.configPath()
	if err != nil {
		return err
	}
	if path, err = filepath.Abs(path); err != nil {
		return fmt.Errorf("config path: %w", err)
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("setup: no config at %s: run `wraptool up` first, which writes one and serves it", path)
	}
	l, err := a.loadConfig(ctx, path)
	if err != nil {
		return err
	}
	t, err := setupTargetOf(l.Config, path)
	if err != nil {
		return err
	}
	if t.URL != "" {
		if probeWraptool(ctx, t.URL, t.TokenFile) {
			t.Status = "wraptool is serving MCP at " + t.URL
		} else {
			t.Status = "wraptool is not answering at " + t.URL + " now; once `wraptool serve` (or `wraptool up`) runs on this config, it serves MCP there"
		}
	}
	return a.writeSetup(t, clients)
}

// findSetupClient looks name up; an unknown one is a usage error that
// suggests the closest name and lists them all. The name is the operator's
// typing, quoted so nothing in it reaches the terminal raw.
func findSetupClient(name string) (setupClient, error) {
	for _, c := range setupClients {
		if c.name == name {
			return c, nil
		}
	}
	return setupClient{}, usageErrorf("setup: unknown client %q%s; the clients are: %s",
		name, closestName(setupClientNames(), name), strings.Join(setupClientNames(), ", "))
}

// setupTarget is what the printed forms point at.
type setupTarget struct {
	// URL is the MCP base URL; "" for a unix socket, then Socket.
	URL, Socket string
	// TokenFile is mcp.auth_token_file, absolute; "" when the server
	// needs no token.
	TokenFile string
	// ConfigPath is the config, absolute: the stdio entry runs
	// `wraptool --config <it> connect`.
	ConfigPath string
	// Status is the first line: where wraptool serves, or that it does
	// not answer yet. "" prints none.
	Status string
	// AdminURL is the review UI's address ("" without admin.listen) and
	// Warning a line printed last (confinement is off); `up` sets both.
	AdminURL, Warning string
}

// setupTargetOf is the target a config names, without a running server:
// the URL from mcp.listen (an address on every interface is reached through
// loopback). Port 0 is chosen anew at each start, so no client can be told
// it: that is an error saying so.
func setupTargetOf(c *config.Config, path string) (setupTarget, error) {
	t := setupTarget{TokenFile: c.MCP.AuthTokenFile, ConfigPath: path}
	if c.MCP.Transport == "unix" {
		t.Socket = c.MCP.Listen
		return t, nil
	}
	url, err := listenURL(c.MCP.Listen)
	if err != nil {
		return t, fmt.Errorf("%s: mcp.listen %q: %w", path, c.MCP.Listen, err)
	}
	t.URL = url
	return t, nil
}

// listenURL is the base URL a local client uses for a TCP listen address.
func listenURL(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", err
	}
	if port == "0" {
		return "", errors.New("port 0 is chosen anew at each start, so no client can be told it; set a fixed port (the starter uses 127.0.0.1:8717)")
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// probeWraptool reports whether a wraptool of this user answers /healthz
// at base: the listening socket belongs to the user running this command
// (checked before anything is sent, as connect checks it), and, when the
// config names a token file (tokenFile, "" for none), the listener proves
// it holds that token (connect.Prove) before /healthz is asked; then the
// answer is "ok" and its confinement line. Anything may answer like that,
// and a program of this same user (a confined child can bind TCP) passes
// the owner check, so the proof is what keeps `up` from telling the
// operator that all is well (and to hand clients the token) while another
// program holds the port. A token file that cannot be read is no proof. It
// sends no credentials, follows no redirects, reads at most 256 bytes and
// gives up after 2 s.
func probeWraptool(ctx context.Context, base, tokenFile string) bool {
	token := ""
	if tokenFile != "" {
		tok, err := config.ReadTokenFile(tokenFile)
		if err != nil || tok == "" {
			return false
		}
		token = tok
	}
	return probeWraptoolWith(ctx, base, connect.Owner{UID: os.Getuid()}.Check, token)
}

// probeWraptoolWith is probeWraptool with the owner check given (a test's)
// and the token read ("" proves nothing: the owner check alone).
func probeWraptoolWith(ctx context.Context, base string, owner func(net.Conn) error, token string) bool {
	if token != "" {
		check := owner
		host := strings.TrimPrefix(base, "http://")
		owner = func(c net.Conn) error {
			if err := check(c); err != nil {
				return err
			}
			return connect.Prove(ctx, c, host, token)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		return false
	}
	client := &http.Client{
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				if err := owner(c); err != nil {
					c.Close()
					return nil, err
				}
				return c, nil
			}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	first, rest, _ := strings.Cut(string(body), "\n")
	return resp.StatusCode == http.StatusOK && first == "ok" && strings.HasPrefix(rest, "confinement: ")
}

// writeSetup prints the set-up of clients for t: the status line, how to
// set the token variable, each client's forms, then the review UI and the
// warning.
func (a *app) writeSetup(t setupTarget, clients []setupClient) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find wraptool's own path for the stdio entry: %w", err)
	}
	command, note := stdioCommand(exe, a.getenv)
	p := &setupPrinter{w: a.stdout, t: t, command: command, commandNote: note}
	if t.Status != "" {
		p.line("%s", t.Status)
	}
	switch {
	case t.Socket != "":
		p.line("wraptool serves MCP on the unix socket %s (mode 0600): clients reach it through `wraptool connect`.", shellQuote(t.Socket))
	case t.TokenFile == "":
		p.line("This config sets no mcp.auth_token_file: the server takes no token, so every local process can use it.")
	default:
		p.line("Every form below reads the MCP token from the variable %s, never from the form itself.", tokenVar)
		p.line("Set it from the token file, without printing it, in the shell (or its profile) that starts the client:")
		p.shell("export " + tokenVar + `="$(cat ` + shellQuote(t.TokenFile) + `)"`)
	}
	p.blank()
	for _, c := range clients {
		p.line("== %s (wraptool setup %s) ==", c.title, c.name)
		if t.Socket != "" {
			p.viaConnect(c)
		} else {
			c.print(p)
		}
		p.blank()
	}
	if t.AdminURL != "" {
		p.line("Review the assistant's requests at %s", t.AdminURL)
		p.line("(sign in there with the admin token, or open %s?token=<the admin token>)", t.AdminURL)
	}
	if t.Warning != "" {
		p.line("")
		p.line("WARNING: %s", t.Warning)
	}
	return p.err
}

// setupPrinter writes one client's forms; the first write error sticks.
type setupPrinter struct {
	w                    io.Writer
	t                    setupTarget
	command, commandNote string
	err                  error
}

func (p *setupPrinter) line(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
	}
}

func (p *setupPrinter) blank() { p.line("") }

// shell prints a command line to paste, its words already quoted.
func (p *setupPrinter) shell(line string) { p.line("  %s", line) }

// json prints a file form: indented JSON, its braces at the line's start.
func (p *setupPrinter) json(v any) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil && p.err == nil {
		p.err = err
	}
	p.line("%s", data)
}

func (p *setupPrinter) mcpURL() string { return p.t.URL + "/mcp" }

// headers is the Authorization header a client expands itself, ref being
// its syntax for the variable ("${WRAPTOOL_TOKEN}", "{env:WRAPTOOL_TOKEN}").
func (p *setupPrinter) headers(ref string) map[string]string {
	if p.t.TokenFile == "" {
		return nil
	}
	return map[string]string{"Authorization": "Bearer " + ref}
}

// headerArg is the --header argument as the shell should pass it: in
// double quotes, so the shell expands the variable (the client stores the
// token it is given), or in single quotes, so the client gets the
// variable's name and expands it itself.
func (p *setupPrinter) headerArg(expandInShell bool) string {
	if expandInShell {
		return `"Authorization: Bearer ${` + tokenVar + `}"`
	}
	return `'Authorization: Bearer ${` + tokenVar + `}'`
}

// stdioArgs is the argv of the stdio entry after its command.
func (p *setupPrinter) stdioArgs() []string { return []string{"--config", p.t.ConfigPath, "connect"} }

// stdioLine is the stdio entry as shell words: command and arguments, quoted.
func (p *setupPrinter) stdioLine() string {
	words := []string{shellQuote(p.command)}
	for _, a := range p.stdioArgs() {
		words = append(words, shellQuote(a))
	}
	return strings.Join(words, " ")
}

func (p *setupPrinter) stdioEntry() map[string]any {
	return map[string]any{"command": p.command, "args": p.stdioArgs()}
}

func (p *setupPrinter) stdioNote() {
	if p.commandNote != "" {
		p.line("%s", p.commandNote)
	}
}

func (p *setupPrinter) claudeCode() {
	p.line("User scope (every project; kept in ~/.claude.json, which is yours alone):")
	if p.t.TokenFile == "" {
		p.shell("claude mcp add --scope user --transport http wraptool " + shellQuote(p.mcpURL()))
	} else {
		p.shell("claude mcp add --scope user --transport http wraptool " + shellQuote(p.mcpURL()) + " --header " + p.headerArg(true))
		p.line("The shell expands %s, so your history holds its name, not the token; Claude Code stores the", tokenVar)
		p.line("token it is given in ~/.claude.json (and it is on that command's argv while it runs).")
	}
	p.line("Or with no token in any file, through `wraptool connect`:")
	p.stdioNote()
	p.shell("claude mcp add --scope user wraptool -- " + p.stdioLine())
	p.line("Project scope: .mcp.json in the project's top folder, shared through the repository. Claude Code")
	p.line("expands ${%s} when it reads the file, so the file holds no token:", tokenVar)
	entry := map[string]any{"type": "http", "url": p.mcpURL()}
	if h := p.headers("${" + tokenVar + "}"); h != nil {
		entry["headers"] = h
	}
	p.json(map[string]any{"mcpServers": map[string]any{"wraptool": entry}})
	p.line("Claude Code asks you to approve a project's .mcp.json servers the first time it starts there: approve")
	p.line("wraptool (`claude mcp reset-project-choices` asks again; `claude mcp list` shows it connected).")
	if p.t.TokenFile != "" {
		p.line("Start claude from a shell where %s is set.", tokenVar)
	}
}

func (p *setupPrinter) claudeDesktop() {
	p.line("claude_desktop_config.json (Settings > Developer > Edit Config) starts `wraptool connect`, which reads")
	p.line("the token file itself: no token in the file. Restart Claude Desktop after the edit.")
	p.stdioNote()
	p.json(map[string]any{"mcpServers": map[string]any{"wraptool": p.stdioEntry()}})
}

func (p *setupPrinter) codex() {
	if p.t.TokenFile == "" {
		p.shell("codex mcp add wraptool --url " + shellQuote(p.mcpURL()))
	} else {
		p.shell("codex mcp add wraptool --url " + shellQuote(p.mcpURL()) + " --bearer-token-env-var " + tokenVar)
	}
	p.line("or the same in ~/.codex/config.toml:")
	p.line("[mcp_servers.wraptool]")
	p.line("url = %s", tomlString(p.mcpURL()))
	if p.t.TokenFile != "" {
		p.line("bearer_token_env_var = %s", tomlString(tokenVar))
		p.line("Codex reads %s when it connects: the token is in no file and on no command line.", tokenVar)
	}
}

// geminiLike is Gemini CLI and Qwen Code, which shares its settings loader:
// string values in settings.json may name environment variables, expanded
// when the settings load.
func (p *setupPrinter) geminiLike(cmd, settings, title string) {
	p.line("First trust the folder you run %s in (start %s there and choose to trust it): in an untrusted", cmd, cmd)
	p.line("folder %s ignores project settings, and `%s mcp add` keeps only the last server.", title, cmd)
	line := cmd + " mcp add --scope user --transport http"
	if p.t.TokenFile != "" {
		line += " --header " + p.headerArg(false)
	}
	p.shell(line + " wraptool " + shellQuote(p.mcpURL()))
	if p.t.TokenFile != "" {
		p.line("The single quotes pass the variable's name: %s expands it when it loads its settings, so", title)
		p.line("the file holds no token.")
	}
	p.line("or the same in %s:", settings)
	entry := map[string]any{"httpUrl": p.mcpURL()}
	if h := p.headers("${" + tokenVar + "}"); h != nil {
		entry["headers"] = h
	}
	p.json(map[string]any{"mcpServers": map[string]any{"wraptool": entry}})
}

func (p *setupPrinter) opencode() {
	p.line("opencode.json (the project's, or ~/.config/opencode/opencode.json); opencode replaces {env:%s}", tokenVar)
	p.line("with the variable when it reads the file, so the file holds no token:")
	entry := map[string]any{"type": "remote", "url": p.mcpURL(), "enabled": true}
	if h := p.headers("{env:" + tokenVar + "}"); h != nil {
		entry["headers"] = h
	}
	p.json(map[string]any{"$schema": "https://opencode.ai/config.json", "mcp": map[string]any{"wraptool": entry}})
}

func (p *setupPrinter) cursor() {
	p.line("~/.cursor/mcp.json (or the project's .cursor/mcp.json); Cursor replaces ${env:%s} with the", tokenVar)
	p.line("variable, so the file holds no token. Start Cursor from a shell where it is set (`cursor .`).")
	entry := map[string]any{"url": p.mcpURL()}
	if h := p.headers("${env:" + tokenVar + "}"); h != nil {
		entry["headers"] = h
	}
	p.json(map[string]any{"mcpServers": map[string]any{"wraptool": entry}})
}

func (p *setupPrinter) vscode() {
	entry := map[string]any{"type": "http", "url": p.mcpURL()}
	v := map[string]any{"servers": map[string]any{"wraptool": entry}}
	if p.t.TokenFile != "" {
		p.line(".vscode/mcp.json (or the user profile's mcp.json): VS Code asks for the token once, when the")
		p.line("server first starts, and keeps it in its secret storage, not in the file. Paste the token file's")
		p.line("contents there.")
		entry["headers"] = map[string]string{"Authorization": "Bearer ${input:wraptool-token}"}
		v["inputs"] = []any{map[string]any{
			"type": "promptString", "id": "wraptool-token", "password": true,
			"description": "wraptool MCP token (the contents of " + p.t.TokenFile + ")",
		}}
	} else {
		p.line(".vscode/mcp.json (or the user profile's mcp.json):")
	}
	p.json(v)
}

func (p *setupPrinter) inspector() {
	line := "npx @modelcontextprotocol/inspector --cli " + shellQuote(p.mcpURL()) + " --transport http"
	if p.t.TokenFile != "" {
		line += " --header " + p.headerArg(true)
	}
	p.shell(line + " --method tools/list")
	if p.t.TokenFile != "" {
		p.line("The Inspector has no variable of its own: the shell expands %s, so the token is on the", tokenVar)
		p.line("Inspector's argv while it runs (not in your history). Without it on any command line, give the")
		p.line("Inspector `wraptool connect` in a file (it reads --config as its own flag, so the command cannot")
		p.line("be given inline), say wraptool-inspector.json:")
	} else {
		p.line("Or through `wraptool connect`, from a file (the Inspector reads --config as its own flag, so the")
		p.line("command cannot be given inline), say wraptool-inspector.json:")
	}
	p.stdioNote()
	p.json(map[string]any{"mcpServers": map[string]any{"wraptool": p.stdioEntry()}})
	p.shell("npx @modelcontextprotocol/inspector --cli --config wraptool-inspector.json --server wraptool --method tools/list")
}

func (p *setupPrinter) mcpRemote() {
	args := []string{"-y", "mcp-remote", p.mcpURL()}
	if p.t.TokenFile != "" {
		args = append(args, "--header", "Authorization:Bearer ${"+tokenVar+"}")
		p.line("mcp-remote expands ${%s} from its own environment. A client that passes its environment on", tokenVar)
		p.line("needs nothing more; one that does not (Claude Desktop) needs \"env\": {\"%s\": \"<the token>\"} in", tokenVar)
		p.line("this entry, and its file then holds the token: there, prefer the `wraptool connect` entry.")
	}
	p.json(map[string]any{"mcpServers": map[string]any{"wraptool": map[string]any{"command": "npx", "args": args}}})
}

// viaConnect is a client's form when the server listens on a unix socket:
// no client speaks HTTP over one, so each starts `wraptool connect`.
func (p *setupPrinter) viaConnect(c setupClient) {
	p.stdioNote()
	switch c.name {
	case "claude-code":
		p.shell("claude mcp add --scope user wraptool -- " + p.stdioLine())
	case "codex":
		p.shell("codex mcp add wraptool -- " + p.stdioLine())
	default:
		p.line("Give %s this command in its config's form for a command (stdio) server:", c.title)
		p.json(map[string]any{"mcpServers": map[string]any{"wraptool": p.stdioEntry()}})
	}
}

// shellSafe is what a POSIX shell word may hold unquoted.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote quotes s as one POSIX shell word that expands to nothing: in
// single quotes, a single quote written as '\”. A word holding a control
// character (a newline in a folder's name, an escape sequence) is written
// $'…' with the character escaped instead, so each command stays one line
// and nothing reaches the terminal raw.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	// C0 controls, DEL, the C1 controls (U+0080–U+009F, which some
	// terminals take as escape sequences: U+009B is a one-character CSI)
	// and bytes that are not UTF-8 are written as escapes, never raw.
	control := func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) }
	if strings.IndexFunc(s, control) < 0 && utf8.ValidString(s) {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch c := s[i]; {
		case c == '\\' || c == '\'':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c == 0x7f || (r == utf8.RuneError && size == 1):
			fmt.Fprintf(&b, `\x%02x`, c)
		case control(r):
			for _, x := range []byte(s[i : i+size]) {
				fmt.Fprintf(&b, `\x%02x`, x)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('\'')
	return b.String()
}

// tomlString is s as a TOML basic string: quotes, backslashes and control
// characters escaped.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
