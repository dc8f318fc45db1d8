// Package connect relays newline-delimited JSON-RPC between a stdio MCP
// client and wraptool's Streamable HTTP endpoint: the engine of
// `wraptool connect`.
//
// # Directions and order
//
// Client to server: one goroutine reads stdin, one line at a time with a
// bounded buffer, and hands each message to the manager (Run's own
// goroutine), which posts them one by one in the order read. A notification
// or a response is posted and its 202 awaited before the next message goes:
// the server publishes such a message before it answers 202, so the server
// sees them in order, and anything after a notification or a response
// reaches the server after it. A request is posted and the next message
// waits until the request has been written and either its answer has
// begun or a settle time (10 ms) has passed: the server publishes a request
// right after reading its body but sends nothing back until its first
// event, and waiting for the whole answer would serialise every call (a
// call waiting for the client's elicitation answer would never end). So a
// message right behind a slow request reaches the server after it unless
// the server takes longer than the settle time to read a request it has
// been sent; the server handles requests concurrently anyway, and a
// notifications/cancelled that overtook its request would only let the
// request run (its answer is not passed on: the client cancelled it).
//
// Server to client: every answer stream (one per request) and the session's
// GET stream hand each message to one writer, which writes whole lines to
// stdout under a lock, in the order it is handed them; each stream hands
// its messages over in the order they arrived. Nothing but JSON-RPC objects,
// one per line, is ever written to stdout.
//
// # Sessions
//
// The manager alone owns the session: it opens one when the client
// initializes, and when the server restarts under it (a stream breaks and
// cannot be reopened, or the server answers 404 for the session) it answers
// every request in flight with a JSON-RPC error, opens a new session with
// the client's own initialize and notifications/initialized, and tells the
// client notifications/tools/list_changed.
//
// # Holding the client's messages while the session is reopened
//
// A request may have run once it was written to the server whole; before
// that the server cannot have read it. So a request whose POST could not
// be written (no connection, a kept-alive connection the server had
// closed) or was refused before it ran (404 for the session, 401 for a
// token the server no longer takes) is not answered with an error: its
// goroutine hands it back to the manager, which sends it again. From the
// moment a restart is noticed until the new session is initialized, the
// client's messages are held in stdin order (at most 64, and
// Options.MaxMessageBytes in all; past that a request gets an error at
// once) and sent on the new session after its list_changed. A
// cancellation of a held request removes it (it never goes, and gets no
// answer); an answer to a question of the old session's is dropped. If the
// server does not come back within Options.StartTimeout (5 s), every held
// request gets a JSON-RPC error naming the address, and later ones get it
// at once until the server is back. Requests written to a server that went
// away are answered with an error: they may have run, and are never sent
// twice. Goroutines that serve one session
// hold that session's context, which the manager cancels when it gives the
// session up, and report trouble to the manager through a buffered channel
// tagged with the session's generation, so a late report about an old
// session is ignored.
//
// # Who is listening
//
// Every connection the bridge opens goes through Options.Dial, which for
// connect checks that the listening end belongs to the same user (see
// Owner) before any byte, the token above all, is sent.
package connect
