//go:build !linux && !darwin

package runner

import (
	"errors"
	"runtime"
)

// BecomeSubreaper is not available on this platform: processes that leave
// a call's process group are not reaped there.
func BecomeSubreaper() error {
	return errors.New("no child subreaper on " + runtime.GOOS)
}

// isSubreaper is false where BecomeSubreaper cannot succeed.
func isSubreaper() bool { return false }
