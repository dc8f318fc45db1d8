package webui

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func diffString(a, b string) string {
	var out []string
	for _, l := range unifiedDiff("f", []byte(a), []byte(b)) {
		out = append(out, l.String())
	}
	return strings.Join(out, "\n")
}

// lines numbers n lines "1\n".."n\n".
func lines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}

func TestUnifiedDiffIsDiffUFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		a, b string
		want string
	}{
		{name: "equal files give no diff", a: lines(5), b: lines(5), want: ""},
		{name: "a line inserted in the middle keeps three lines of context",
			a: lines(10), b: strings.Replace(lines(10), "5\n", "5\nnew\n", 1),
			want: "--- a/f\n+++ b/f\n@@ -3,6 +3,7 @@\n 3\n 4\n 5\n+new\n 6\n 7\n 8"},
		{name: "a line changed near the top has less context above",
			a: lines(6), b: strings.Replace(lines(6), "1\n", "one\n", 1),
			want: "--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n-1\n+one\n 2\n 3\n 4"},
		{name: "lines appended at the end",
			a: lines(4), b: lines(4) + "5\n6\n",
			want: "--- a/f\n+++ b/f\n@@ -2,3 +2,5 @@\n 2\n 3\n 4\n+5\n+6"},
		{name: "changes far apart make two hunks",
			a: lines(20), b: strings.Replace(strings.Replace(lines(20), "2\n", "two\n", 1), "19\n", "nineteen\n", 1),
			want: "--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n@@ -16,5 +16,5 @@\n 16\n 17\n 18\n-19\n+nineteen\n 20"},
		{name: "changes six lines apart share a hunk",
			a: lines(12), b: strings.Replace(strings.Replace(lines(12), "3\n", "x\n", 1), "10\n", "y\n", 1),
			want: "--- a/f\n+++ b/f\n@@ -1,12 +1,12 @@\n 1\n 2\n-3\n+x\n 4\n 5\n 6\n 7\n 8\n 9\n-10\n+y\n 11\n 12"},
		{name: "a one-line range leaves out its count",
			a: "a\n", b: "b\n",
			want: "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b"},
		{name: "an empty file grows",
			a: "", b: "a\nb\n",
			want: "--- a/f\n+++ b/f\n@@ -0,0 +1,2 @@\n+a\n+b"},
		{name: "a missing last newline is marked",
			a: "a\nb", b: "a\nb\nc\n",
			want: "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n-b\n\\ No newline at end of file\n+b\n+c"},
		{name: "CRLF line endings are not shown as characters",
			a: "a\r\nb\r\n", b: "a\r\nb\r\nc\r\n",
			want: "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n b\n+c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := diffString(tt.a, tt.b); got != tt.want {
				t.Errorf("diff:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$`)

// patch applies a unified diff of ours to a, checking every context and
// removed line against a, and returns the result.
func patch(t *testing.T, a string, d []diffLine) string {
	t.Helper()
	al := splitLines(a)
	var out []string
	next := 0 // the next line of a not yet copied
	var pending *string
	for _, l := range d {
		switch l.Kind {
		case "file":
		case "hunk":
			m := hunkHeader.FindStringSubmatch(l.Text)
			if m == nil {
				t.Fatalf("bad hunk header %q", l.Text)
			}
			start, _ := strconv.Atoi(m[1])
			if m[2] != "0" {
				start--
			}
			if start < next {
				t.Fatalf("hunk %q overlaps the previous one", l.Text)
			}
			out = append(out, al[next:start]...)
			next = start
		case "context", "del":
			got, want := strings.TrimSuffix(strings.TrimSuffix(al[next], "\n"), "\r"), l.Text[1:]
			if got != want {
				t.Fatalf("%s line %q, but a has %q at line %d", l.Kind, want, got, next+1)
			}
			if l.Kind == "context" {
				out = append(out, al[next])
				pending = &out[len(out)-1]
			} else {
				pending = nil
			}
			next++
		case "add":
			out = append(out, l.Text[1:]+"\n")
			pending = &out[len(out)-1]
		case "note":
			if pending != nil {
				*pending = strings.TrimSuffix(*pending, "\n")
			}
		}
	}
	return strings.Join(append(out, al[next:]...), "")
}

func TestUnifiedDiffPatchesAIntoB(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"a", "b", "c", "d", "e"}
	gen := func() string {
		var b strings.Builder
		for range rng.IntN(30) {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteString("\n")
		}
		s := b.String()
		if s != "" && rng.IntN(4) == 0 {
			s = strings.TrimSuffix(s, "\n")
		}
		return s
	}
	for i := range 2000 {
		a, b := gen(), gen()
		d := unifiedDiff("f", []byte(a), []byte(b))
		if (a == b) != (d == nil) {
			t.Fatalf("case %d: equal=%v but diff %v", i, a == b, d)
		}
		if got := patch(t, a, d); got != b {
			t.Fatalf("case %d: patching\n%q\nwith\n%s\ngives %q, want %q", i, a, diffString(a, b), got, b)
		}
	}
}

func TestUnifiedDiffOfALargeMiddleStaysCorrect(t *testing.T) {
	t.Parallel()
	// Past maxDiffCells the middle is shown removed then added: longer,
	// still right.
	a := lines(3000)
	b := strings.ReplaceAll(lines(3000), "1", "x")
	if got := patch(t, a, unifiedDiff("f", []byte(a), []byte(b))); got != b {
		t.Fatal("the large diff does not patch a into b")
	}
}
