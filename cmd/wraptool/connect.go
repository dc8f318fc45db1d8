package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/peterbourgon/ff/v4"

	"github.com/wraptool/wraptool/actors"
	"github.com/wraptool/wraptool/cmd/wraptool/bridge"
	"github.com/wraptool/wraptool/policy/config"
)

// maxTokenBytes bounds a token file connect reads, as the config's loader
// bounds every token file.
const maxTokenBytes = 64 << 10

func (a *app) connectCommand() *ff.Command {
	var tokenFile string
	fs := ff.NewFlagSet("connect").SetParent(a.flags)
	fs.StringVar(&tokenFile, 0, "token-file", "", "send the token in this file instead of mcp.auth_token_file: an mcp.elicit_clients token, so the client is asked to approve")
	return &ff.Command{
		Name:      "connect",
		Usage:     "wraptool connect [--token-file PATH]",
		ShortHelp: "bridge stdio to the running server, for clients that can only start a command",
		LongHelp: "Carries newline-delimited JSON-RPC between stdin/stdout and the running server's /mcp,\n" +
			"with the config's MCP token (the client's own config holds none). Before it sends the token\n" +
			"it checks that the listener belongs to you. It waits up to 5s for a server still starting,\n" +
			"opens a new session when the server restarts, and exits 0 when stdin ends. With\n" +
			"--token-file it sends an mcp.elicit_clients token instead, so the client's user is asked\n" +
			"to approve what the assistant requests.",
		Flags: fs,
		Exec:  noArgs("connect", func(ctx context.Context) error { return a.connect(ctx, tokenFile) }),
	}
}

// connect runs `wraptool connect`: load the config as every command does,
// find the listener and the token, then bridge until stdin ends or a
// signal comes.
func (a *app) connect(ctx context.Context, tokenFile string) error {
	// The owner check reads Linux's SO_PEERCRED and /proc/net/tcp; without
	// them connect cannot tell who would receive the token.
	if runtime.GOOS != "linux" {
		return fmt.Errorf("connect: checking who owns the listener needs Linux (SO_PEERCRED, /proc/net/tcp); on %s point the client at the server's URL instead", runtime.GOOS)
	}
	path, err := a.configPath()
	if err != nil {
		return err
	}
	// The token files must exist: connect never creates a token the
	// server would not know.
	l, err := a.load(ctx, path, &config.LoadOptions{Paths: a.configOptions(), Tokens: config.TokensRequired})
	if err != nil {
		return err
	}
	a.applyConfigLevel(l.Config)
	log := a.log.With("component", "connect")
	ep, err := connectEndpoint(l.Config.MCP)
	if err != nil {
		return err
	}

	var token func() (string, error)
	switch {
	case tokenFile != "":
		tok, err := readPrivateToken(tokenFile)
		if err != nil {
			return fmt.Errorf("connect: --token-file: %w", err)
		}
		switch name, ok := l.ElicitTokens[tok]; {
		case ok:
			log.Debug("sending the token of an elicitation client", "client", name)
		case tok == l.MCPToken:
			log.Warn("--token-file holds the MCP token itself: the client will not be asked to approve anything", "token_file", tokenFile)
		default:
			log.Warn("--token-file holds no token the config names (mcp.auth_token_file, mcp.elicit_clients); the server will refuse it unless its config differs",
				"token_file", tokenFile)
		}
		token = func() (string, error) { return readPrivateToken(tokenFile) }
	case l.Config.MCP.AuthTokenFile != "":
		file := l.Config.MCP.AuthTokenFile
		token = func() (string, error) { return readPrivateToken(file) }
	}

	owner := bridge.Owner{UID: os.Getuid()}
	dial := func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, ep.network, ep.dial)
		if err != nil {
			return nil, err
		}
		if err := owner.Check(c); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}

	// SIGINT and SIGTERM end the bridge as the end of stdin does.
	ctx, stop := a.signalContext(ctx)
	defer stop()
	err = bridge.Run(ctx, bridge.Options{
		Address: ep.address, URL: ep.url, Dial: dial, Token: token,
		Stdin: a.stdin, Stdout: a.stdout, Log: log,
		MaxMessageBytes: actors.MaxBodyBytes,
	})
	switch {
	case errors.Is(err, bridge.ErrNoServer):
		return fmt.Errorf("connect: %w; is `wraptool serve` running on this config (%s)?", err, path)
	case err != nil:
		return fmt.Errorf("connect: %w", err)
	}
	return nil
}

