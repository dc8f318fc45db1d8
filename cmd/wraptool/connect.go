package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"

	"github.com/peterbourgon/ff/v4"

	"github.com/wraptool/wraptool/actors"
	"github.com/wraptool/wraptool/cmd/wraptool/connect"
	"github.com/wraptool/wraptool/policy/config"
)

func (a *app) connectCommand() *ff.Command {
	var tokenFile string
	fs := ff.NewFlagSet("connect").SetParent(a.flags)
	stringFlag(fs, &tokenFile, "token-file", "", "PATH", "send the token in this file instead of mcp.auth_token_file: an mcp.elicit_clients token, so the client is asked to approve")
	return &ff.Command{
		Name:      "connect",
		Usage:     "wraptool connect [--token-file PATH]",
		ShortHelp: "bridge stdio to the running server, for clients that can only start a command",
		LongHelp: "Carries newline-delimited JSON-RPC between stdin/stdout and the running server's /mcp,\n" +
			"with the config's MCP token (the client's own config holds none). Before it sends the token\n" +
			"it checks that the listener belongs to you and proves it holds the token. It waits up to\n" +
			"5s for a server still starting, opens a new session when the server restarts, and exits 0\n" +
			"when stdin ends. With\n" +
			"--token-file it sends an mcp.elicit_clients token instead, so the client's user is asked\n" +
			"to approve what the assistant requests.\n\n" +
			"Example:\n  wraptool connect --token-file ~/.config/wraptool/claude-token",
		Flags: fs,
		Exec:  noArgs("connect", func(ctx context.Context) error { return a.connect(ctx, tokenFile) }),
	}
}

// connect runs `wraptool connect`: load the config as every command does,
// find the listener and the token, then bridge until stdin ends or a
// signal comes.
func (a *app) connect(ctx context.Context, tokenFile string) error {
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

	if err := vouchable(runtime.GOOS, ep.network, token != nil); err != nil {
		return err
	}
	owner := connect.Owner{UID: os.Getuid()}
	dial := func(ctx context.Context, tok string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, ep.network, ep.dial)
		if err != nil {
			return nil, err
		}
		if err := owner.Check(c); err != nil {
			c.Close()
			return nil, err
		}
		// Every connection that will carry a token first proves the
		// listener holds that very token: the owner check alone lets
		// through a program of this user (a confined child can bind TCP).
		if tok == "" {
			return c, nil
		}
		if err := connect.Prove(ctx, c, ep.host, tok); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}

	// SIGINT and SIGTERM end the bridge as the end of stdin does.
	ctx, stop := a.signalContext(ctx)
	defer stop()
	err = connect.Run(ctx, connect.Options{
		Address: ep.address, URL: ep.url, Dial: dial, Token: token,
		Stdin: a.stdin, Stdout: a.stdout, Log: log,
		MaxMessageBytes: actors.MaxBodyBytes,
	})
	switch {
	case errors.Is(err, connect.ErrNoServer):
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
	// host is url's host, the Host header of the proof.
	host string
}

// vouchable refuses a bridge to a listener nothing could vouch for: on
// macOS a TCP listener's owner cannot be read, so without a token to prove
// it holds, any program on the port (another user's included) would get
// the assistant's traffic.
func vouchable(goos, network string, haveToken bool) error {
	if goos == "darwin" && network == "tcp" && !haveToken {
		return errors.New("connect: on macOS nothing can tell who holds a TCP port, so connect needs mcp.auth_token_file (the server then proves it holds the token); set it, or use mcp.transport: unix, whose owner macOS reports")
	}
	return nil
}

// connectEndpoint finds the MCP listener the config names. A listener on
// every interface is reached through 127.0.0.1, as the hub's own URL says;
// a listener on port 0 has a new port at every start, which nothing in
// the config records.
func connectEndpoint(m config.MCP) (endpoint, error) {
	if m.Transport == "unix" {
		return endpoint{address: m.Listen, network: "unix", dial: m.Listen, url: "http://localhost/mcp", host: "localhost"}, nil
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
	return endpoint{address: addr, network: "tcp", dial: addr, url: "http://" + addr + "/mcp", host: addr}, nil
}

// readPrivateToken reads a token file connect is to send, with the checks
// the config's loader makes of every token file (config.ReadTokenFile),
// which --token-file must pass as well.
func readPrivateToken(path string) (string, error) { return config.ReadTokenFile(path) }
