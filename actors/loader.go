package actors

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/config"
)

// Loader turns a ReloadRequest into a fully built configuration, or a
// logged rejection that leaves the running one in place.
type Loader struct {
	in   <-chan messages.ReloadRequest
	out  chan<- messages.ConfigLoaded
	path string
	opts *config.Options
	// needToken is set when the running listener is reachable from other
	// hosts: a reload may then not remove the MCP token, because the
	// listener itself only changes with a restart.
	needToken string
	log       *slog.Logger

	running string // hash of what the holder runs
}

// NewLoader loads path on each request; running is the hash of the config
// already in service. needToken, when not empty, names the running listener
// that is not loopback-only: a config without an MCP token is then refused.
func NewLoader(path string, opts *config.Options, running, needToken string, in <-chan messages.ReloadRequest, out chan<- messages.ConfigLoaded, log *slog.Logger) *Loader {
	return &Loader{in: in, out: out, path: path, opts: opts, running: running, needToken: needToken, log: log.With("component", "loader")}
}

// Run handles reload requests until ctx is done.
func (l *Loader) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case req := <-l.in:
			m, ok := l.load(req)
			if !ok {
				continue
			}
			select {
			case l.out <- m:
				l.running = m.Hash
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// load builds the new configuration. A watch-triggered reload of files that
// hash the same as the running ones (our own atomic writes, an editor
// touching the file) is skipped silently; SIGHUP always reloads and logs.
func (l *Loader) load(req messages.ReloadRequest) (messages.ConfigLoaded, bool) {
	m, err := LoadConfig(l.path, l.opts)
	if err == nil && l.needToken != "" && m.MCPToken == "" {
		err = fmt.Errorf("%s: mcp.auth_token_file: the running listener %s is reachable from other hosts, "+
			"so a reload cannot remove its token (listener changes need a restart)", l.path, l.needToken)
	}
	if err != nil {
		l.log.Error("config rejected", "cause", req.Cause, "error", err.Error())
		return messages.ConfigLoaded{}, false
	}
	if !req.Forced && m.Hash == l.running {
		return messages.ConfigLoaded{}, false
	}
	for _, w := range m.Config.Warnings(nil) {
		l.log.Warn("config warning", "where", w.String())
	}
	m.Cause = req.Cause
	return m, true
}
