//go:build !linux && !darwin

package runner

import (
	"errors"
	"runtime"
)

// NotDumpable is not available on this platform yet; the caller logs it.
func NotDumpable() error {
	return errors.New("cannot make the process non-dumpable on " + runtime.GOOS)
}

// ScrubEnviron is not available on this platform yet; the caller logs it.
func ScrubEnviron() error {
	return errors.New("cannot blank the environment block on " + runtime.GOOS)
}
