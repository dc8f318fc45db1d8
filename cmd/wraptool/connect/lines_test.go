package connect

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

type gotLine struct {
	text    string
	size    int
	tooLong bool
}

func TestLineReader(t *testing.T) {
	t.Parallel()
	const max = 10
	huge := strings.Repeat("x", 200_000) // many times the reader's own buffer
	tests := []struct {
		name  string
		input string
		want  []gotLine
	}{
		{"lines end with a newline", "a\nbc\n", []gotLine{{"a", 1, false}, {"bc", 2, false}}},
		{"a carriage return before the newline is part of the end", "a\r\nb\r\n", []gotLine{{"a", 1, false}, {"b", 1, false}}},
		{"a last line without a newline is a line", "a\nlast", []gotLine{{"a", 1, false}, {"last", 4, false}}},
		{"empty input has no lines", "", nil},
		{"an empty line is an empty line", "\n\n", []gotLine{{"", 0, false}, {"", 0, false}}},
		{"a line of exactly the limit passes whole", "0123456789\n", []gotLine{{"0123456789", 10, false}}},
		{"a line of exactly the limit with CRLF passes whole", "0123456789\r\n", []gotLine{{"0123456789", 10, false}}},
		{"a line one byte over the limit is too long", "0123456789A\nok\n", []gotLine{{"0123456789", 11, true}, {"ok", 2, false}}},
		{"a huge line is cut and the next line is intact", huge + "\nnext\n", []gotLine{{huge[:max], len(huge), true}, {"next", 4, false}}},
		{"a huge last line without a newline is cut", "a\n" + huge, []gotLine{{"a", 1, false}, {huge[:max], len(huge), true}}},
		{"a huge line ending in CRLF counts without its end", huge + "\r\n", []gotLine{{huge[:max], len(huge), true}}},
		{"a lone carriage return inside a line stays", "a\rb\n", []gotLine{{"a\rb", 3, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lr := newLineReader(strings.NewReader(tt.input), max)
			var got []gotLine
			for {
				line, size, tooLong, err := lr.next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(got) > len(tt.want)+1 {
					t.Fatalf("too many lines: %v", short(got))
				}
				got = append(got, gotLine{string(line), size, tooLong})
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d lines %v, want %d %v", len(got), short(got), len(tt.want), short(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("line %d = %v, want %v", i, short(got[i:i+1]), short(tt.want[i:i+1]))
				}
			}
		})
	}
}

// short keeps failure messages readable when a line is huge.
func short(lines []gotLine) []gotLine {
	out := make([]gotLine, len(lines))
	for i, l := range lines {
		if len(l.text) > 40 {
			l.text = l.text[:40] + "…"
		}
		out[i] = l
	}
	return out
}

