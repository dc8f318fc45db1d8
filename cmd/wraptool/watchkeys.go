package main

import (
	"io"
	"slices"
	"strings"
	"time"
)

// The terminal side of requests watch: what reaches the prompter from
// stdin, and how its output reaches a terminal in raw mode.

// crlf writes \n as \r\n, for a terminal in raw mode.
type crlf struct{ w io.Writer }

func (c crlf) Write(p []byte) (int, error) {
	if _, err := c.w.Write([]byte(strings.ReplaceAll(string(p), "\n", "\r\n"))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// keyEvent is what one read of stdin returned, and when. The bytes of an
// escape sequence (an arrow key, Alt+key) arrive in one read, so a lone
// Esc is one that ends its read.
type keyEvent struct {
	data []byte
	at   time.Time
}

// readKeys sends what each read of r returns, stamped with now, until r
// ends (then it closes keys) or done is closed. A read in progress cannot
// be stopped: on a terminal the goroutine ends with the process.
func readKeys(r io.Reader, now func() time.Time, keys chan<- keyEvent, done <-chan struct{}) {
	defer close(keys)
	buf := make([]byte, 256)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			select {
			case keys <- keyEvent{data: slices.Clone(buf[:n]), at: now()}:
			case <-done:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// escapeLen is how many bytes after an Esc belong to its sequence: a CSI
// (Esc [ … final byte), an SS3 (Esc O x), or one key pressed with Alt.
func escapeLen(rest []byte) int {
	switch {
	case len(rest) == 0:
		return 0
	case rest[0] == '[':
		for i := 1; i < len(rest); i++ {
			if rest[i] >= 0x40 && rest[i] <= 0x7e {
				return i + 1
			}
		}
		return len(rest)
	case rest[0] == 'O':
		return min(2, len(rest))
	}
	return 1
}
