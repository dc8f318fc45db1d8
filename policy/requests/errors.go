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

// ErrNoGrant is wrapped by UseGrant for an id that has no once-grant to
// use: unknown, not approved, approved without a grant, or with a timed one.
var ErrNoGrant = errors.New("no once-grant")

// ErrGrantUsed is wrapped by UseGrant when the once-grant was used already:
// another call consumed it (only one of two calls at once does).
var ErrGrantUsed = errors.New("the once-grant is used")

// ErrGrantExpired is wrapped by UseGrant when the once-grant's until has
// passed.
var ErrGrantExpired = errors.New("the once-grant has expired")

// ErrInvalidGrant is wrapped by Decide for a grant it refuses to write: on
// a denial or an applied approval, until not after now or further than its
// kind allows (MaxOnce, MaxFor), a config that is not an absolute path, or
// an exact grant that does not match the request's call.
var ErrInvalidGrant = errors.New("invalid grant")

// ErrInvalidCall is wrapped by Submit for a request whose Call it refuses:
// out of bounds (MaxArgumentsBytes, MaxCommandTokens), arguments not in
// CanonicalArguments form, or a field missing.
var ErrInvalidCall = errors.New("invalid call")

// ErrBadKey is wrapped when grants.key exists but cannot be used: loose
// permissions, the wrong size, or not a regular file. The message says
// which, and the chmod that fixes a loose mode.
var ErrBadKey = errors.New("unusable grants key")

// ErrTooLarge is wrapped when a request or decision would not fit one log
// line (MaxLineBytes): it would be written, then skipped by every reader.
var ErrTooLarge = errors.New("the line would be too long")
