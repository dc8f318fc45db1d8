package actors

import "errors"

// ErrStopped is returned to a capability request submitted after the
// request-log writer has stopped.
var ErrStopped = errors.New("the server is shutting down")

// ErrSocketInUse is returned when a live server already listens on the
// unix socket path.
var ErrSocketInUse = errors.New("another process is listening on the socket")
