package connect

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// readEvents reads a text/event-stream and calls fn with the data of each
// "message" event (an event without a name is one), in order, until fn
// returns false. Events of
// other names (the SDK's "prime") and comments are skipped. An event whose
// data holds more than max bytes is not kept: fn gets nil data and
// tooLarge set, and reading goes on with the next event, so a stream costs
// at most max bytes however large the server's events are. Lines end with
// "\n" or "\r\n". It returns nil at the end of the stream, else the read
// error.
func readEvents(r io.Reader, max int, fn func(data []byte, tooLarge bool) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		data     []byte
		hasData  bool
		tooLarge bool
		name     string
	)
	dispatch := func() (more bool) {
		more = true
		if (hasData || tooLarge) && (name == "" || name == "message") {
			if tooLarge {
				more = fn(nil, true)
			} else {
				more = fn(data, false)
			}
		}
		data, hasData, tooLarge, name = nil, false, false, ""
		return more
	}
	for {
		// A line holds a field name besides the data: room for it.
		line, long, err := readLine(br, max+64)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil // an event not ended by a blank line is dropped, as the SSE spec says
			}
			return err
		}
		if long {
			// Most likely the payload itself, on one line: the event
			// is dropped whichever field it was.
			tooLarge, data = true, nil
			continue
		}
		if len(line) == 0 {
			if !dispatch() {
				return nil
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if tooLarge {
				continue
			}
			size := len(data) + len(value)
			if hasData {
				size++
			}
			if size > max {
				tooLarge, data = true, nil
				continue
			}
			if hasData {
				data = append(data, '\n')
			}
			data, hasData = append(data, value...), true
		case "event":
			name = string(value)
		}
		// "id" and "retry" are not used: wraptool's server keeps no event
		// store, so there is nothing to resume.
	}
}

// readLine reads one line without its end. A line longer than max is
// discarded as it is read: line is then nil and long is true.
func readLine(br *bufio.Reader, max int) (line []byte, long bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(line)+len(chunk) > max+2 {
				line, long = nil, true
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case err == nil:
			line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			return line, long, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && (len(line) > 0 || long):
			// A last line without an end: no event is complete after it.
			return nil, false, io.EOF
		default:
			return nil, false, err
		}
	}
}
