// Package jsonl holds the mechanics of the append-only JSON Lines files
// wraptool keeps (the capability request log, the audit log): opening one
// privately, taking its exclusive lock without blocking past a context,
// ending a torn last line, encoding a record as one line, and reading lines
// with bounded memory. What a line means, and how lines fold, is the
// caller's.
//
// A writer appends one whole record at a time while it holds the file's
// exclusive flock, after ending a torn last line (a crash mid-write) with a
// newline, so records from concurrent writers in any process never
// interleave and a torn fragment never swallows the next record:
//
//	f, err := jsonl.OpenPrivate(path)
//	…
//	defer f.Close()
//	if err := jsonl.Lock(ctx, f, nil); err != nil { … }
//	defer jsonl.Unlock(f)
//	if _, err := jsonl.EndTornLine(f); err != nil { … }
//	line, err := jsonl.Encode(record)
//	…
//	_, err = f.Write(line)
//
// flock locks belong to an open file description: two Files opened on one
// path exclude each other even within one process, and closing a File
// releases its lock. Lock waits at most LockTimeout and never past its
// context, so a shutdown never waits on another process.
//
// Because Lock polls (the kernel's blocking wait cannot be cancelled), it
// is not fair: a writer that appends back to back, taking the lock again
// the moment it lets go, can keep a polling one out until the burst ends.
// wraptool's writers append one line per event, and a writer kept out for
// LockTimeout gives up with an error instead of hanging.
//
// The functions here are safe for concurrent use; a LineReader is not.
package jsonl
