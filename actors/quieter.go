package actors

import (
	"context"
	"log/slog"
)

// Quieter demotes a library's Info records to Debug: the MCP SDK reports
// every session connect and disconnect at Info, which would drown the
// server's own log lines.
type Quieter struct{ slog.Handler }

// Enabled reports whether l, demoted, would be logged.
func (q Quieter) Enabled(ctx context.Context, l slog.Level) bool {
	if l == slog.LevelInfo {
		l = slog.LevelDebug
	}
	return q.Handler.Enabled(ctx, l)
}

// Handle logs r, an Info record demoted to Debug.
func (q Quieter) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo {
		r.Level = slog.LevelDebug
	}
	return q.Handler.Handle(ctx, r)
}

// WithAttrs keeps the demotion on the derived handler.
func (q Quieter) WithAttrs(as []slog.Attr) slog.Handler { return Quieter{q.Handler.WithAttrs(as)} }

// WithGroup keeps the demotion on the derived handler.
func (q Quieter) WithGroup(n string) slog.Handler { return Quieter{q.Handler.WithGroup(n)} }
