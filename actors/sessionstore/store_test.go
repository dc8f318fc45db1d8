package sessionstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func record(id string) Record {
	return Record{ID: id, Protocol: "2025-06-18", Params: json.RawMessage(`{"protocolVersion":"2025-06-18","clientInfo":{"name":"c","version":"1"}}`),
		Role: "mcp.auth_token_file", Digest: TokenDigest(sha256.Sum256([]byte("tok"))), Created: t0, LastUsed: t0}
}

func encodeRaw(t *testing.T, version int, raws ...string) []byte {
	t.Helper()
	return []byte(`{"version":` + string(rune('0'+version)) + `,"sessions":[` + strings.Join(raws, ",") + `]}`)
}

func rawOf(t *testing.T, r Record) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestParse reads good, hostile and damaged files: invalid records are
// skipped one by one, a file not of this format gives nothing.
func TestParse(t *testing.T) {
	t.Parallel()
	huge := record("HUGE")
	huge.Params = json.RawMessage(`{"x":"` + strings.Repeat("a", MaxParamsBytes) + `"}`)
	badID := record("a/../b")
	longID := record(strings.Repeat("A", MaxIDBytes+1))
	noProto := record("NOPROTO")
	noProto.Protocol = ""
	arrayParams := record("ARRAY")
	arrayParams.Params = json.RawMessage(`[1]`)
	noTimes := record("NOTIMES")
	noTimes.LastUsed = time.Time{}
	tests := []struct {
		name        string
		data        []byte
		max         int
		wantIDs     []string
		wantSkipped int
		wantErr     bool
	}{
		{"records written by Encode read back", Encode([]Record{record("A"), record("B")}), 10, []string{"A", "B"}, 0, false},
		{"huge params are skipped", encodeRaw(t, 1, rawOf(t, record("A")), rawOf(t, huge)), 10, []string{"A"}, 1, false},
		{"ids with a slash or too long are skipped", encodeRaw(t, 1, rawOf(t, badID), rawOf(t, longID), rawOf(t, record("OK"))), 10, []string{"OK"}, 2, false},
		{"a record without a protocol version, params that are no object, or no times is skipped", encodeRaw(t, 1, rawOf(t, noProto), rawOf(t, arrayParams), rawOf(t, noTimes)), 10, nil, 3, false},
		{"a repeated id is kept once", encodeRaw(t, 1, rawOf(t, record("A")), rawOf(t, record("A"))), 10, []string{"A"}, 1, false},
		{"a record of the wrong shape is skipped", encodeRaw(t, 1, `{"id":5}`, `"str"`, `{"token_digest":"zz"}`, rawOf(t, record("A"))), 10, []string{"A"}, 3, false},
		{"records past max are skipped", Encode([]Record{record("A"), record("B"), record("C")}), 2, []string{"A", "B"}, 1, false},
		{"another version is refused", encodeRaw(t, 2, rawOf(t, record("A"))), 10, nil, 0, true},
		{"truncated JSON is refused", Encode([]Record{record("A")})[:40], 10, nil, 0, true},
		{"data after the document is refused", append(Encode([]Record{record("A")}), []byte(`{}`)...), 10, nil, 0, true},
		{"an empty file is refused", nil, 10, nil, 0, true},
		{"an oversized file is refused", bytes.Repeat([]byte(" "), MaxFileBytes+1), 10, nil, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, skipped, err := Parse(tt.data, tt.max)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Parse error = %v, want error %v", err, tt.wantErr)
			}
			var ids []string
			for _, r := range got {
				ids = append(ids, r.ID)
			}
			if strings.Join(ids, ",") != strings.Join(tt.wantIDs, ",") || skipped != tt.wantSkipped {
				t.Errorf("Parse = %q, %d skipped; want %q, %d skipped", ids, skipped, tt.wantIDs, tt.wantSkipped)
			}
		})
	}
}

// TestRecordFreshAndMatches shows the idle timeouts of both kinds and the
// token check.
func TestRecordFreshAndMatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		idle     time.Duration
		streamed bool
		want     bool
	}{
		{"a streamless record idle four minutes is fresh", 4 * time.Minute, false, true},
		{"a streamless record idle five minutes is stale", 5 * time.Minute, false, false},
		{"a streamed record idle twenty-nine minutes is fresh", 29 * time.Minute, true, true},
		{"a streamed record idle thirty minutes is stale", 30 * time.Minute, true, false},
		{"a record used an hour in the future is stale", -time.Hour, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := record("A")
			r.Streamed = tt.streamed
			if got := r.Fresh(t0.Add(tt.idle), 30*time.Minute, 5*time.Minute); got != tt.want {
				t.Errorf("Fresh = %v, want %v", got, tt.want)
			}
		})
	}
	r := record("A")
	if !r.Matches(sha256.Sum256([]byte("tok"))) || r.Matches(sha256.Sum256([]byte("other"))) {
		t.Error("Matches: want true for the session's token only")
	}
	if d := TokenDigest(sha256.Sum256([]byte("tok"))); d == Digest(sha256.Sum256([]byte("tok"))) {
		t.Error("TokenDigest is the token's plain SHA-256; want a domain-separated one")
	}
}

