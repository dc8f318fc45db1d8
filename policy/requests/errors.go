package requests

import "errors"

// ErrPendingLimit is returned when MaxPending requests are already pending.
var ErrPendingLimit = errors.New("the pending limit is reached")

// ErrUnknownID is returned for a decision on an id the log does not hold.
var ErrUnknownID = errors.New("no such request")

// ErrDecided is returned for a decision on a request already decided.
var ErrDecided = errors.New("the request is already decided")
