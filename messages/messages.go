// Package messages holds the typed messages wraptool's actors exchange, and
// says for each channel who sends, who receives, its buffer, and what happens
// when the receiver is busy. Messages are plain values with no behaviour,
// immutable once sent: a receiver may keep what it is given, and a sender
// must not change it afterwards.
//
// The hot-reload path reads left to right:
//
//	watcher ─FileEvents─► debouncer ─FileChanged─► loader ─ConfigLoaded─► policy holder ─ToolsetChanged─► registry
//	signals ─ReloadNow───────────────────────────────┘                        └─WatchSetChanged─► watcher
//
// and capability requests go from the built-in tool's handlers to the
// request-log writer as AppendRequest, answered on the reply channel the
// message carries.
//
// Every channel, as cmd/wraptool's wiring creates it:
//
//	channel          type                 sender → receiver                  buffer  receiver busy
//	FileEvents       Doorbell             watcher → debouncer                1       rings coalesce
//	FileChanged      Doorbell             debouncer → loader                 1       rings coalesce
//	ReloadNow        Doorbell             signals (SIGHUP) → loader          1       rings coalesce; wins over FileChanged
//	ConfigLoaded     chan ConfigLoaded    loader → policy holder             0       blocks, with ctx: a built config is not dropped
//	WatchSetChanged  Doorbell             policy holder → watcher            1       rings coalesce; the watcher reads the snapshot
//	ToolsetChanged   Doorbell             policy holder → registry           1       rings coalesce; the registry reads the snapshot
//	AppendRequest    chan AppendRequest   request-tool handlers → request log 0      blocks, with the call's ctx
//	AppendResult     chan AppendResult    request log → one handler          1       never blocks: the caller may have gone
//
// A doorbell carries no data: its receiver reads the current state (the
// snapshot the policy holder publishes) when it answers, so a burst of rings
// is one ring, and a busy receiver never blocks its sender. Only data that
// must not be lost travels on a blocking channel, and every blocking send
// also selects on the sender's context.
package messages

import (
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/requests"
)

// Doorbell is a one-slot trigger: make(Doorbell, 1), rung with a
// non-blocking send, so a ring while one is pending is absorbed by it.
type Doorbell chan struct{}

// ConfigLoaded carries a fully built, valid configuration from the loader to
// the policy holder.
type ConfigLoaded struct {
	// Loaded is the load's result: config, policy, tokens, hash.
	Loaded *config.Loaded
	// Cause names the trigger for the log: "file" or "SIGHUP".
	Cause string
}

// AppendRequest asks the request-log writer to record a capability request.
// Reply is buffered (size 1) so the writer never blocks on a caller that has
// given up.
type AppendRequest struct {
	Request requests.Request
	Reply   chan<- AppendResult
}

// AppendResult answers an AppendRequest.
type AppendResult struct {
	Submitted requests.Submitted
	Err       error
}
