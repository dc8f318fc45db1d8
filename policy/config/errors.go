package config

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is wrapped by every *Error: the file was read but is not an
// acceptable config. Callers tell it apart from I/O failures with errors.Is.
var ErrInvalid = errors.New("invalid config")

// ErrServerSection marks a config that still uses the retired top-level
// server: section; the error's Detail carries the migration table.
var ErrServerSection = errors.New("server section is not supported")

// ErrNoHome is returned when a path needs the home directory and none is
// known.
var ErrNoHome = errors.New("home directory is not known")

// ErrEmptyToken is returned for a token file that holds only whitespace: an
// empty bearer token would let anyone in.
var ErrEmptyToken = errors.New("token file is empty")

// Error is one problem in a config file, placed by file, line and field path.
type Error struct {
	// File is the config path as the operator gave it.
	File string
	// Line is 1-based; 0 when the problem has no single line.
	Line int
	// Path is the field path ("tools.git.allow[1].flags[0]"); empty for
	// problems with the document as a whole.
	Path string
	// Msg says what is wrong, in lower case.
	Msg string
	// Detail holds further lines printed after the first (the migration
	// table); empty for most errors.
	Detail string
	// Err is an optional cause; ErrInvalid is always matched as well.
	Err error

	col int // orders problems that share a line
}

// Error renders "file:line: path: msg", then Detail on the following lines.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Detail != "" {
		b.WriteString("\n")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Unwrap exposes ErrInvalid and the cause, if any.
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalid, e.Err}
	}
	return []error{ErrInvalid}
}
