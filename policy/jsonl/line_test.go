package jsonl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
)

func TestEncode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		v    any
		want string
	}{
		{"HTML characters stay raw", map[string]string{"rationale": "<script>&</script>"}, `{"rationale":"<script>&</script>"}` + "\n"},
		{"a newline inside a value is escaped, so the record stays one line", []string{"a\nb"}, `["a\nb"]` + "\n"},
		{"a struct is one object and one newline", struct {
			ID string `json:"id"`
			N  int    `json:"n"`
		}{"req_1", 2}, `{"id":"req_1","n":2}` + "\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Encode(tc.v)
			if err != nil || string(got) != tc.want {
				t.Errorf("Encode = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	t.Run("a value JSON cannot hold is an error", func(t *testing.T) {
		t.Parallel()
		if got, err := Encode(make(chan int)); err == nil {
			t.Errorf("Encode(chan) = %q, want an error", got)
		}
	})
}

// readAll reads every line of in with the given max and buffer size hint.
func readAll(t *testing.T, in string, size int64, max int) []Line {
	t.Helper()
	lr := NewLineReader(strings.NewReader(in), size, max)
	var out []Line
	for {
		l, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		out = append(out, l)
	}
}

func TestLineReader(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100)
	cases := []struct {
		name string
		in   string
		size int64
		max  int
		want []Line
	}{
		{"an empty input has no lines", "", math.MaxInt64, 10, nil},
		{"a line over the max is skipped and flagged, the lines around it intact",
			"a\n" + long + "\nb\n", math.MaxInt64, 10,
			[]Line{{Text: []byte("a"), Size: 2, Ended: true}, {Size: 101, TooLong: true, Ended: true}, {Text: []byte("b"), Size: 2, Ended: true}}},
		{"a line of exactly the max is kept", "0123456789\n", math.MaxInt64, 10,
			[]Line{{Text: []byte("0123456789"), Size: 11, Ended: true}}},
		{"a line one over the max is flagged", "0123456789a\n", math.MaxInt64, 10,
			[]Line{{Size: 12, TooLong: true, Ended: true}}},
		{"a last line without its newline is a line, not ended", "a\nbc", math.MaxInt64, 10,
			[]Line{{Text: []byte("a"), Size: 2, Ended: true}, {Text: []byte("bc"), Size: 2}}},
		{"a last line one over the max without its newline is flagged", "0123456789a", math.MaxInt64, 10,
			[]Line{{Size: 11, TooLong: true}}},
		{"a line longer than the buffer is read whole", long + "\n", 16, 200,
			[]Line{{Text: []byte(long), Size: 101, Ended: true}}},
		{"an overlong line longer than the buffer is skipped", long + "\nz\n", 16, 20,
			[]Line{{Size: 101, TooLong: true, Ended: true}, {Text: []byte("z"), Size: 2, Ended: true}}},
		{"a carriage return and blank lines are the caller's", "a\r\n\n", math.MaxInt64, 10,
			[]Line{{Text: []byte("a\r"), Size: 3, Ended: true}, {Size: 1, Ended: true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := readAll(t, tc.in, tc.size, tc.max)
			if !equalLines(got, tc.want) {
				t.Errorf("lines\n got %s\nwant %s", showLines(got), showLines(tc.want))
			}
		})
	}
}

// equalLines compares lines, an empty Text equal to a nil one.
func equalLines(a, b []Line) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i].Text, b[i].Text) || a[i].Size != b[i].Size || a[i].TooLong != b[i].TooLong || a[i].Ended != b[i].Ended {
			return false
		}
	}
	return true
}

func showLines(ls []Line) string {
	var b strings.Builder
	for _, l := range ls {
		fmt.Fprintf(&b, "\n\t{Text:%q Size:%d TooLong:%v Ended:%v}", l.Text, l.Size, l.TooLong, l.Ended)
	}
	return b.String()
}