// TestReadRefusesForeignFiles feeds Read files wraptool did not write.
func TestReadRefusesForeignFiles(t *testing.T) {
	t.Parallel()
	good := Encode([]Record{record("A")})
	tests := []struct {
		name    string
		make    func(t *testing.T, path string)
		wantErr error // nil: read fine
		wantNil bool
	}{
		{"no file reads as none", func(*testing.T, string) {}, nil, true},
		{"a 0600 file reads", func(t *testing.T, p string) { write(t, p, good, 0o600) }, nil, false},
		{"a world-readable file is refused", func(t *testing.T, p string) { write(t, p, good, 0o644) }, ErrForeign, false},
		{"a group-writable file is refused", func(t *testing.T, p string) { write(t, p, good, 0o620) }, ErrForeign, false},
		{"a symlink is refused", func(t *testing.T, p string) {
			target := p + ".real"
			write(t, target, good, 0o600)
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}, ErrForeign, false},
		{"a folder is refused", func(t *testing.T, p string) { os.Mkdir(p, 0o700) }, ErrForeign, false},
		{"a fifo is refused without blocking", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Skip(err)
			}
		}, ErrForeign, false},
		{"an oversized file is refused", func(t *testing.T, p string) { write(t, p, bytes.Repeat([]byte(" "), MaxFileBytes+1), 0o600) }, errAny, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "sessions.json")
			tt.make(t, path)
			data, err := Read(path)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("Read = %v, want no error", err)
			case tt.wantErr == errAny && err == nil, tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("Read = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && (data == nil) != tt.wantNil {
				t.Errorf("Read gave %d bytes, want none %v", len(data), tt.wantNil)
			}
		})
	}
}

var errAny = errors.New("any error")

func write(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

// TestWrite replaces the file atomically with mode 0600, leaves no
// temporary file, and refuses to replace a symlink.
func TestWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "sessions.json")
	write(t, path, []byte("old"), 0o644)
	if err := Write(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("mode after Write = %v (%v), want 0600", info.Mode().Perm(), err)
	}
	if data, _ := os.ReadFile(path); string(data) != "new" {
		t.Errorf("content = %q, want new", data)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("folder holds %d entries, want only the file", len(entries))
	}
	link := filepath.Join(dir, "link.json")
	target := filepath.Join(dir, "target")
	write(t, target, []byte("keep"), 0o600)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, []byte("x")); !errors.Is(err, ErrForeign) {
		t.Errorf("Write over a symlink = %v, want ErrForeign", err)
	}
	if data, _ := os.ReadFile(target); string(data) != "keep" {
		t.Errorf("the symlink's target became %q", data)
	}
}

// FuzzParse checks Parse's invariants on any input: no panic, at most max
// records, each valid with a distinct id, and what it gives back encodes
// and parses to the same records.
func FuzzParse(f *testing.F) {
	f.Add(Encode([]Record{record("A"), record("B")}), 4)
	f.Add([]byte(`{"version":1,"sessions":[{"id":"x","params":[]}]}`), 1)
	f.Add([]byte(`{"version":1,"sessions":null}`), 1)
	f.Add([]byte(`[]`), 1)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max < 0 || max > 64 {
			max = 64
		}
		got, _, err := Parse(data, max)
		if err != nil {
			return
		}
		if len(got) > max {
			t.Fatalf("%d records, max %d", len(got), max)
		}
		seen := map[string]bool{}
		for _, r := range got {
			if r.Valid() != nil || seen[r.ID] {
				t.Fatalf("Parse gave an invalid or repeated record %+v", r)
			}
			seen[r.ID] = true
		}
		again, skipped, err := Parse(Encode(got), max)
		if err != nil || skipped != 0 || len(again) != len(got) {
			t.Fatalf("round trip: %d records, %d skipped, %v; want %d", len(again), skipped, err, len(got))
		}
		for i := range got {
			if again[i].ID != got[i].ID || !bytes.Equal(compact(again[i].Params), compact(got[i].Params)) {
				t.Fatalf("round trip changed record %d", i)
			}
		}
	})
}

func compact(b []byte) []byte {
	var out bytes.Buffer
	json.Compact(&out, b)
	return out.Bytes()
}

// TestEncodeStaysWithinTheFileBound fills a file with records of nearly
// the largest params: Encode keeps the first ones that fit under
// MaxFileBytes, and Parse reads all of them back.
func TestEncodeStaysWithinTheFileBound(t *testing.T) {
	t.Parallel()
	var records []Record
	for i := range 1024 {
		r := record("R" + strconv.Itoa(i))
		r.Params = json.RawMessage(`{"pad":"` + strings.Repeat("p", MaxParamsBytes-16) + `"}`)
		records = append(records, r)
	}
	data := Encode(records)
	if len(data) > MaxFileBytes {
		t.Fatalf("Encode wrote %d bytes, over the %d a read accepts", len(data), MaxFileBytes)
	}
	got, skipped, err := Parse(data, 1024)
	if err != nil || skipped != 0 || len(got) == 0 || got[0].ID != records[0].ID {
		t.Fatalf("Parse = %d records, %d skipped, %v; want the first records back whole", len(got), skipped, err)
	}
}
