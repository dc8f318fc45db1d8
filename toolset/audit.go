package toolset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy/jsonl"
)

// CallAudit is the audit log's line for one tool call. A redacted flag's
// value never reaches it: Argv is the argv as wraptool
// shows it (policy.Decision.Shown), and Reason the denial's Policy: line,
// which hides such values too.
type CallAudit struct {
	// Event is "call"; the audit writer sets it.
	Event string    `json:"event"`
	Time  time.Time `json:"time"`
	// Session is the MCP session id; Client the client's name/version
	// from its initialize. Both "" when unknown.
	Session string `json:"session"`
	Client  string `json:"client"`
	// Tool is the MCP tool name called.
	Tool string `json:"tool"`
	// Decision is "allowed" or "denied".
	Decision string `json:"decision"`
	// Reason is the Policy: line of a denial's text; Kind its kind
	// (policy.Kind's name). Both absent for an allowed call.
	Reason string `json:"reason,omitempty"`
	Kind   string `json:"kind,omitempty"`
	// Argv is what ran (binary first), or for a denial the command as the
	// denial quotes it (tool key first); nil for an upstream tool, whose
	// arguments are not argv.
	Argv []string `json:"argv"`
	// Cwd is the directory the child ran in, resolved (symlinks
	// followed): the client's checked cwd, else the tool's working_dir,
	// else the server's own directory. A denial records the directory the
	// call would have run in, or the resolved default when the client's
	// cwd is what was refused; "" when none can be named (the server's
	// directory was removed) and for an upstream call.
	Cwd string `json:"cwd"`
	// ExitCode is the child's exit status (-1 for a timeout or a failure
	// to start), nil for a denial or an upstream call.
	ExitCode *int `json:"exit_code"`
	// DurationMS is how long the run took (0 for a denial).
	DurationMS int64 `json:"duration_ms"`
	// StdoutBytes and StderrBytes are the sizes of the output returned
	// (after the caps).
	StdoutBytes int `json:"stdout_bytes"`
	StderrBytes int `json:"stderr_bytes"`
	// TimedOut marks a run killed at its timeout; Error is wraptool's note
	// on a run that failed outright ("" otherwise).
	TimedOut bool   `json:"timed_out,omitempty"`
	Error    string `json:"error,omitempty"`
	// Policy is the hash of what decided the call: the config, overrides
	// and env files, and the grants in force (State.AuditPolicy).
	Policy string `json:"policy"`
	// Grant is the id of the grant that allowed the call; absent when the
	// config alone did. When the call needed several grants together
	// (each adds a flag the call gives), Grant is the one approved last
	// and Grants lists them all, oldest first; GrantUntil is then the
	// first of their untils, when the call stops being allowed.
	// GrantOnce, GrantUntil and GrantExact say which kind of grant it was.
	Grant      string     `json:"grant,omitempty"`
	Grants     []string   `json:"grants,omitempty"`
	GrantOnce  bool       `json:"grant_once,omitempty"`
	GrantUntil *time.Time `json:"grant_until,omitempty"`
	GrantExact bool       `json:"grant_exact,omitempty"`
	// Upstream names the mcp_servers entry of an upstream tool's call.
	Upstream string `json:"upstream,omitempty"`
}

// Auditor records one call's audit line. It returns once the line is
// queued for the writer: when the queue is full it waits for room (the
// writer counts such waits) for as long as ctx lasts, and gives up only
// when ctx ends or the writer has stopped. Nil means no audit log.
type Auditor func(ctx context.Context, c CallAudit)

