package requests

import (
	"errors"

	"github.com/wraptool/wraptool/policy/jsonl"
)

// ErrPendingLimit is returned when MaxPending requests are already pending.
var ErrPendingLimit = errors.New("the pending limit is reached")

// ErrUnknownID is returned for a decision on an id the log does not hold.
var ErrUnknownID = errors.New("no such request")

// ErrDecided is returned for a decision on a request already decided.
var ErrDecided = errors.New("the request is already decided")

// ErrLocked is wrapped when another process held the log's lock for all of
// jsonl.LockTimeout: the request or decision was not written, and may be
// tried again. It is jsonl.ErrLockTimeout, so callers need not import jsonl.
var ErrLocked = jsonl.ErrLockTimeout
