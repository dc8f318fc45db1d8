package requests

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wraptool/wraptool/policy/jsonl"
)

// keySize is the length of the grants key, in bytes.
const keySize = 32

// KeyPath is the grants key beside the request log at logPath.
func KeyPath(logPath string) string {
	return filepath.Join(filepath.Dir(logPath), "grants.key")
}

// LoadKey reads the grants key beside the request log at logPath. It
// returns nil and no error when the file does not exist (no grant was ever
// written: every grant line is then ignored). A file that exists but is
// not a regular file, is readable or writable by group or others, or does
// not hold exactly 32 bytes is an error wrapping ErrBadKey that says what
// is wrong and, for the mode, the chmod that fixes it.
func LoadKey(logPath string) ([]byte, error) {
	path := KeyPath(logPath)
	f, err := jsonl.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if errors.Is(err, jsonl.ErrNotRegular) {
		return nil, fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	if err != nil {
		return nil, fmt.Errorf("grants key: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("grants key: %w", err)
	}
	if perm := info.Mode().Perm(); perm&0o066 != 0 {
		return nil, fmt.Errorf("%w: %s is %s (mode %04o); run: chmod 600 %s", ErrBadKey, path, looseness(perm), perm, path)
	}
	key, err := io.ReadAll(io.LimitReader(f, keySize+1))
	if err != nil {
		return nil, fmt.Errorf("grants key: %w", err)
	}
	if len(key) != keySize {
		more := ""
		if len(key) > keySize {
			more = "more than "
		}
		return nil, fmt.Errorf("%w: %s holds %s%d bytes, want %d", ErrBadKey, path, more, min(len(key), keySize), keySize)
	}
	return key, nil
}

// looseness says who may read or write a file of mode perm besides its
// owner: "readable by group and others", "readable and writable by others".
func looseness(perm fs.FileMode) string {
	var parts []string
	for _, who := range []struct {
		name  string
		shift uint
	}{{"group", 3}, {"others", 0}} {
		var can []string
		if perm>>who.shift&4 != 0 {
			can = append(can, "readable")
		}
		if perm>>who.shift&2 != 0 {
			can = append(can, "writable")
		}
		if len(can) > 0 {
			parts = append(parts, strings.Join(can, " and ")+" by "+who.name)
		}
	}
	return strings.Join(parts, ", ")
}

// ensureKey returns the grants key beside logPath, first creating it when
// missing: 32 bytes from crypto/rand in a private temporary file, fsynced,
// then hard-linked to grants.key. link(2) fails when the name exists, as
// O_EXCL does, and the key appears whole, so two writers racing agree: the
// loser reads the winner's key. Where hard links are not supported the key
// is created with O_EXCL instead. The caller holds the log's lock.
func ensureKey(logPath string) ([]byte, error) {
	if key, err := LoadKey(logPath); err != nil || key != nil {
		return key, err
	}
	key := make([]byte, keySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("grants key: %w", err)
	}
	path := KeyPath(logPath)
	err := linkNew(path, key)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		err = createNew(path, key)
	}
	if errors.Is(err, fs.ErrExist) {
		// Another writer won the race: use its key.
		key, err = LoadKey(logPath)
		if err == nil && key == nil {
			err = fmt.Errorf("%w: %s vanished as it was created", ErrBadKey, path)
		}
		return key, err
	}
	if err != nil {
		return nil, fmt.Errorf("create grants key: %w", err)
	}
	if dir, err := os.Open(filepath.Dir(path)); err == nil {
		dir.Sync()
		dir.Close()
	}
	return key, nil
}

// linkNew writes key to a temporary file beside path and links it to path.
func linkNew(path string, key []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".grants.key.*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := writeSynced(tmp, key); err != nil {
		return err
	}
	return os.Link(tmp.Name(), path)
}

