package jsonl

import "errors"

// ErrLockTimeout is wrapped by Lock's error when another holder kept the
// lock for all of LockTimeout: the caller reports it (naming the file) and
// writes nothing, rather than hang on a process that may never let go.
var ErrLockTimeout = errors.New("the file is locked by another process")

// ErrNotRegular is wrapped by Open and OpenPrivate's error for a path that
// is a FIFO, a device or a directory: appending records to one
// would block, vanish or fail later in a less telling way.
var ErrNotRegular = errors.New("not a regular file")
