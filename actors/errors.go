package actors

import "errors"

// ErrSocketInUse is returned when a live server already listens on the
// unix socket path.
var ErrSocketInUse = errors.New("another process is listening on the socket")
