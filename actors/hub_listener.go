package actors

import (
	"net"
	"sync"
)

// connLimit is a listener that keeps at most cap(slots) connections open.
// Accept takes a slot before it takes a connection from the kernel, so
// beyond the limit new connections wait in the listen queue instead of using
// up file descriptors; a connection gives its slot back on its first Close.
type connLimit struct {
	net.Listener
	slots     chan struct{} // buffer n; a send takes a slot, a receive frees one
	closed    chan struct{} // closed by Close, ending an Accept waiting for a slot
	closeOnce sync.Once
}

// limitConns limits ln to n open connections (n > 0).
func limitConns(ln net.Listener, n int) *connLimit {
	return &connLimit{Listener: ln, slots: make(chan struct{}, n), closed: make(chan struct{})}
}

func (l *connLimit) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: sync.OnceFunc(func() { <-l.slots })}, nil
}

func (l *connLimit) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
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
