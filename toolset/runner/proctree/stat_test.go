package proctree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tail is the part of a real stat line after the state field, with
// starttime (field 22) set to 777.
const tail = " 19541 19538 15536 0 -1 4194304 74 0 0 0 0 0 0 0 20 0 1 0 777 2281472 224 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"

func TestParseStat(t *testing.T) {
	t.Parallel()
	ok := Proc{PID: 4242, PPID: 19541, PGID: 19538, Start: 777}
	tests := []struct {
		name string
		file string // under testdata, when set
		line string
		want Proc
		fail bool
	}{
		{name: "a real line of cat", file: "real-cat.stat", want: Proc{PID: 19524, PPID: 19497, PGID: 19497, Start: 3898433}},
		{name: "init's line with parent 0", file: "real-init.stat", want: Proc{PID: 1, PPID: 0, PGID: 0, Start: 20}},
		{name: "a real name holding ') ('", file: "real-paren-space.stat", want: Proc{PID: 19582, PPID: 19541, PGID: 19538, Start: 3898822}},
		{name: "a real name faking fields across a newline", file: "real-fake-fields-newline.stat", want: Proc{PID: 19583, PPID: 19541, PGID: 19538, Start: 3898822}},
		{name: "a real name that is one ')'", file: "real-lone-paren.stat", want: Proc{PID: 19584, PPID: 19541, PGID: 19538, Start: 3898822}},
		{name: "a real name that is '()'", file: "real-empty-parens.stat", want: Proc{PID: 19586, PPID: 19541, PGID: 19538, Start: 3898823}},
		{name: "a real name cut to 15 characters", file: "real-15-chars.stat", want: Proc{PID: 19585, PPID: 19541, PGID: 19538, Start: 3898823}},
		{name: "an empty name", line: "4242 () S" + tail, want: ok},
		{name: "a name '(a) (b)'", line: "4242 ((a) (b)) S" + tail, want: ok},
		{name: "a name faking a whole line", line: "4242 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5) S" + tail, want: ok},
		{name: "a name of spaces", line: "4242 (   ) S" + tail, want: ok},
		{name: "no closing parenthesis", line: "4242 (x S" + tail, fail: true},
		{name: "no opening parenthesis", line: "4242 x) S" + tail, fail: true},
		{name: "a negative pid", line: "-1 (x) S" + tail, fail: true},
		{name: "pid 0", line: "0 (x) S" + tail, fail: true},
		{name: "a signed pid", line: "+42 (x) S" + tail, fail: true},
		{name: "a pid past int32", line: "4294967338 (x) S" + tail, fail: true},
		{name: "a negative parent", line: "4242 (x) S -1 19538" + tail[12:], fail: true},
		{name: "a line cut short", line: "4242 (x) S 1 2 3", fail: true},
		{name: "an empty file", line: "", fail: true},
		{name: "a state of two letters", line: "4242 (x) SS" + tail, fail: true},
		{name: "a starttime that is not a number", line: strings.Replace("4242 (x) S"+tail, " 777 ", " 7x7 ", 1), fail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := []byte(tt.line)
			if tt.file != "" {
				var err error
				if b, err = os.ReadFile(filepath.Join("testdata", tt.file)); err != nil {
					t.Fatal(err)
				}
			}
			got, err := parseStat(b)
			if tt.fail {
				if err == nil {
					t.Fatalf("parseStat(%q) = %+v, want an error", b, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseStat(%q) = %+v, %v; want %+v, nil", b, got, err, tt.want)
			}
		})
	}
}

// FuzzParseStat checks that whatever name a process picks, the fields
// after it are read as written.
func FuzzParseStat(f *testing.F) {
	for _, s := range []string{"", "a) (b", ")", "()", "x) S 1 1 1\nz", "abcdefghijklmno"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, comm string) {
		got, err := parseStat([]byte("4242 (" + comm + ") S" + tail))
		want := Proc{PID: 4242, PPID: 19541, PGID: 19538, Start: 777}
		if err != nil || got != want {
			t.Fatalf("name %q: got %+v, %v; want %+v", comm, got, err, want)
		}
	})
}
