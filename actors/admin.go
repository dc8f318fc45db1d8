package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
)

// Admin owns the operator's review UI listener (admin.listen): its own
// listener, independent of the MCP transport, serving the handler the UI
// builds once the bound address is known (the port decides the UI's host
// name). It shares the hub's limits: headers within ReadHeaderTimeout, idle
// keep-alives closed after IdleTimeout, at most MaxConns connections.
type Admin struct {
	listen  string
	handler func(net.Addr) http.Handler
	log     *slog.Logger

	ln net.Listener
	h  http.Handler
}

// AdminOptions configure an Admin.
type AdminOptions struct {
	// Listen is host:port.
	Listen string
	// Handler builds the UI for the bound address; called once by Listen.
	Handler func(addr net.Addr) http.Handler
	// Log receives the listener's problems; nil discards them.
	Log *slog.Logger
}

// NewAdmin serves o.Handler on o.Listen. It binds nothing until Listen.
func NewAdmin(o AdminOptions) *Admin {
	return &Admin{listen: o.Listen, handler: o.Handler, log: logger(o.Log, "admin")}
}

// Listen binds the listener and builds the handler, so a bind failure
// stops start-up with a clear error.
func (a *Admin) Listen() error {
	ln, err := net.Listen("tcp", a.listen)
	if err != nil {
		return fmt.Errorf("listen on admin.listen %s: %w", a.listen, err)
	}
	a.ln, a.h = ln, a.handler(ln.Addr())
	return nil
}

// Addr is the bound address; valid after Listen.
func (a *Admin) Addr() net.Addr { return a.ln.Addr() }

// Close releases the listener of an Admin whose Run never started.
func (a *Admin) Close() {
	if a.ln != nil {
		a.ln.Close()
	}
}

// Run serves until ctx is done, then shuts down: requests in progress get
// closeBound to finish (the UI's own work is short: a page, a decision, an
// apply).
func (a *Admin) Run(ctx context.Context) error {
	srv := &http.Server{Handler: a.h, ReadHeaderTimeout: ReadHeaderTimeout, IdleTimeout: IdleTimeout}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(limitConns(a.ln, MaxConns)) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve the admin UI: %w", err)
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), closeBound)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		a.log.Warn("admin listener", "error", err)
	}
	return nil
}
