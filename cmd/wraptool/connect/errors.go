package connect

import "errors"

var (
	// ErrNoServer is returned when no server answered at the address within
	// Options.StartTimeout: connect exits 1 saying so.
	ErrNoServer = errors.New("no wraptool server answers")
	// ErrForeignOwner marks a listener that belongs to another user: nothing
	// is sent to it, and the bridge stops at once (another local user may
	// have taken the port while wraptool was down, to collect its token).
	ErrForeignOwner = errors.New("the listener belongs to another user")
	// ErrNoProof marks a listener that did not prove it holds the token
	// (Prove): nothing is sent to it, and the bridge stops at once (a
	// program of the same user, such as a confined child, may have taken
	// the port to collect the token).
	ErrNoProof = errors.New("the listener did not prove it holds the token")
	// ErrOwnerUnknown marks a listener whose owner could not be found (its
	// socket is gone from /proc/net/tcp, or the platform has no way to
	// ask): nothing is sent to it, and the bridge tries again as if no server
	// answered.
	ErrOwnerUnknown = errors.New("cannot tell who owns the listener")
	// ErrUnauthorized is returned when the server refuses the token, and
	// reading the token file again gives the same one.
	ErrUnauthorized = errors.New("the server refused the token")
	// ErrRefused is returned when a restarted server refuses the client's
	// own initialize: replaying it again would be refused again.
	ErrRefused = errors.New("the restarted server refused the client's initialize")
)
