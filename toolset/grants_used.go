package toolset

import (
	"strings"
	"sync"
	"time"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/requests"
)

// maxUsedGrants bounds the once-grants remembered as used: the denials that
// name one follow its use closely, and older ones are forgotten first.
const maxUsedGrants = 100

// UsedGrants remembers the once-grants this server's calls used, so that
// the next denial of the same call says the grant was used (an assistant
// that ran a call once and is refused the second time learns why, not only
// that its capability is missing). Safe for concurrent use; one for the
// server's life, shared by every snapshot.
type UsedGrants struct {
	mu   sync.Mutex
	list []UsedGrant // oldest first
}

// UsedGrant is one once-grant used.
type UsedGrant struct {
	// ID is the grant's request id; At is when the call used it.
	ID string
	At time.Time
	// Policy is the config with that grant alone merged, as it stood when
	// used: a later call it allows is "the same call".
	Policy *policy.Policy
}

// NewUsedGrants remembers nothing yet.
func NewUsedGrants() *UsedGrants { return &UsedGrants{} }

// add remembers g; a nil u remembers nothing.
func (u *UsedGrants) add(g UsedGrant) {
	if u == nil || g.Policy == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.list = append(u.list, g)
	if len(u.list) > maxUsedGrants {
		u.list = append(u.list[:0:0], u.list[len(u.list)-maxUsedGrants:]...)
	}
}

// find is the latest used once-grant that would have allowed call; ok is
// false when none would.
func (u *UsedGrants) find(call policy.Call) (g UsedGrant, ok bool) {
	if u == nil {
		return g, false
	}
	u.mu.Lock()
	list := u.list
	u.mu.Unlock()
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].Policy.Evaluate(call).Allowed() {
			return list[i], true
		}
	}
	return g, false
}

// withUsedNote adds to a denial's text, on its own line after the Policy:
// line, that a once-grant which allowed this call was used and when; text
// is unchanged when it has no Policy: line. The id is escaped as a token
// and the time is the server's, so the note adds exactly one line.
func withUsedNote(text string, g UsedGrant) string {
	i := strings.Index(text, "\n\nPolicy: ")
	if i < 0 {
		return text
	}
	j := strings.IndexByte(text[i+2:], '\n')
	if j < 0 {
		return text
	}
	at := i + 2 + j + 1
	note := "Note: the once-grant " + requests.Token(g.ID) + " was used at " + g.At.UTC().Format(time.RFC3339) +
		"; another use needs a new request.\n"
	return text[:at] + note + text[at:]
}
