// Package sessionstore keeps what a Streamable HTTP session needs to be
// re-created after the server restarts: its id, the client's initialize
// parameters and protocol version, the role and a digest of the token it
// was created with (never the token), and when it was created and last
// used. Parse and Encode are pure; Read and Write touch only the one file
// they are given, and refuse one that is not wraptool's own. Nothing here
// keeps state, so every function is safe for concurrent use.
package sessionstore

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/wraptool/wraptool/policy/atomicfile"
)

// Bounds on what a stored file may hold; anything past them is hostile or
// damaged, never a client's real initialize.
const (
	// MaxFileBytes bounds the file read at start-up.
	MaxFileBytes = 8 << 20
	// MaxParamsBytes bounds one record's initialize parameters; a real
	// client's are well under a kilobyte.
	MaxParamsBytes = 16 << 10
	// MaxIDBytes bounds a session id (the SDK's are 26 characters).
	MaxIDBytes = 128
	// MaxRoleBytes bounds a record's role (a config key and a client name).
	MaxRoleBytes = 256
)

// format is the version of the file's layout; a file of another version is
// ignored, so a downgrade never restores what it cannot read.
const format = 1

// Record is one stored session.
type Record struct {
	ID string `json:"id"`
	// Protocol is the protocol version the client asked for in its
	// initialize.
	Protocol string `json:"protocol_version"`
	// Params are the client's initialize parameters as it sent them.
	Params json.RawMessage `json:"params"`
	// Role is the role of the token the session belongs to.
	Role string `json:"role"`
	// Digest is TokenDigest of the digest of that token.
	Digest   Digest    `json:"token_digest"`
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"last_used"`
	// Streamed says the session opened its GET stream, so the longer idle
	// timeout applies to it.
	Streamed bool `json:"streamed"`
}

// Digest is a domain-separated SHA-256, stored in hex.
type Digest [sha256.Size]byte

// MarshalText writes d in hex.
func (d Digest) MarshalText() ([]byte, error) { return []byte(hex.EncodeToString(d[:])), nil }

// UnmarshalText reads exactly sha256.Size bytes of hex.
func (d *Digest) UnmarshalText(b []byte) error {
	if hex.DecodedLen(len(b)) != sha256.Size {
		return errors.New("token digest: wrong length")
	}
	_, err := hex.Decode(d[:], b)
	return err
}

// digestDomain separates the stored digest from every other SHA-256 of the
// token (the in-memory binding's, the admin UI's host label), so the file
// matches no other hash wraptool computes or shows.
const digestDomain = "wraptool-mcp-session-token\x00"

// TokenDigest is what a record keeps of the token a session belongs to,
// given the SHA-256 of that token (the hub's binding digest).
func TokenDigest(tokenSHA [sha256.Size]byte) Digest {
	return Digest(sha256.Sum256(append([]byte(digestDomain), tokenSHA[:]...)))
}

// Matches reports, in constant time, whether tokenSHA is the SHA-256 of
// the token r was created with.
func (r Record) Matches(tokenSHA [sha256.Size]byte) bool {
	d := TokenDigest(tokenSHA)
	return subtle.ConstantTimeCompare(d[:], r.Digest[:]) == 1
}

// Fresh reports whether r is still within the idle timeout of its kind at
// now: streamed for a session that opened its GET stream, streamless for
// one that never did. A record last used in the future (a clock set back,
// or a forged file) is not fresh either.
func (r Record) Fresh(now time.Time, streamed, streamless time.Duration) bool {
	limit := streamless
	if r.Streamed {
		limit = streamed
	}
	idle := now.Sub(r.LastUsed)
	return idle >= -time.Minute && idle < limit
}

// file is the stored layout.
type file struct {
	Version  int               `json:"version"`
	Sessions []json.RawMessage `json:"sessions"`
}

// Parse reads a stored file's bytes: the valid records, at most max of
// them, and how many it skipped as invalid (a bad id, huge params, no
// protocol version, a repeated id). A file that is not one of this
// format's, or is oversized, is an error and gives no record.
func Parse(data []byte, max int) (records []Record, skipped int, err error) {
	if len(data) > MaxFileBytes {
		return nil, 0, fmt.Errorf("sessions file: larger than %d bytes", MaxFileBytes)
	}
	var f file
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return nil, 0, fmt.Errorf("sessions file: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, 0, errors.New("sessions file: data after the document")
	}
	if f.Version != format {
		return nil, 0, fmt.Errorf("sessions file: version %d, want %d", f.Version, format)
	}
	seen := map[string]bool{}
	for _, raw := range f.Sessions {
		var r Record
		if json.Unmarshal(raw, &r) != nil || r.Valid() != nil || seen[r.ID] || len(records) >= max {
			skipped++
			continue
		}
		seen[r.ID] = true
		records = append(records, r)
	}
	return records, skipped, nil
}

// Valid says why r cannot be restored, or nil: its id must be a short
// token of letters, digits, '-' and '_' (what the SDK's ids are made of),
// its role short text, its protocol version a short date-like string, and
// its params a JSON object within MaxParamsBytes.
func (r Record) Valid() error {
	switch {
	case r.ID == "" || len(r.ID) > MaxIDBytes || !idChars(r.ID):
		return errors.New("bad session id")
	case len(r.Role) > MaxRoleBytes || !utf8.ValidString(r.Role):
		return errors.New("bad role")
	case r.Protocol == "" || len(r.Protocol) > 32 || !idChars(r.Protocol):
		return errors.New("bad protocol version")
	case len(r.Params) == 0 || len(r.Params) > MaxParamsBytes || r.Params[0] != '{' || !json.Valid(r.Params):
		return errors.New("bad initialize params")
	case r.LastUsed.IsZero() || r.Created.IsZero():
		return errors.New("missing times")
	}
	return nil
}

func idChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Encode writes records in the stored layout; invalid ones are left out,
// and so are those that would take the file past MaxFileBytes (the caller
// orders records most valuable first), so what Encode writes Parse reads
// back whole.
func Encode(records []Record) []byte {
	f := file{Version: format, Sessions: []json.RawMessage{}}
	size := len(`{"version":1,"sessions":[]}` + "\n")
	for _, r := range records {
		if r.Valid() != nil {
			continue
		}
		b, err := json.Marshal(r)
		if err != nil || size+len(b)+1 > MaxFileBytes {
			continue
		}
		size += len(b) + 1
		f.Sessions = append(f.Sessions, b)
	}
	b, _ := json.Marshal(f) // raw messages and plain fields: cannot fail
	return append(b, '\n')
}

// ErrForeign is a sessions file Read refuses: not a regular file (a
// symlink, a folder, a fifo), not owned by this user, or open to others.
var ErrForeign = errors.New("not wraptool's own file")

// Read returns the bytes of the sessions file at path, or nil when there
// is none. It refuses (ErrForeign) a file that is a symlink or not
// regular, belongs to another user, or grants any permission to group or
// others (wraptool writes it 0600), and one larger than MaxFileBytes.
func Read(path string) ([]byte, error) {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := own(info); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	opened, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !os.SameFile(info, opened) {
		return nil, fmt.Errorf("%s: replaced while opened: %w", path, ErrForeign)
	}
	if err := own(opened); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxFileBytes)
	}
	return data, nil
}

func own(info fs.FileInfo) error {
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrForeign, info.Mode().Type())
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%w: owned by uid %d", ErrForeign, st.Uid)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%w: mode %v lets others in", ErrForeign, info.Mode().Perm())
	}
	return nil
}

// Write replaces the file at path with data atomically: a temporary file
// in the same folder, mode 0600, fsynced, renamed over path, and the
// folder fsynced, so a reader or a crash sees the old file or the new one.
// It refuses to replace anything but a regular file (a symlink would be
// followed by the next reader's checks, not by this rename, but it is not
// wraptool's) and removes the temporary file on any error.
func Write(path string, data []byte) (err error) {
	if info, err := os.Lstat(path); err == nil && !info.Mode().IsRegular() {
		return fmt.Errorf("%s: %w: %s is not a regular file", path, ErrForeign, info.Mode().Type())
	}
	return atomicfile.Replace(path, data, 0o600)
}