// createNew creates path with O_EXCL and writes key to it.
func createNew(path string, key []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := writeSynced(f, key); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// writeSynced writes data to f, flushes it to the disk and closes f,
// returning the first error: a key that is not on the disk when its first
// grant is signed would leave that grant unverifiable after a crash.
func writeSynced(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// The signature of a decision line that carries a grant.
//
// "sig" is the lowercase hex HMAC-SHA256, keyed with grants.key, of
//
//	str("wraptool grant v1")
//	str(id) str(status) time(decided_at) str(reason) bool(applied) str(decided_by) str(client)
//	bool(grant.once) time(grant.until) opttime(grant.used_at) bool(grant.exact)
//	str(grant.policy) str(grant.config)
//	SHA-256 of the request line the decision decides:
//	  str("wraptool request v1")
//	  str(id) opttime(created_at) str(tool) list(subcommand) list(flags) str(rationale)
//	  str(enables) str(status) call
//
// where
//
//	str(s)     = len(s) as 8 bytes big-endian, then the bytes of s
//	list(l)    = len(l) as 8 bytes big-endian, then str of each element
//	bool(b)    = one byte, 1 for true, 0 for false
//	time(t)    = str(t in UTC formatted with time.RFC3339Nano)
//	opttime(t) = one byte 0 when absent, else 1 then time(t)
//	call       = one byte 0 when absent, else 1 then str(tool) str(arguments
//	             compacted as json.Compact does) list(command) str(cwd) str(dir) str(policy)
//
// Every field is taken as JSON decoding parsed it from the line (a missing
// string, list or bool is "", empty or false), never from the raw bytes,
// so neither whitespace, field order nor time zone offsets matter, while
// any change to a value does. The request enters as its digest so that a
// Log need not keep every request's rationale to check a later grant; it
// binds the decision to that request's id, capability and call as a copy of
// the whole line would. A line carrying "sig" but no grant is a plain
// decision: its sig is neither checked nor needed.

// sigWriter writes the encoding above to a hash.
type sigWriter struct{ h hash.Hash }

func (w sigWriter) str(s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	w.h.Write(n[:])
	io.WriteString(w.h, s)
}

func (w sigWriter) list(l []string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(l)))
	w.h.Write(n[:])
	for _, s := range l {
		w.str(s)
	}
}

func (w sigWriter) bool(b bool) {
	if b {
		w.h.Write([]byte{1})
	} else {
		w.h.Write([]byte{0})
	}
}

func (w sigWriter) time(t time.Time) { w.str(t.UTC().Format(time.RFC3339Nano)) }

func (w sigWriter) optTime(t *time.Time) {
	w.bool(t != nil)
	if t != nil {
		w.time(*t)
	}
}

// requestDigest is the SHA-256 of a request line's encoding (see above).
func requestDigest(l *line) [sha256.Size]byte {
	h := sha256.New()
	w := sigWriter{h}
	w.str("wraptool request v1")
	w.str(l.ID)
	w.optTime(l.CreatedAt)
	w.str(l.Tool)
	w.list(l.Subcommand)
	w.list(l.Flags)
	w.str(l.Rationale)
	enables := ""
	if l.Enables != nil {
		enables = *l.Enables
	}
	w.str(enables)
	w.str(l.Status)
	w.bool(l.Call != nil)
	if c := l.Call; c != nil {
		var args bytes.Buffer
		if json.Compact(&args, c.Arguments) != nil {
			args.Reset()
			args.Write(c.Arguments)
		}
		w.str(c.Tool)
		w.str(args.String())
		w.list(c.Command)
		w.str(c.Cwd)
		w.str(c.Dir)
		w.str(c.Policy)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// sign returns the sig of decision d, which carries a grant, deciding the
// request whose digest is req.
func sign(key []byte, d *decisionLine, req [sha256.Size]byte) string {
	m := hmac.New(sha256.New, key)
	w := sigWriter{m}
	w.str("wraptool grant v1")
	w.str(d.ID)
	w.str(d.Status)
	w.time(d.DecidedAt)
	w.str(d.Reason)
	w.bool(d.Applied)
	w.str(d.DecidedBy)
	w.str(d.Client)
	g := d.Grant
	w.bool(g.Once)
	w.time(g.Until)
	w.optTime(g.UsedAt)
	w.bool(g.Exact)
	w.str(g.Policy)
	w.str(g.Config)
	m.Write(req[:])
	return hex.EncodeToString(m.Sum(nil))
}

// verify reports whether sig is d's signature under key.
func verify(key []byte, d *decisionLine, req [sha256.Size]byte, sig string) bool {
	got, err := hex.DecodeString(sig)
	if err != nil {
		return false
	}
	want, _ := hex.DecodeString(sign(key, d, req))
	return hmac.Equal(got, want)
}

// signed returns d with its sig, computed over d as a reader will parse it
// back from the line: encoding then decoding first, so that whatever JSON
// changes on the way (invalid UTF-8 in a reason, a time's zone) is signed
// as read.
func signed(key []byte, d decisionLine, req [sha256.Size]byte) (decisionLine, error) {
	d.Sig = ""
	data, err := jsonl.Encode(d)
	if err != nil {
		return d, err
	}
	var l line
	if err := json.Unmarshal(data, &l); err != nil {
		return d, err
	}
	parsed := l.decision()
	d.Sig = sign(key, &parsed, req)
	return d, nil
}
