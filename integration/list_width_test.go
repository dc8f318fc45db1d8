package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy/requests"
)

// TestRequestsListFitsTheTerminal runs `requests list` as an operator
// does: in a 200-column pseudo-terminal the rationale gets what the other
// columns leave of 200 columns, on a pipe what they leave of 80, and
// --wide prints it whole, escaped either way.
func TestRequestsListFitsTheTerminal(t *testing.T) {
	t.Parallel()
	script, err := exec.LookPath("script")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("script(1) is not installed (CI=true: .ci/run should have installed it)")
		}
		t.Skip("script(1) is not installed (Debian: bsdutils): it gives requests list a pseudo-terminal")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(serverConfig(t, dir, "  fake:\n    binary: $FAKECLI\n    allow:\n      - subcommand: [status]\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	// Long enough to be cut even at 200 columns, with a control sequence
	// that must stay escaped when printed whole.
	rationale := "look at the working tree before committing so that the commit message can describe exactly what changed " +
		"\x1b[2J and why; " + strings.Repeat("more words to make it long ", 8) + "THE END"
	if _, err := requests.Submit(t.Context(), filepath.Join(dir, "requests.jsonl"),
		requests.Request{Tool: "fake", Subcommand: []string{"status"}, Flags: []string{}, Rationale: rationale}, time.Now()); err != nil {
		t.Fatal(err)
	}
	home := "HOME=" + filepath.Join(dir, "home")
	inTerminal := func(t *testing.T, cols int, args ...string) string {
		t.Helper()
		argv := append([]string{wraptoolBin, "--config", cfg, "requests", "list"}, args...)
		line := "stty cols " + strconv.Itoa(cols) + " rows 40 && " + shellQuote(argv...)
		out, stderr, code := runCommandIn(t, "", []string{script, "-qfec", line, "/dev/null"}, home)
		if code != 0 {
			t.Fatalf("requests list in a terminal: exit %d, %s %s", code, out, stderr)
		}
		return strings.ReplaceAll(out, "\r\n", "\n")
	}
	rationaleCell := func(t *testing.T, out string) string {
		t.Helper()
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 2 {
			t.Fatalf("want a heading and one row:\n%s", out)
		}
		at := strings.Index(lines[0], "RATIONALE")
		if at < 0 || len(lines[1]) < at {
			t.Fatalf("no rationale column:\n%s", out)
		}
		return lines[1][at:]
	}
	width := func(s string) int { return len([]rune(s)) }

	cases := []struct {
		name      string
		out       func(t *testing.T) string
		wantWidth int // the row's width; 0: not cut
	}{
		{"a 200-column terminal cuts the row at 200", func(t *testing.T) string { return inTerminal(t, 200) }, 200},
		{"a 100-column terminal cuts the row at 100", func(t *testing.T) string { return inTerminal(t, 100) }, 100},
		{"a pipe cuts the row at 80", func(t *testing.T) string {
			out, stderr, code := runWraptool(t, []string{home}, "--config", cfg, "requests", "list")
			if code != 0 {
				t.Fatalf("exit %d, %s", code, stderr)
			}
			return out
		}, 80},
		{"--wide in a terminal prints the rationale whole", func(t *testing.T) string { return inTerminal(t, 100, "--wide") }, 0},
		{"--wide on a pipe prints the rationale whole", func(t *testing.T) string {
			out, _, _ := runWraptool(t, []string{home}, "--config", cfg, "requests", "list", "--wide")
			return out
		}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out := c.out(t)
			if strings.Contains(out, "\x1b[2J") || !strings.Contains(out, `\x1b[2J`) && c.wantWidth == 0 {
				t.Errorf("the control sequence is not shown escaped:\n%q", out)
			}
			row := strings.Split(strings.TrimSuffix(out, "\n"), "\n")[1]
			cell := rationaleCell(t, out)
			if c.wantWidth == 0 {
				if !strings.HasSuffix(cell, "THE END") || strings.Contains(cell, "…") {
					t.Errorf("the rationale is not whole: %q", cell)
				}
				return
			}
			if got := width(row); got != c.wantWidth || !strings.HasSuffix(cell, "…") {
				t.Errorf("the row is %d wide (rationale %q), want it cut with … to %d", got, cell, c.wantWidth)
			}
		})
	}
}
