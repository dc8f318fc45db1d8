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
// An approval may carry a temporary grant: for one call
// within MaxOnce, or for any number of calls until a time within MaxFor;
// for an exact-call request (Request.Call), for exactly that call. A
// decision line carrying a grant is signed: "sig" is an HMAC-SHA256, keyed
// by grants.key beside the log (32 random bytes, mode 0600, created by the
// first writer that needs one), over the decision's fields and the request
// line it decides (see sign for the exact encoding). Readers skip such a
// line as a whole, with a warning, unless its signature verifies and its
// grant keeps to its kind's limit, so a line written into the log by
// anything without the key (a wrapped tool, a restored backup of another
// log) grants nothing. Using a once-grant (Log.UseGrant) appends the same
// decision again with "used_at", under the file lock, so exactly one call
// uses it; a use once folded is remembered (by a fold, and by a Log across
// re-folds of a replaced file), so an older copy of a decision cannot
// revive the grant.
//
// A writer that calls again and again (the server) keeps a Log, which folds
// only what was appended since its last call and notices a file replaced or
// truncated; the package-level Submit and Decide fold the whole file once.
// Functions and Logs here are safe for concurrent use within and across
// processes.
package requests
