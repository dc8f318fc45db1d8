package actors

import (
	"context"
	"net"
	"sync"

	"golang.org/x/sync/semaphore"
)

// connLimit is a listener that keeps at most n connections open.
// Accept takes a slot before it takes a connection from the kernel, so
// beyond the limit new connections wait in the listen queue instead of using
// up file descriptors; a connection gives its slot back on its first Close.
type connLimit struct {
	net.Listener
	slots *semaphore.Weighted // one unit per open connection
	// closed ends with Close (stop), ending an Accept waiting for a slot;
	// Acquire fails on an ended context even when a slot is free.
	closed context.Context
	stop   context.CancelFunc
}

// limitConns limits ln to n open connections (n > 0).
func limitConns(ln net.Listener, n int) *connLimit {
	closed, stop := context.WithCancel(context.Background())
	return &connLimit{Listener: ln, slots: semaphore.NewWeighted(int64(n)), closed: closed, stop: stop}
}

func (l *connLimit) Accept() (net.Conn, error) {
	if err := l.slots.Acquire(l.closed, 1); err != nil {
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		l.slots.Release(1)
		return nil, err
	}
	return &limitedConn{Conn: c, release: sync.OnceFunc(func() { l.slots.Release(1) })}, nil
}

func (l *connLimit) Close() error {
	l.stop()
	return l.Listener.Close()
}

// limitedConn holds one slot of a connLimit until it is closed.
type limitedConn struct {
	net.Conn
	release func() // frees the slot; once only, however often Close is called
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// CloseWrite passes a half-close through, which net/http uses to let a
// client read a refusal before the connection is reset.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