// A line reader never holds more than the limit of a line, however long
// the line: the memory bound the bridge promises.
func TestLineReaderMemoryIsBounded(t *testing.T) {
	t.Parallel()
	const max = 1 << 10
	r := io.MultiReader(io.LimitReader(zeros{}, 64<<20), strings.NewReader("\n{}\n"))
	lr := newLineReader(r, max)
	line, size, tooLong, err := lr.next()
	if err != nil || !tooLong || size != 64<<20 || len(line) != max || cap(line) > 2*max+2 {
		t.Fatalf("next() = %d bytes (cap %d), size %d, tooLong %v, %v; want %d bytes, size %d, tooLong", len(line), cap(line), size, tooLong, err, max, 64<<20)
	}
	if line, _, _, err := lr.next(); err != nil || string(line) != "{}" {
		t.Fatalf("the line after = %q, %v; want {}", line, err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

func TestParseMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		line   string
		kind   kind
		method string
		key    string
		code   int
	}{
		{"a request has a method and an id", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, kindRequest, "tools/list", "n:1", 0},
		{"a request may have a string id", `{"jsonrpc":"2.0","id":"a","method":"ping"}`, kindRequest, "ping", "s:a", 0},
		{"a notification has no id", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, kindNotification, "notifications/initialized", "", 0},
		{"a response has an id and a result", `{"jsonrpc":"2.0","id":7,"result":{"action":"accept"}}`, kindResponse, "", "n:7", 0},
		{"a response may carry an error", `{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"no"}}`, kindResponse, "", "n:7", 0},
		{"surrounding space is allowed", ` {"jsonrpc":"2.0","method":"x"} `, kindNotification, "x", "", 0},
		{"text that is not JSON is a parse error", `hello`, kindInvalid, "", "", codeParse},
		{"truncated JSON is a parse error", `{"jsonrpc":"2.0","id":1,"meth`, kindInvalid, "", "", codeParse},
		{"an array (a batch) is an invalid request", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, kindInvalid, "", "", codeInvalidRequest},
		{"a string is an invalid request", `"ping"`, kindInvalid, "", "", codeInvalidRequest},
		{"a number is an invalid request", `42`, kindInvalid, "", "", codeInvalidRequest},
		{"a missing jsonrpc member is an invalid request that keeps its id", `{"id":3,"method":"ping"}`, kindInvalid, "", "n:3", codeInvalidRequest},
		{"jsonrpc 1.0 is an invalid request", `{"jsonrpc":"1.0","id":3,"method":"ping"}`, kindInvalid, "", "n:3", codeInvalidRequest},
		{"an object id is an invalid request with a null id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, kindInvalid, "", "", codeInvalidRequest},
		{"a null id is an invalid request", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, kindInvalid, "", "", codeInvalidRequest},
		{"a method that is not a string is an invalid request", `{"jsonrpc":"2.0","id":1,"method":5}`, kindInvalid, "", "", codeInvalidRequest},
		{"an empty method is an invalid request", `{"jsonrpc":"2.0","id":1,"method":""}`, kindInvalid, "", "n:1", codeInvalidRequest},
		{"an id without result or error is an invalid request", `{"jsonrpc":"2.0","id":1}`, kindInvalid, "", "n:1", codeInvalidRequest},
		{"an empty object is an invalid request", `{}`, kindInvalid, "", "", codeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := parseMessage([]byte(tt.line))
			if m.kind != tt.kind || m.method != tt.method || m.key != tt.key || m.code != tt.code {
				t.Errorf("parseMessage(%s) = kind %d, method %q, key %q, code %d (%s); want kind %d, method %q, key %q, code %d",
					tt.line, m.kind, m.method, m.key, m.code, m.why, tt.kind, tt.method, tt.key, tt.code)
			}
			if string(m.raw) != tt.line {
				t.Errorf("raw = %s, want the line as it came", m.raw)
			}
		})
	}
}

func TestPeekMessage(t *testing.T) {
	t.Parallel()
	pad := strings.Repeat("x", 100)
	tests := []struct {
		name   string
		prefix string
		kind   kind
		key    string
	}{
		{"a request with its id first is a request", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"arguments":{"a":"` + pad, kindRequest, "n:9"},
		{"an id after the method still counts", `{"jsonrpc":"2.0","method":"tools/call","id":"q","params":{"a":"` + pad, kindRequest, "s:q"},
		{"an id past the cut is not known: a notification", `{"jsonrpc":"2.0","method":"tools/call","params":{"a":"` + pad, kindNotification, ""},
		{"a response to the server is a response", `{"jsonrpc":"2.0","id":4,"result":{"content":"` + pad, kindResponse, "n:4"},
		{"something that is not an object is invalid", pad, kindInvalid, ""},
		{"an array is invalid", `[{"jsonrpc":"2.0","id":1`, kindInvalid, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := peekMessage([]byte(tt.prefix), 5<<20)
			if m.kind != tt.kind || m.key != tt.key || !m.tooLong || m.size != 5<<20 {
				t.Errorf("peekMessage = kind %d, key %q, tooLong %v, size %d; want kind %d, key %q, tooLong, size %d", m.kind, m.key, m.tooLong, m.size, tt.kind, tt.key, 5<<20)
			}
		})
	}
}

func TestIDKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id   string
		key  string
		want bool
	}{
		{`1`, "n:1", true},
		{`1.0`, "n:1", true},
		{`1e0`, "n:1", true},
		{`-5`, "n:-5", true},
		{`1.5`, "n:1.5", true},
		{`"1"`, "s:1", true},
		{`"a\u00e9"`, "s:aé", true},
		{` 7 `, "n:7", true},
		{`true`, "", false},
		{`null`, "", false},
		{`{}`, "", false},
		{`[]`, "", false},
		{``, "", false},
		{`"unterminated`, "", false},
	}
	for _, tt := range tests {
		key, ok := idKey(json.RawMessage(tt.id))
		if key != tt.key || ok != tt.want {
			t.Errorf("idKey(%s) = %q, %v; want %q, %v", tt.id, key, ok, tt.key, tt.want)
		}
	}
}

func TestErrorLine(t *testing.T) {
	t.Parallel()
	got := string(errorLine(nil, codeParse, "Parse error"))
	if want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`; got != want {
		t.Errorf("errorLine(nil) = %s, want %s", got, want)
	}
	got = string(errorLine(json.RawMessage(`"x"`), codeLost, "a\nb"))
	if want := `{"jsonrpc":"2.0","id":"x","error":{"code":-32000,"message":"a\nb"}}`; got != want || bytes.Count([]byte(got), []byte("\n")) != 0 {
		t.Errorf("errorLine = %s, want %s on one line", got, want)
	}
}