// endpoint is where connect finds the server.
type endpoint struct {
	// address names the server in messages: host:port as dialled, or the
	// socket path.
	address string
	// network and dial are what to dial.
	network, dial string
	// url is the Streamable HTTP endpoint (for a socket, its host is only
	// the Host header).
	url string
}

// connectEndpoint finds the MCP listener the config names. A listener on
// every interface is reached through 127.0.0.1, as the hub's own URL says;
// a listener on port 0 has a new port at every start, which nothing in
// the config records.
func connectEndpoint(m config.MCP) (endpoint, error) {
	if m.Transport == "unix" {
		return endpoint{address: m.Listen, network: "unix", dial: m.Listen, url: "http://localhost/mcp"}, nil
	}
	host, port, err := net.SplitHostPort(m.Listen)
	if err != nil {
		return endpoint{}, fmt.Errorf("connect: mcp.listen %q: %w", m.Listen, err)
	}
	if port == "0" {
		return endpoint{}, fmt.Errorf("connect: mcp.listen is %q: with port 0 the server takes a new free port at every start, "+
			"which connect cannot find; give mcp.listen a fixed port (the starter's is 127.0.0.1:8717)", m.Listen)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	addr := net.JoinHostPort(host, port)
	return endpoint{address: addr, network: "tcp", dial: addr, url: "http://" + addr + "/mcp"}, nil
}

// readPrivateToken reads a token file connect is to send, with the checks
// the config's loader makes of every token file (CONTRACT §2), which
// --token-file must pass as well: a regular file of bounded size, owned by
// you or root, that nobody else may read or write, in folders nobody else
// may write (unless sticky, as /tmp is). Each refusal names the file and
// the command that fixes it. The token is the file's content without
// surrounding whitespace.
func readPrivateToken(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	if msg := privateFileProblem(path, info); msg != "" {
		return "", errors.New(msg)
	}
	folders := []string{filepath.Dir(path)}
	if real, err := filepath.EvalSymlinks(path); err == nil && filepath.Dir(real) != folders[0] {
		folders = append(folders, filepath.Dir(real))
	}
	for _, dir := range folders {
		dinfo, err := os.Stat(dir)
		if err != nil {
			return "", err
		}
		if msg := ownerProblem(dir, dinfo); msg != "" {
			return "", fmt.Errorf("%s (it holds %s)", msg, path)
		}
		if dinfo.Mode().Perm()&0o022 != 0 && dinfo.Mode()&fs.ModeSticky == 0 {
			return "", fmt.Errorf("%s is in %s, which group or others may write, so they could replace it; fix with: chmod go-w %s", path, dir, dir)
		}
	}
	if info.Size() > maxTokenBytes {
		return "", fmt.Errorf("%s is %d bytes; a token file holds at most %d", path, info.Size(), maxTokenBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTokenBytes+1))
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return tok, nil
}

// privateFileProblem says why a token file may not be trusted, or "".
func privateFileProblem(path string, info fs.FileInfo) string {
	if msg := ownerProblem(path, info); msg != "" {
		return msg
	}
	perm := info.Mode().Perm()
	if perm&0o022 != 0 {
		return fmt.Sprintf("%s is writable by group or others, and it holds a secret; fix with: chmod 600 %s", path, path)
	}
	if perm&0o044 != 0 {
		return fmt.Sprintf("%s is readable by group or others, and it holds a secret; fix with: chmod 600 %s", path, path)
	}
	return ""
}

// ownerProblem refuses a file or folder owned by anyone but you or root:
// its owner could change it, or its mode, at any time.
func ownerProblem(path string, info fs.FileInfo) string {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	self := os.Geteuid()
	if int(st.Uid) == self || st.Uid == 0 {
		return ""
	}
	return fmt.Sprintf("%s is owned by uid %d, not by you (uid %d) or root, so another user controls it; fix with: chown %d %s",
		path, st.Uid, self, self, path)
}
