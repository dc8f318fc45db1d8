package jsonl

import (
	"bytes"
	"testing"
)

// FuzzLineReader checks, for any input, max and buffer size hint, that the
// lines read are a naive split of the input at each newline: a line of at
// most max bytes is kept as it is, a longer one is flagged TooLong and
// dropped, every line but an unended last one is Ended, and the sizes add
// up to the input's length.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nbb\nccc"), uint16(2), uint16(16))
	f.Add([]byte("\n\n\r\n"), uint16(0), uint16(1))
	f.Add(bytes.Repeat([]byte("x"), 200), uint16(199), uint16(16))
	f.Add(append(bytes.Repeat([]byte("y"), 70000), "\nz\n"...), uint16(65535), uint16(65535))
	f.Fuzz(func(t *testing.T, data []byte, max, size uint16) {
		got := readAll(t, string(data), int64(size), int(max))
		var want []Line
		rest := data
		for len(rest) > 0 {
			text, after, ended := bytes.Cut(rest, []byte("\n"))
			l := Line{Text: text, Size: int64(len(text)), Ended: ended}
			if ended {
				l.Size++
			}
			if len(text) > int(max) {
				l.Text, l.TooLong = nil, true
			}
			want = append(want, l)
			rest = after
		}
		if !equalLines(got, want) {
			t.Errorf("max %d, size %d: lines\n got %s\nwant %s", max, size, showLines(got), showLines(want))
		}
		for _, l := range got {
			if l.TooLong && l.Text != nil {
				t.Errorf("a TooLong line kept %d bytes of text", len(l.Text))
			}
		}
	})
}
