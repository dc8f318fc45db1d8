// Package webui is the operator's admin UI: a review page for the
// assistant's capability requests and the JSON API scripts use for the same
// decisions, served on the admin listener. It is the operator's side of the
// gate, so it must be reachable by the operator alone: by a browser that
// holds the admin token, or a local script that sends it.
//
// # Who gets in
//
// Browsers send cookies to every port of a host, so the pages live on a
// host name of their own, http://w-<label>.localhost:<port>/, where the
// label is derived from the admin token (HostLabel): only holders of the
// token know the name, and rotating the token moves it. The browser routes
// answer only on that host; the session cookie counts only there. The API
// also takes the admin token as a bearer token on the loopback names
// (localhost, 127.0.0.1, [::1] with the listener's port). Any other Host is
// a page reached through DNS rebinding and gets 403, before anything else
// is looked at. A cookie-authenticated POST must also come from the UI's
// own origin and carry its session's CSRF token.
//
// Everything the assistant wrote reaches the page in the escaped forms the
// terminal shows (requests.Token and requests.Text), and then HTML-escaped
// by html/template: a request can neither run script in the page nor pass
// for another request.
//
// # Temporary grants
//
// Approve once, for 1 hour or for 8 hours (the API's once and for) write a
// decision carrying a grant and never touch the config. They
// follow `wraptool requests approve --once|--for` rule for rule: refused
// where --apply would be (an unknown tool, a deny rule covering the
// subcommand, a merge that does not validate) and, for an exact-call
// request, when the config's policy hash is no longer the one recorded at
// the denial or the call is refused for a reason no exact grant lifts.
//
// # Concurrency
//
// A UI is safe for concurrent use by the HTTP server's goroutines and
// starts none of its own. It reads the current State from its Source once
// per HTTP request and uses that snapshot throughout, so a reload in the
// middle of a request never mixes two configs. Sessions live in memory,
// in a map guarded by one mutex held only for map operations (never across
// I/O). Decisions (approve, apply, grant, deny) made through one UI run one at a
// time, waiting for their turn only while the HTTP request's context lasts;
// other writers of the request log and the config (the CLI, the server) are
// kept apart by those files' own locks.
package webui
