package actors

import (
	"context"
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
	log  *slog.Logger

	running  string // hash of what the holder runs
	rejected string // hash of the last bytes rejected
}

// NewLoader loads path on each request; running is the hash of the config
// already in service.
func NewLoader(path string, opts *config.Options, running string, in <-chan messages.ReloadRequest, out chan<- messages.ConfigLoaded, log *slog.Logger) *Loader {
	return &Loader{in: in, out: out, path: path, opts: opts, running: running, log: log.With("component", "loader")}
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
// touching the file) is skipped silently, and so is one of bytes already
// rejected; SIGHUP always reloads and always logs.
func (l *Loader) load(req messages.ReloadRequest) (messages.ConfigLoaded, bool) {
	data, c, err := readConfig(l.path, l.opts)
	if err != nil {
		l.reject(req, data, err)
		return messages.ConfigLoaded{}, false
	}
	m, err := compile(c, data)
	if err != nil {
		l.reject(req, data, err)
		return messages.ConfigLoaded{}, false
	}
	l.rejected = ""
	if !req.Forced && m.Hash == l.running {
		return messages.ConfigLoaded{}, false
	}
	m.Cause = req.Cause
	return m, true
}

// reject logs a failed load, unless it is the very failure (same bytes,
// same error) already reported and the reload was not forced.
func (l *Loader) reject(req messages.ReloadRequest, data []byte, err error) {
	key := hashBytes(append(append([]byte(nil), data...), err.Error()...))
	if !req.Forced && key == l.rejected {
		return
	}
	l.rejected = key
	l.log.Error("config rejected", "cause", req.Cause, "error", err.Error())
}
