package jsonl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// line is a JSON line of exactly n bytes (n ≥ 12), numbered i.
func line(t *testing.T, i, n int) []byte {
	t.Helper()
	head := fmt.Sprintf(`{"i":%d,"p":"`, i)
	pad := n - len(head) - len("\"}\n")
	if pad < 0 {
		t.Fatalf("line %d cannot be %d bytes", i, n)
	}
	return []byte(head + string(bytes.Repeat([]byte("x"), pad)) + "\"}\n")
}

// files reads path and its rotated files, oldest first, each a list of its
// lines (without "\n"); it fails the test on a line that is not a complete
// JSON object or a file that does not end with "\n".
func files(t *testing.T, path string, keep int) [][]string {
	t.Helper()
	var out [][]string
	for i := keep + 1; i >= 0; i-- {
		name := path
		if i > 0 {
			name = path + "." + strconv.Itoa(i)
		}
		data, err := os.ReadFile(name)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 0 && data[len(data)-1] != '\n' {
			t.Fatalf("%s does not end with a newline: a line was split", name)
		}
		var lines []string
		for _, l := range bytes.SplitAfter(data, []byte("\n")) {
			if len(l) == 0 {
				continue
			}
			var v map[string]any
			if err := json.Unmarshal(l, &v); err != nil {
				t.Fatalf("%s holds a broken line %q: %v", name, l, err)
			}
			lines = append(lines, string(bytes.TrimSuffix(l, []byte("\n"))))
		}
		out = append(out, lines)
	}
	return out
}

func TestRotatingRotatesBySizeAndKeepsCount(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		limit      int64
		keep       int
		lines      []int // sizes
		wantCounts []int // lines per file, oldest first
	}{
		{"no limit never rotates", 0, 3, []int{40, 40, 40}, []int{3}},
		{"lines that fit share a file", 100, 3, []int{40, 40}, []int{2}},
		{"a line that would pass the limit starts a new file", 100, 3, []int{40, 40, 40}, []int{2, 1}},
		{"exactly the limit still fits", 80, 3, []int{40, 40, 40}, []int{2, 1}},
		{"a line longer than the limit gets a file of its own", 50, 3, []int{20, 120, 20}, []int{1, 1, 1}},
		{"the oldest file beyond keep is dropped", 40, 2, []int{40, 40, 40, 40, 40}, []int{1, 1, 1}},
		{"keep 0 keeps one rotated file", 40, 0, []int{40, 40, 40}, []int{1, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			r := &Rotating{Path: path, Limit: tc.limit, Keep: tc.keep}
			defer r.Close()
			for i, n := range tc.lines {
				// One line per Append, and the same lines in one batch
				// below: both must rotate the same way.
				if _, err := r.Append(context.Background(), [][]byte{line(t, i, n)}); err != nil {
					t.Fatal(err)
				}
			}
			got := files(t, path, max(tc.keep, 1))
			if len(got) != len(tc.wantCounts) {
				t.Fatalf("got %d files %v, want %d", len(got), got, len(tc.wantCounts))
			}
			last := len(tc.lines) - 1
			for i, f := range got {
				if len(f) != tc.wantCounts[i] {
					t.Errorf("file %d: got %d lines, want %d", i, len(f), tc.wantCounts[i])
				}
			}
			// The newest line is the last of the current file.
			cur := got[len(got)-1]
			if want := fmt.Sprintf(`{"i":%d,`, last); !bytes.HasPrefix([]byte(cur[len(cur)-1]), []byte(want)) {
				t.Errorf("current file ends with %q, want line %d", cur[len(cur)-1], last)
			}

			batch := filepath.Join(t.TempDir(), "audit.jsonl")
			rb := &Rotating{Path: batch, Limit: tc.limit, Keep: tc.keep}
			defer rb.Close()
			var all [][]byte
			for i, n := range tc.lines {
				all = append(all, line(t, i, n))
			}
			if n, err := rb.Append(context.Background(), all); err != nil || n != len(all) {
				t.Fatalf("batch: wrote %d, %v", n, err)
			}
			gotBatch := files(t, batch, max(tc.keep, 1))
			if fmt.Sprint(gotBatch) != fmt.Sprint(got) {
				t.Errorf("a batch rotated differently:\n got %v\nwant %v", gotBatch, got)
			}
		})
	}
}

func TestRotatingKeepsModeAndEndsTornLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, []byte(`{"torn":`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Rotating{Path: path, Limit: 1 << 20, Keep: 2}
	defer r.Close()
	if _, err := r.Append(context.Background(), [][]byte{line(t, 1, 30)}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if want := "{\"torn\":\n" + string(line(t, 1, 30)); string(data) != want {
		t.Errorf("got %q, want %q", data, want)
	}
	info, _ := os.Stat(path)
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
}

// Two writers (two Rotating values, as two processes would hold) append
// concurrently through many rotations while a reader reads the current
// file: every line is in exactly one file, whole, and every line the
// reader saw ending in "\n" is a complete JSON object.
func TestRotatingConcurrentWritersLoseNothing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	const writers, each, keep = 4, 200, 1000 // keep enough to count every line
	var wg sync.WaitGroup
	stop := make(chan struct{})
	readerDone := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				readerDone <- nil
				return
			default:
			}
			data, err := os.ReadFile(path)
			if err != nil && !os.IsNotExist(err) {
				readerDone <- err
				return
			}
			complete := data[:bytes.LastIndexByte(data, '\n')+1]
			for _, l := range bytes.SplitAfter(complete, []byte("\n")) {
				if len(l) == 0 {
					continue
				}
				if !json.Valid(l) {
					readerDone <- fmt.Errorf("reader saw a broken line %q", l)
					return
				}
			}
		}
	}()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &Rotating{Path: path, Limit: 2000, Keep: keep}
			defer r.Close()
			for i := range each {
				if _, err := r.Append(context.Background(), [][]byte{line(t, w*each+i, 60+i%50)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if err := <-readerDone; err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, f := range files(t, path, keep) {
		for _, l := range f {
			var v struct{ I int }
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				t.Fatal(err)
			}
			if seen[v.I] {
				t.Fatalf("line %d written twice", v.I)
			}
			seen[v.I] = true
		}
	}
	if len(seen) != writers*each {
		t.Fatalf("got %d lines, want %d", len(seen), writers*each)
	}
}
