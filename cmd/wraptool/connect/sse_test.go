package connect

import (
	"strings"
	"testing"
)

func TestReadEvents(t *testing.T) {
	t.Parallel()
	const max = 32
	tests := []struct {
		name   string
		stream string
		want   []string // "!" marks an event dropped for its size
	}{
		{"events are split at blank lines", "data: {\"a\":1}\n\ndata: {\"b\":2}\n\n", []string{`{"a":1}`, `{"b":2}`}},
		{"data lines join with a newline", "data: {\"a\":\ndata: 1}\n\n", []string{"{\"a\":\n1}"}},
		{"CRLF ends lines too", "data: x\r\n\r\ndata: y\r\n\r\n", []string{"x", "y"}},
		{"a named event other than message is skipped", "event: prime\nid: 1\n\nevent: message\ndata: m\n\n", []string{"m"}},
		{"comments and unknown fields are skipped", ": hi\nretry: 5\nfoo: bar\ndata: z\n\n", []string{"z"}},
		{"an event without data is skipped", "id: 4\n\ndata: z\n\n", []string{"z"}},
		{"data without a space after the colon", "data:z\n\n", []string{"z"}},
		{"an event not ended by a blank line is dropped", "data: a\n\ndata: b\n", []string{"a"}},
		{"an event over the limit is dropped and the next one passes", "data: " + strings.Repeat("x", 100) + "\n\ndata: ok\n\n", []string{"!", "ok"}},
		{"an event over the limit in many lines is dropped", strings.Repeat("data: 0123456789\n", 10) + "\ndata: ok\n\n", []string{"!", "ok"}},
		{"an event of exactly the limit passes", "data: " + strings.Repeat("y", max) + "\n\n", []string{strings.Repeat("y", max)}},
		{"an empty stream has no events", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			err := readEvents(strings.NewReader(tt.stream), max, func(data []byte, tooLarge bool) bool {
				if tooLarge {
					got = append(got, "!")
				} else {
					got = append(got, string(data))
				}
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Errorf("events = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReadEventsStopsWhenAsked(t *testing.T) {
	t.Parallel()
	var got []string
	err := readEvents(strings.NewReader("data: a\n\ndata: b\n\ndata: c\n\n"), 100, func(data []byte, _ bool) bool {
		got = append(got, string(data))
		return string(data) != "b"
	})
	if err != nil || strings.Join(got, ",") != "a,b" {
		t.Errorf("events = %q, %v; want a, b and a stop", got, err)
	}
}