// AuditPolicy hashes what decides a call for the audit log: the policy
// hash of the config, overrides and env files, and the ids of the grants
// in force, so a line says which policy, grants included, allowed or
// refused it. grantIDs may be in any order.
func AuditPolicy(policyHash string, grantIDs []string) string {
	if len(grantIDs) == 0 {
		return policyHash
	}
	ids := slices.Clone(grantIDs)
	slices.Sort(ids)
	h := sha256.New()
	h.Write([]byte(policyHash))
	for _, id := range ids {
		h.Write([]byte{0})
		h.Write([]byte(id))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// GrantIDs lists the ids of the grants in force, in no particular order.
func (g *Grants) GrantIDs() []string {
	if g == nil {
		return nil
	}
	ids := make([]string, 0, len(g.Capability)+len(g.Exact))
	for _, c := range g.Capability {
		ids = append(ids, c.ID)
	}
	for _, e := range g.Exact {
		ids = append(ids, e.ID)
	}
	return ids
}

// sessionIDKey is the context key WithSessionID sets.
type sessionIDKey struct{}

// WithSessionID returns ctx carrying id, which names the session of the
// calls made in it, for a transport whose sessions the SDK gives no id:
// go-sdk's legacy SSE sessions answer ID() with "" although the stream
// announced ?sessionid=… to the client. id is called when a call is
// audited, so it may learn the id after ctx was made.
func WithSessionID(ctx context.Context, id func() string) context.Context {
	return context.WithValue(ctx, sessionIDKey{}, id)
}

// SessionOf names the session and client of a call for the audit log:
// the MCP session id (the SDK's, else WithSessionID's), and name/version
// from the client's initialize, each bounded by BoundValue: the client
// chooses its name, and it is copied into every line of its session.
func SessionOf(ctx context.Context, req *mcp.CallToolRequest) (session, client string) {
	if req == nil || req.Session == nil {
		return "", ""
	}
	session = req.Session.ID()
	if id, ok := ctx.Value(sessionIDKey{}).(func() string); ok && session == "" {
		session = id()
	}
	if ip := req.Session.InitializeParams(); ip != nil && ip.ClientInfo != nil {
		client = ip.ClientInfo.Name + "/" + ip.ClientInfo.Version
	}
	return BoundValue(session), BoundValue(client)
}

// auditContext is the context a call's audit line is queued with: the
// call's values, not its cancellation (a client that gives up must not
// cost the line), ended when stop is (the end of the shutdown grace), so
// a full queue never holds a shutdown forever.
func auditContext(ctx, stop context.Context) (context.Context, context.CancelFunc) {
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	unhook := context.AfterFunc(stop, cancel)
	return actx, func() { unhook(); cancel() }
}

// The audit log's bounds, so that no call can flush the trail by volume:
// a value longer than MaxAuditValue bytes is cut to its first
// AuditValueKept bytes and a note of its length and hash, and a call's line
// is at most MaxAuditLine bytes, newline included.
const (
	MaxAuditValue  = 1 << 10
	AuditValueKept = 256
	MaxAuditLine   = 64 << 10
)

// Inner limits of Bounded. A value of at most MaxAuditValue bytes can
// still take six times that in JSON (a control character is a \u00XX
// escape), so when the line's fields other than argv take more than
// maxAuditFields, every value whose JSON form exceeds maxAuditEscaped is
// cut too; a cut value's JSON form never does (AuditValueKept bytes, six
// each at worst, plus the note), so bounding a bounded line changes
// nothing. argvNoteRoom is kept free for the argv note.
const (
	maxAuditFields  = 32 << 10
	maxAuditEscaped = 2 << 10
	argvNoteRoom    = 256
)

// BoundValue is s as the audit log records it: s itself when it is at most
// MaxAuditValue bytes, else its first AuditValueKept bytes and
// "…(N bytes, sha256 <hex>)", N and the hash those of s's bytes exactly as
// wraptool holds them, so an operator can match a value they have. The
// kept part is cut on a character boundary and ends up valid UTF-8 (each
// run of invalid bytes in it becomes one U+FFFD); a value that came in
// JSON is valid already (its decoder made each invalid byte U+FFFD).
func BoundValue(s string) string {
	if len(s) <= MaxAuditValue {
		return s
	}
	return cutValue(s)
}

// cutValue is s cut to its kept prefix and the note of its length and
// hash, whatever its length.
func cutValue(s string) string {
	sum := sha256.Sum256([]byte(s))
	return keptPrefix(s, AuditValueKept) + "…(" + strconv.Itoa(len(s)) + " bytes, sha256 " + hex.EncodeToString(sum[:]) + ")"
}

// keptPrefix is at most the first n bytes of s, not splitting a valid
// multi-byte character, with invalid bytes made U+FFFD.
func keptPrefix(s string, n int) string {
	if len(s) > n {
		cut := n
		start := cut
		for start > 0 && cut-start < utf8.UTFMax-1 && !utf8.RuneStart(s[start]) {
			start--
		}
		if r, size := utf8.DecodeRuneInString(s[start:]); (r != utf8.RuneError || size > 1) && start+size > cut {
			cut = start // a character straddles the cut: leave it out
		}
		s = s[:cut]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// Bounded returns the line as the audit log records it: every string
// value and every argv element bounded by BoundValue, and the whole line
// at most MaxAuditLine bytes. To stay within it, argv keeps its first
// elements and ends with one note for the rest,
// "…(M more arguments, N bytes, sha256 <hex>)", where the hash is over the
// omitted elements as the kernel lays out argv (each followed by a NUL
// byte) and N is those bytes' count. The receiver is not modified, and
// bounding a bounded line changes nothing.
func (c CallAudit) Bounded() CallAudit {
	fields := c.stringFields()
	for _, f := range fields {
		*f = BoundValue(*f)
	}
	if len(c.Grants) > 0 {
		c.Grants = boundAllValues(c.Grants)
	}
	if c.fitsSurely() {
		if c.Argv != nil {
			c.Argv = boundAllValues(c.Argv)
		}
		return c
	}
	rest := c
	rest.Argv = nil
	n := jsonLen(rest)
	if n > maxAuditFields {
		for _, f := range fields {
			if jsonLen(*f) > maxAuditEscaped {
				*f = cutValue(*f)
			}
		}
		for i, g := range c.Grants {
			if jsonLen(g) > maxAuditEscaped {
				c.Grants[i] = cutValue(g) // c.Grants is Bounded's own copy
			}
		}
		rest = c
		rest.Argv = nil
		n = jsonLen(rest)
	}
	if c.Argv == nil {
		return c // an upstream call's line: no argv
	}
	// rest encodes argv as null (4 bytes); the array adds its brackets
	// and a comma per element.
	budget := MaxAuditLine - n - argvNoteRoom
	argv := make([]string, 0, len(c.Argv))
	used := 0
	for i, a := range c.Argv {
		b := BoundValue(a)
		if cost := jsonLen(b) + 1; used+cost <= budget {
			used += cost
			argv = append(argv, b)
			continue
		}
		argv = append(argv, omitted(c.Argv[i:]))
		break
	}
	c.Argv = argv
	return c
}

// fitsSurely reports whether the line is small enough that no bound can
// apply: every value at most MaxAuditValue bytes and, at six bytes of JSON
// a byte, the whole line within MaxAuditLine. It spares the common call
// the encoding Bounded needs otherwise.
func (c *CallAudit) fitsSurely() bool {
	total := 0
	for _, f := range c.stringFields() {
		total += len(*f)
	}
	for _, list := range [][]string{c.Argv, c.Grants} {
		for _, s := range list {
			if len(s) > MaxAuditValue {
				return false
			}
			total += len(s) + 3
		}
	}
	const fixed = 1 << 10 // keys, numbers, the time
	return 6*total+fixed <= MaxAuditLine
}

// stringFields are the line's string values, each at most MaxAuditValue
// bytes once bounded.
func (c *CallAudit) stringFields() []*string {
	return []*string{&c.Event, &c.Session, &c.Client, &c.Tool, &c.Decision, &c.Reason, &c.Kind,
		&c.Cwd, &c.Error, &c.Policy, &c.Grant, &c.Upstream}
}

// boundAllValues is BoundValue of each element, in a new slice.
func boundAllValues(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = BoundValue(s)
	}
	return out
}

// omitted is argv's closing note for the elements left out: how many,
// their bytes and their hash, each element followed by a NUL byte.
func omitted(rest []string) string {
	h := sha256.New()
	n := 0
	for _, a := range rest {
		h.Write([]byte(a))
		h.Write([]byte{0})
		n += len(a) + 1
	}
	return "…(" + strconv.Itoa(len(rest)) + " more arguments, " + strconv.Itoa(n) + " bytes, sha256 " + hex.EncodeToString(h.Sum(nil)) + ")"
}

// jsonLen is how many bytes v takes as the audit writer encodes it,
// without the newline.
func jsonLen(v any) int {
	b, err := jsonl.Encode(v)
	if err != nil {
		return MaxAuditLine // cannot happen for these types; count it as full
	}
	return len(b) - 1
}
