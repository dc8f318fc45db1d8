package danger

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the catalog tables in docs/danger.md")

// docsPath is the operator's page about the catalog.
var docsPath = filepath.Join("..", "..", "docs", "danger.md")

// The generated part of docs/danger.md sits between these lines.
const (
	docsBegin = "<!-- The tables below are the catalog itself, written by `go test ./policy/danger -update`; edit entries.go, not them. -->"
	docsEnd   = "<!-- End of the generated tables. -->"
)

// mdCell makes text safe in a markdown table cell: no pipe ends the cell,
// no <word> turns into HTML, a backslash or star stays itself.
func mdCell(s string) string {
	return strings.NewReplacer(`\`, `\\`, "|", `\|`, "<", "&lt;", ">", "&gt;", "*", `\*`).Replace(s)
}

// where says, for a row, where an entry holds.
func where(e Entry) string {
	switch {
	case e.Flag == "":
		return "the subcommand, and every path below it"
	case e.Root:
		return "before any subcommand"
	case len(e.Subcommand) == 0:
		return "any subcommand"
	}
	return "`" + e.CLI + " " + strings.Join(e.Subcommand, " ") + "`"
}

// docRow is one line of a CLI's table: the spellings of one flag that hold
// in the same place and say the same, or one subcommand.
type docRow struct {
	names               []string
	where, classes, why string
}

func (r docRow) String() string {
	names := make([]string, len(r.names))
	for i, n := range r.names {
		names[i] = "`" + n + "`"
	}
	return "| " + strings.Join(names, ", ") + " | " + r.where + " | " + r.classes + " | " + mdCell(r.why) + " |"
}

// catalogRows groups the entries into rows, per CLI, in catalog order.
func catalogRows() (clis []string, rows map[string][]docRow, rowOf func(Entry) string) {
	rows = map[string][]docRow{}
	index := map[string]int{}
	key := func(e Entry) string {
		if e.Flag == "" {
			return fmt.Sprintf("%s\x00sub\x00%q", e.CLI, e.Subcommand)
		}
		return fmt.Sprintf("%s\x00%q\x00%v\x00%s\x00%s", e.CLI, e.Subcommand, e.Root, e.Classes, e.Why)
	}
	for _, e := range Entries() {
		if !slices.Contains(clis, e.CLI) {
			clis = append(clis, e.CLI)
		}
		k := key(e)
		if i, ok := index[k]; ok {
			if !slices.Contains(rows[e.CLI][i].names, e.Flag) {
				rows[e.CLI][i].names = append(rows[e.CLI][i].names, e.Flag)
			}
			continue
		}
		classes := e.Classes.String()
		if len(e.Classes) == 0 {
			classes = "none (not what the generic name suggests)"
		}
		name := e.Flag
		if name == "" {
			name = e.CLI + " " + strings.Join(e.Subcommand, " ")
		}
		index[k] = len(rows[e.CLI])
		rows[e.CLI] = append(rows[e.CLI], docRow{names: []string{name}, where: where(e), classes: classes, why: e.Why})
	}
	rowOf = func(e Entry) string { return rows[e.CLI][index[key(e)]].String() }
	return clis, rows, rowOf
}

// catalogTables is the generated part of docs/danger.md.
func catalogTables() string {
	var b strings.Builder
	b.WriteString(docsBegin + "\n\n")
	clis, rows, _ := catalogRows()
	for _, cli := range clis {
		fmt.Fprintf(&b, "### %s\n\n", cli)
		b.WriteString("| Flag or subcommand | Where | Classes | What it does |\n|---|---|---|---|\n")
		for _, r := range rows[cli] {
			b.WriteString(r.String() + "\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("### Generic names, for any CLI\n\n")
	b.WriteString("A flag the catalog does not list for a CLI is matched against these names. `--x*` is a prefix, `--*-x` a suffix after a name.\n\n")
	b.WriteString("| Name | Classes | Why |\n|---|---|---|\n")
	for _, p := range Patterns() {
		why := mdCell(p.Why)
		if len(p.Over) > 0 {
			why += " (wins over `" + strings.Join(p.Over, "`, `") + "`)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", p.Name, p.Classes, why)
	}
	b.WriteString("\n" + docsEnd + "\n")
	return b.String()
}

// TestDocsListEveryEntry keeps docs/danger.md's tables the catalog: every
// entry has its row, and nothing stale is left. go test -update rewrites
// them.
func TestDocsListEveryEntry(t *testing.T) {
	data, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	begin, end := strings.Index(doc, docsBegin), strings.Index(doc, docsEnd)
	if begin < 0 || end < begin {
		t.Fatalf("%s: no generated tables between %q and %q", docsPath, docsBegin, docsEnd)
	}
	want := catalogTables()
	if *update {
		doc = doc[:begin] + want + doc[end+len(docsEnd)+1:]
		if err := os.WriteFile(docsPath, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got := doc[begin : end+len(docsEnd)+1]
	_, _, rowOf := catalogRows()
	missing := 0
	for _, e := range Entries() {
		section := got
		if i := strings.Index(section, "### "+e.CLI+"\n"); i >= 0 {
			section = section[i:]
			if j := strings.Index(section[4:], "\n### "); j >= 0 {
				section = section[:j+4]
			}
		} else {
			section = ""
		}
		if !strings.Contains(section, rowOf(e)+"\n") {
			missing++
			t.Errorf("%s lacks %s %s %s (want the row %q under ### %s)", docsPath, e.CLI, strings.Join(e.Subcommand, " "), e.Flag, rowOf(e), e.CLI)
		}
	}
	if missing == 0 && got != want {
		t.Errorf("%s: the generated tables are stale; run go test ./policy/danger -update", docsPath)
	}
	if missing > 0 {
		t.Logf("run go test ./policy/danger -update to rewrite the tables")
	}
}
