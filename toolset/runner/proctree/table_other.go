//go:build !linux && !darwin

package proctree

import "errors"

// errUnsupported says this system has no process table reader.
var errUnsupported = errors.New("process table: not supported on this system")

// Table fails on systems with no reader: wraptool runs on Linux and macOS.
func Table() ([]Proc, error) { return nil, errUnsupported }

func send(int, Signal) error { return errUnsupported }
