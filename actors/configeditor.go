package actors

import (
	"context"
	"log/slog"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/config/edit"
)

// ConfigEditor is the server's writer of the config file: the review UI's
// "Apply to config" reaches it as an ApplyToConfig and waits for its
// answer, so the server's applies happen one at a time, in order. The edit
// itself is the domain's (edit.ApplyRequest: validated before writing,
// written atomically, every byte outside the edited rule kept), the same
// one `requests approve --apply` makes from another process; the file
// watcher then reloads what was written, as for any edit.
type ConfigEditor struct {
	in      <-chan messages.ApplyToConfig
	stopped chan<- struct{}
	log     *slog.Logger
}

// ConfigEditorOptions configure a ConfigEditor. Its senders hold the other
// end as messages.ConfigEditorLinks.
type ConfigEditorOptions struct {
	// Applies carries the merges to write.
	Applies <-chan messages.ApplyToConfig
	// Stopped is closed when Run returns, so a sender never waits on an
	// editor that no longer reads.
	Stopped chan<- struct{}
	// Log receives each merge written; nil discards it.
	Log *slog.Logger
}

// NewConfigEditor serves o.Applies once Run starts.
func NewConfigEditor(o ConfigEditorOptions) *ConfigEditor {
	return &ConfigEditor{in: o.Applies, stopped: o.Stopped, log: logger(o.Log, "configeditor")}
}

// Run writes each merge it is sent until ctx is done.
func (e *ConfigEditor) Run(ctx context.Context) error {
	if e.stopped != nil {
		defer close(e.stopped)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-e.in:
			applied, err := edit.ApplyRequest(m.Path, m.Tool, m.Subcommand, m.Flags, m.Paths)
			out := messages.AppliedToConfig{Err: err}
			if err == nil {
				out.Applied = applied.String()
				e.log.Info("config edited", "file", m.Path, "applied", out.Applied)
			}
			m.Reply <- out // buffered (size 1): never blocks
		}
	}
}
