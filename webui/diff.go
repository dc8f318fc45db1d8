package webui

import (
	"fmt"
	"strings"
)

// diffContext is how many unchanged lines a hunk shows around a change.
const diffContext = 3

// maxDiffCells bounds the line-matching table: an apply changes a few
// lines, and past this the changed middle is shown as removed then added.
const maxDiffCells = 4 << 20

// diffLine is one line of a unified diff, for the page to color.
type diffLine struct {
	Kind string // "file", "hunk", "context", "add", "del" or "note"
	Text string // the line as diff prints it, prefix included
}

// String is the line as diff prints it.
func (l diffLine) String() string { return l.Text }

// diffOp is one step of an edit script: keep, delete or insert a line. ai
// and bi are where the step stands in each file (0-based): the line kept or
// deleted in a, the line kept or inserted in b, and for the other kind the
// next line of that file.
type diffOp struct {
	kind   byte // ' ', '-', '+'
	ai, bi int
}

// unifiedDiff is the unified diff from a to b (name/a → name/b) with
// diffContext lines of context, as `diff -u` prints it; nil when they are
// equal. A last line without its newline is followed by "\ No newline at
// end of file".
func unifiedDiff(name string, a, b []byte) []diffLine {
	al, bl := splitLines(string(a)), splitLines(string(b))
	ops := editScript(al, bl)
	var out []diffLine
	for _, h := range hunks(ops) {
		if out == nil {
			out = append(out, diffLine{"file", "--- a/" + name}, diffLine{"file", "+++ b/" + name})
		}
		hop := ops[h[0]:h[1]]
		na, nb := 0, 0
		for _, op := range hop {
			switch op.kind {
			case ' ':
				na++
				nb++
			case '-':
				na++
			case '+':
				nb++
			}
		}
		out = append(out, diffLine{"hunk", fmt.Sprintf("@@ -%s +%s @@", hunkRange(hop[0].ai, na), hunkRange(hop[0].bi, nb))})
		for _, op := range hop {
			line, kind := "", ""
			switch op.kind {
			case ' ':
				line, kind = al[op.ai], "context"
			case '-':
				line, kind = al[op.ai], "del"
			case '+':
				line, kind = bl[op.bi], "add"
			}
			text, eol := strings.CutSuffix(line, "\n")
			out = append(out, diffLine{kind, string(op.kind) + strings.TrimSuffix(text, "\r")})
			if !eol {
				out = append(out, diffLine{"note", `\ No newline at end of file`})
			}
		}
	}
	return out
}

// hunkRange is a hunk header's range: the 1-based first line and the
// count, the count left out when it is 1, and for an empty range the line
// before it.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// splitLines splits s after each newline; a last line without one is kept
// as it is, so a change to the file's end shows.
func splitLines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// editScript turns a into b with the fewest deletions and insertions: the
// common head and tail are kept as they are, and the middle is matched by
// longest common subsequence (an apply edits one place, so the middle is
// small).
func editScript(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []diffOp
	for i := range pre {
		ops = append(ops, diffOp{' ', i, i})
	}
	ops = append(ops, middle(a[pre:len(a)-suf], b[pre:len(b)-suf], pre, pre)...)
	for k := suf; k > 0; k-- {
		ops = append(ops, diffOp{' ', len(a) - k, len(b) - k})
	}
	return ops
}

// middle is the edit script of the differing middle, whose lines start at
// a0 and b0 in the whole files.
func middle(a, b []string, a0, b0 int) []diffOp {
	n, m := len(a), len(b)
	var ops []diffOp
	if (n+1)*(m+1) > maxDiffCells {
		for i := range n {
			ops = append(ops, diffOp{'-', a0 + i, b0})
		}
		for j := range m {
			ops = append(ops, diffOp{'+', a0 + n, b0 + j})
		}
		return ops
	}
	// lcs[i][j] is the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, diffOp{' ', a0 + i, b0 + j})
			i++
			j++
		case j == m || (i < n && lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, diffOp{'-', a0 + i, b0 + j})
			i++
		default:
			ops = append(ops, diffOp{'+', a0 + i, b0 + j})
			j++
		}
	}
	return ops
}

// hunks groups ops into hunks, [start, end) ranges of ops: each change
// with diffContext kept lines around it, changes closer than twice that
// sharing one hunk.
func hunks(ops []diffOp) [][2]int {
	var out [][2]int
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(0, i-diffContext)
		j := i
		for {
			for j < len(ops) && ops[j].kind != ' ' {
				j++
			}
			k := j
			for k < len(ops) && ops[k].kind == ' ' {
				k++
			}
			if k < len(ops) && k-j <= 2*diffContext {
				j = k
				continue
			}
			break
		}
		end := min(len(ops), j+diffContext)
		out = append(out, [2]int{start, end})
		i = end
	}
	return out
}
