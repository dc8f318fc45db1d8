// Package messages holds the typed messages wraptool's actors exchange. They
// are plain values with no behaviour, immutable once sent: a receiver may
// keep what it is given, and a sender must not change it afterwards.
//
// The hot-reload path reads left to right:
//
//	watcher ─FileChanged─► debouncer ─ReloadRequest─► loader ─ConfigLoaded─► policy holder ─ToolsetChanged─► registry
//	signals ─ReloadRequest─────────────────────────────┘
//
// and capability requests go from the built-in tool to the request-log
// writer as AppendRequest, answered on the reply channel the message
// carries.
package messages

import (
	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/requests"
)

// FileChanged reports an event on a file the server watches: the config or
// a token file it names. Events on other files never become messages.
type FileChanged struct {
	Path string
	Op   string
}

// ReloadRequest asks the loader to reload the config.
type ReloadRequest struct {
	// Forced is true for SIGHUP: reload and log even when nothing changed.
	// A watch-triggered reload of unchanged files is skipped silently.
	Forced bool
	// Cause names the trigger for the log ("file", "SIGHUP").
	Cause string
}

// ConfigLoaded carries a fully built, valid configuration from the loader
// to the policy holder.
type ConfigLoaded struct {
	Config *config.Config
	Policy *policy.Policy
	// MCPToken is the bearer token now required, or "" for none.
	MCPToken string
	// Hash identifies the config bytes and token files it was built from.
	Hash string
	// Cause is the ReloadRequest's.
	Cause string
}

// ToolsetChanged tells the registry which policy to expose. The registry
// diffs it against what clients see now.
type ToolsetChanged struct {
	Policy *policy.Policy
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
