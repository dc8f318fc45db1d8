// Package requests is the capability-request log: the assistant's requests
// for more capability and the operator's decisions, as JSON Lines.
//
// The log is append-only. A request is one line with status "pending"; a
// decision is a later line with the same id. Readers fold lines by id, the
// latest status winning, and skip any line that is not a complete JSON object
// (a torn write, a stray edit) with a warning, so one bad line never hides
// the rest.
//
// Every writer (the server, the CLI, the admin UI) holds an exclusive flock
// on the file while it appends one whole line, and repairs a torn last line
// by writing the missing newline first, so lines from concurrent processes
// never interleave and none is lost. A writer waits for the lock only while
// its context lasts and at most jsonl.LockTimeout (5 s), then gives up with
// an error naming the file and writes nothing, so a stuck process can delay
// a request but never hang the server or its shutdown. Lines are JSON
// without HTML escaping (a rationale full of < and > stays its size);
// readers accept both. The file mechanics (private open, lock, torn-line
// repair, encoding, bounded line reading) are package jsonl's, shared with
// the audit log.
//
// A writer that calls again and again (the server) keeps a Log, which folds
// only what was appended since its last call and notices a file replaced or
// truncated; the package-level Submit and Decide fold the whole file once.
// Functions and Logs here are safe for concurrent use within and across
// processes.
package requests
