package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// Encode returns v as JSON and one newline: a record ready to append.
// HTML characters stay as they are: escaping them (as json.Marshal does)
// makes a text full of < and > six times its size, and nothing renders
// these files as HTML.
func Encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// LineReader reads a file line by line with bounded memory: a line longer
// than its max (a stray edit, a pasted blob) is read through and dropped,
// flagged TooLong, so one huge line neither exhausts memory nor hides the
// lines after it. It is not safe for concurrent use.
type LineReader struct {
	r   *bufio.Reader
	max int
}

// Line is one line as a LineReader read it.
type Line struct {
	// Text is the line without its newline: nil when TooLong, and may be
	// nil for an empty line. It is the caller's to keep.
	Text []byte
	// Size is how many bytes the line took in the input, newline
	// included, so a caller can track the offset of the next line.
	Size int64
	// TooLong is true when the line was longer than the max, and dropped.
	TooLong bool
	// Ended is true when a newline ended the line, false when the end of
	// the input did: an appender may still be writing it, or it is torn.
	Ended bool
}

// NewLineReader reads lines of at most max bytes (newline excluded) from
// r, which holds at most size bytes: the buffer is sized by it, so reading
// a short section costs a short buffer. Pass math.MaxInt64 when the size is
// unknown.
func NewLineReader(r io.Reader, size int64, max int) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(r, int(min(size, 64<<10))), max: max}
}

// Next returns the next line, or io.EOF after the last one.
func (lr *LineReader) Next() (Line, error) {
	var l Line
	for {
		chunk, err := lr.r.ReadSlice('\n')
		l.Size += int64(len(chunk))
		text := bytes.TrimSuffix(chunk, []byte("\n"))
		if !l.TooLong {
			if len(l.Text)+len(text) > lr.max {
				l.TooLong, l.Text = true, nil
			} else {
				l.Text = append(l.Text, text...)
			}
		}
		switch {
		case err == nil:
			l.Ended = true
			return l, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && l.Size > 0:
			return l, nil
		default:
			return Line{}, err
		}
	}
}
