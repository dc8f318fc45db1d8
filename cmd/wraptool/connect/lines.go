package connect

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
)

// JSON-RPC error codes the bridge answers with.
const (
	codeParse          = -32700 // the line is not JSON
	codeInvalidRequest = -32600 // JSON, but not one JSON-RPC message, or too large to pass
	// codeLost is what the TypeScript SDK calls ConnectionClosed: the
	// request was sent but its answer cannot come (the server went away),
	// or it could not be sent at all.
	codeLost = -32000
)

// kind is what a line from the client holds.
type kind int

const (
	kindInvalid kind = iota // not JSON, or not one JSON-RPC message
	kindRequest
	kindNotification
	kindResponse
)

// message is one line from the client.
type message struct {
	// raw is the line without its end, posted as it came.
	raw  []byte
	kind kind
	// id is a request's or response's id as written (nil for a
	// notification); key is its canonical form (see idKey).
	id  json.RawMessage
	key string
	// method is a request's or notification's method.
	method string
	// size is the line's length in bytes; tooLong marks a line over the
	// limit, of which raw holds only the first limit bytes.
	size    int
	tooLong bool
	// code and why say what is wrong with an invalid line.
	code int
	why  string
	// seq is the line's place in stdin (1 for the first), which orders
	// the messages held while the server restarts.
	seq int
}

// lineReader reads lines of at most max bytes; a longer line is cut to its
// first max bytes and the rest discarded as it is read, so no line costs
// more than max bytes of memory however long it is.
type lineReader struct {
	r   *bufio.Reader
	max int
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its "\n" or "\r\n", its full length
// (without the line end), and whether it was longer than max (then line
// holds its first max bytes). A last line without a newline is a line. At
// the end it returns io.EOF.
func (lr *lineReader) next() (line []byte, size int, tooLong bool, err error) {
	var (
		buf    []byte
		n      int  // bytes read for this line, its end included
		last   byte // the last byte read before the current chunk
		ended  bool // the line ended with "\n"
		before byte // the byte before that "\n"
	)
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if len(chunk) > 0 {
			if room := lr.max + 2 - len(buf); room > 0 {
				buf = append(buf, chunk[:min(room, len(chunk))]...)
			}
			n += len(chunk)
		}
		if err == nil {
			ended = true
			if len(chunk) >= 2 {
				before = chunk[len(chunk)-2]
			} else {
				before = last
			}
			break
		}
		if len(chunk) > 0 {
			last = chunk[len(chunk)-1]
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if n == 0 {
			return nil, 0, false, err
		}
		break // a last line without "\n"; the error comes again next time
	}
	size = n
	if ended {
		size--
		if before == '\r' && size > 0 {
			size--
		}
	}
	buf = buf[:min(len(buf), size)]
	if size > lr.max {
		return buf[:lr.max], size, true, nil
	}
	return buf, size, false, nil
}

// parseMessage classifies one whole line. A line that is not JSON is a
// parse error; JSON that is not one JSON-RPC 2.0 message object (an array,
// a string, a message without "jsonrpc":"2.0", an id that is neither a
// string nor a number) is an invalid request, answered with the id when
// it has a usable one, as JSON-RPC 2.0 says.
func parseMessage(line []byte) message {
	m := message{raw: line, size: len(line)}
	if !json.Valid(line) {
		m.code, m.why = codeParse, "Parse error: the line is not JSON"
		return m
	}
	if t := bytes.TrimLeft(line, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		m.code, m.why = codeInvalidRequest, "Invalid Request: a line must hold one JSON-RPC message object (batches are not part of MCP)"
		return m
	}
	var env struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &env); err != nil {
		m.code, m.why = codeInvalidRequest, "Invalid Request: "+err.Error()
		return m
	}
	if key, ok := idKey(env.ID); ok {
		m.id, m.key = env.ID, key
	}
	invalid := func(why string) message {
		m.kind, m.code, m.why = kindInvalid, codeInvalidRequest, "Invalid Request: "+why
		return m
	}
	switch {
	case env.JSONRPC != "2.0":
		return invalid(`"jsonrpc" must be "2.0"`)
	case env.ID != nil && m.key == "":
		return invalid(`"id" must be a string or a number`)
	case env.Method != nil && *env.Method == "":
		return invalid(`"method" must not be empty`)
	case env.Method != nil && env.ID != nil:
		m.kind, m.method = kindRequest, *env.Method
	case env.Method != nil:
		m.kind, m.method = kindNotification, *env.Method
	case env.ID != nil && (env.Result != nil || env.Error != nil):
		m.kind = kindResponse
	default:
		return invalid(`a message needs a "method", or an "id" with a "result" or an "error"`)
	}
	return m
}

// peekMessage classifies a line cut at the size limit from what its first
// bytes hold: the top-level "id" and "method" that come before the cut
// (clients write them first). Whether it is a request is all that matters:
// only a request can be answered.
func peekMessage(prefix []byte, size int) message {
	m := message{raw: prefix, size: size, tooLong: true, kind: kindNotification}
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		m.kind = kindInvalid
		return m
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			break // the value runs past the cut
		}
		switch name {
		case "id":
			if key, ok := idKey(v); ok {
				m.id, m.key, m.kind = v, key, kindRequest
			}
		case "method":
			json.Unmarshal(v, &m.method)
		}
	}
	if m.method == "" && m.id != nil {
		m.kind = kindResponse
	}
	return m
}

// idKey is the canonical form of a JSON-RPC id, so that an answer matches
// its request however the number was spelt (1 and 1.0 are one id to a
// server that decodes ids as numbers). ok is false for anything but a string
// or a number.
func idKey(raw json.RawMessage) (key string, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return "s:" + s, true
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			return "n:" + strconv.FormatInt(n, 10), true
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return "", false
		}
		if f == float64(int64(f)) {
			return "n:" + strconv.FormatInt(int64(f), 10), true
		}
		return "n:" + strconv.FormatFloat(f, 'g', -1, 64), true
	}
	return "", false
}
